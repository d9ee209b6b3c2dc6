"""`python -m stacks lifecycle STACK [--json]`: what the first `pulumi up`, and a `pulumi destroy`, of a
stack would do, read offline from its render (stacks/render.py: every registered resource with its
type, parent, provider, dependencies, inputs, custom timeouts and retainOnDelete).

- the create waves: the levels of the resource graph as the engine walks it. A resource waits for its
  dependsOn, its ancestors' dependsOn, its provider, and every resource whose Output it reads (the SDK
  sends those as dependencies, and the mocks record them);
- the critical path and an estimate of the first `pulumi up` in seconds, from per-type durations each
  with its source (stacks/lifecycle_facts.py DURATIONS), Helm waits, accelerator node launches and each
  model's startup probe (stacks/coldstart.py's node-launch and image-pull allowances);
- each resource's await and timeout as the Pulumi Kubernetes provider applies them;
- the destroy order (the create order reversed) and what each deletion waits for;
- hazards: each a sentence naming the resource and the fix (`HAZARD_DETECTORS`).

Everything here is a pure function of the records; nothing is registered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import lifecycle_facts as facts
from .awaits import ESTIMATED_SECONDS, IMAGE_PULL_SECONDS
from .mocks import Record
from .versions import CHARTS, RELEASE_WAITS

HELM = "kubernetes:helm.sh/v3:Release"
WORKLOAD_KINDS = {"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "batch/Job"}
CORE_GROUPS = {
    "core", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "rbac.authorization.k8s.io",
    "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io", "certificates.k8s.io", "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
}  # fmt: skip
ACCELERATOR_TAINTS = {"nvidia.com/gpu", "aws.amazon.com/neuron"}
NODEPOOL_LABEL = "karpenter.sh/nodepool"


# ---- the graph ----------------------------------------------------------------------------------------


def kind_of(record: Record) -> str:
    """`group/Kind` of a Kubernetes object (`core/Service`, `apps/Deployment`), else ''."""
    if not record.type.startswith("kubernetes:") or record.type == HELM:
        return ""
    _, version, kind = record.type.split(":", 2)
    return f"{version.rsplit('/', 1)[0]}/{kind}"


def group_of(record: Record) -> str:
    return kind_of(record).rsplit("/", 1)[0]


def chart_of(record: Record) -> str:
    """A Helm release's chart name: the last element of its chart path or OCI reference."""
    return str(record.inputs.get("chart") or "").rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Graph:
    """The resources `pulumi up` creates (custom resources and remote components) and, for each, the
    resources it waits for."""

    nodes: dict[str, Record]
    deps: dict[str, set[str]]
    _closure: dict[str, set[str]] = field(default_factory=dict)

    def upstream(self, urn: str) -> set[str]:
        """Everything `urn` waits for, directly or not."""
        if urn not in self._closure:
            seen: set[str] = set()
            stack = list(self.deps.get(urn, ()))
            while stack:
                dep = stack.pop()
                if dep not in seen:
                    seen.add(dep)
                    stack.extend(self.deps.get(dep, ()))
            self._closure[urn] = seen
        return self._closure[urn]

    def waits_for(self, urn: str, target: str) -> bool:
        return target in self.upstream(urn)


def _provider_urn(ref: str) -> str:
    """A provider reference is `urn::id`; the URN is everything before the last `::`."""
    return ref.rsplit("::", 1)[0] if ref.count("::") > 3 else ref


def build_graph(records: Iterable[Record]) -> Graph:
    everything = {r.urn: r for r in records}
    nodes = {u: r for u, r in everything.items() if r.custom or r.remote}
    children: dict[str, list[str]] = {}
    for r in everything.values():
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)

    def expand(urn: str) -> set[str]:
        """A dependency on a component is one on every resource under it; a URN the render does not
        hold (a child of a remote component, such as pulumi-eks's `-eksCluster`) is its component."""
        if urn in nodes:
            return {urn}
        if urn in everything:
            return {u for c in children.get(urn, []) for u in expand(c)}
        owner = next((u for u, r in nodes.items() if r.remote and urn.endswith(f"::{r.name}-eksCluster")), None)
        return {owner} if owner else set()

    deps: dict[str, set[str]] = {}
    for urn, r in nodes.items():
        wanted = list(r.depends_on) + ([_provider_urn(r.provider)] if r.provider else [])
        parent = everything.get(r.parent)
        while parent is not None:
            wanted += parent.depends_on
            parent = everything.get(parent.parent)
        deps[urn] = {d for w in wanted for d in expand(w)} - {urn}
    return Graph(nodes, deps)


