"""The AWS Load Balancer Controller's AWS side that is plain data: its namespace, service account,
cluster tag and IAM policy document (components/loadbalancer.py creates the role and the release).

Kept apart from the component so that stacks/ (which checks the names a stack derives) reads these
facts without loading the Pulumi SDK.
"""

from __future__ import annotations

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
    requested = {f"aws:RequestTag/{CLUSTER_TAG}": "false"}  # the request sets the tag
    owned = {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}  # the resource has the tag
    retag = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    p, region, account = scope.partition, scope.region, scope.account
    sg = f"arn:{p}:ec2:{region}:{account}:security-group/*"
    vpc = f"arn:{p}:ec2:{region}:{account}:vpc/{vpc_id}"
    elb = f"arn:{p}:elasticloadbalancing:{region}:{account}"
    target_groups = f"{elb}:targetgroup/*/*"
    balancers = [target_groups, f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"]
    listeners = [
        f"{elb}:listener/net/*/*/*",
        f"{elb}:listener/app/*/*/*",
        f"{elb}:listener-rule/net/*/*/*",
        f"{elb}:listener-rule/app/*/*/*",
    ]
    statements: list[dict[str, Any]] = [
        {
            "Sid": "CreateTheLoadBalancingServiceLinkedRole",
            "Effect": "Allow",
            "Action": ["iam:CreateServiceLinkedRole"],
            "Resource": (
                f"arn:{p}:iam::{account}:role/aws-service-role/elasticloadbalancing.amazonaws.com/"
                "AWSServiceRoleForElasticLoadBalancing"
            ),
            "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        },
        {"Sid": "DescribeNetworkAndLoadBalancers", "Effect": "Allow", "Action": list(_DESCRIBE), "Resource": "*"},
        {"Sid": "LookUpCertificatesAndProtections", "Effect": "Allow", "Action": list(_LOOKUPS), "Resource": "*"},
        {
            "Sid": "OpenTargetPortsInThisVpc",
            "Effect": "Allow",
            "Action": ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            "Resource": sg,
            "Condition": {"ArnEquals": {"ec2:Vpc": vpc}},
        },
        {
            "Sid": "CreateSecurityGroupsInThisVpc",
            "Effect": "Allow",
            "Action": ["ec2:CreateSecurityGroup"],
            "Resource": [sg, vpc],
        },
        {
            "Sid": "TagSecurityGroupsOnCreate",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": sg,
            "Condition": {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, "Null": requested},
        },
        {
            "Sid": "RetagOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags", "ec2:DeleteTags"],
            "Resource": sg,
            "Condition": retag,
        },
        {
            "Sid": "ChangeOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": [
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            "Resource": sg,
            "Condition": {"Null": owned},
        },
        {
            "Sid": "CreateTaggedLoadBalancers",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            "Resource": balancers,
            "Condition": {"Null": requested},
        },
        {
            "Sid": "ManageListenersAndRules",
            "Effect": "Allow",
            "Action": [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
            ],
            "Resource": [*balancers, *listeners],
        },
        {
            "Sid": "RetagOwnedLoadBalancers",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": balancers,
            "Condition": retag,
        },
        {
            "Sid": "TagListenersAndRules",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": listeners,
        },
        {
            "Sid": "ChangeOwnedLoadBalancers",
            "Effect": "Allow",
            "Action": list(_MODIFY_OWNED),
            "Resource": balancers,
            "Condition": {"Null": owned},
        },
        {
            "Sid": "TagLoadBalancersOnCreate",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags"],
            "Resource": balancers,
            "Condition": {
                "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]},
                "Null": requested,
            },
        },
        {
            "Sid": "RegisterTargetsInOwnedTargetGroups",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            "Resource": target_groups,
            "Condition": {"Null": owned},
        },
        {
            "Sid": "ChangeListenersAndRules",
            "Effect": "Allow",
            "Action": list(_LISTENER_CHANGES),
            "Resource": [*balancers, *listeners],
        },
    ]
    return {"Version": "2012-10-17", "Statement": statements}
