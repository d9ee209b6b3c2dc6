"""The AWS Load Balancer Controller (components/loadbalancer.py) and NetworkPolicy enforcement by the
VPC CNI: the two cluster pieces the front door relies on for its NLB and its namespace isolation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.iam import Scope
from components.loadbalancer import controller_values
from components.loadbalancer_iam import CLUSTER_TAG, controller_policy, needs_load_balancer_controller
from stacks.mocks import ACCOUNT
from stacks.naming import SYSTEM_NODE_LABEL
from stacks.resolved import PlatformView
from stacks.versions import chart
from tests.builders import resolved_stack
from tests.conftest import EXAMPLES, rendered_stack

LBC = "aws-load-balancer-controller"


def release(dev_render, name: str):
    return next(r for r in dev_render.mocks.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == name)


# ---- the Helm release -------------------------------------------------------------------------


def test_the_controller_is_the_pinned_eks_chart_on_the_system_nodes_with_cluster_region_and_vpc(dev_render):
    rel = release(dev_render, LBC)
    pinned = chart(LBC)
    assert (rel.inputs["chart"], rel.inputs["version"]) == (LBC, pinned.version) and pinned.version == "3.5.0"
    assert rel.inputs["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    assert rel.inputs["namespace"] == "kube-system"
    values = rel.inputs["values"]
    assert values["clusterName"] == "inference-dev" and values["region"] == "us-west-2"
    vpc = dev_render.mocks.of_type("aws:ec2/vpc:Vpc")[0]
    assert values["vpcId"].startswith("vpc-"), "the created VPC's id, so the controller needs no IMDS lookup"
    assert vpc.urn in rel.depends_on
    assert values["serviceAccount"] == {"create": True, "name": LBC}
    assert all(values["nodeSelector"][k] == v for k, v in SYSTEM_NODE_LABEL.items()), "never on a GPU node"
    assert values["replicaCount"] == 2 and values["podDisruptionBudget"] == {"maxUnavailable": 1}, (
        "its Service webhook fails closed: one replica must always answer"
    )


def test_the_controllers_role_is_reached_through_pod_identity_for_its_service_account(dev_render):
    rec = dev_render.mocks
    assoc = next(
        r
        for r in rec.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.inputs["serviceAccount"] == LBC
    )
    assert assoc.inputs["namespace"] == "kube-system" and assoc.inputs["clusterName"] == "inference-dev"
    role = rec.named("aws:iam/role:Role", "platform-load-balancer-controller-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    policy = json.loads(rec.named("aws:iam/policy:Policy", "platform-load-balancer-controller-policy").inputs["policy"])
    dev_vpc = rec.of_type("aws:ec2/vpc:Vpc")[0].outputs["arn"].rpartition("/")[2]
    expected = controller_policy(Scope(cluster="inference-dev", region="us-west-2", account=ACCOUNT), dev_vpc)
    assert policy == expected, "the scoped policy for this account, region and VPC"
    rel = release(dev_render, LBC)
    assert assoc.urn in rel.depends_on, "credentials exist before the controller starts"


def test_the_gateway_and_envoy_gateway_wait_for_the_controller(dev_render):
    rec = dev_render.mocks
    lbc = release(dev_render, LBC)
    gateway = rec.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")[0]
    assert lbc.urn in gateway.depends_on, "its LoadBalancer Service needs the controller's webhook and finalizer"
    envoy = release(dev_render, "envoy-gateway")
    assert lbc.urn in envoy.depends_on, "every Gateway Envoy Gateway serves (AIBrix's too) comes after it"


# ---- when it is installed ----------------------------------------------------------------------


def _needs(sections: dict[str, Any]) -> bool:
    platform: PlatformView = resolved_stack(sections).platform
    return needs_load_balancer_controller(platform.addons, platform.gateway)


def test_it_is_installed_for_the_gateway_or_aibrix_and_not_otherwise(dev):
    assert _needs(copy.deepcopy(dev)), "the dev gateway is an NLB"
    no_gateway = copy.deepcopy(dev)
    no_gateway["gateway"] = {"enabled": False}
    for model in no_gateway["models"]:
        model["expose"] = False
        model.pop("routing", None)  # routing needs the route
    assert not _needs(no_gateway), "nothing asks for an NLB"
    aibrix = copy.deepcopy(no_gateway)
    aibrix["addons"]["aibrix"] = {"enabled": True}
    assert _needs(aibrix), "AIBrix's Envoy Service is one too"


def test_a_cluster_that_already_runs_a_controller_can_turn_it_off(dev):
    dev["addons"]["awsLoadBalancerController"] = {"enabled": False}
    assert not _needs(dev), "the cluster's own controller serves the NLB"


# ---- the IAM policy (docs/install/iam_policy.json at v3.5.0, scoped further) ---------------------

SCOPE = Scope(cluster="inference-dev", region="us-west-2", account=ACCOUNT)
VPC = "vpc-0abc"


def _policy(scope: Scope = SCOPE) -> dict[str, Any]:
    return controller_policy(scope, VPC)


def _statements(*actions: str) -> list[dict[str, Any]]:
    return [s for s in _policy()["Statement"] if set(actions) & set(s["Action"])]


def test_the_policy_lets_it_build_an_nlb_with_an_acm_certificate():
    granted = {a for s in _policy()["Statement"] for a in s["Action"]}
    needed = {
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:CreateTargetGroup",
        "elasticloadbalancing:CreateListener",
        "elasticloadbalancing:ModifyListener",
        "elasticloadbalancing:RegisterTargets",
        "elasticloadbalancing:ModifyTargetGroupAttributes",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:AddTags",
        "acm:DescribeCertificate",
        "ec2:CreateSecurityGroup",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:DescribeSubnets",
        "iam:CreateServiceLinkedRole",
    }
    assert needed <= granted, needed - granted
    assert len(_policy()["Statement"]) == 16, "upstream's sixteen statements"
    mutating = {"wafv2:AssociateWebACL", "waf-regional:AssociateWebACL", "shield:CreateProtection"}
    assert not mutating & granted, "Ingress and Shield Advanced features the platform never uses"


def test_creating_load_balancers_requires_the_cluster_tag_on_the_request():
    (create,) = _statements("elasticloadbalancing:CreateLoadBalancer")
    assert create["Condition"] == {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}


def test_changing_or_deleting_load_balancers_and_security_groups_requires_the_cluster_tag():
    for action in ("elasticloadbalancing:DeleteLoadBalancer", "elasticloadbalancing:DeleteTargetGroup"):
        (stmt,) = _statements(action)
        assert stmt["Condition"]["Null"][f"aws:ResourceTag/{CLUSTER_TAG}"] == "false", action
    (delete_sg,) = _statements("ec2:DeleteSecurityGroup")
    assert delete_sg["Condition"] == {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    retag = [s for s in _statements("ec2:DeleteTags")]
    assert retag and all(s["Condition"]["Null"][f"aws:ResourceTag/{CLUSTER_TAG}"] == "false" for s in retag)


def test_the_service_linked_role_is_only_elastic_load_balancings():
    (slr,) = _statements("iam:CreateServiceLinkedRole")
    assert slr["Condition"] == {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}
    assert slr["Resource"].endswith(
        ":role/aws-service-role/elasticloadbalancing.amazonaws.com/AWSServiceRoleForElasticLoadBalancing"
    )


def test_security_group_changes_stay_in_this_vpc_and_targets_go_only_into_owned_target_groups():
    vpc = f"arn:aws:ec2:us-west-2:{ACCOUNT}:vpc/{VPC}"
    unowned = [s for s in _statements("ec2:AuthorizeSecurityGroupIngress") if "Null" not in s.get("Condition", {})]
    assert [s["Condition"] for s in unowned] == [{"ArnEquals": {"ec2:Vpc": vpc}}]
    (create,) = _statements("ec2:CreateSecurityGroup")
    assert vpc in create["Resource"], "a security group can be created in this VPC only"
    (register,) = _statements("elasticloadbalancing:RegisterTargets")
    assert register["Condition"] == {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}


def test_resource_arns_name_this_partition_account_and_region():
    arns = [
        r
        for s in controller_policy(
            Scope(cluster="c", region="us-gov-west-1", account=ACCOUNT, partition="aws-us-gov"), VPC
        )["Statement"]
        for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])
    ]
    scoped = [a for a in arns if a != "*"]
    assert scoped and all(a.startswith("arn:aws-us-gov:") for a in scoped), arns
    assert all(f":{ACCOUNT}:" in a and (":iam::" in a or ":us-gov-west-1:" in a) for a in scoped), arns


# ---- values keys against the chart's values.yaml ----------------------------------------------

# Top-level keys of aws-load-balancer-controller chart 3.5.0 values.yaml (aws/eks-charts
# stable/aws-load-balancer-controller at the v3.5.0 release commit 5239609, identical to
# kubernetes-sigs/aws-load-balancer-controller helm/ at tag v3.5.0), read upstream. The chart has no
# copy in shared/schemas, so conformance cannot check it: this list does.
CHART_TOP_LEVEL_KEYS = {
    "replicaCount", "revisionHistoryLimit", "image", "runtimeClassName", "imagePullSecrets", "nameOverride",
    "fullnameOverride", "autoscaling", "serviceAccount", "rbac", "podSecurityContext", "securityContext",
    "terminationGracePeriodSeconds", "resources", "priorityClassName", "nodeSelector", "tolerations", "affinity",
    "configureDefaultAffinity", "topologySpreadConstraints", "updateStrategy", "serviceAnnotations",
    "deploymentAnnotations", "podAnnotations", "podLabels", "additionalLabels", "enableCertManager",
    "certManager", "clusterName", "cluster", "ingressClass", "ingressClassParams", "createIngressClassResource",
    "region", "vpcId", "vpcTags", "awsApiEndpoints", "awsApiThrottle", "awsMaxRetries", "defaultTargetType",
    "defaultLoadBalancerScheme", "enablePodReadinessGateInject", "enableShield", "enableWaf", "enableWafv2",
    "ingressMaxConcurrentReconciles", "logLevel", "metricsBindAddr", "webhookConfig", "webhookBindPort",
    "webhookTLS", "keepTLSSecret", "webhookNamespaceSelectors", "serviceMaxConcurrentReconciles",
    "targetgroupbindingMaxConcurrentReconciles", "targetgroupbindingMaxExponentialBackoffDelay",
    "targetgroupbindingRequeueDuration", "albGatewayMaxConcurrentReconciles", "nlbGatewayMaxConcurrentReconciles",
    "globalAcceleratorMaxConcurrentReconciles", "globalAcceleratorMaxExponentialBackoffDelay",
    "lbStabilizationMonitorInterval", "syncPeriod", "watchNamespace", "disableIngressClassAnnotation",
    "disableIngressGroupNameAnnotation", "tolerateNonExistentBackendService", "tolerateNonExistentBackendAction",
    "defaultSSLPolicy", "livenessProbe", "readinessProbe", "env", "hostNetwork", "dnsPolicy", "extraVolumeMounts",
    "extraVolumes", "defaultTags", "podDisruptionBudget", "externalManagedTags", "enableEndpointSlices",
    "enableBackendSecurityGroup", "enableManageBackendSecurityGroupRules", "backendSecurityGroup",
    "disableRestrictedSecurityGroupRules", "maxTargetsPerTargetGroup", "controllerConfig", "certManagement",
    "certDiscovery", "objectSelector", "serviceMonitor", "clusterSecretsPermissions", "ingressClassConfig",
    "enableServiceMutatorWebhook", "serviceMutatorWebhookConfig", "podMutatorWebhookConfig",
    "serviceTargetENISGTags", "loadBalancerClass",
}  # fmt: skip
# serviceAccount's keys in the same file; nodeSelector, podDisruptionBudget and defaultTags are open maps.
SERVICE_ACCOUNT_KEYS = {"create", "annotations", "name", "automountServiceAccountToken", "imagePullSecrets"}


def test_every_values_key_set_exists_in_the_pinned_charts_values():
    values = controller_values(cluster="c", region="us-west-2", vpc_id="vpc-1", tags={"a": "b"})
    assert set(values) <= CHART_TOP_LEVEL_KEYS, set(values) - CHART_TOP_LEVEL_KEYS
    assert set(values["serviceAccount"]) <= SERVICE_ACCOUNT_KEYS
    assert chart(LBC).version == "3.5.0", "re-read the chart's values.yaml when the pin moves"


# ---- NetworkPolicy enforcement ------------------------------------------------------------------


def test_the_vpc_cni_enforces_network_policies(dev_render):
    cni = dev_render.mocks.named("aws:eks/addon:Addon", "platform-cluster-vpc-cni")
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}, (
        "without it the front door's NetworkPolicies are stored but never enforced"
    )


@pytest.mark.parametrize("addon", ["coredns", "kube-proxy", "eks-pod-identity-agent", "aws-ebs-csi-driver"])
def test_the_other_cluster_addons_keep_their_defaults(dev_render, addon):
    record = dev_render.mocks.named("aws:eks/addon:Addon", f"platform-cluster-{addon}")
    assert not record.inputs.get("configurationValues")


def test_aibrixs_gateway_comes_after_the_controller_through_envoy_gateway():
    rendered = rendered_stack(next(p for p in EXAMPLES if p.name == "Pulumi.serving.yaml"))
    releases = {r.inputs.get("name"): r for r in rendered.mocks.of_type("kubernetes:helm.sh/v3:Release")}
    aibrix, envoy, lbc = releases["aibrix"], releases["envoy-gateway"], releases[LBC]
    assert envoy.urn in aibrix.depends_on and lbc.urn in envoy.depends_on, (
        "AIBrix's chart creates a Gateway whose Envoy Service is a LoadBalancer: the controller must be up first"
    )