def waves(graph: Graph) -> list[list[str]]:
    """The topological levels: wave 0 waits for nothing, wave n for something in wave n-1."""
    level: dict[str, int] = {}

    def depth(urn: str, path: frozenset[str] = frozenset()) -> int:
        if urn not in level:
            if urn in path:
                raise ValueError(f"a dependency cycle through {urn}")
            below = [depth(d, path | {urn}) for d in graph.deps.get(urn, ()) if d in graph.nodes]
            level[urn] = 1 + max(below) if below else 0
        return level[urn]

    for urn in graph.nodes:
        depth(urn)
    out: list[list[str]] = [[] for _ in range(1 + max(level.values(), default=-1))]
    for urn in graph.nodes:  # registration order within a wave
        out[level[urn]].append(urn)
    return out


# ---- awaits -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Await:
    """How the provider waits on one resource's create: whether, how long at most, for what."""

    waits: bool
    timeout: int | None
    what: str
    source: str


def annotations_of(record: Record) -> dict[str, Any]:
    meta = record.inputs.get("metadata") or {}
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _seconds(text: str) -> int | None:
    """A Pulumi custom timeout (`10m`, `1h30m`, `90s`) in seconds."""
    total, number = 0, ""
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in "hms" and number:
            total += int(float(number) * {"h": 3600, "m": 60, "s": 1}[ch])
            number = ""
        else:
            return None
    return total if not number else None


def configured_timeout(record: Record) -> int | None:
    """customTimeouts.create, else the pulumi.com/timeoutSeconds annotation (metadata.TimeoutDuration)."""
    create = (record.custom_timeouts or {}).get("create") or ""
    if create and _seconds(create):
        return _seconds(create)
    raw = annotations_of(record).get(facts.TIMEOUT_SECONDS)
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def await_of(record: Record) -> Await:
    if record.type == HELM:
        return _helm_await(record)
    kind = kind_of(record)
    if not kind:
        return Await(False, None, "the cloud provider's own create", "")
    source = facts.PROVIDER_AWAIT_SOURCE
    if annotations_of(record).get(facts.SKIP_AWAIT) == "true":
        return Await(False, None, f"{facts.SKIP_AWAIT}: nothing awaited", source)
    timeout = configured_timeout(record) or facts.PROVIDER_DEFAULT_TIMEOUT_SECONDS
    if annotations_of(record).get(facts.WAIT_FOR):
        return Await(True, timeout, f"{facts.WAIT_FOR}: {annotations_of(record)[facts.WAIT_FOR]}", source)
    built_in = facts.BUILT_IN_AWAITS.get(kind)
    if built_in is None:
        return Await(False, None, "no await for this kind: created once the API server stores it", source)
    what, cap = built_in
    return Await(True, min(timeout, cap) if cap else timeout, what, source)


def _helm_await(record: Record) -> Await:
    timeout = record.inputs.get("timeout")
    seconds = int(timeout) if isinstance(timeout, int | float) and timeout else facts.HELM_DEFAULT_TIMEOUT_SECONDS
    if record.inputs.get("skipAwait"):
        return Await(False, seconds, "skipAwait: installed without waiting", facts.HELM_RELEASE_SOURCE)
    return Await(
        True, seconds, "helm --wait: its workloads ready, PVCs bound, LB Services addressed", facts.HELM_RELEASE_SOURCE
    )


# ---- where a workload runs, and how long it takes to start -------------------------------------------


def pod_spec(record: Record) -> dict[str, Any]:
    """A workload's pod template spec (Deployment, StatefulSet, DaemonSet, Job), else {}."""
    spec = record.inputs.get("spec") or {}
    template = spec.get("template") if isinstance(spec, dict) else None
    found = template.get("spec") if isinstance(template, dict) else None
    return found if isinstance(found, dict) else {}


def node_pools(records: Iterable[Record]) -> dict[str, Record]:
    """Karpenter NodePools by name."""
    return {
        str((r.inputs.get("metadata") or {}).get("name")): r for r in records if kind_of(r) == "karpenter.sh/NodePool"
    }


def _pool_labels(pool: Record) -> dict[str, str]:
    template = (pool.inputs.get("spec") or {}).get("template") or {}
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels[NODEPOOL_LABEL] = str((pool.inputs.get("metadata") or {}).get("name"))
    return labels


