"""GPU node health and repair (#30 item 1): the EKS node monitoring agent add-on, Karpenter's node
repair gate, the accelerator node-health alerts and the warning where repair stops."""

from __future__ import annotations

import json
import re

from components.capacity.plugins import karpenter_values
from components.monitoring.health import HARDWARE_XIDS, node_health_rule
from stacks.metrics import HEALTH_METRICS, KUBE_METRICS
from stacks.mocks import RecordingMocks
from stacks.rules.health import repairable_at_once
from stacks.versions import EKS_ADDONS
from tests.builders import resolved_stack

AGENT = "eks-node-monitoring-agent"


def _agent(dev_render):
    mocks: RecordingMocks = dev_render.mocks
    return mocks.named("aws:eks/addon:Addon", f"platform-cluster-{AGENT}")


def test_the_cluster_runs_the_node_monitoring_agent_add_on_at_its_catalog_pin(dev_render):
    agent = _agent(dev_render)
    assert agent.inputs["addonName"] == AGENT
    assert agent.inputs["addonVersion"] == EKS_ADDONS["1.34"][AGENT] == "v1.6.7-eksbuild.1"
    assert not agent.inputs.get("podIdentityAssociations"), "the agent calls no AWS API: no role"


def test_the_agent_and_its_dcgm_host_engine_tolerate_the_accelerator_taints(dev_render):
    config = json.loads(_agent(dev_render).inputs["configurationValues"])
    assert config["nodeAgent"]["tolerations"] == [{"operator": "Exists"}], "the agent runs on every tainted node"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in config["dcgmAgent"][
        "tolerations"
    ], "dcgm-server tolerates nothing by default: without this it never starts on a GPU pool"


def test_the_agent_is_installed_after_the_system_nodes_and_outlives_the_kubernetes_provider(dev_render):
    mocks: RecordingMocks = dev_render.mocks
    provider = mocks.of_type("pulumi:providers:kubernetes")[0]
    assert _agent(dev_render).urn in provider.depends_on, "like every add-on, deleted after the cluster's objects"
    system = mocks.of_type("aws:eks/nodeGroup:NodeGroup")[0]
    assert system.urn in _agent(dev_render).depends_on, "its DaemonSets need nodes to run on"


def test_node_repair_is_on_where_the_agent_runs_and_a_stack_key_turns_it_off(dev):
    assert resolved_stack(dev).platform.node_repair is True
    dev.setdefault("addons", {})["karpenter"] = {"nodeRepair": False}
    assert resolved_stack(dev).platform.node_repair is False
    dev["addons"]["karpenter"] = {}
    dev["addons"]["nodeMonitoringAgent"] = {"enabled": False}
    assert resolved_stack(dev).platform.node_repair is False, "without the agent repair is opt-in"


def test_karpenter_gets_the_node_repair_feature_gate_merged_beside_the_others():
    values = karpenter_values(cluster="c", queue="q", static_capacity=True, node_repair=True)
    assert values["settings"]["featureGates"] == {"staticCapacity": True, "nodeRepair": True}
    assert "featureGates" not in karpenter_values(cluster="c", queue="q")["settings"]


def _alerts(accelerators):
    rule = node_health_rule(accelerators)
    assert rule is not None
    return {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}


def test_every_node_health_alert_queries_catalog_metrics_and_says_what_to_do():
    catalog = {m.name for m in (*HEALTH_METRICS.values(), *KUBE_METRICS.values())}
    alerts = _alerts({"nvidia", "neuron"})
    assert {"GpuHardwareXid", "GpuRowRemapFailed", "GpuNodeWithoutMetrics", "NeuronUncorrectableEcc"} <= set(alerts)
    for name, alert in alerts.items():
        names = set(re.findall(r"\b(DCGM_FI_[A-Z_]+|kube_[a-z_]+|hardware_[a-z_]+|execution_[a-z_]+)\b", alert["expr"]))
        assert names and names <= catalog, f"{name} reads only catalog metrics: {names - catalog}"
        assert alert["annotations"]["action"], f"{name} tells the operator what to do"


def test_the_xid_alert_reads_dcgm_xid_errors_and_names_the_hardware_codes():
    expr = _alerts({"nvidia"})["GpuHardwareXid"]["expr"]
    assert "DCGM_FI_DEV_XID_ERRORS" in expr
    assert all(f"== {code})" in expr for code in HARDWARE_XIDS) and 79 in HARDWARE_XIDS


def test_a_gpu_node_without_dcgm_metrics_is_an_alert():
    expr = _alerts({"nvidia"})["GpuNodeWithoutMetrics"]["expr"]
    assert 'kube_node_status_capacity{resource="nvidia_com_gpu"}' in expr and "unless on (node)" in expr


def test_the_rule_holds_only_the_stacks_accelerators():
    assert set(_alerts({"neuron"})) == {"NeuronUncorrectableEcc", "NeuronHardwareErrors"}
    assert node_health_rule({"none"}) is None


def test_karpenter_repairs_one_node_at_a_time_in_a_nodepool_of_up_to_five():
    assert [repairable_at_once(n) for n in (1, 2, 4, 5, 6, 10, 11)] == [1, 1, 1, 1, 2, 2, 3]


def test_a_small_gpu_pool_with_repair_on_warns_naming_its_limit_and_the_manual_drain(dev):
    from stacks.pipeline import check_sections, stack_warnings

    dev["nodePools"][0]["limits"] = {"accelerators": 4}  # g6.xlarge: up to four nodes
    found = [w for w in stack_warnings(check_sections(dev, "us-west-2")) if "NodeRepairBlocked" in w.message]
    assert found, "a pool of a few GPU nodes warns"
    assert found[0].path.endswith("nodePools[0].limits.accelerators")
    assert "drain" in found[0].message and "NodeClaim" in found[0].message
    dev["addons"] = {"karpenter": {"nodeRepair": False}}
    assert not [w for w in stack_warnings(check_sections(dev, "us-west-2")) if "NodeRepairBlocked" in w.message]
