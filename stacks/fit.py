"""Schedulability: does a pod fit any instance type of a Karpenter NodePool, and why not.

Pure functions over the hardware catalog (stacks/hardware.py) and Karpenter's allocatable formulas
(aws/karpenter-provider-aws v1.14.1, pkg/providers/instancetype/types.go): allocatable = capacity -
kubeReserved - systemReserved - evictionHard, then minus the requests of the platform's own
DaemonSets that land on every node of the pool. Used by `stacks validate`, `stacks plan`, the render
and the engine modules, so a replica that can never be scheduled is refused before anything is
created."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .config.addons import AddonsSection
from .config.pools import NodePoolSection
from .config.storage import StorageSection
from .hardware import InstanceType, expand
from .quantity import QuantityError, mebibytes, millicores
from .sharing import MIG_RESOURCE_PREFIX, SHARED_RESOURCE, slice_resource, slices_per_node

GIB = 1024  # MiB


@dataclass(frozen=True)
class Requests:
    """A pod's requests, in the units Karpenter packs by."""

    cpu_m: int = 0
    memory_mib: int = 0
    ephemeral_mib: int = 0
    gpu: int = 0
    neuron: int = 0
    neuroncore: int = 0
    neurondevice: int = 0
    # Slices of a shared GPU pool (stacks/sharing.py): time-sliced `nvidia.com/gpu.shared`, and MIG
    # instances of the pool's one profile (`nvidia.com/mig-<profile>`).
    gpu_shared: int = 0
    mig: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, ...]:
        return (
            self.cpu_m,
            self.memory_mib,
            self.ephemeral_mib,
            self.gpu,
            self.neuron,
            self.neuroncore,
            self.neurondevice,
            self.gpu_shared,
            self.mig,
        )


def at_least(a: Requests, b: Requests) -> Requests:
    """Per resource, the larger of the two (a pod with an init container is charged at least the init's)."""
    return Requests(*(max(x, y) for x, y in zip(a.as_tuple(), b.as_tuple(), strict=True)))


# MIG instances of a pool's one profile, whatever the profile (`nvidia.com/mig-1g.10gb` on the pool).
MIG_RESOURCE = f"{MIG_RESOURCE_PREFIX}<profile>"
# Resource name -> (attribute, how to show a quantity of it).
RESOURCES: dict[str, tuple[str, Callable[[int], str]]] = {
    "cpu": ("cpu_m", lambda v: f"{v}m"),
    "memory": ("memory_mib", lambda v: f"{v}Mi"),
    "ephemeral-storage": ("ephemeral_mib", lambda v: f"{v}Mi"),
    "nvidia.com/gpu": ("gpu", str),
    "aws.amazon.com/neuron": ("neuron", str),
    "aws.amazon.com/neuroncore": ("neuroncore", str),
    SHARED_RESOURCE: ("gpu_shared", str),
    MIG_RESOURCE: ("mig", str),
}


@dataclass(frozen=True)
class Allocatable:
    instance_type: str
    cpu_m: int
    memory_mib: int
    ephemeral_mib: int
    gpu: int
    neuron: int
    neuroncore: int
    pods: int
    gpu_shared: int = 0
    mig: int = 0


@dataclass(frozen=True)
class Shortfall:
    resource: str
    requested: str
    available: str


@dataclass(frozen=True)
class FitReport:
    pool: str
    fits: list[str] = field(default_factory=list)
    # instance type -> the resources that do not fit on it
    misses: dict[str, list[Shortfall]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.fits)


def ephemeral_mib(pool: NodePoolSection, itype: InstanceType) -> int:
    """Karpenter's ephemeral-storage allocatable: the node filesystem less 10% eviction and 1Gi."""
    if pool.local_nvme == "raid0" and itype.has_instance_store:
        capacity_mib = itype.nvme_gib * 10**9 // 2**20  # EC2 reports decimal GB
    else:
        capacity_mib = pool.root_volume_gib * GIB
    return capacity_mib - math.ceil(capacity_mib * 0.10) - GIB