def is_accelerator_pool(pool: Record) -> bool:
    template = (pool.inputs.get("spec") or {}).get("template") or {}
    taints = (template.get("spec") or {}).get("taints") or []
    return any(isinstance(t, dict) and t.get("key") in ACCELERATOR_TAINTS for t in taints)


def selects(selector: dict[str, Any], pools: dict[str, Record]) -> list[Record]:
    """The NodePools whose nodes carry every label of a nodeSelector."""
    if not selector:
        return []
    return [p for p in pools.values() if all(_pool_labels(p).get(k) == v for k, v in selector.items())]


def pools_of(record: Record, pools: dict[str, Record]) -> list[Record]:
    """The NodePools a workload's pods can only run on (its nodeSelector)."""
    return selects(pod_spec(record).get("nodeSelector") or {}, pools)


def probe_window(record: Record) -> int:
    """What the longest startup probe of a workload's containers allows, in seconds
    (initialDelaySeconds + failureThreshold x periodSeconds; Kubernetes' defaults 0, 3 and 10)."""
    windows = [0]
    for c in pod_spec(record).get("containers") or []:
        probe = c.get("startupProbe") if isinstance(c, dict) else None
        if isinstance(probe, dict):
            delay = int(probe.get("initialDelaySeconds") or 0)
            windows.append(delay + int(probe.get("failureThreshold") or 3) * int(probe.get("periodSeconds") or 10))
    return max(windows)


def replicas(record: Record) -> int:
    spec = record.inputs.get("spec") or {}
    value = spec.get("replicas") if isinstance(spec, dict) else None
    return 1 if value is None else int(value)


@dataclass(frozen=True)
class Startup:
    """What a workload's first start is allowed: a node and image when its pool is an accelerator pool
    Karpenter launches on demand, and its startup probe's window."""

    node: int
    probe: int
    pool: str

    @property
    def seconds(self) -> int:
        return self.node + self.probe


def startup(record: Record, pools: dict[str, Record]) -> Startup | None:
    if kind_of(record) not in WORKLOAD_KINDS or replicas(record) == 0:
        return None
    accelerated = [p for p in pools_of(record, pools) if is_accelerator_pool(p)]
    node = facts.MODEL_NODE.seconds if accelerated else 0
    if accelerated and is_daemon_set(record):
        # A DaemonSet is ready when every node that exists runs its pod (desired = the matching nodes):
        # no node is launched for it; one that joins while it is awaited adds a pod and its image pull.
        node = IMAGE_PULL_SECONDS
    pool = str((accelerated[0].inputs.get("metadata") or {}).get("name")) if accelerated else ""
    return Startup(node, probe_window(record), pool)


# ---- durations and the critical path -----------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    seconds: int
    basis: str
    source: str


