"""The AWS Load Balancer Controller's AWS side that is plain data: its namespace, service account,
cluster tag and IAM policy document (components/loadbalancer.py creates the role and the release).

Kept apart from the component so that stacks/ (which checks the names a stack derives) reads these
facts without loading the Pulumi SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.config.addons import AddonsSection
from stacks.config.gateway import GatewaySection

from .iam import Scope

SERVICE_ACCOUNT = "aws-load-balancer-controller"
# The tag the controller puts on every load balancer, target group and security group it creates.
CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def needs_load_balancer_controller(addons: AddonsSection, gateway: GatewaySection) -> bool:
    """Installed when something creates a LoadBalancer Service: the gateway, or AIBrix's gateway."""
    if not addons.aws_load_balancer_controller.enabled:
        return False
    return gateway.enabled or addons.aibrix.enabled


# ---- IAM policy (upstream docs/install/iam_policy.json at v3.5.0, scoped further) ---------------

_DESCRIBE = [
    *(
        f"ec2:{a}"
        for a in (
            "DescribeAccountAttributes",
            "DescribeAddresses",
            "DescribeAvailabilityZones",
            "DescribeInternetGateways",
            "DescribeVpcs",
            "DescribeVpcPeeringConnections",
            "DescribeSubnets",
            "DescribeSecurityGroups",
            "DescribeInstances",
            "DescribeNetworkInterfaces",
            "DescribeTags",
            "GetCoipPoolUsage",
            "DescribeCoipPools",
            "GetSecurityGroupsForVpc",
            "DescribeIpamPools",
            "DescribeRouteTables",
        )
    ),
    *(
        f"elasticloadbalancing:{a}"
        for a in (
            "DescribeLoadBalancers",
            "DescribeLoadBalancerAttributes",
            "DescribeListeners",
            "DescribeListenerCertificates",
            "DescribeSSLPolicies",
            "DescribeRules",
            "DescribeTargetGroups",
            "DescribeTargetGroupAttributes",
            "DescribeTargetHealth",
            "DescribeTags",
            "DescribeTrustStores",
            "DescribeListenerAttributes",
            "DescribeCapacityReservation",
        )
    ),
]

# Certificates, WAF, Shield and Cognito the controller looks up when a Service or Ingress names them:
# upstream's read-only calls. Its mutating ones (wafv2/waf-regional Associate/DisassociateWebACL,
# shield Create/DeleteProtection) serve Ingress and Shield Advanced annotations the platform never
# sets (its Services get an NLB, which takes no web ACL), so they are not granted.
_LOOKUPS = [
    "cognito-idp:DescribeUserPoolClient",
    "acm:ListCertificates",
    "acm:DescribeCertificate",
    "iam:ListServerCertificates",
    "iam:GetServerCertificate",
    "waf-regional:GetWebACL",
    "waf-regional:GetWebACLForResource",
    "wafv2:GetWebACL",
    "wafv2:GetWebACLForResource",
    "shield:GetSubscriptionState",
    "shield:DescribeProtection",
]

_MODIFY_OWNED = [
    f"elasticloadbalancing:{a}"
    for a in (
        "ModifyLoadBalancerAttributes",
        "SetIpAddressType",
        "SetSecurityGroups",
        "SetSubnets",
        "DeleteLoadBalancer",
        "ModifyTargetGroup",
        "ModifyTargetGroupAttributes",
        "DeleteTargetGroup",
        "ModifyListenerAttributes",
        "ModifyCapacityReservation",
        "ModifyIpPools",
    )
]

_LISTENER_CHANGES = [
    f"elasticloadbalancing:{a}"
    for a in (
        "SetWebAcl",
        "ModifyListener",
        "AddListenerCertificates",
        "RemoveListenerCertificates",
        "ModifyRule",
        "SetRulePriorities",
    )
]


def controller_policy(scope: Scope, vpc_id: str) -> dict[str, Any]:
    """The controller's IAM policy document: upstream's statements and tag conditions, scoped further.

    Creating load balancers, target groups and security groups needs the request to carry the
    cluster tag; modifying, tagging or deleting them needs the resource to carry it already (the
    `Null` conditions), so the controller cannot touch load balancers it did not create. Beyond
    upstream: every ARN names this account and region instead of `*`; the security-group ingress
    rules it opens for its targets, and the groups it creates, are those of this cluster's VPC only
    (`ec2:Vpc`); it registers targets only into target groups it tagged; the service-linked role it
    may create is Elastic Load Balancing's own; the mutating WAF and Shield calls are left out (above).
    """
    arns, tagged = _arns(scope, vpc_id), _tagged()
    statements: list[dict[str, Any]] = [
        _service_linked_role_statement(scope),
        _allow("DescribeNetworkAndLoadBalancers", list(_DESCRIBE), "*"),
        _allow("LookUpCertificatesAndProtections", list(_LOOKUPS), "*"),
        *_security_group_statements(arns, tagged),
        *_load_balancer_statements(arns, tagged),
    ]
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass(frozen=True)
class _Arns:
    """The ARN patterns the statements name, each in this account and region."""

    security_groups: str
    vpc: str
    target_groups: str
    balancers: list[str]  # target groups and network and application load balancers
    listeners: list[str]  # their listeners and listener rules


