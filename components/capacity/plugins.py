"""Helm values for the device plugins and Karpenter, and which of them a stack needs. Pure functions.

- NVIDIA device plugin (NVIDIA/k8s-device-plugin): installed when some NVIDIA pool runs AL2023,
  whose NVIDIA AMI ships the driver and container toolkit but no plugin. It uses the host's driver
  (nothing installs one), tolerates the GPU taint, and lands on nodes labelled
  `nvidia.com/gpu.present=true` (the pool label; no NFD/GFD is installed).
- AWS Neuron chart (aws-neuron/neuron-helm-charts): installed when some pool is Neuron. Device
  plugin always; the scheduler extension and the node problem detector as `addons.neuron` asks.
  With the scheduler on, Neuron pods must name NEURON_SCHEDULER: the Capacity component exports it
  and the engines read it from there.
- AWS EFA device plugin (aws/eks-charts aws-efa-k8s-device-plugin): installed when some pool has
  `efa: true`, which advertises `vpc.amazonaws.com/efa`. Its chart tolerates only CriticalAddonsOnly,
  so it gets the EFA pools' taints, and lands only on nodes labelled EFA_LABEL (its own affinity
  already limits it to EFA instance types).
  With `gpuSharing` on some pool, its sharing config (`config.map`, one named config per distinct
  sharing, the default whole GPUs) which the plugin's config-manager picks per node by the
  `nvidia.com/device-plugin.config` label the pool's NodePool sets (stacks/sharing.py).
- Karpenter: its `staticCapacity` feature gate (alpha, off in the chart) only when some pool is
  static; `nodeOverlay` (alpha) only when some pool renders a NodeOverlay (shared GPUs, g6f vGPUs);
  `reservedCapacity` is on by default in chart 1.14.1 and left to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import yaml

from stacks.config.addons import AddonsSection, Neuron
from stacks.fit import daemonset_requests
from stacks.naming import SYSTEM_NODE_LABEL
from stacks.resolved import NEURON_SCHEDULER, ResolvedPool
from stacks.sharing import DEFAULT_CONFIG, config_name, plugin_config

from ..scheduling import ACCELERATOR_LABEL, EFA_LABEL, TAINT_KEYS, needs_nvidia_device_plugin, pool_taints
from .nodepools import node_overlays

if TYPE_CHECKING:  # annotations only: this module stays importable without the Pulumi SDK
    import pulumi

KARPENTER_SERVICE_ACCOUNT = "karpenter"


def needs_nvidia_plugin(addons: AddonsSection, pools: Sequence[ResolvedPool]) -> bool:
    return addons.nvidia_device_plugin.enabled and any(needs_nvidia_device_plugin(p.config) for p in pools)


def needs_neuron_chart(addons: AddonsSection, pools: Sequence[ResolvedPool]) -> bool:
    return addons.neuron.enabled and any(p.accelerator == "neuron" for p in pools)


def needs_efa_plugin(pools: Sequence[ResolvedPool]) -> bool:
    return any(p.config.efa for p in pools)


def needs_static_capacity(pools: Sequence[ResolvedPool]) -> bool:
    return any(p.static for p in pools)


def needs_capacity_buffer(pools: Sequence[ResolvedPool]) -> bool:
    """Some pool keeps warm nodes (`warmNodes`): Karpenter's capacityBuffer gate must be on."""
    return any(p.warm_nodes for p in pools)


def efa_values(pools: Sequence[ResolvedPool]) -> dict[str, Any]:
    """The EFA device plugin on the EFA pools' nodes, tolerating each of their taints (the chart adds
    CriticalAddonsOnly itself)."""
    tolerations: list[dict[str, str]] = []
    for pool in pools:
        if not pool.config.efa:
            continue
        for taint in pool_taints(pool.config):
            toleration = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
            if toleration not in tolerations:
                tolerations.append(toleration)
    return {
        "tolerations": tolerations,
        "nodeSelector": {EFA_LABEL: "true"},
        "resources": {"requests": daemonset_requests("aws-efa-k8s-device-plugin"), "limits": {"memory": "128Mi"}},
        # The chart's container securityContext stays privileged and root (it opens the
        # /dev/infiniband verbs devices of the host; stacks/chart_waivers.py says so per check); the
        # plugin writes only its socket under the mounted /var/lib/kubelet/device-plugins.
        "securityContext": {"readOnlyRootFilesystem": True},
    }