def _values_selectors(value: Any) -> Iterable[dict[str, Any]]:
    """Every nodeSelector in a release's values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "nodeSelector" and isinstance(item, dict):
                yield item
            else:
                yield from _values_selectors(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values_selectors(item)


def is_daemon_set(record: Record) -> bool:
    return kind_of(record) == "apps/DaemonSet"


def daemon_sets_only(record: Record) -> bool:
    """A release whose pods on Karpenter's nodes are DaemonSets' only (the catalog's RELEASE_WAITS
    placement): Helm waits for the nodes that exist, never for one to launch."""
    chart = chart_of(record)
    return any(e.chart == chart and RELEASE_WAITS[n].placement == "daemonset" for n, e in CHARTS.items())


def helm_need(record: Record, pools: dict[str, Record]) -> Step:
    """What a waiting Helm release waits for: a new accelerator node when its values put pods on one
    (a Deployment's; a DaemonSet's pods need no node launched for them)."""
    accelerated = [p for s in _values_selectors(record.inputs.get("values")) for p in selects(s, pools)]
    if any(is_accelerator_pool(p) for p in accelerated) and not daemon_sets_only(record):
        d = facts.ACCELERATOR_NODE
        return Step(d.seconds + facts.HELM_READY.seconds, f"{d.what}, then {facts.HELM_READY.what}", d.source)
    return Step(facts.HELM_READY.seconds, facts.HELM_READY.what, facts.HELM_READY.source)


def duration(record: Record, pools: dict[str, Record]) -> Step:
    """How long creating this resource takes on a first `pulumi up` (what the engine waits for)."""
    if record.type in facts.DURATIONS:
        d = facts.DURATIONS[record.type]
        return Step(d.seconds, d.what, d.source)
    if record.type == HELM:
        if record.inputs.get("skipAwait"):
            return Step(facts.API_CALL.seconds, "Helm release installed without waiting", facts.HELM_RELEASE_SOURCE)
        need = helm_need(record, pools)
        # A release that needs longer than its timeout fails there: a hazard, not a longer wait.
        timeout = _helm_await(record).timeout or need.seconds
        return Step(min(need.seconds, timeout), need.basis, need.source)
    waits = await_of(record)
    if waits.waits and (own := annotations_of(record).get(ESTIMATED_SECONDS)):
        # A Job whose run the program estimated (a Neuron compile): that, cut at its await like a probe's.
        seconds = min(int(own), waits.timeout or int(own))
        return Step(seconds, f"its estimated run {own} s (node, image, fill and compile)", "stacks/coldstart.py")
    start = startup(record, pools)
    if waits.waits and start is not None and start.seconds:
        basis = f"startup probe window {start.probe} s"
        if start.node:
            basis = f"{facts.MODEL_NODE.what} ({start.node} s) + {basis}"
        if waits.timeout is not None and waits.timeout < start.seconds:
            basis += f", cut at its await timeout {waits.timeout} s (a workload-timeout hazard)"
        return Step(min(start.seconds, waits.timeout or start.seconds), basis, f"{facts.COLDSTART}; its startupProbe")
    if waits.waits and _is_load_balancer(record):
        return Step(facts.NLB.seconds, facts.NLB.what, facts.NLB.source)
    return Step(facts.API_CALL.seconds, facts.API_CALL.what, facts.API_CALL.source)


def _is_load_balancer(record: Record) -> bool:
    if kind_of(record) == "core/Service":
        return (record.inputs.get("spec") or {}).get("type") == "LoadBalancer"
    return kind_of(record) == "networking.k8s.io/Ingress"


@dataclass(frozen=True)
class CriticalPath:
    resources: list[str]
    steps: list[Step]

    @property
    def seconds(self) -> int:
        return sum(s.seconds for s in self.steps)


def critical_path(graph: Graph, order: list[list[str]], steps: dict[str, Step]) -> CriticalPath:
    """The chain of resources whose durations add up to the longest wait: every resource starts when
    the last thing it waits for is done."""
    finish: dict[str, int] = {}
    before: dict[str, str | None] = {}
    for wave in order:
        for urn in wave:
            deps = [d for d in graph.deps.get(urn, ()) if d in finish]
            last = max(deps, key=lambda d: finish[d], default=None)
            before[urn] = last
            finish[urn] = (finish[last] if last else 0) + steps[urn].seconds
    end = max(finish, key=lambda u: finish[u], default=None)
    chain: list[str] = []
    while end is not None:
        chain.append(end)
        end = before[end]
    chain.reverse()
    return CriticalPath(chain, [steps[u] for u in chain])


# ---- destroy -------------------------------------------------------------------------------------------


def deletion_waits_for(record: Record) -> str:
    """What deleting this resource waits for, beyond the API call."""
    kind = kind_of(record)
    if record.retain_on_delete:
        return "nothing: retainOnDelete leaves it in the cloud (only dropped from the state)"
    if record.type == HELM:
        waits = _helm_await(record)
        if waits.waits or record.inputs.get("atomic"):
            return f"helm uninstall --wait: its objects gone (timeout {waits.timeout} s)"
        return "helm uninstall without waiting"
    if kind:
        key = f"{kind} LoadBalancer" if _is_load_balancer(record) and kind == "core/Service" else kind
        skipped = annotations_of(record).get(facts.SKIP_AWAIT) == "true" and kind in facts.SKIP_AWAIT_ON_DELETE
        timeout = configured_timeout(record) or facts.PROVIDER_DEFAULT_TIMEOUT_SECONDS
        gone = "not awaited (skipAwait)" if skipped else f"the object gone (timeout {timeout} s)"
        return f"{gone}; {facts.FINALIZERS[key]}" if key in facts.FINALIZERS else gone
    return facts.CLOUD_DELETES.get(record.type, "the cloud API's delete")


def destroy_order(order: list[list[str]]) -> list[str]:
    """`pulumi destroy` deletes dependents first: the create waves, last wave first."""
    return [urn for wave in reversed(order) for urn in reversed(wave)]
