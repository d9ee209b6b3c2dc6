"""Accelerator node health as alerts: one PrometheusRule in the monitoring namespace, pure builder.

The EKS node monitoring agent turns GPU and Neuron faults into node conditions and Karpenter's node
repair replaces the node (components/cluster.py, components/capacity/plugins.py); these alerts are
what an operator sees, including the cases repair does not cover (repair off, a pool above Karpenter's
unhealthy share, a fault the agent does not map to a condition). Every query reads the metric
catalog (stacks/metrics.py HEALTH_METRICS, KUBE_METRICS), and every alert's `action` annotation says
what it asks of the operator; docs/operator-guide.md "Node health and repair" is the runbook.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stacks.metrics import HEALTH_METRICS, KUBE_METRICS

from .collection import MONITORING_API, MONITORING_NAMESPACE, _meta

RULE_NAME = "accelerator-node-health"
RUNBOOK = "docs/operator-guide.md, Node health and repair"

# XID codes that mean the GPU or its node is at fault, not the program running on it (NVIDIA "XID
# Errors", docs.nvidia.com/deploy/xid-errors): 48 double-bit ECC error, 63 and 64 a row-remap
# (page-retirement) event and its failure, 74 NVLink error, 79 the GPU has fallen off the bus, 94 and
# 95 contained and uncontained ECC errors. Others (13, 31, 43: a kernel's own faults) ask for the
# workload's logs first.
HARDWARE_XIDS = (48, 63, 64, 74, 79, 94, 95)

# kube-state-metrics' `resource` label for the NVIDIA device plugin's resource (dots and slashes become
# underscores).
GPU_RESOURCE = "nvidia_com_gpu"


def _alert(name: str, expr: str, *, severity: str, wait: str, summary: str, action: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": wait,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "action": action, "runbook": f"{RUNBOOK}: {name}"},
    }


def _by_gpu(expr: str) -> str:
    return f"max by (Hostname, gpu) ({expr})"


def gpu_rules() -> list[dict[str, Any]]:
    """XID errors, double-bit ECC through row remapping, devices the plugin marked unhealthy, and a
    GPU node the DCGM exporter reads nothing from."""
    return [*_error_rules(), *_device_rules()]


def _error_rules() -> list[dict[str, Any]]:
    """What DCGM reports: XIDs (hardware codes apart) and row remapping."""
    xid = HEALTH_METRICS["xid"].series()
    hardware = " or ".join(f"({xid} == {code})" for code in HARDWARE_XIDS)
    return [
        _alert(
            "GpuHardwareXid",
            _by_gpu(hardware),
            severity="critical",
            wait="0m",
            summary="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} raised hardware XID {{ $value }}",
            action="The node's AcceleratedHardwareReady turns False and Karpenter replaces it after 10 minutes; "
            "if the node is still there after 15 (repair off or blocked), cordon and drain it and delete its "
            "NodeClaim.",
        ),
        _alert(
            "GpuXidError",
            f"max by (Hostname, gpu) (changes({HEALTH_METRICS['xid'].name}[15m])) > 0",
            severity="warning",
            wait="0m",
            summary="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} raised an XID error",
            action="Read the XID code (DCGM_FI_DEV_XID_ERRORS) and the pod's logs on that node: 13, 31 and 43 "
            "are the program's own faults (restart the pod); a hardware code also fires GpuHardwareXid.",
        ),
        _alert(
            "GpuRowRemapFailed",
            f"{_by_gpu(HEALTH_METRICS['remap_failure'].series())} > 0",
            severity="critical",
            wait="0m",
            summary="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} failed to remap a memory row",
            action="The GPU's memory is faulty for good: cordon and drain the node and delete its NodeClaim so "
            "Karpenter launches a new instance; the instance may land on the same host, so report it to AWS "
            "if it recurs.",
        ),
        _alert(
            "GpuUncorrectableEccRemapped",
            f"max by (Hostname, gpu) (increase({HEALTH_METRICS['remapped_uncorrectable'].name}[1h])) > 0",
            severity="warning",
            wait="0m",
            summary="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} remapped a row after a double-bit ECC error",
            action="The remap takes effect only after the GPU resets: drain the node at a quiet moment and "
            "delete its NodeClaim (a new instance) rather than wait for the next failure.",
        ),
    ]


def _device_rules() -> list[dict[str, Any]]:
    """What the node reports against what DCGM reads: GPUs the device plugin marked unhealthy, and a GPU
    node without DCGM series (the exporter gone, or the GPUs fallen off the bus)."""
    capacity = KUBE_METRICS["node_capacity"].series(f'resource="{GPU_RESOURCE}"')
    allocatable = KUBE_METRICS["node_allocatable"].series(f'resource="{GPU_RESOURCE}"')
    present = f'label_replace({_by_gpu(HEALTH_METRICS["gpu_present"].series())}, "node", "$1", "Hostname", "(.*)")'
    return [
        _alert(
            "GpuDeviceUnhealthy",
            f"({capacity} - on (node) {allocatable}) > 0",
            severity="critical",
            wait="5m",
            summary="{{ $labels.node }} has {{ $value }} GPU(s) the device plugin marked unhealthy",
            action="Pods cannot be scheduled on the lost GPUs; the node monitoring agent usually flags the same "
            "fault and Karpenter replaces the node. If not, cordon, drain and delete its NodeClaim.",
        ),
        _alert(
            "GpuNodeWithoutMetrics",
            f"({capacity} > 0) unless on (node) {present}",
            severity="critical",
            wait="10m",
            summary="{{ $labels.node }} has GPUs but the DCGM exporter reads none of them",
            action="Either the exporter is not running there (kubectl -n monitoring get pods -o wide) or the "
            "GPUs fell off the bus (XID 79): check the node's conditions; replace the node when "
            "AcceleratedHardwareReady is False.",
        ),
    ]


def neuron_rules() -> list[dict[str, Any]]:
    """Uncorrectable Neuron ECC events and hardware execution errors (neuron-monitor)."""
    ecc = HEALTH_METRICS["neuron_ecc"].series('event_type=~"mem_ecc_uncorrected|sram_ecc_uncorrected"')
    errors = HEALTH_METRICS["neuron_errors"].series('error_type="hardware"')
    return [
        _alert(
            "NeuronUncorrectableEcc",
            f"sum by (instance_id, neuron_device_index) (increase({ecc}[10m])) > 0",
            severity="critical",
            wait="0m",
            summary="Neuron device {{ $labels.neuron_device_index }} on {{ $labels.instance_id }} reported an "
            "uncorrectable ECC error",
            action="The device's results can no longer be trusted: the node monitoring agent marks "
            "AcceleratedHardwareReady False and Karpenter replaces the node; if it stays, cordon, drain and "
            "delete its NodeClaim.",
        ),
        _alert(
            "NeuronHardwareErrors",
            f"sum by (instance_id) (increase({errors}[10m])) > 0",
            severity="warning",
            wait="0m",
            summary="The Neuron runtime on {{ $labels.instance_id }} reported hardware execution errors",
            action="Read the model pod's logs and the node's conditions; when errors repeat, drain the node and "
            "delete its NodeClaim.",
        ),
    ]


def node_health_rule(accelerators: Iterable[str]) -> dict[str, Any] | None:
    """The PrometheusRule `accelerator-node-health` for the stack's accelerators; None without one."""
    present = set(accelerators)
    groups = [
        {"name": f"node-health.{kind}", "rules": build()}
        for kind, build in (("nvidia", gpu_rules), ("neuron", neuron_rules))
        if kind in present
    ]
    if not groups:
        return None
    return {
        "apiVersion": MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": _meta(RULE_NAME, MONITORING_NAMESPACE),
        "spec": {"groups": groups},
    }