def pods_and_memory(pool: NodePoolSection, itype: InstanceType) -> tuple[int, int]:
    """Karpenter's pods and memory allocatable for this type in this pool. With `efa: true` the
    `efa-only` interface on card 0 carries no IPs, so the node takes fewer pods (p5.48xlarge: 51, not
    100), and kube-reserved memory, 11 MiB a pod + 255 MiB of the ENI-limited pods (CAPACITY.md),
    shrinks by as much."""
    if not (pool.efa and itype.efa_layout):
        return itype.alloc_pods, itype.alloc_memory_mib
    pods = min(itype.alloc_pods, itype.efa_pods)
    return pods, itype.alloc_memory_mib + 11 * (itype.max_pods - itype.efa_pods)


def allocatable(pool: NodePoolSection, itype: InstanceType, overhead: Requests = Requests()) -> Allocatable:
    """What a pod can request on a fresh node of this type, after the platform's DaemonSets. On a shared
    GPU pool its GPUs are advertised as slices only (the device plugin renames or partitions them all)."""
    pods, memory = pods_and_memory(pool, itype)
    slices = slices_per_node(pool, itype)
    shared = slice_resource(pool)
    return Allocatable(
        instance_type=itype.name,
        cpu_m=itype.alloc_cpu_m - overhead.cpu_m,
        memory_mib=memory - overhead.memory_mib,
        ephemeral_mib=ephemeral_mib(pool, itype) - overhead.ephemeral_mib,
        gpu=0 if shared else itype.gpu_count,
        neuron=itype.neuron_devices,
        neuroncore=itype.neuron_cores,
        pods=pods,
        gpu_shared=slices if shared == SHARED_RESOURCE else 0,
        mig=slices if shared is not None and shared.startswith(MIG_RESOURCE_PREFIX) else 0,
    )


# ---- quantities (stacks/quantity.py: Kubernetes quantity semantics) -------------------------------


def cpu_millicores(quantity: str) -> int:
    """'8' -> 8000, '500m' -> 500, '2.5' -> 2500 (rounded up to whole millicores, as Kubernetes does;
    the stack file's own quantities were refused at validation when finer than 1m)."""
    return millicores(quantity, exact=False)


def memory_mib(quantity: str) -> int:
    """'24Gi' -> 24576, '512Mi' -> 512, '1073741824' -> 1024: MiB, rounded up."""
    return mebibytes(quantity, exact=False)


@dataclass(frozen=True)
class NodeDaemonSet:
    """A DaemonSet of the platform that runs on every node of the pools `runs_on` accepts.

    `runs_on(pool, platform)` gets platform=None when the caller has only the pool: answer True when
    the DaemonSet may be there (overstating overhead refuses a borderline fit; understating it lets
    Karpenter launch a node the pod then does not fit on).
    """

    name: str
    requests: Requests
    source: str
    runs_on: Callable[[NodePoolSection, Installed | None], bool] = lambda pool, platform: True


@dataclass(frozen=True)
class Installed:
    """What decides which of the platform's DaemonSets run: its add-ons and its storage."""

    addons: AddonsSection
    storage: StorageSection


def _neuron_npd(pool: NodePoolSection, platform: Installed | None) -> bool:
    return pool.accelerator == "neuron" and (platform is None or platform.addons.neuron.node_problem_detector)


def _model_cache(kind: str) -> Callable[[NodePoolSection, Installed | None], bool]:
    """The CSI node driver of a shared model cache runs on every node (it tolerates every taint)."""
    return lambda pool, platform: platform is None or platform.storage.model_cache == kind


def _exporter(accelerator: str) -> Callable[[NodePoolSection, Installed | None], bool]:
    """The accelerator exporter runs on every node of that accelerator when monitoring is on."""

    def runs_on(pool: NodePoolSection, platform: Installed | None) -> bool:
        return pool.accelerator == accelerator and (platform is None or platform.addons.monitoring.enabled)

    return runs_on


