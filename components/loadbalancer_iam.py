"""The AWS Load Balancer Controller's AWS side that is plain data: its namespace, service account,
cluster tag and IAM policy document (components/loadbalancer.py creates the role and the release).

Kept apart from the component so that stacks/ (which checks the names a stack derives) reads these
facts without loading the Pulumi SDK.
"""

from __future__ import annotations

from typing import Any

from stacks.config.addons import AddonsSection
from stacks.config.gateway import GatewaySection

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"
# The tag the controller puts on every load balancer, target group and security group it creates.
CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def needs_load_balancer_controller(addons: AddonsSection, gateway: GatewaySection) -> bool:
    """Installed when something creates a LoadBalancer Service: the gateway, or AIBrix's gateway."""
    if not addons.aws_load_balancer_controller.enabled:
        return False
    return gateway.enabled or addons.aibrix.enabled


# ---- IAM policy (docs/install/iam_policy.json, v3.5.0) ----------------------------------------

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

# Certificates, WAF and Shield the controller looks up or attaches when an Ingress/Service asks.
_INTEGRATIONS = [
    "cognito-idp:DescribeUserPoolClient",
    "acm:ListCertificates",
    "acm:DescribeCertificate",
    "iam:ListServerCertificates",
    "iam:GetServerCertificate",
    "waf-regional:GetWebACL",
    "waf-regional:GetWebACLForResource",
    "waf-regional:AssociateWebACL",
    "waf-regional:DisassociateWebACL",
    "wafv2:GetWebACL",
    "wafv2:GetWebACLForResource",
    "wafv2:AssociateWebACL",
    "wafv2:DisassociateWebACL",
    "shield:GetSubscriptionState",
    "shield:DescribeProtection",
    "shield:CreateProtection",
    "shield:DeleteProtection",
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


def controller_policy(partition: str = "aws") -> dict[str, Any]:
    """The controller's IAM policy document: upstream's statements and conditions, in this partition.

    Creating load balancers, target groups and security groups needs the request to carry the
    cluster tag; modifying, tagging or deleting them needs the resource to carry it already (the
    `Null` conditions), so the controller cannot touch load balancers it did not create.
    """
    requested = {f"aws:RequestTag/{CLUSTER_TAG}": "false"}  # the request sets the tag
    owned = {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}  # the resource has the tag
    retag = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    sg = f"arn:{partition}:ec2:*:*:security-group/*"
    elb = f"arn:{partition}:elasticloadbalancing:*:*"
    balancers = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"]
    listeners = [
        f"{elb}:listener/net/*/*/*",
        f"{elb}:listener/app/*/*/*",
        f"{elb}:listener-rule/net/*/*/*",
        f"{elb}:listener-rule/app/*/*/*",
    ]
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Action": ["iam:CreateServiceLinkedRole"],
            "Resource": "*",
            "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        },
        {"Effect": "Allow", "Action": list(_DESCRIBE), "Resource": "*"},
        {"Effect": "Allow", "Action": list(_INTEGRATIONS), "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            "Resource": "*",
        },
        {"Effect": "Allow", "Action": ["ec2:CreateSecurityGroup"], "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": sg,
            "Condition": {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}, "Null": requested},
        },
        {"Effect": "Allow", "Action": ["ec2:CreateTags", "ec2:DeleteTags"], "Resource": sg, "Condition": retag},
        {
            "Effect": "Allow",
            "Action": [
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            "Resource": "*",
            "Condition": {"Null": owned},
        },
        {
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            "Resource": "*",
            "Condition": {"Null": requested},
        },
        {
            "Effect": "Allow",
            "Action": [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
            ],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": balancers,
            "Condition": retag,
        },
        {
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": listeners,
        },
        {"Effect": "Allow", "Action": list(_MODIFY_OWNED), "Resource": "*", "Condition": {"Null": owned}},
        {
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags"],
            "Resource": balancers,
            "Condition": {
                "StringEquals": {"elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]},
                "Null": requested,
            },
        },
        {
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            "Resource": f"{elb}:targetgroup/*/*",
        },
        {"Effect": "Allow", "Action": list(_LISTENER_CHANGES), "Resource": "*"},
    ]
    return {"Version": "2012-10-17", "Statement": statements}