def _arns(scope: Scope, vpc_id: str) -> _Arns:
    p, region, account = scope.partition, scope.region, scope.account
    elb = f"arn:{p}:elasticloadbalancing:{region}:{account}"
    target_groups = f"{elb}:targetgroup/*/*"
    return _Arns(
        security_groups=f"arn:{p}:ec2:{region}:{account}:security-group/*",
        vpc=f"arn:{p}:ec2:{region}:{account}:vpc/{vpc_id}",
        target_groups=target_groups,
        balancers=[target_groups, f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"],
        listeners=[
            f"{elb}:listener/net/*/*/*",
            f"{elb}:listener/app/*/*/*",
            f"{elb}:listener-rule/net/*/*/*",
            f"{elb}:listener-rule/app/*/*/*",
        ],
    )


def _allow(sid: str, actions: list[str], resource: str | list[str], condition: Any = None) -> dict[str, Any]:
    """One Allow statement; `Condition` only when given."""
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resource}
    if condition is not None:
        statement["Condition"] = condition
    return statement


@dataclass(frozen=True)
class _Tagged:
    """The cluster-tag conditions, each one object shared by the statements that test it."""

    requested: dict[str, str]  # `Null` body: the request sets the tag (creating a resource)
    owned: dict[str, str]  # `Null` body: the resource has the tag (the controller created it)
    retag: dict[str, Any]  # changing tags: on a resource that has the tag, by a request that does not set it


def _tagged() -> _Tagged:
    return _Tagged(
        requested={f"aws:RequestTag/{CLUSTER_TAG}": "false"},
        owned={f"aws:ResourceTag/{CLUSTER_TAG}": "false"},
        retag={"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}},
    )


def _service_linked_role_statement(scope: Scope) -> dict[str, Any]:
    """Creating a service-linked role: Elastic Load Balancing's own only."""
    return _allow(
        "CreateTheLoadBalancingServiceLinkedRole",
        ["iam:CreateServiceLinkedRole"],
        (
            f"arn:{scope.partition}:iam::{scope.account}:role/aws-service-role/elasticloadbalancing.amazonaws.com/"
            "AWSServiceRoleForElasticLoadBalancing"
        ),
        {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
    )


def _security_group_statements(arns: _Arns, tagged: _Tagged) -> list[dict[str, Any]]:
    """Security groups: ingress rules and new groups in this cluster's VPC only; tags and deletion of
    the groups the controller created only."""
    sg = arns.security_groups
    ingress = ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"]
    return [
        _allow("OpenTargetPortsInThisVpc", list(ingress), sg, {"ArnEquals": {"ec2:Vpc": arns.vpc}}),
        _allow("CreateSecurityGroupsInThisVpc", ["ec2:CreateSecurityGroup"], [sg, arns.vpc]),
        _allow(
            "TagSecurityGroupsOnCreate",
            ["ec2:CreateTags"],
            sg,
            {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, "Null": tagged.requested},
        ),
        _allow("RetagOwnedSecurityGroups", ["ec2:CreateTags", "ec2:DeleteTags"], sg, tagged.retag),
        _allow("ChangeOwnedSecurityGroups", [*ingress, "ec2:DeleteSecurityGroup"], sg, {"Null": tagged.owned}),
    ]


def _load_balancer_statements(arns: _Arns, tagged: _Tagged) -> list[dict[str, Any]]:
    """Load balancers, target groups, listeners and rules: created with the cluster tag; changed,
    retagged and given targets only when they carry it (listeners and rules: under such a balancer)."""
    balancers, listeners = arns.balancers, arns.listeners
    tags = ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"]
    return [
        _allow(
            "CreateTaggedLoadBalancers",
            ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            balancers,
            {"Null": tagged.requested},
        ),
        _allow(
            "ManageListenersAndRules",
            [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
            ],
            [*balancers, *listeners],
        ),
        _allow("RetagOwnedLoadBalancers", list(tags), balancers, tagged.retag),
        _allow("TagListenersAndRules", list(tags), listeners),
        _allow("ChangeOwnedLoadBalancers", list(_MODIFY_OWNED), balancers, {"Null": tagged.owned}),
        _allow(
            "TagLoadBalancersOnCreate",
            ["elasticloadbalancing:AddTags"],
            balancers,
            {
                "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]},
                "Null": tagged.requested,
            },
        ),
        _allow(
            "RegisterTargetsInOwnedTargetGroups",
            ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            arns.target_groups,
            {"Null": tagged.owned},
        ),
        _allow("ChangeListenersAndRules", list(_LISTENER_CHANGES), [*balancers, *listeners]),
    ]