# What each accelerator exporter asks for on every accelerator node: the DCGM exporter's Helm values
# and the neuron-monitor DaemonSet (components/monitoring/collection.py) take these very figures.
EXPORTER_REQUESTS: dict[str, dict[str, str]] = {
    "nvidia": {"cpu": "100m", "memory": "128Mi"},
    "neuron": {"cpu": "256m", "memory": "128Mi"},  # AWS's neuron-monitor DaemonSet requests
}


def _requests(quantities: dict[str, str]) -> Requests:
    return Requests(cpu_m=cpu_millicores(quantities["cpu"]), memory_mib=memory_mib(quantities["memory"]))


# AIBrix's runtime sidecar beside the engine of a serving pod whose adapters AIBrix loads (the figures
# AIBrix's webhook gives it): components/serving/aibrix.py runtime_sidecar renders these very requests,
# and the model's pod shape (stacks/resolve/models.py) adds them, so the fit rule and team quotas count
# the pod the API server and Karpenter see.
AIBRIX_RUNTIME_REQUESTS: dict[str, str] = {"cpu": "100m", "memory": "256Mi"}


def aibrix_runtime_requests() -> Requests:
    return _requests(AIBRIX_RUNTIME_REQUESTS)


# The platform's DaemonSets and their requests, per container summed. Concerns that add a node agent
# (a CSI node driver, an exporter) append an entry here so every fit check accounts for it.
def daemonset_requests(name: str) -> dict[str, str]:
    """A platform DaemonSet's requests as its chart's `resources.requests` (the one source: the fit
    rule counts exactly what the release asks for)."""
    found = next(d.requests for d in NODE_DAEMONSETS if d.name == name)
    return {"cpu": f"{found.cpu_m}m", "memory": f"{found.memory_mib}Mi"}


NODE_DAEMONSETS: list[NodeDaemonSet] = [
    NodeDaemonSet(
        "aws-node",
        Requests(cpu_m=25),
        "aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml (v1.15.1): resources.requests.cpu 25m; the "
        "network policy agent container (nodeAgent, on with enableNetworkPolicy) requests nothing (v1.23.0)",
    ),
    NodeDaemonSet("kube-proxy", Requests(cpu_m=100), "EKS kube-proxy add-on DaemonSet: requests cpu 100m"),
    NodeDaemonSet(
        "eks-pod-identity-agent",
        Requests(),
        "aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml: resources {}",
    ),
    NodeDaemonSet(
        "ebs-csi-node",
        Requests(cpu_m=10, memory_mib=40),
        "kubernetes-sigs/aws-ebs-csi-driver charts/aws-ebs-csi-driver/values.yaml: node.resources.requests "
        "cpu 10m, memory 40Mi (sidecars resources {})",
    ),
    NodeDaemonSet(
        "nvidia-device-plugin",
        Requests(cpu_m=10, memory_mib=32),
        "the platform's values (components/capacity/plugins.py nvidia_values: the chart's resources {} "
        "set from this entry)",
        # Only on AL2023: Bottlerocket's NVIDIA variant runs its plugin outside Kubernetes.
        lambda pool, platform: pool.accelerator == "nvidia" and pool.ami_family == "al2023",
    ),
    NodeDaemonSet(
        "aws-efa-k8s-device-plugin",
        Requests(cpu_m=10, memory_mib=20),
        "aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 values.yaml: resources.requests 10m/20Mi "
        "(components/capacity/plugins.py efa_values sets them from this entry)",
        lambda pool, platform: pool.efa,
    ),
    NodeDaemonSet(
        "neuron-device-plugin",
        Requests(),
        "aws-neuron/neuron-helm-charts 1.9.0 values.yaml: devicePlugin.resources {}",
        lambda pool, platform: pool.accelerator == "neuron",
    ),
    NodeDaemonSet(
        "neuron-node-problem-detector",
        Requests(cpu_m=10, memory_mib=80),
        "aws-neuron/neuron-helm-charts 1.9.0 values.yaml: npd.nodeProblemDetector.resources.requests 10m/80Mi",
        _neuron_npd,
    ),
    NodeDaemonSet(
        "efs-csi-node",
        Requests(),
        "kubernetes-sigs/aws-efs-csi-driver v3.4.1 (chart 4.4.1) values.yaml: node.resources {}, "
        "sidecars.nodeDriverRegistrar/livenessProbe.resources {}",
        _model_cache("efs"),
    ),
    NodeDaemonSet(
        "fsx-csi-node",
        Requests(cpu_m=30, memory_mib=104),
        "kubernetes-sigs/aws-fsx-csi-driver v1.9.0 (chart 1.17.0) values.yaml: node.resources.requests "
        "10m/40Mi, sidecars.nodeDriverRegistrar and livenessProbe 10m/32Mi each",
        _model_cache("fsx"),
    ),
    NodeDaemonSet(
        "dcgm-exporter",
        _requests(EXPORTER_REQUESTS["nvidia"]),
        "components/monitoring/collection.py dcgm_exporter_values: resources.requests = EXPORTER_REQUESTS",
        _exporter("nvidia"),
    ),
    NodeDaemonSet(
        "neuron-monitor",
        _requests(EXPORTER_REQUESTS["neuron"]),
        "components/monitoring/collection.py neuron_monitor DaemonSet: requests = EXPORTER_REQUESTS",
        _exporter("neuron"),
    ),
]


