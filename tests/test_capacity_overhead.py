"""The platform's own node agents in the fit check: what the stack turns on (monitoring exporters, the
model cache's CSI node driver, the Neuron problem detector) comes off every node's allocatable."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.monitoring.collection import dcgm_exporter_values, neuron_monitor
from components.peers import PROMETHEUS
from stacks import fit as fit_arithmetic
from stacks import hardware
from stacks.config import StackConfig
from stacks.errors import ConfigError
from stacks.fit import EXPORTER_REQUESTS, Requests, allocatable, daemonset_overhead, fit
from stacks.pipeline import check_sections
from stacks.versions import IMAGES
from tests.conftest import EXAMPLES, sections_of


def config(sections: dict[str, Any]) -> StackConfig:
    return check_sections(sections, "us-west-2").config


def monitoring(sections: dict[str, Any], on: bool) -> dict[str, Any]:
    sections = copy.deepcopy(sections)
    sections["addons"]["monitoring"] = {"enabled": on}
    if not on:
        for model in sections["models"]:
            model.pop("slo", None)  # alerted on by Prometheus: refused without monitoring
            model.pop("autoscaling", None)  # an HPA reads Prometheus too: refused without monitoring
    return sections


def names(pool_name: str, cfg: StackConfig) -> set[str]:
    pool = cfg.pool(pool_name)
    assert pool is not None
    return {d.name for d in fit_arithmetic.daemonsets_on(pool, cfg)}


def test_allocatable_on_g6_xlarge_drops_by_the_dcgm_exporters_request_when_monitoring_is_on(dev):
    off = config(monitoring(dev, False))
    on = config(monitoring(dev, True))
    pool = on.pool("gpu")
    assert pool is not None
    g6 = hardware.catalog()["g6.xlarge"]
    without = allocatable(pool, g6, daemonset_overhead(pool, off))
    with_exporter = allocatable(pool, g6, daemonset_overhead(pool, on))
    assert (without.cpu_m - with_exporter.cpu_m, without.memory_mib - with_exporter.memory_mib) == (100, 128), (
        "the DCGM exporter's 100m / 128Mi runs on every GPU node once monitoring is on"
    )
    assert "dcgm-exporter" in names("gpu", on) and "dcgm-exporter" not in names("gpu", off)
    assert "dcgm-exporter" not in names("inferentia", on), "it selects GPU nodes only"


def test_a_replica_that_fills_a_gpu_node_fits_without_monitoring_and_not_with_it(dev):
    off = config(monitoring(dev, False))
    on = config(monitoring(dev, True))
    pool = on.pool("gpu")
    assert pool is not None
    g6 = hardware.catalog()["g6.xlarge"]
    room = allocatable(pool, g6, daemonset_overhead(pool, off))
    whole = Requests(cpu_m=room.cpu_m, memory_mib=room.memory_mib, gpu=1)
    assert "g6.xlarge" in fit(whole, pool, daemonset_overhead(pool, off)).fits
    misses = fit(whole, pool, daemonset_overhead(pool, on)).misses["g6.xlarge"]
    assert {m.resource for m in misses} == {"cpu", "memory"}, "the exporter's requests no longer fit beside it"


def test_the_fit_rule_refuses_a_model_sized_to_the_node_once_monitoring_takes_its_share(dev):
    off = config(monitoring(dev, False))
    pool = off.pool("gpu")
    assert pool is not None
    room = allocatable(pool, hardware.catalog()["g6.12xlarge"], daemonset_overhead(pool, off))
    dev["models"][0]["resources"] = {"cpu": f"{room.cpu_m}m", "memory": f"{room.memory_mib}Mi"}
    config(monitoring(dev, False))  # accepted: it fits exactly
    with pytest.raises(ConfigError) as info:
        config(monitoring(dev, True))
    assert any(str(p).startswith("inference-platform:models[0]") for p in info.value.problems), info.value


def test_neuron_monitor_counts_on_neuron_nodes_only_when_monitoring_is_on(dev):
    assert "neuron-monitor" in names("inferentia", config(monitoring(dev, True)))
    assert "neuron-monitor" not in names("inferentia", config(monitoring(dev, False)))
    assert "neuron-monitor" not in names("gpu", config(monitoring(dev, True)))


def test_the_neuron_problem_detector_counts_only_when_it_is_on(dev):
    assert "neuron-node-problem-detector" in names("inferentia", config(dev))
    dev["addons"]["neuron"]["nodeProblemDetector"] = False
    assert "neuron-node-problem-detector" not in names("inferentia", config(dev))


@pytest.mark.parametrize(
    ("example", "present", "absent"), [("storage-efs", "efs", "fsx"), ("storage-fsx", "fsx", "efs")]
)
def test_the_model_caches_csi_node_driver_counts_on_every_pool_for_its_cache_only(example, present, absent):
    path = next(p for p in EXAMPLES if p.name == f"Pulumi.{example}.yaml")
    cfg = config(sections_of(path))
    for pool in cfg.node_pools:
        got = names(pool.name, cfg)
        assert f"{present}-csi-node" in got and f"{absent}-csi-node" not in got, (pool.name, got)


def test_the_fsx_csi_node_costs_its_plugin_and_two_sidecars():
    fsx = next(d for d in fit_arithmetic.NODE_DAEMONSETS if d.name == "fsx-csi-node")
    # chart 1.17.0: node.resources 10m/40Mi, node-driver-registrar and liveness-probe 10m/32Mi each.
    assert fsx.requests == Requests(cpu_m=30, memory_mib=104)
    efs = next(d for d in fit_arithmetic.NODE_DAEMONSETS if d.name == "efs-csi-node")
    assert efs.requests == Requests(), "chart 4.4.1 sets no requests on the EFS node pods"


def test_the_exporters_request_exactly_what_the_fit_check_subtracts():
    assert dcgm_exporter_values()["resources"]["requests"] == EXPORTER_REQUESTS["nvidia"]
    daemonset = next(o for o in neuron_monitor(IMAGES["neuron-monitor"], PROMETHEUS) if o["kind"] == "DaemonSet")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == EXPORTER_REQUESTS["neuron"]
    table = {d.name: d.requests for d in fit_arithmetic.NODE_DAEMONSETS}
    assert table["dcgm-exporter"] == Requests(cpu_m=100, memory_mib=128)
    assert table["neuron-monitor"] == Requests(cpu_m=256, memory_mib=128)
