"""Schedulability: which instance types a pod fits on, checked against shared/facts/instances.json.

Every expected figure below is read from the facts file (Karpenter v1.14's allocatable), so a case
fails if the catalog, the formulas or the DaemonSet table drift from the facts.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from stacks import fit as fit_arithmetic
from stacks import hardware
from stacks.config.pools import NodePoolSection
from stacks.fit import Requests, allocatable, daemonset_overhead, explain_no_fit, fit
from stacks.load import ROOT

# shared/ sits beside the checkout (CI) or beside the worktrees directory.
_CANDIDATES = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
if os.environ.get("INFERENCE_PLATFORM_SCHEMAS"):
    _CANDIDATES.insert(0, Path(os.environ["INFERENCE_PLATFORM_SCHEMAS"]).parent)
FACTS = next(
    (c / "facts" / "instances.json" for c in _CANDIDATES if (c / "facts" / "instances.json").exists()), hardware.DATA
)


def facts() -> dict[str, dict]:
    return {e["name"]: e for e in json.loads(FACTS.read_text())["instances"]}


def alloc(name: str) -> dict:
    return facts()[name]["karpenter_allocatable"]


def pool(**kw) -> NodePoolSection:
    raw = {"name": "p", "accelerator": "nvidia", "instanceTypes": ["g6.xlarge"]}
    raw.update(kw)
    return NodePoolSection.model_validate(raw)


def neuron_pool(*types: str) -> NodePoolSection:
    return pool(accelerator="neuron", instanceTypes=list(types))


ALL_INF2 = ["inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"]
GPU_FAMILIES = ["g5", "g6", "g6e", "p4d", "p4de", "p5", "p5e", "p5en"]


def test_the_catalog_copy_is_the_shared_facts_file():
    assert json.loads(FACTS.read_text()) == json.loads(hardware.DATA.read_text()), "stacks/data is a copy"


def test_the_seed_example_fails_on_inf2_xlarge_naming_all_three_resources():
    p = neuron_pool("inf2.xlarge")
    req = Requests(cpu_m=8000, memory_mib=24 * 1024, neuron=2)
    report = fit(req, p)
    assert not report.ok
    short = {s.resource for s in report.misses["inf2.xlarge"]}
    assert short == {"cpu", "memory", "aws.amazon.com/neuron"}, short
    a = alloc("inf2.xlarge")
    message = explain_no_fit("model seed", req, p, report)
    for text in ("model seed", "pool p", "inf2.xlarge", "cpu", "memory", "aws.amazon.com/neuron"):
        assert text in message, message
    assert f"{a['cpu_millicores']}m" in message and f"{a['memory_mib']}Mi" in message, "shows the real allocatable"


def test_the_worked_example_figures_of_inf2_xlarge_match_the_facts():
    a = allocatable(neuron_pool("inf2.xlarge"), hardware.catalog()["inf2.xlarge"])
    f = alloc("inf2.xlarge")
    assert (a.cpu_m, a.memory_mib, a.neuron, a.neuroncore, a.pods) == (
        f["cpu_millicores"],
        f["memory_mib"],
        f["aws.amazon.com/neuron"],
        f["aws.amazon.com/neuroncore"],
        f["pods"],
    )
    assert (a.cpu_m, a.memory_mib, a.pods) == (3920, 14162, 58)


def test_inf2_8xlarge_still_has_one_neuron_device_so_two_do_not_fit():
    report = fit(Requests(cpu_m=8000, memory_mib=24 * 1024, neuron=2), neuron_pool("inf2.8xlarge"))
    assert [s.resource for s in report.misses["inf2.8xlarge"]] == ["aws.amazon.com/neuron"]


def test_the_smallest_inf2_that_fits_the_seed_pod_is_inf2_24xlarge():
    report = fit(Requests(cpu_m=8000, memory_mib=24 * 1024, neuron=2), neuron_pool(*ALL_INF2))
    assert report.fits == ["inf2.24xlarge", "inf2.48xlarge"]


def test_an_eight_gpu_pod_fits_only_the_eight_gpu_types():
    p = pool(instanceTypes=[], instanceFamilies=GPU_FAMILIES)
    report = fit(Requests(gpu=8), p, daemonset_overhead(p))
    expected = {n for n, e in facts().items() if e["karpenter_allocatable"]["nvidia.com/gpu"] >= 8}
    assert set(report.fits) == expected
    assert set(report.fits) == {
        "g5.48xlarge",
        "g6.48xlarge",
        "g6e.48xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
    }


def test_an_eight_gpu_pod_cannot_fit_a_four_gpu_node():
    report = fit(Requests(gpu=8), pool(instanceTypes=["g6.12xlarge"]))
    assert not report.ok and report.misses["g6.12xlarge"][0].available == "4"


def test_one_gpu_with_a_whole_nodes_memory_fails_by_the_daemonset_overhead():
    p = pool(instanceTypes=["g6.xlarge"])
    exactly = Requests(gpu=1, memory_mib=alloc("g6.xlarge")["memory_mib"])
    assert fit(exactly, p).ok, "fits Karpenter's bare allocatable"
    assert not fit(exactly, p, daemonset_overhead(p)).ok, "but not once aws-node, kube-proxy and ebs-csi run"


def test_cpu_that_exactly_fills_the_allocatable_after_daemonsets_fits():
    p = pool(instanceTypes=["g6e.xlarge"])
    over = daemonset_overhead(p)
    cpu = alloc("g6e.xlarge")["cpu_millicores"] - over.cpu_m
    assert fit(Requests(gpu=1, cpu_m=cpu), p, over).ok
    assert not fit(Requests(gpu=1, cpu_m=cpu + 1), p, over).ok


def test_neuroncores_are_counted_per_core_two_per_inferentia2_chip():
    p = neuron_pool("inf2.xlarge", "inf2.24xlarge")
    report = fit(Requests(neuroncore=4), p)
    assert report.fits == ["inf2.24xlarge"]
    assert alloc("inf2.24xlarge")["aws.amazon.com/neuroncore"] == 12


def test_a_neurondevice_request_is_refused_on_every_type():
    p = neuron_pool(*ALL_INF2)
    report = fit(Requests(neurondevice=1), p)
    assert not report.ok
    assert all(m[0].resource == "aws.amazon.com/neurondevice" for m in report.misses.values())
    assert "Karpenter does not model it" in explain_no_fit("model x", Requests(neurondevice=1), p, report)


def test_p5_pods_are_limited_to_100_by_the_facts():
    a = allocatable(pool(instanceTypes=["p5.48xlarge"]), hardware.catalog()["p5.48xlarge"])
    assert a.pods == alloc("p5.48xlarge")["pods"] == 100


def test_ephemeral_storage_is_the_root_volume_less_eviction_and_kube_reserved():
    default = pool(rootVolumeGiB=20)
    a = allocatable(default, hardware.catalog()["g6.xlarge"])
    assert a.ephemeral_mib == 17 * 1024 == 17 * 1024, "the facts' 17Gi for the default 20Gi root volume"
    big = allocatable(pool(rootVolumeGiB=200), hardware.catalog()["g6.xlarge"])
    assert big.ephemeral_mib == 200 * 1024 - math.ceil(200 * 1024 * 0.1) - 1024


def test_raid0_makes_the_instance_store_the_ephemeral_storage():
    p = pool(instanceTypes=["g6.12xlarge"], localNvme="raid0", rootVolumeGiB=100)
    a = allocatable(p, hardware.catalog()["g6.12xlarge"])
    nvme_mib = facts()["g6.12xlarge"]["nvme_gib"] * 10**9 // 2**20
    assert a.ephemeral_mib == nvme_mib - math.ceil(nvme_mib * 0.1) - 1024
    assert not fit(Requests(gpu=1, ephemeral_mib=500 * 1024), pool(instanceTypes=["g6.12xlarge"])).ok
    assert fit(Requests(gpu=1, ephemeral_mib=500 * 1024), p).ok, "3.7TB of NVMe holds 500Gi"


def test_a_cpu_pod_fits_an_m7i_pool_and_the_cpu_catalog_reproduces_karpenters_figures():
    p = pool(accelerator="none", instanceTypes=["m7i.large", "m7i.2xlarge"])
    report = fit(Requests(cpu_m=4000, memory_mib=8192), p, daemonset_overhead(p))
    assert report.fits == ["m7i.2xlarge"]
    for itype in hardware.catalog().values():
        if itype.family not in ("m7i", "c7i"):
            continue
        m = int(itype.memory_gib * 1024)
        pods = itype.max_enis * (itype.ipv4_per_eni - 1) + 2
        memory = m - math.ceil(m * 0.075) - (11 * pods + 255) - 100
        v = itype.vcpu
        kube_cpu = 60 + 10 + int(1000 * min(max(v - 2, 0), 2) * 0.005) + int(1000 * max(v - 4, 0) * 0.0025)
        assert (itype.alloc_cpu_m, itype.alloc_memory_mib, itype.alloc_pods) == (v * 1000 - kube_cpu, memory, pods)


# Without the stack file only the pool is known: every DaemonSet that may be there counts (the shared
# model cache's CSI node, the accelerator exporter), so a borderline fit is refused rather than admitted.
NODE_AGENTS = {"aws-node", "kube-proxy", "eks-pod-identity-agent", "ebs-csi-node", "efs-csi-node", "fsx-csi-node"}


@pytest.mark.parametrize(
    ("pool_kind", "expected"),
    [
        ("none", NODE_AGENTS),
        ("nvidia", NODE_AGENTS | {"nvidia-device-plugin", "dcgm-exporter"}),
        ("neuron", NODE_AGENTS | {"neuron-device-plugin", "neuron-node-problem-detector", "neuron-monitor"}),
    ],
)
def test_each_pool_counts_the_daemonsets_that_land_on_its_nodes(pool_kind, expected):
    types = {"none": ["m7i.large"], "nvidia": ["g6.xlarge"], "neuron": ["inf2.xlarge"]}[pool_kind]
    p = pool(accelerator=pool_kind, instanceTypes=types)
    assert {d.name for d in fit_arithmetic.daemonsets_on(p)} == expected
    assert daemonset_overhead(p).cpu_m == sum(d.requests.cpu_m for d in fit_arithmetic.daemonsets_on(p)) >= 135


def test_the_daemonset_table_is_open_for_other_concerns():
    extra = fit_arithmetic.NodeDaemonSet("efs-csi-node", Requests(cpu_m=50), "test", lambda p, c: True)
    before = daemonset_overhead(pool()).cpu_m
    fit_arithmetic.NODE_DAEMONSETS.append(extra)
    try:
        assert daemonset_overhead(pool()).cpu_m == before + 50
    finally:
        fit_arithmetic.NODE_DAEMONSETS.remove(extra)


def test_quantities_parse_like_kubernetes():
    assert fit_arithmetic.cpu_millicores("500m") == 500 and fit_arithmetic.cpu_millicores("2.5") == 2500
    assert fit_arithmetic.memory_mib("24Gi") == 24576 and fit_arithmetic.memory_mib("1Ti") == 1024**2