def daemonsets_on(pool: NodePoolSection, platform: Installed | None = None) -> list[NodeDaemonSet]:
    return [d for d in NODE_DAEMONSETS if d.runs_on(pool, platform)]


def daemonset_overhead(pool: NodePoolSection, platform: Installed | None = None) -> Requests:
    """Requests of the platform's own DaemonSets on every node of this pool (CNI, kube-proxy, Pod
    Identity agent, EBS CSI node, the pool's device plugin and node agents, whatever else is in
    NODE_DAEMONSETS), which Karpenter adds when it packs pods."""
    total = Requests()
    for daemonset in daemonsets_on(pool, platform):
        total = total + daemonset.requests
    return total


def container_resources(requests: Requests) -> dict[str, dict[str, str]]:
    """Kubernetes container resources: accelerators and memory with limits equal to requests
    (no overcommit of what a model cannot live without); no CPU limit, so a busy tokenizer is never
    throttled. MIG instances are named by the pool's profile, which these requests do not carry: the
    resolve step adds them (stacks/resolve/models.py `with_slices`)."""
    req = {
        "cpu": f"{requests.cpu_m}m",
        "memory": f"{requests.memory_mib}Mi",
        "ephemeral-storage": f"{requests.ephemeral_mib}Mi",
    }
    # No ephemeral-storage limit: an emptyDir model cache counts against it and would get the pod
    # evicted mid-download; the request still reserves the space on the node.
    lim = {"memory": req["memory"]}
    extended = [
        ("nvidia.com/gpu", requests.gpu),
        ("aws.amazon.com/neuron", requests.neuron),
        (SHARED_RESOURCE, requests.gpu_shared),
    ]
    for name, value in extended:
        if value:
            req[name] = lim[name] = str(value)
    return {"requests": req, "limits": lim}


def cpu_m_of(value: object) -> int:
    """A rendered cpu quantity in millicores, rounded up as Kubernetes does; 0 when it is not a quantity
    (a hand-written object the policy pack reads may hold anything)."""
    try:
        return millicores(str(value), exact=False)
    except QuantityError:
        return 0


def mib_of(value: object) -> int:
    """A rendered memory or ephemeral-storage quantity in MiB, rounded up; 0 when it is not a quantity."""
    try:
        return mebibytes(str(value), exact=False)
    except QuantityError:
        return 0


