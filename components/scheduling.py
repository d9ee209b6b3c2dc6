"""Placement of pods on the platform's node pools: the taints a pool carries and what a pod on it
needs (tolerations, node selector, scheduler). Pure functions, shared by the NodePool builder and
every workload builder, so a taint and its toleration are written once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stacks.config.pools import NodePoolSection
from stacks.sharing import CONFIG_LABEL, config_name

POOL_LABEL = "inference-platform.io/pool"
ACCELERATOR_LABEL = "inference-platform.io/accelerator"
# On the nodes of `efa: true` pools: the EFA device plugin runs only there.
EFA_LABEL = "inference-platform.io/efa"
TAINT_KEYS = {"nvidia": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}


def pool_taints(pool: NodePoolSection) -> list[dict[str, str]]:
    """Accelerator pools are tainted so that nothing without a toleration lands on them."""
    key = TAINT_KEYS.get(pool.accelerator)
    return [{"key": key, "value": "true", "effect": "NoSchedule"}] if key else []


def needs_nvidia_device_plugin(pool: NodePoolSection) -> bool:
    """AL2023's NVIDIA AMI ships the driver but no device plugin; Bottlerocket's NVIDIA variant runs
    its own, so our DaemonSet stays off those nodes (it lands only where the label below is)."""
    return pool.accelerator == "nvidia" and pool.ami_family == "al2023"


def pool_labels(pool: NodePoolSection) -> dict[str, str]:
    labels = {POOL_LABEL: pool.name, ACCELERATOR_LABEL: pool.accelerator}
    if needs_nvidia_device_plugin(pool):
        # The NVIDIA device plugin's default affinity needs this label when NFD is not installed.
        labels["nvidia.com/gpu.present"] = "true"
    if pool.efa:
        labels[EFA_LABEL] = "true"
    if (config := config_name(pool)) is not None:
        # The device plugin's config-manager reads this label to pick the node's sharing config.
        labels[CONFIG_LABEL] = config
    return labels


@dataclass(frozen=True)
class Placement:
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    scheduler_name: str | None = None

    def place(self, pod_spec: dict[str, Any]) -> dict[str, Any]:
        """The pod spec with this placement merged in."""
        spec = dict(pod_spec)
        spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **self.node_selector}
        if self.tolerations:
            spec["tolerations"] = [*spec.get("tolerations", []), *self.tolerations]
        if self.scheduler_name:
            spec["schedulerName"] = self.scheduler_name
        return spec


def placement(pool: NodePoolSection, neuron_scheduler: str | None = None) -> Placement:
    """Where a workload of this pool runs: on the pool's nodes, tolerating exactly its taint."""
    tolerations = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in pool_taints(pool)]
    scheduler = neuron_scheduler if pool.accelerator == "neuron" else None
    return Placement(node_selector={POOL_LABEL: pool.name}, tolerations=tolerations, scheduler_name=scheduler)