def _toleration(accelerator: str) -> dict[str, str]:
    return {"key": TAINT_KEYS[accelerator], "operator": "Exists", "effect": "NoSchedule"}


def needs_node_overlay(pools: Sequence[ResolvedPool]) -> bool:
    """Some pool has a NodeOverlay (shared GPUs, or g6f vGPUs): Karpenter's nodeOverlay gate must be on."""
    return any(node_overlays(p.config) for p in pools)


def sharing_config(pools: Sequence[ResolvedPool]) -> dict[str, Any]:
    """The device plugin's `config` values when some pool shares its GPUs (chart 0.20.0: `config.map` of
    named configs, each a config file as text; `config.default` for nodes without the label): one config
    per distinct sharing, picked per node by the pool's CONFIG_LABEL; none otherwise (whole GPUs, the
    plugin's built-in defaults). Only the pools the chart's plugin runs on (AL2023): a Bottlerocket pool's
    host plugin takes its sharing from the node's userData settings."""
    named = {
        name: p.config
        for p in pools
        if needs_nvidia_device_plugin(p.config) and (name := config_name(p.config)) is not None
    }
    if not named:
        return {}
    configs = {DEFAULT_CONFIG: plugin_config(None)} | {name: plugin_config(pool) for name, pool in named.items()}
    return {
        "config": {
            "map": {name: yaml.safe_dump(body, sort_keys=False) for name, body in configs.items()},
            "default": DEFAULT_CONFIG,
        }
    }


def nvidia_values(pools: Sequence[ResolvedPool] = ()) -> dict[str, Any]:
    return {
        **sharing_config(pools),
        # The AL2023 NVIDIA AMI has the driver at the host root; the plugin installs none.
        "nvidiaDriverRoot": "/",
        "gfd": {"enabled": False},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, _toleration("nvidia")],
        "priorityClassName": "system-node-critical",
        # Every container of the plugin and of its MPS daemon (the chart's one `resources`): bounded.
        "resources": {"requests": daemonset_requests("nvidia-device-plugin"), "limits": {"memory": "256Mi"}},
        # The runtime's seccomp profile for the plugin (its container drops every capability).
        "podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }


def neuron_values(addon: Neuron) -> dict[str, Any]:
    system = dict(SYSTEM_NODE_LABEL)
    values: dict[str, Any] = {
        "devicePlugin": {"enabled": True},
        "scheduler": {"enabled": addon.scheduler},
        "npd": {"enabled": addon.node_problem_detector},
    }
    if addon.scheduler:
        values["scheduler"].update(
            {
                "nodeSelector": system,
                "customScheduler": {"enabled": True, "fullnameOverride": NEURON_SCHEDULER, "nodeSelector": system},
            }
        )
    if addon.node_problem_detector:
        values["npd"]["nodeSelector"] = {ACCELERATOR_LABEL: "neuron"}
    return values


def karpenter_values(
    *,
    cluster: str,
    queue: pulumi.Input[str],
    static_capacity: bool = False,
    capacity_buffer: bool = False,
    node_overlay: bool = False,
    node_repair: bool = False,
) -> dict[str, Any]:
    settings: dict[str, Any] = {"clusterName": cluster, "interruptionQueue": queue}
    # Helm merges this map into the chart's featureGates: the other gates keep their defaults. All three
    # are ALPHA and off in chart 1.14.1 (values.yaml settings.featureGates); the deployment passes them to
    # the controller as FEATURE_GATES. nodeRepair replaces a node whose AcceleratedHardwareReady (set by
    # the EKS node monitoring agent) or Ready condition stays bad past its toleration.
    gates = {"staticCapacity": True} if static_capacity else {}
    if capacity_buffer:
        gates["capacityBuffer"] = True
    if node_overlay:
        gates["nodeOverlay"] = True
    if node_repair:
        gates["nodeRepair"] = True
    if gates:
        settings["featureGates"] = gates
    return {
        "settings": settings,
        "replicas": 2,
        "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
        # On the managed system nodes: Karpenter must never run on a node it manages itself.
        "nodeSelector": {"kubernetes.io/os": "linux", **SYSTEM_NODE_LABEL},
        "serviceAccount": {"create": True, "name": KARPENTER_SERVICE_ACCOUNT},
        "controller": {
            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
        },
    }