def requests_of(resources: Mapping[str, Mapping[str, object]]) -> Requests:
    """What a container's resources ask of a node (extended resources: the limit when no request): the
    reverse of `container_resources`, which the fit rule, `stacks plan` and the policy pack read."""
    req, lim = resources.get("requests") or {}, resources.get("limits") or {}

    def ext(name: str) -> int:
        return int(str(req.get(name) or lim.get(name) or 0))

    migs = {str(k) for k in (*req, *lim) if str(k).startswith(MIG_RESOURCE_PREFIX)}
    return Requests(
        cpu_m=cpu_m_of(req.get("cpu", 0)),
        memory_mib=mib_of(req.get("memory", 0)),
        ephemeral_mib=mib_of(req.get("ephemeral-storage", 0)),
        gpu=ext("nvidia.com/gpu"),
        neuron=ext("aws.amazon.com/neuron"),
        neuroncore=ext("aws.amazon.com/neuroncore"),
        gpu_shared=ext(SHARED_RESOURCE),
        mig=sum(ext(name) for name in migs),
    )


def mig_requests_of(resources: Mapping[str, Mapping[str, object]]) -> dict[str, int]:
    """A container's MIG instances per profile (`nvidia.com/mig-3g.40gb: 1` -> {"3g.40gb": 1}), the limit when no
    request: `requests_of` counts them together (a pool offers one profile), a quota counts them per profile."""
    req, lim = resources.get("requests") or {}, resources.get("limits") or {}
    names = sorted({str(k) for k in (*req, *lim) if str(k).startswith(MIG_RESOURCE_PREFIX)})
    return {name[len(MIG_RESOURCE_PREFIX) :]: int(str(req.get(name) or lim.get(name) or 0)) for name in names}


def pool_types(pool: NodePoolSection) -> list[InstanceType]:
    return expand(pool.instance_types, pool.instance_families)


NEURONDEVICE = "aws.amazon.com/neurondevice"


def refusals(requests: Requests) -> list[Shortfall]:
    """Requests no instance type can ever satisfy, whatever its size."""
    if requests.neurondevice:
        return [
            Shortfall(
                NEURONDEVICE,
                str(requests.neurondevice),
                "never schedulable: Karpenter does not model it, so it never provisions a node for the pod "
                "(request aws.amazon.com/neuron for whole devices or aws.amazon.com/neuroncore for cores)",
            )
        ]
    return []


def fit(requests: Requests, pool: NodePoolSection, overhead: Requests = Requests()) -> FitReport:
    """Which of the pool's instance types can hold one pod with these requests."""
    report = FitReport(pool=pool.name)
    refused = refusals(requests)
    mig = slice_resource(pool) or MIG_RESOURCE
    for itype in pool_types(pool):
        alloc = allocatable(pool, itype, overhead)
        short = refused + [
            Shortfall(mig if name == MIG_RESOURCE else name, show(getattr(requests, attr)), show(getattr(alloc, attr)))
            for name, (attr, show) in RESOURCES.items()
            if getattr(requests, attr) > getattr(alloc, attr)
        ]
        if short:
            report.misses[itype.name] = short
        else:
            report.fits.append(itype.name)
    return report


def largest(types: list[InstanceType]) -> InstanceType:
    return max(types, key=lambda t: (t.accelerator_count, t.vcpu, t.memory_gib))


def explain_no_fit(what: str, requests: Requests, pool: NodePoolSection, report: FitReport) -> str:
    """One sentence naming the workload, the pool, the largest allowed type and what does not fit."""
    types = pool_types(pool)
    if not types:
        return f"{what}: pool {pool.name} allows no instance type the hardware catalog knows"
    big = largest(types)
    short = report.misses.get(big.name, [])
    detail = "; ".join(
        f"{s.resource} {s.requested}: {s.available}"
        if s.resource == NEURONDEVICE
        else f"{s.resource} {s.requested} > {s.available} allocatable"
        for s in short
    )
    return (
        f"{what} fits no instance type of pool {pool.name}: on the largest, {big.name}, "
        f"{detail or 'nothing is short'}. Give the pool a larger instance type or ask for less"
    )


# ---- NodePool limits ---------------------------------------------------------------------------

ACCELERATOR_RESOURCE = {"nvidia": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}


