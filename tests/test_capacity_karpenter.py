"""Karpenter and the device plugins as the dev stack renders them, plus what later concerns receive."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import platform as platform_module
from components.capacity import karpenter_iam
from components.capacity.component import Capacity, CapacityArgs
from components.capacity.plugins import NEURON_SCHEDULER, karpenter_values, neuron_values, nvidia_values
from components.iam import Scope
from components.model_servers import ModelsArgs
from components.platform import InferencePlatform, InferencePlatformArgs
from stacks.config.addons import Neuron
from stacks.mocks import Record, RecordingMocks
from stacks.naming import SYSTEM_NODE_LABEL
from stacks.resolved import ResolvedStack
from tests.builders import by_kind, engine_objects, resolved_stack

RELEASE = "kubernetes:helm.sh/v3:Release"
CLUSTER = "inference-dev"


def releases(rendered) -> dict:
    return {r.inputs["name"]: r for r in rendered.mocks.of_type(RELEASE)}


def capacity_records(mocks: RecordingMocks, sections: dict[str, Any]) -> list[Record]:
    """What the Capacity component alone registers for the resolved stack (no whole program)."""
    stack = resolved_stack(sections)
    platform = stack.platform

    @pulumi.runtime.test
    def build():
        provider = k8s.Provider("test-k8s", kubeconfig="{}")
        Capacity(
            "capacity",
            CapacityArgs(
                cluster_name=platform.cluster_name,
                region=platform.region,
                pools=platform.pools,
                addons=platform.addons,
                cluster=platform.cluster_name,
                vpc_id="vpc-0abc",
                provider=provider,
                tags={},
            ),
        )

    build()
    return list(mocks.records)


def capacity_releases(mocks: RecordingMocks, sections: dict[str, Any]) -> dict[str, Record]:
    return {r.inputs["name"]: r for r in capacity_records(mocks, sections) if r.type == RELEASE}


def scope() -> Scope:
    return Scope(cluster=CLUSTER, region="us-west-2", account="123456789012")


def all_statements(docs: dict) -> list[dict]:
    return [s for d in docs.values() for s in d["Statement"]]


def test_every_controller_permission_is_scoped_to_this_cluster_or_read_only():
    docs = karpenter_iam.controller_policies(scope(), node_role_arn="arn:node", queue_arn="arn:queue")
    read_only = {
        "AllowRegionalReadActions",
        "AllowPricingReadActions",
        "AllowUnscopedInstanceProfileListAction",
    }
    for statement in all_statements(docs):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert "*" not in actions and not any(a.endswith(":*") for a in actions), statement["Sid"]
        if statement["Resource"] == "*":
            assert statement["Sid"] in read_only, f"{statement['Sid']} grants on * but is not read-only"
    mutating = [s for s in all_statements(docs) if {"ec2:TerminateInstances", "ec2:CreateTags"} & set(s["Action"])]
    for statement in mutating:
        text = json.dumps(statement["Condition"])
        assert f"kubernetes.io/cluster/{CLUSTER}" in text, f"{statement['Sid']} is not scoped to the cluster"


def test_the_controller_may_pass_only_the_node_role_and_read_only_its_queue():
    docs = karpenter_iam.controller_policies(scope(), node_role_arn="arn:node", queue_arn="arn:queue")
    passing = next(s for s in all_statements(docs) if s["Action"] == "iam:PassRole")
    assert passing["Resource"] == "arn:node"
    assert docs["interruption"]["Statement"][0]["Resource"] == "arn:queue"
    assert docs["eks-integration"]["Statement"][0]["Resource"] == (
        f"arn:aws:eks:us-west-2:123456789012:cluster/{CLUSTER}"
    )
    regional = next(s for s in all_statements(docs) if s["Sid"] == "AllowRegionalReadActions")
    assert regional["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}


def test_the_queue_policy_admits_eventbridge_and_denies_plain_http():
    statements = karpenter_iam.queue_policy("arn:q")["Statement"]
    assert statements[0]["Principal"]["Service"] == ["events.amazonaws.com", "sqs.amazonaws.com"]
    assert statements[1]["Effect"] == "Deny" and statements[1]["Condition"]["Bool"]["aws:SecureTransport"] == "false"


def test_the_dev_stack_renders_the_roles_policies_queue_and_rules(dev_render):
    rec = dev_render.mocks
    queue = rec.named("aws:sqs/queue:Queue", "platform-capacity-karpenter-interruption").inputs
    assert queue["messageRetentionSeconds"] == 300 and queue["sqsManagedSseEnabled"] is True
    rules = {
        r.inputs["name"]: json.loads(r.inputs["eventPattern"])
        for r in rec.of_type("aws:cloudwatch/eventRule:EventRule")
    }
    kinds = {p["detail-type"][0] for p in rules.values()}
    assert {
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
        "AWS Health Event",
    } <= kinds
    assert all(name.startswith(f"{CLUSTER}-karpenter-") for name in rules), "rule names are unique per cluster"
    targets = rec.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == len(rules)
    assert {t.inputs["arn"] for t in targets} == {f"arn:aws:sqs:us-west-2:123456789012:{queue['name']}"}
    node_policies = {
        r.inputs["policyArn"].rsplit("/", 1)[1]
        for r in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.inputs["role"] == f"{CLUSTER}-karpenter-node"
    }
    assert node_policies == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonSSMManagedInstanceCore",
    }
    entry = rec.of_type("aws:eks/accessEntry:AccessEntry")[0].inputs
    assert entry["type"] == "EC2_LINUX" and entry["principalArn"].endswith(f"role/{CLUSTER}-karpenter-node")
    association = rec.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    karpenter = [a.inputs for a in association if a.inputs["serviceAccount"] == "karpenter"]
    assert karpenter and karpenter[0]["namespace"] == "kube-system"
    assert karpenter[0]["roleArn"].endswith(f"role/{CLUSTER}-karpenter")
    for policy in rec.of_type("aws:iam/policy:Policy"):
        assert '"Resource": "*", "Action": "*"' not in policy.inputs["policy"]


def test_the_karpenter_release_runs_two_replicas_with_a_pdb_on_the_system_nodes(dev_render):
    rel = releases(dev_render)["karpenter"].inputs
    assert rel["chart"] == "oci://public.ecr.aws/karpenter/karpenter" and rel["version"] == "1.14.1"
    values = rel["values"]
    # Node repair is on where the EKS node monitoring agent runs (the dev stack's default).
    assert values["settings"] == {
        "clusterName": CLUSTER,
        "interruptionQueue": f"{CLUSTER}-karpenter",
        "featureGates": {"nodeRepair": True},
    }
    assert values["replicas"] == 2 and values["podDisruptionBudget"]["maxUnavailable"] == 1
    assert SYSTEM_NODE_LABEL.items() <= values["nodeSelector"].items()


def test_node_pools_and_node_classes_wait_for_the_release_that_installs_their_crds(dev_render):
    rec = dev_render.mocks
    release = releases(dev_render)["karpenter"]
    crs = [
        r
        for r in rec.kubernetes_objects()
        if r.type.startswith(("kubernetes:karpenter.sh", "kubernetes:karpenter.k8s.aws"))
    ]
    assert len(crs) == 4, "a NodePool and an EC2NodeClass per dev pool"
    assert all(release.urn in r.depends_on for r in crs)


def test_the_dev_stack_installs_both_device_plugins(dev_render):
    rels = releases(dev_render)
    nvidia = rels["nvidia-device-plugin"].inputs
    assert nvidia["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in nvidia["values"]["tolerations"]
    neuron = rels["neuron"].inputs
    assert neuron["chart"] == "oci://public.ecr.aws/neuron/neuron-helm-chart" and neuron["version"] == "1.10.0"


def test_the_nvidia_plugin_installs_no_driver_and_the_neuron_chart_follows_the_addon():
    assert nvidia_values()["nvidiaDriverRoot"] == "/", "the AL2023 NVIDIA AMI's own driver"
    assert nvidia_values()["gfd"] == {"enabled": False}
    full = neuron_values(Neuron.model_validate({"enabled": True, "scheduler": True, "nodeProblemDetector": True}))
    assert full["devicePlugin"]["enabled"] and full["npd"]["enabled"] and full["scheduler"]["enabled"]
    assert full["scheduler"]["customScheduler"]["fullnameOverride"] == NEURON_SCHEDULER
    bare = neuron_values(Neuron.model_validate({"enabled": True, "scheduler": False, "nodeProblemDetector": False}))
    assert bare == {"devicePlugin": {"enabled": True}, "scheduler": {"enabled": False}, "npd": {"enabled": False}}
    assert karpenter_values(cluster="c", queue="q")["settings"]["interruptionQueue"] == "q"


def test_no_device_plugin_is_installed_where_no_pool_needs_it(dev, mocks):
    dev["nodePools"] = [{"name": "cpu", "accelerator": "none", "instanceTypes": ["m7i.large"]}]
    dev["models"] = []
    rels = capacity_releases(mocks, dev)
    plugins = {"nvidia-device-plugin", "neuron"}
    assert {"karpenter-crd", "karpenter"} <= set(rels), f"Karpenter runs whatever the pools: {set(rels)}"
    assert not plugins & set(rels), f"no pool needs a device plugin: {set(rels)}"


def test_a_bottlerocket_only_gpu_stack_skips_the_nvidia_plugin(dev, mocks):
    dev["nodePools"][0]["amiAlias"] = "bottlerocket@v1.40.0"
    rels = capacity_releases(mocks, dev)
    assert "nvidia-device-plugin" not in rels, "Bottlerocket's NVIDIA variant ships its own device plugin"
    assert "neuron" in rels, "the Neuron pool still needs its chart"


def _models_args(stack: ResolvedStack, monkeypatch) -> ModelsArgs:
    """The arguments the Platform hands the Models component, with every concern before it built."""
    seen: list[ModelsArgs] = []

    class SpyModels(pulumi.ComponentResource):
        def __init__(self, name: str, args: ModelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
            super().__init__("test:index:Models", name, None, opts)
            seen.append(args)

    monkeypatch.setattr(platform_module, "Models", SpyModels)

    @pulumi.runtime.test
    def build():
        # The stack's Pulumi secrets, as __main__.py hands them over (Config.require_secret).
        values = {key: pulumi.Output.secret("test") for key in stack.config.secret_config}
        InferencePlatform("platform", InferencePlatformArgs(stack=stack, secret_values=values))

    build()
    assert len(seen) == 1, "one Models component per stack"
    return seen[0]


def test_later_concerns_get_the_scheduler_name_and_the_node_role_reaches_the_node_classes(dev, mocks, monkeypatch):
    args = _models_args(resolved_stack(dev), monkeypatch)
    assert args.neuron_scheduler == NEURON_SCHEDULER, "Neuron pods must name the scheduler the chart installs"
    # Neither the node role nor the capacity releases are handed on (no later concern reads them): the
    # node role reaches the EC2NodeClasses, and the NodePools wait for Karpenter's release (below).
    node_classes = [r for r in mocks.records if r.type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"]
    assert node_classes, "a node class per pool"
    for node_class in node_classes:
        assert node_class.inputs["spec"]["role"] == f"{CLUSTER}-karpenter-node", "nodes join with the node role"


def test_without_the_neuron_scheduler_workloads_get_no_scheduler_name(dev):
    dev["addons"]["neuron"]["scheduler"] = False
    stack = resolved_stack(dev)
    assert stack.platform.neuron_scheduler is None, "no scheduler extension, no scheduler name to hand on"
    (deployment,) = by_kind(engine_objects(stack, "llama-3-8b-neuron"), "Deployment")
    assert "schedulerName" not in deployment["spec"]["template"]["spec"], "the default scheduler places the pod"


def test_the_stack_exports_its_pools(dev_render):
    pools = {p["name"]: p for p in dev_render.outputs["nodePools"]}
    assert pools["inferentia"] == {
        "name": "inferentia",
        "accelerator": "neuron",
        "instanceTypes": ["inf2.xlarge", "inf2.24xlarge"],
    }


def test_queue_and_rule_names_are_per_cluster_and_within_aws_limits():
    from stacks.naming import INTERRUPTION_EVENTS, queue_name, rule_name

    long = "a-very-long-cluster-name-for-a-team-that-likes-long-names-xyz"
    names = [rule_name(c, e) for c in ("one", "two", long) for e in INTERRUPTION_EVENTS]
    assert len(set(names)) == len(names), "two clusters in one account never share a rule"
    assert all(len(n) <= 64 for n in names) and len(queue_name(long)) <= 80


def test_karpenter_crds_come_from_their_own_chart_at_the_same_version(dev_render):
    rels = releases(dev_render)
    crd, controller = rels["karpenter-crd"], rels["karpenter"]
    assert crd.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert crd.inputs["version"] == controller.inputs["version"], "CRDs and controller move together"
    assert controller.inputs["skipCrds"] is True and crd.urn in controller.depends_on