@dataclass(frozen=True)
class NodePoolLimits:
    """A NodePool's spec.limits: node capacity summed over the pool (Karpenter counts capacity, not
    allocatable). Derived cpu/memory never stop the pool short of its accelerator limit and always
    admit one whole largest instance."""

    cpu_m: int | None
    memory_mib: int | None
    accelerators: int | None
    # A static pool's node count bound (`limits.nodes`), the only limit Karpenter takes on one.
    nodes: int | None = None
    # A memory limit the stack file gave is rendered as its exact value (whole MiB, stacks/quantity.py),
    # never rounded up to Gi: only a derived one is.
    memory_given: bool = False

    def manifest(self, accelerator: str) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.cpu_m is not None:
            out["cpu"] = str(self.cpu_m // 1000) if self.cpu_m % 1000 == 0 else f"{self.cpu_m}m"
        if self.memory_mib is not None:
            exact = self.memory_given and self.memory_mib % GIB
            out["memory"] = f"{self.memory_mib}Mi" if exact else f"{math.ceil(self.memory_mib / GIB)}Gi"
        if self.accelerators is not None and accelerator in ACCELERATOR_RESOURCE:
            out[ACCELERATOR_RESOURCE[accelerator]] = str(self.accelerators)
        if self.nodes is not None:
            out["nodes"] = str(self.nodes)
        return out


def pool_limits(pool: NodePoolSection) -> NodePoolLimits:
    """Given limits as written; cpu and memory derived when only accelerators are limited."""
    given = pool.limits
    cpu = cpu_millicores(given.cpu) if given.cpu else None
    memory = memory_mib(given.memory) if given.memory else None
    types = pool_types(pool)
    if given.accelerators is not None and types and pool.accelerator != "none":
        accelerated = [t for t in types if t.accelerator_count]
        if accelerated:
            # Enough for `accelerators` devices on the type richest in cpu/memory per device, and
            # never less than one of the largest instance.
            per_cpu = max(t.vcpu * 1000 / t.accelerator_count for t in accelerated)
            per_mem = max(t.memory_gib * GIB / t.accelerator_count for t in accelerated)
            big = max(accelerated, key=lambda t: (t.vcpu, t.memory_gib))
            if cpu is None:
                cpu = max(math.ceil(per_cpu * given.accelerators), big.vcpu * 1000)
            if memory is None:
                memory = max(math.ceil(per_mem * given.accelerators), math.ceil(big.memory_gib * GIB))
    return NodePoolLimits(
        cpu_m=cpu,
        memory_mib=memory,
        accelerators=given.accelerators,
        nodes=given.nodes,
        memory_given=given.memory is not None,
    )


def over_limits(limits: NodePoolLimits, itype: InstanceType, nodes: int = 1) -> dict[str, int]:
    """The pool limits that `nodes` whole nodes of this type exceed, by name ("accelerators", "cpu" in
    millicores, "memory" in MiB) with the limit's value: Karpenter counts each launched node's capacity
    against them. Callers word the numbers themselves."""
    over = {}
    if limits.accelerators is not None and nodes * itype.accelerator_count > limits.accelerators:
        over["accelerators"] = limits.accelerators
    if limits.cpu_m is not None and nodes * itype.vcpu * 1000 > limits.cpu_m:
        over["cpu"] = limits.cpu_m
    if limits.memory_mib is not None and nodes * itype.memory_gib * GIB > limits.memory_mib:
        over["memory"] = limits.memory_mib
    return over


def blocked_by_limits(pool: NodePoolSection, itype: InstanceType, limits: NodePoolLimits) -> list[str]:
    """The limits that stop Karpenter from launching even one node of this type."""
    over = over_limits(limits, itype)
    blocked = []
    if "cpu" in over:
        blocked.append(f"cpu ({itype.vcpu} vCPU)")
    if "memory" in over:
        blocked.append(f"memory ({itype.memory_gib:g}GiB)")
    if "accelerators" in over:
        blocked.append(f"accelerators ({itype.accelerator_count})")
    return blocked
