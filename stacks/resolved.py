"""The resolved stack: what one validated stack file means, with every derived fact computed once.

`stacks/resolve` builds a `ResolvedStack` from the validated config (and, for a workloads stack,
the platform's exports); components and builders read slices of it and derive nothing of their own.
The platform half (`PlatformView`) is exactly what a platform stack exports and what a workloads
stack reads back, through the same two functions (stacks/exports.py `export_platform`, `read_platform`).

This module holds only the types and the platform's fixed names (the Gateway routes attach to, the
Neuron scheduler, the model-cache StorageClass and claim): plain values, importable from anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from .config.addons import AddonsSection
from .config.cluster import ClusterSection
from .config.gateway import GatewaySection
from .config.models import ModelSection
from .config.pools import NodePoolSection
from .config.root import StackConfig
from .config.stack import Quota
from .config.storage import StorageSection
from .config.teams import PLATFORM_CLIENTS
from .engine_facts import DerivedName, Dialect, EngineFacts, ModelFacts
from .errors import key_path
from .fit import NodePoolLimits, Requests, at_least
from .groups import ReplicaGroup, leader_worker_set
from .hardware import InstanceType, NetworkInterface
from .naming import COMPONENT_LABEL
from .tiers import PoolTier
from .versions import Image

# Bump when an export changes shape; a workloads stack refuses exports of another version.
# 2: storage carries the cache settings, storageClasses, gatewayParent, modelBucket, modelReaderRoleArn.
# 3: the platform creates each team's namespaces, quota, reader and deploy identity (teamDeployRoleArns
#    replaces modelReaderRoleArn) and keeps each owner's weights under its own bucket prefix.
EXPORTS_VERSION = 3

# The Neuron chart's second kube-scheduler: the chart names its profile after
# scheduler.customScheduler.fullnameOverride (templates/scheduler/scheduler-custom-config.yaml), which
# the capacity concern sets to this name.
NEURON_SCHEDULER = "neuron-scheduler"

# The front door's own Gateway, and AIBrix 0.7.0's (dist/chart/templates/gateway-instance/gateway.yaml:
# GatewayClass and Gateway `<fullname>-eg` in the release namespace, one HTTP listener `http` on 80).
GATEWAY_NAMESPACE = "inference-gateway"
GATEWAY_NAME = "inference"
# The kubernetes.io/tls Secret the HTTPS listener terminates with when `gateway.tls` is unset.
DEFAULT_TLS_SECRET = f"{GATEWAY_NAME}-tls"
HTTPS_LISTENER = "https"
AIBRIX_GATEWAY = ("aibrix-system", "aibrix-eg", "http")

# Who a namespace belongs to: a team's name on each of the team's namespaces, `platform` (PLATFORM_CLIENTS)
# on the platform's own model namespaces and LiteLLM's. The front door's HTTPS listener admits routes
# from every namespace that carries the label (`allowedRoutes` selector: the key exists), so each
# route lives beside the model it serves; a namespace without it (the Gateway's own, KEDA's, any
# namespace the platform did not create) cannot attach a route. Only the platform labels namespaces.
TEAM_LABEL = "inference-platform.io/team"

# The model cache: the dynamic EFS StorageClass teams may claim from, and the claim name every model
# namespace uses for a shared cache (EFS or FSx).
EFS_STORAGE_CLASS = "efs-models"
CACHE_CLAIM = "model-cache"
# The bucket reader every model pod runs as (Pod Identity, read-only; components/storage/bucket.py).
READER_SERVICE_ACCOUNT = "model-reader"
# The one-time filler of a streamed model's bucket prefix (`models[].loadFormat`): write access to
# those prefixes only, used by that fill Job alone, never by a serving pod.
WRITER_SERVICE_ACCOUNT = "model-writer"

# Models without a namespace of their own (all-in-one stacks); a team's models run in the team's.
DEFAULT_NAMESPACE = "inference"

# Where the platform's own controllers run. Envoy Gateway's controller namespace: only the controller;
# it runs in GatewayNamespace mode, so each Gateway's Envoy proxies and LoadBalancer Service run in the
# Gateway's own namespace (which the program owns, and deletes while the load balancer controller runs).
# Karpenter and the load balancer controller run in kube-system beside the EKS add-ons.
EG_NAMESPACE = "envoy-gateway-system"
KARPENTER_NAMESPACE = "kube-system"
LOAD_BALANCER_NAMESPACE = "kube-system"
MONITORING_NAMESPACE = "monitoring"

# The collector (components/tracing.py): its namespace, Service and OTLP ports (the collector's
# defaults for the otlp receiver: 4317 gRPC, 4318 HTTP).
TRACING_NAMESPACE = "tracing"
COLLECTOR_NAME = "otel-collector"
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318
COLLECTOR_HOST = f"{COLLECTOR_NAME}.{TRACING_NAMESPACE}.svc.cluster.local"
# kube-prometheus-stack's Prometheus Service for release "kube-prometheus-stack" (its fullname is the
# release name when that contains the chart name: templates/_helpers.tpl, prometheus/service.yaml).
PROMETHEUS_SERVICE = "kube-prometheus-stack-prometheus"
LITELLM_NAMESPACE = "litellm"

# Where every serving pod mounts the model cache: each model's weights under its bucket prefix
# (`<owner prefix>/<name>/<revision>`), so the cache mirrors the bucket (an FSx data repository association
# imports the bucket at the file system's root, where the platform's models find their prefix).
CACHE_ROOT = "/models"

# The model bucket's layout: every owner's objects under a prefix of its own, so each reader role is
# granted its owner's prefix and nothing else. The platform's own models under `platform/`, a team's under
# `teams/<team>/`; within it each model's weights at `<name>/<revision>/`, and its benchmark results under
# `_benchmarks/<name>/<revision>/` (`_` starts no model name, a DNS label, so results never share a prefix
# with weights, and the one write a reader has cannot reach them).
PLATFORM_PREFIX = "platform"
TEAMS_PREFIX = "teams"
RESULTS_DIR = "_benchmarks"


def owner_prefix(owner: str) -> str:
    """The bucket prefix of everything an owner's models keep there (no trailing `/`): `platform` for the
    platform's own (PLATFORM_CLIENTS), `teams/<team>` for a team's."""
    return PLATFORM_PREFIX if owner == PLATFORM_CLIENTS else f"{TEAMS_PREFIX}/{owner}"


# How often a serving pod's startup probe asks: its allowance is whole periods of this.
STARTUP_PERIOD_SECONDS = 10

# Serving-platform controllers, their namespaces, and the engines whose pods each manages.
CONTROLLER_NAMESPACES = {
    "dynamo": "dynamo-system",
    "aibrix": "aibrix-system",
    "kuberay": "kuberay-system",
    "nim-operator": "nim-operator",
}


@dataclass(frozen=True, kw_only=True)
class ResolvedPool:
    """A node pool with its allowed instance types resolved from the hardware catalog."""

    config: NodePoolSection
    instance_types: tuple[InstanceType, ...]
    # What the platform's own DaemonSets request on every node of the pool (stacks/fit.py), and the
    # names of those DaemonSets: what a pod can request on a node is the type's allocatable less this.
    overhead: Requests
    daemonsets: tuple[str, ...]
    # spec.limits as rendered (derived cpu and memory where only accelerators are limited).
    limits: NodePoolLimits
    # How its nodes pull images (stacks/fastpath.py `image_pull`): "soci" (parallel pull and unpack) or
    # "standard"; and how many empty nodes a CapacityBuffer keeps launched for it (`warmNodes`).
    # The cold-start estimate reads both.
    image_pull: str = "standard"
    warm_nodes: int = 0
    # The NodePools the pool renders, most preferred first (stacks/tiers.py): one unless
    # `capacityPreference` orders several. Each carries the pool's label, taints and `limits`.
    tiers: tuple[PoolTier, ...] = ()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def accelerator(self) -> str:
        return self.config.accelerator

    @property
    def efa_per_node(self) -> int:
        """`vpc.amazonaws.com/efa` devices each node of the pool offers: its type's EFA interfaces
        with `efa: true` (the stack rules hold every allowed type to one layout), else 0."""
        if not self.config.efa:
            return 0
        return max((t.efa_interfaces for t in self.instance_types), default=0)

    @property
    def network_interfaces(self) -> tuple[NetworkInterface, ...]:
        """The EC2NodeClass `networkInterfaces` with `efa: true` (stacks/hardware.py `efa_layout`: the
        stack rules hold every allowed type to one layout), else none: Karpenter's single ENA."""
        if not self.config.efa or not self.instance_types:
            return ()
        return self.instance_types[0].efa_layout

    @property
    def accelerators_at_most(self) -> int | None:
        """The most accelerators the whole pool can hold at once: `limits.accelerators` on each of its
        tiers (Karpenter counts limits per NodePool), so the limit times the tiers; None: unlimited.
        Replicas beyond one tier's limit land on the next, so rollouts and canaries count this; one
        replica or group is checked against a single tier's limit (its nodes belong to one NodePool)."""
        limit = self.limits.accelerators
        return None if limit is None else limit * max(len(self.tiers), 1)

    @property
    def static(self) -> bool:
        """A static pool: Karpenter keeps `replicas` nodes whatever the pods ask."""
        return self.config.replicas is not None


@dataclass(frozen=True, kw_only=True)
class GatewayParent:
    """The Gateway listener model routes attach to."""

    namespace: str
    name: str
    listener: str
    hostname: str | None
    # True: this stack creates that Gateway; False: AIBrix's chart or the platform stack does.
    own: bool
    # True: the listener admits routes from every namespace labelled TEAM_LABEL (the front door's own
    # Gateway), so each route lives in its model's namespace. False: only routes in the Gateway's own
    # namespace attach (AIBrix's, whose chart sets no allowedRoutes: Gateway API's default `Same`), so
    # the routes live there, and a team, whose objects stay in its own namespaces, cannot attach one.
    shared: bool = False

    def route_namespace(self, model_namespace: str) -> str:
        """Where a route (and its policies) to a model in `model_namespace` lives."""
        return model_namespace if self.shared else self.namespace


@dataclass(frozen=True, kw_only=True)
class PlatformView:
    """The platform a stack's models run on: its own (platform, all-in-one) or the platform stack's
    (workloads), exactly as exported. `known` is False for a workloads stack whose platform cannot be
    read here (checked at preview): it then has no pools, and the default add-ons and storage."""

    # How messages name it: "this stack", or the platform stack and where its exports were read.
    where: str
    known: bool
    exports_version: int
    cluster_name: str
    kubernetes_version: str
    environment: str
    region: str
    pools: tuple[ResolvedPool, ...]
    addons: AddonsSection
    storage: StorageSection
    storage_classes: dict[str, str]
    gateway: GatewaySection
    gateway_parent: GatewayParent | None
    neuron_scheduler: str | None
    # prometheus-adapter serves engine gauges to HPAs; None: an older platform that did not say.
    custom_metrics: bool | None
    # The app teams the platform declares (`teams`); a workloads stack is one of them.
    teams: tuple[Team, ...] = ()
    # The in-cluster Prometheus KEDA's triggers query (`http://host[:port]`); None: no Prometheus (or an
    # older platform that did not say).
    prometheus: str | None = None
    # Where this platform's traced hops export spans (its collector, in-cluster) and at what ratio: a team's
    # models export there too; None: the platform runs no tracing (or an older platform that did not say).
    tracing: TraceExport | None = None

    def pool(self, name: str) -> ResolvedPool | None:
        return next((p for p in self.pools if p.name == name), None)

    def team(self, name: str) -> Team | None:
        return next((t for t in self.teams if t.name == name), None)

    @property
    def accelerators(self) -> frozenset[str]:
        return frozenset(p.accelerator for p in self.pools)

    @property
    def node_repair(self) -> bool:
        """Karpenter's node repair gate: `addons.karpenter.nodeRepair`, unset: on where the EKS node
        monitoring agent runs (it sets the accelerator conditions repair acts on; without it only the
        kubelet's Ready condition would). Off without Karpenter or its pools (nothing to repair)."""
        addons = self.addons
        if not (addons.karpenter.enabled and self.pools):
            return False
        gate = addons.karpenter.node_repair
        return addons.node_monitoring_agent.enabled if gate is None else gate


# LeaderWorkerSet v0.10.0 labels every pod of a group with its index in the group (0: the leader) and
# installs its controller and webhooks in this namespace (its CRD names the conversion webhook's
# Service there: crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml).
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_NAMESPACE = "lws-system"
# KEDA and its HTTP add-on run here (the add-on's docs address its scaler and interceptor in `keda`).
KEDA_NAMESPACE = "keda"


def scaling_adapter_name(graph: str, component: str) -> str:
    """The DynamoGraphDeploymentScalingAdapter the Dynamo operator creates for a component with
    `scalingAdapter` (deploy/operator/internal/controller/dgd_scaling_adapters_reconciler.go at the 1.4.0
    cut): `<graph>-<lower-case component name>`."""
    return f"{graph}-{component.lower()}"


# The label every pod (and the Service) of a model carries, so the gateway's network policies, the
# scrapers and the model's own peers can select exactly that model's pods.
MODEL_LABEL = "inference-platform.io/model"
# The extended resource the EFA device plugin advertises: every device of the node, for a pod that owns it.
EFA_RESOURCE = "vpc.amazonaws.com/efa"

# The model revision a pod serves (a pod-template label, never a selector): the PodMonitor keeps it on
# every series, so a canary's metrics are told from the stable revision's.
REVISION_LABEL = "inference-platform.io/revision"
# The canary's workload and Service: `<model>-canary` (stacks/rules/collisions.py keeps it free).
CANARY_SUFFIX = "-canary"
# A revision-pinned rule on a canaried model's route: `<route prefix>/-/<stable|canary>/v1/chat/completions`
# reaches that revision's Service alone (not the weighted split). `-` is never a model's or a namespace's
# name (both start with a letter or digit), so the segment cannot shadow another model's path.
REVISION_SEGMENT = "-"
# The one path a benchmark sends (guidellm's openai_http backend: POST {target}/v1/chat/completions).
BENCHMARK_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class MeasuredRevision:
    """One revision a model's benchmark measures: `label` (`stable`, `canary`, or None for a model
    without a canary, measured through its plain route), its commit, the Service that serves it, and
    the path prefix the benchmark calls (guidellm appends BENCHMARK_PATH)."""

    label: str | None
    commit: str | None
    service: str
    path_prefix: str


# The llm-d router's per-pod engine label: its metrics extractor reads a pod by the engine it names, and
# a pod without it as vLLM (llm-d-router v0.10.0 extractor/metrics/factories.go, RELEASE-NOTES #922).
PICKER_ENGINE_LABEL = "llm-d.ai/engine-type"


# The llm-d router's flow-control headers (pkg/epp/metadata/consts.go at v0.10.0): the fairness id (one
# queue per value; absent: every request shares `default-flow`) and the objective (a priority, resolved
# through an InferenceObjective), each with the deprecated alias the picker still reads. The gateway
# writes the fairness id from the authenticated client and strips the rest: a client picks neither its
# queue nor its priority.
FAIRNESS_HEADER = "x-llm-d-inference-fairness-id"
FAIRNESS_HEADER_ALIAS = "x-gateway-inference-fairness-id"
OBJECTIVE_HEADERS = ("x-llm-d-inference-objective", "x-gateway-inference-objective")


@dataclass(frozen=True, kw_only=True)
class FlowLimits:
    """`models[].routing.flowControl` resolved: the picker's queue bounds, and the header the gateway writes
    the authenticated client id into (`gateway.rateLimit.clientHeader`, or its default), which the route
    copies into FAIRNESS_HEADER."""

    queue_timeout_seconds: int
    max_requests: int
    max_queued_mib: int
    client_header: str


@dataclass(frozen=True, kw_only=True)
class RoutePicking:
    """`models[].routing` resolved: the strategy and, when an endpoint picker serves it, the llm-d
    router's name for the model's engine (its engine catalog's `picker_engine`)."""

    strategy: str
    engine_type: str | None  # None: round-robin, no picker
    # Why this strategy (as written, the default for the engine, or round-robin because the model is
    # reached through the KEDA HTTP add-on's interceptor): `stacks plan` shows it.
    reason: str = ""
    # With `prefix-cache` on a model with a KV-cache CPU tier: the picker's prefix blocks the tier holds
    # per pod (stacks/offload.py), for a second prefix index that remembers what left the GPU; None: none.
    cpu_tier_blocks: int | None = None
    # The picker's flow control; None: off (and always None without a picker).
    flow_control: FlowLimits | None = None
    # The engine's per-adapter series when the picker also scores adapter affinity (llm-d-router's
    # `lora-affinity-scorer`): a picked model whose engine loads its `adapters` itself (`models[].lora`)
    # and exports which adapters each pod runs (vLLM's `vllm:lora_requests_info`); None: not scored.
    adapter_metric: str | None = None
    # LiteLLM (`addons.litellm`, on in the stack that serves the model) calls this picked model through
    # the Envoy its picker's chart runs beside the picker (components/gateway/picker.py), so its requests
    # are picked as the route's are; False: no picker, or no LiteLLM listing the model.
    litellm_proxy: bool = False

    @property
    def picker(self) -> bool:
        return self.engine_type is not None


@dataclass(frozen=True, kw_only=True)
class ScalingSignal:
    """What a model's autoscaler follows, the one reading of `autoscaling.signal`: `gauge`, the engine's
    Prometheus gauge (`metric`, `target` per replica) read by an HPA, AIBrix or KEDA's prometheus trigger;
    or `requests`, the KEDA HTTP add-on's count of the model's requests at its interceptor (`metric`
    `concurrency` or `requestRate`, `target` per replica), KEDA's external-push trigger alone. `reason`
    says why (`stacks plan` shows it)."""

    source: Literal["gauge", "requests"]
    metric: str | None  # None: the engine exports no gauge (refused by stacks/rules/engines.py)
    target: str
    reason: str

    @property
    def requests(self) -> bool:
        return self.source == "requests"

    def describe(self) -> str:
        what = "the HTTP add-on's" if self.requests else "the gauge"
        return f"{self.source}: {what} {self.metric} at {self.target} per replica ({self.reason})"


# The header the front door and LiteLLM set (overwriting a client's) on a scale-to-zero model's requests,
# and the KEDA HTTP add-on's InterceptorRoute matches: every model reaches the interceptor under the same
# host and `/v1/...` paths, so the header is what tells them apart (its value: `Wake.header`).
WAKE_HEADER = "x-inference-platform-model"
# The header the llm-d router's endpoint picker writes its pick into, `podIP:port`
# (llm-d-router v0.10.0 pkg/epp/metadata/consts.go; GAIE 004 endpoint-picker protocol).
PICKER_HEADER = "x-gateway-destination-endpoint"


@dataclass(frozen=True)
class Term:
    """One term of a cold-start estimate: its seconds and the documented facts they come from."""

    seconds: int
    source: str


@dataclass(frozen=True, kw_only=True)
class ColdStartEstimate:
    """How long a model takes from nothing to its first token (stacks/coldstart.py `estimate`): a node
    launched and joined, the engine image pulled, the weights read over the storage path in use, and the
    engine's own start (load, compile or graph capture). `fill` is the part of `weights` the platform's
    preparation init containers spend filling a cache before the engine container starts (so outside its
    startup probe); `first`: a model's first start (caches empty) rather than a start with its caches warm."""

    node: Term
    image: Term
    weights: Term
    engine: Term
    fill: int = 0
    first: bool = False

    @property
    def seconds(self) -> int:
        return self.node.seconds + self.image.seconds + self.weights.seconds + self.engine.seconds

    @property
    def in_container(self) -> int:
        """Seconds the engine container itself spends: reading what the fill left, and starting."""
        return self.weights.seconds - self.fill + self.engine.seconds

    def terms(self) -> dict[str, Term]:
        return {"node": self.node, "image": self.image, "weights": self.weights, "engine": self.engine}


@dataclass(frozen=True, kw_only=True)
class ColdStart:
    """Seconds allowed for a model to start (stacks/coldstart.py `budget`), each its estimate's term times
    the one safety factor: a node launch, the engine image's pull, the preparation's fill, and the engine
    container's own start (reading the weights, loading, compiling)."""

    node_launch: int
    image_pull: int
    startup: int
    # The preparation init containers filling the cache first (a model's first start; a model woken
    # from zero finds its cache filled).
    fill: int = 0

    @property
    def seconds(self) -> int:
        return self.node_launch + self.image_pull + self.fill + self.startup


@dataclass(frozen=True, kw_only=True)
class Wake:
    """How a model that scales to zero comes back: the InterceptorRoute the KEDA HTTP add-on holds its
    requests by (named after the model, in its namespace), the value of WAKE_HEADER that route matches
    (`<namespace>/<name>`: one interceptor serves every team, so the value names the model cluster-wide,
    never a model of another namespace with the same name), and the cold start they wait through."""

    route: str
    header: str
    cold_start: ColdStart


@dataclass(frozen=True, kw_only=True)
class TraceExport:
    """What one hop needs to export spans to the platform's collector."""

    # OTLP/gRPC endpoint of the collector (`http://host:4317`).
    endpoint: str
    # The fraction of requests that start a trace at this hop (parent-based: a request that arrives
    # with a W3C `traceparent` follows its caller's decision).
    sampling_ratio: float


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """A server the front door routes to and the scrapers read: a model's, or the LiteLLM proxy's."""

    name: str  # the name clients ask for (models[].name), and the route's path prefix
    served_model_name: str  # what the server reports in /v1/models
    engine: str
    namespace: str
    service: str
    port: int
    metrics_path: str | None
    metrics_port: int | None
    route_paths: tuple[str, ...]
    # Paths that manage the server; never routed.
    management_paths: tuple[str, ...]
    expose: bool
    # How the front door picks a pod per request; None: Envoy Gateway's default balancing.
    routing: RoutePicking | None = None
    # A model that scales to zero: its requests go through the KEDA HTTP add-on's interceptor.
    wake: Wake | None = None
    # Who owns it: a team's name, or PLATFORM_CLIENTS for the platform's own.
    owner: str = PLATFORM_CLIENTS
    # Whose clients the route admits: the owner and the consumers it names (JWT: these values of the team
    # claim), each once, the owner first.
    callers: tuple[str, ...] = (PLATFORM_CLIENTS,)
    # With `gateway.auth: apiKey`: the Secrets of those callers' keys (and the benchmark's own).
    key_secrets: tuple[KeySecret, ...] = ()
    # The route's path prefix: `/<name>` for the platform's models, `/<namespace>/<name>` for a team's, so
    # two teams' models of one name never share a path.
    route_prefix: str = ""

    @property
    def path_prefix(self) -> str:
        return self.route_prefix or f"/{self.name}"

    @property
    def selector(self) -> dict[str, str]:
        """Labels selecting this server's pods: every engine puts them on every pod it creates."""
        return {MODEL_LABEL: self.name}

    @property
    def serving_selector(self) -> dict[str, str]:
        """Labels selecting the pods that serve clients (its Service's, and what callers from outside the
        model reach): every pod of the server."""
        return self.selector

    @property
    def metrics_selector(self) -> dict[str, str]:
        """Labels selecting the pods that export this server's metrics."""
        return self.selector

    @property
    def backends(self) -> tuple[tuple[str, int], ...]:
        """(Service, weight) the model's route sends to: its one Service."""
        return ((self.service, 1),)

    @property
    def measured_revisions(self) -> tuple[MeasuredRevision, ...]:
        """What a benchmark measures (a model's: ResolvedModel); a server without one: nothing."""
        return ()


@dataclass(frozen=True, kw_only=True)
class AcceptancePlan:
    """A model's acceptance Job, resolved (stacks/resolve/acceptance.py): the Secret in the model's
    namespace whose entry `api-key` it calls with (its route admits it), and whether the platform mints
    that key (`minted`: a RandomPassword per model, kept in that Secret) or the stack gave it. A minted
    key's Secret is also kept where the model's route lives when that is elsewhere (AIBrix's Gateway
    namespace), since a SecurityPolicy names Secrets in its own namespace without a ReferenceGrant:
    `admitted_namespace`."""

    key_secret: str
    minted: bool
    # Where the Secret the model's route admits is: the model's namespace, or a minted key's route namespace.
    admitted_namespace: str
    gate: bool
    structured_output: bool


@dataclass(frozen=True, kw_only=True)
class ModelEntry:
    """One `models[]` entry with what its engine makes of it, whether or not its pool is known: what
    the rules that need no capacity read, for every entry (a model on an unknown pool is refused, and
    a workloads stack's platform may be unknown offline)."""

    index: int
    config: ModelSection
    facts: EngineFacts
    made: ModelFacts
    namespace: str
    # The team that owns it (a workloads stack's), or PLATFORM_CLIENTS.
    owner: str = PLATFORM_CLIENTS
    # Its acceptance Job; None: none (opted out, not exposed, or no key: stacks/resolve/acceptance.py).
    acceptance: AcceptancePlan | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def key(self, *path: str | int) -> str:
        """The key path of this entry or of one of its keys: `models[2].autoscaling.owner`."""
        return key_path(["models", self.index, *path])

    @property
    def adapter_loader(self) -> AdapterLoader | None:
        return adapter_loader(self.config, self.facts)


AdapterLoader = Literal["engine", "aibrix", "prefix"]

# The roles of the pods that serve a model's API, and so hold AIBrix's runtime sidecar where AIBrix loads
# its adapters (components/engines/vllm.py adapter_loader: a group's headless workers hold none).
SERVING_ROLES = ("server", "leader")


def adapter_loader(config: ModelSection, facts: EngineFacts) -> AdapterLoader | None:
    """What loads a model's `adapters` (the one answer every rule and builder reads): the engine itself at
    start (`lora` on an engine that takes LoRA flags: vLLM, SGLang), Ray Serve LLM from one bucket prefix,
    or AIBrix's adapter controller at runtime (vLLM without `lora`); None without adapters or when nothing
    on this engine can load them (refused by stacks/rules/serving.py)."""
    if not config.adapters:
        return None
    if config.lora is not None:
        return "engine" if facts.lora_flags else None
    if facts.lora_from_prefix:
        return "prefix"
    return "aibrix" if facts.lora else None


@dataclass(frozen=True, kw_only=True)
class PodShape:
    """One kind of pod a model runs, exactly as the builders render it: its role; `count` pods of it in
    one replica of the role (a group's nodes, or 1); `replicas` of the role as the workload asks for them
    (None: an autoscaler owns the count and the workload leaves it out); `per_replica`: it scales with
    the model (a Dynamo Frontend or a Ray head does not); and its serving container's resources
    (requests, and limits as rendered, the node's EFA devices included for a group across nodes).
    `pool`: it runs on the model's pool (its accelerators); else on the CPU nodes."""

    role: str
    count: int
    replicas: int | None
    per_replica: bool
    requests: Requests
    resources: Mapping[str, Mapping[str, str]]
    pool: bool

    @property
    def pods(self) -> int | None:
        """The pods of this role the workload asks for (None: as many as its autoscaler decides)."""
        return None if self.replicas is None else self.count * self.replicas


HelperKind = Literal[
    "acceptance", "benchmark", "benchmark-schedule", "kv-prune", "neuron-compile", "bucket-fill", "endpoint-picker"
]


@dataclass(frozen=True, kw_only=True)
class HelperPod:
    """A pod the platform runs in a model's namespace besides its serving pods (stacks/resolve/helpers.py),
    which the namespace's ResourceQuota charges like any other: its requests as rendered (the larger of its
    containers' sum and any init container), the key that asks for it, and when it runs. `beside`: it runs
    while the model's replicas run (a CronJob; a Job that calls the model; a compile or fill Job a new
    revision starts while the old replicas still serve). `awaited`: `pulumi up` waits for it and fails
    with it (a gated acceptance or benchmark Job, an ahead-of-time compile). `fix` says what to change
    other than the quota."""

    kind: HelperKind
    what: str  # how a message names it: "the acceptance Job of qwen3-8b"
    key: str  # the key path that asks for it: models[0].acceptance
    namespace: str
    requests: Requests
    beside: bool
    awaited: bool
    fix: str


@dataclass(frozen=True, kw_only=True)
class ModelCache:
    """Where a model's weights are, resolved from the storage choice: the directory per owner, model and
    revision, compiled Neuron artifacts apart from it, the bucket prefixes, whether the engine streams
    from the bucket instead, and the claim or the node-local size of the volume."""

    model_dir: str
    compiled_dir: str | None
    # `<owner prefix>/<name>/<revision>` (no trailing `/`): the weights; `results_prefix` is where its
    # benchmark results go, `<owner prefix>/_benchmarks/<name>/<revision>`.
    bucket_prefix: str
    results_prefix: str
    streamed: bool
    # The ReadWriteMany claim every replica shares (efs, fsx) or the stack's existing claim; None: an
    # emptyDir on the node, of `local_gib` when the weights' size is known.
    claim: str | None
    local_gib: int | None
    # Scratch room for a streamed model's one-time fill of its bucket prefix (the weights with the local
    # cache's headroom); None when the weights' size is unknown.
    staging_gib: int | None
    # Writers of the cache run as root: the FSx for Lustre root directory is root's (fsGroup does not
    # apply to it).
    writes_as_root: bool
    # With `compileCache`: the engine's compiled artifacts on the shared claim, keyed by owner, model,
    # revision, engine image and parallel shape (`/models/_compile/<owner prefix>/<name>/<revision>/<image
    # key>/tp<T>-pp<P>`), which every replica and restart of that key reuses; None: none kept.
    compile_dir: str | None = None
    # With `models[].lora`: (adapter name, its directory) per adapter, where the preparation steps put it and
    # the engine loads it from: `/models/<owner prefix>/<name>/adapters/<adapter>/<revision>`, beside the
    # model's revisions and never inside one (a weights refill replaces the revision's directory whole).
    adapter_dirs: tuple[tuple[str, str], ...] = ()
    # With `kvCacheOffload.shared`: the engine's KV-cache file tier on the shared claim, per owner, model and
    # revision (`/models/_kvcache/<owner prefix>/<name>/<revision>`), and the GiB it is bounded to; None: none.
    kv_dir: str | None = None
    kv_gib: int = 0
    # The revision directories (names under the model's `_kvcache/<owner prefix>/<name>`) a live workload of
    # the model serves (its own revision, and its canary's): the pruner deletes every other one.
    kv_live: tuple[str, ...] = ()
    # Every SGLang writer rank that can share kv_dir at once (the most pods times each pod's writers:
    # stacks/offload.py kv_writers), and each rank's LRU cap in bytes: kv_gib over them.
    kv_writers: int = 0
    kv_rank_bytes: int = 0


@dataclass(frozen=True, kw_only=True)
class AheadCompile:
    """`models[].neuron.compile: ahead` resolved: the Job that compiles the model's Neuron graphs into the shared
    cache before its serving pods start. `estimate` is the Job pod's first start (a node, the image, the
    cache fill and the whole compile: the serving pods' own estimate then loads the artifacts instead), and
    `deadline_seconds` its activeDeadlineSeconds: that estimate's terms times the safety factor."""

    estimate: ColdStartEstimate
    deadline_seconds: int


@dataclass(frozen=True, kw_only=True)
class ResolvedModel(Endpoint):
    """One `models[]` entry with everything derived from it: where it runs, its image, and the
    workload its engine builds for it (`workload`, the object a scaler targets)."""

    config: ModelSection
    # Its position in `models[]`, for the key paths a rule names.
    index: int
    # Its engine's facts (components/engines/<engine>.py), and what the engine makes of this entry.
    facts: EngineFacts
    dialect: Dialect
    # The Hugging Face repository its weights come from; None: not the Hub.
    hub_repo: str | None
    # The platform fills its cache before the engine starts (False: the engine fetches its own weights).
    prepared: bool
    # Names the engine's operator derives from the model's (Services KubeRay or Dynamo creates).
    operator_names: tuple[DerivedName, ...]
    pool: ResolvedPool
    image: Image
    # What one pod of the serving container requests (stacks/sizing.py): the figures the fit rule checks
    # and the builders render; `pods` is every kind of pod a replica runs, this one included.
    requests: Requests
    pods: tuple[PodShape, ...]
    # Its acceptance Job (ModelEntry.acceptance); None: none.
    acceptance: AcceptancePlan | None = None
    # The tensor-parallel size the engine is given (on Neuron: the NeuronCores of its devices).
    tensor_parallel: int
    cache: ModelCache
    # Seconds the startup probe allows: its first start's engine-container time times the safety factor,
    # in whole probe periods (stacks/coldstart.py `probe_allowance`).
    startup_seconds: int
    # From nothing to the first token with its caches warm (`cold_start_estimate`: what `stacks plan`
    # reports, what a model woken from zero waits) and on its first start (`first_start_estimate`: caches
    # empty, compile caches cold), each term with its source (stacks/coldstart.py `estimate`).
    cold_start_estimate: ColdStartEstimate
    first_start_estimate: ColdStartEstimate
    # What `pulumi up` waits for the model's workload (stacks/coldstart.py `first_start`): its first start's
    # estimate times the safety factor, the startup probe's allowance as its engine phase.
    allowance: ColdStart
    # The workload's `pulumi.com/timeoutSeconds`: the allowance for every step of a rollout (coldstart.py
    # await_seconds).
    await_seconds: int
    # (apiVersion, kind, name) of the workload the engine builds; what a scaler targets.
    workload: tuple[str, str, str]
    # The pods' service account: read-only bucket access through Pod Identity.
    service_account: str | None
    # Who sets the replica count: none (the stack), hpa, keda, aibrix.
    scaler: str
    # AIBrix's gateway plugin and adapter controller find the model's pods by their labels.
    aibrix: bool
    # One replica's nodes and how its accelerators split (stacks/groups.py).
    group: ReplicaGroup
    # `models[].canary`: the second revision's own workload and Service, built like this one from the
    # model entry at the canary's revision (one replica, no autoscaler); None without a canary.
    canary: ResolvedModel | None = None
    # `models[].compileCache` resolved: the engine's compiled artifacts (torch.compile, Triton, Neuron) are
    # kept on the shared cache (`cache.compile_dir`) across replicas and restarts, so a warm start skips
    # the compile (the cold-start estimate reads it).
    compile_cache: bool = False
    # `models[].neuron.compile` resolved to `ahead`: the compile Job's estimate and deadline (the serving
    # pods' estimates then load the compiled artifacts); None: the first serving pod compiles.
    ahead_compile: AheadCompile | None = None
    # (apiVersion, kind, name) of what the model's KEDA ScaledObjects scale, one ScaledObject each: the
    # workload, or a Dynamo graph's scaling adapters (one per scaled component); () without KEDA.
    keda_targets: tuple[tuple[str, str, str], ...] = ()
    # Why `routing` is what it is, and why there is none (Envoy Gateway's own balancing, or no route):
    # `stacks plan` prints it for every exposed model.
    routing_reason: str = ""
    # What its autoscaler follows (stacks/resolve/scaling.py); None without one (`owner: none`).
    scaling: ScalingSignal | None = None
    # The fewest replicas KEDA keeps when the engine's own count sets it (ModelFacts.keda_floor); None:
    # `autoscaling.minReplicas`.
    scale_floor: int | None = None
    # Where its engine (and its picker) export OpenTelemetry spans (stacks/resolve/tracing.py); None: the
    # platform runs no tracing, or the model opted out (`models[].tracing: false`).
    tracing: TraceExport | None = None
    # What its largest preparation init container asks (Requests() without one): a pod on the pool is charged
    # at least this per resource, the init containers running before the engine (stacks/helper_pods.py).
    preparation: Requests = field(default_factory=Requests)
    # The platform's other pods in its namespace, its canary's included (acceptance, benchmark, KV-tier
    # pruner, compile and fill Jobs): what the team's quota must also hold.
    helpers: tuple[HelperPod, ...] = ()

    @property
    def min_replicas(self) -> int:
        """The fewest replicas its autoscaler keeps: the worker count a Dynamo graph under KEDA asks for
        (`dynamo.decodeWorkers`, or `replicas` of an aggregated graph), else `autoscaling.minReplicas`."""
        return self.config.autoscaling.min_replicas if self.scale_floor is None else self.scale_floor

    @property
    def scale_target(self) -> tuple[str, str, str]:
        return self.workload

    def key(self, *path: str | int) -> str:
        """The key path of this model's entry or of one of its keys: `models[2].autoscaling.owner`."""
        return key_path(["models", self.index, *path])

    @property
    def adapter_loader(self) -> AdapterLoader | None:
        return adapter_loader(self.config, self.facts)

    @property
    def adapter_model_names(self) -> tuple[str, ...]:
        """The `model` a request names to get each adapter, on the model's own route: the adapter's name
        (vLLM, SGLang, AIBrix), or `<model>:<adapter>` on Ray Serve LLM (its get_lora_model_ids)."""
        if self.adapter_loader == "prefix":
            return tuple(f"{self.name}:{a.name}" for a in self.config.adapters)
        return tuple(a.name for a in self.config.adapters) if self.adapter_loader else ()

    @property
    def proxied_adapter_names(self) -> tuple[str, ...]:
        """The adapters the LiteLLM proxy lists as models of their own, at this model's Service: those the
        engine loads itself (`lora`), which every pod serves. Not AIBrix's (loaded on the pods its controller
        picks, so a Service call may land on a pod without it) nor Ray Serve's (`<model>:<adapter>`). Whoever
        may call the model through the proxy may call these: an adapter name is no authentication boundary."""
        return tuple(a.name for a in self.config.adapters) if self.adapter_loader == "engine" else ()

    def pod(self, role: str) -> PodShape:
        """The pods of this role the model runs (`frontend`, `worker`, `decode` ...)."""
        return next(p for p in self.pods if p.role == role)

    @property
    def serving_pod_requests(self) -> Requests:
        """What one pod serving the model's API asks of the API server and Karpenter: its serving
        container's requests and its sidecars' (AIBrix's runtime where AIBrix loads the adapters), as its
        pod shape holds them; the serving container's alone for engines whose pods have other roles."""
        return next((p.requests for p in self.pods if p.role in SERVING_ROLES), self.requests)

    def charged(self, pod: PodShape) -> Requests:
        """What the namespace's ResourceQuota charges for one pod of this shape: its containers' requests, or
        per resource its preparation init container's where that is larger (on the pool's pods, which run it)."""
        return at_least(pod.requests, self.preparation) if pod.pool else pod.requests

    @property
    def charged_serving_pod(self) -> Requests:
        """What the ResourceQuota charges for one pod serving the model's API: `serving_pod_requests`, or per
        resource its preparation step where that is larger."""
        return at_least(self.serving_pod_requests, self.preparation)

    @property
    def serving_resources(self) -> Mapping[str, Mapping[str, str]]:
        """The resources of the pods on the model's pool (every such pod of a replica asks the same)."""
        return next(p.resources for p in self.pods if p.pool)

    @property
    def backends(self) -> tuple[tuple[str, int], ...]:
        """(Service, weight): with a canary, the stable Service takes 100 - weight and the canary's weight
        (Gateway API weights are relative shares of the rule's sum)."""
        if self.canary is None or self.config.canary is None:
            return super().backends
        weight = self.config.canary.weight
        return ((self.service, 100 - weight), (self.canary.service, weight))

    @property
    def measured_revisions(self) -> tuple[MeasuredRevision, ...]:
        """What `benchmark` measures, in order. Without a canary: the model through its route. With one:
        the stable revision through its own revision-pinned rule, and with `revisions: each` the canary's
        after it, so neither measures the weighted blend; () without a benchmark."""
        bench = self.config.benchmark
        if bench is None:
            return ()
        if self.canary is None:
            return (MeasuredRevision(None, self.config.revision, self.service, self.path_prefix),)
        pinned = f"{self.path_prefix}/{REVISION_SEGMENT}"
        stable = MeasuredRevision("stable", self.config.revision, self.service, f"{pinned}/stable")
        if bench.revisions == "stable":
            return (stable,)
        return (
            stable,
            MeasuredRevision("canary", self.canary.config.revision, self.canary.service, f"{pinned}/canary"),
        )

    @property
    def serving_selector(self) -> dict[str, str]:
        """The pods of the engine's serving role (a Dynamo graph's Frontend: its workers are reached by the
        Frontend alone), or every pod of the model."""
        role = self.facts.serving_role
        return self.selector if role is None else {**self.selector, COMPONENT_LABEL: role}

    @property
    def metrics_selector(self) -> dict[str, str]:
        """A LeaderWorkerSet group's leaders only: its workers serve no API and export no metrics; a Dynamo
        graph's Frontend only (the series the platform reads are the Frontend's, on its serving port, where
        a worker listens to nothing)."""
        if leader_worker_set(self.config, self.facts.groups):
            return {**self.selector, LWS_WORKER_INDEX: "0"}
        return self.serving_selector


@dataclass(frozen=True)
class ImageTable:
    """The platform's own images this stack renders (stacks/resolve/images.py `rendered_images`), by catalog
    name, with the stack's `images` pins applied. Builders take their images only from here: a name
    the stack was not resolved to render is a bug (a builder and `rendered_images` out of step), never
    a quiet fallback to the unpinned catalog."""

    images: Mapping[str, Image]

    def __getitem__(self, name: str) -> Image:
        try:
            return self.images[name]
        except KeyError:
            known = ", ".join(self.images) or "none"
            raise KeyError(
                f"image {name!r} is not among the images this stack renders ({known}): stacks/resolve/images.py "
                f"rendered_images must say when a builder renders it"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.images)

    def __contains__(self, name: object) -> bool:
        return name in self.images


@dataclass(frozen=True, kw_only=True)
class Team:
    """An app team as its platform declares it (`teams[]`): its namespaces (the first its home), its share
    of the platform, the Secret its clients' gateway keys live in, and what it may call through LiteLLM.
    `quota` is None only for a workloads stack whose platform cannot be read here."""

    name: str
    namespaces: tuple[str, ...]
    quota: Quota | None
    api_keys_secret: str
    litellm_models: tuple[str, ...] = ()
    # The spend limit of the team's LiteLLM virtual key and how often it resets (None: none, never).
    litellm_max_budget: float | None = None
    litellm_budget_duration: str | None = None
    # The tokens and requests a minute the team's LiteLLM virtual key may use (None: no limit).
    litellm_tpm_limit: int | None = None
    litellm_rpm_limit: int | None = None
    # The IAM principals that may assume the team's deploy role: known to the platform that declares the
    # team (never exported), empty where the team is read back from the exports.
    deployers: tuple[str, ...] = ()

    @property
    def home(self) -> str:
        return self.namespaces[0]


# The caller a model's benchmark Job is: its key Secret calls that model and no other.
BENCHMARK_CALLER = "benchmark"
# The caller a model's acceptance Job is, when it has a key Secret of its own (else it uses the benchmark's).
ACCEPTANCE_CALLER = "acceptance"
# The entry of every acceptance key Secret (given or minted) that the Job reads and the route admits.
ACCEPTANCE_KEY_ENTRY = "api-key"
# The Secret (entry `api-key`) in a caller's namespace that holds its LiteLLM virtual key, kept there by
# the platform's key job (components/serving/litellm_keys.py).
LITELLM_KEY_SECRET = "litellm-key"


@dataclass(frozen=True)
class KeySecret:
    """A Secret of gateway API keys a route admits: whose clients hold them (a team, the platform's own
    clients, or one model's benchmark), and where it is."""

    caller: str
    namespace: str
    name: str


@dataclass(frozen=True)
class KeyGrant:
    """A ReferenceGrant the platform issues beside a Secret of gateway keys: SecurityPolicies in
    `from_namespaces` may name that one Secret (Envoy Gateway refuses a cross-namespace credentialRef
    without one). Whether a route admits the keys is its own SecurityPolicy's, from the resolved callers."""

    keys: KeySecret
    from_namespaces: tuple[str, ...]


@dataclass(frozen=True)
class VirtualKey:
    """A LiteLLM virtual key the platform keeps for one caller (a team with `litellm` access, or the
    platform's own clients): which models it may call, its budget, and the Secret (entry `api-key`) in
    the caller's namespace it is written to."""

    caller: str
    namespace: str
    secret: str
    models: tuple[str, ...]
    max_budget: float | None = None
    budget_duration: str | None = None
    tpm_limit: int | None = None
    rpm_limit: int | None = None


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """One reference the stack makes to a Kubernetes Secret (stacks/resolve/secrets.py lists them all): the
    key that names it, the namespace it must be in, the entries and type it must have, and who reads it.
    `mounted`: a pod mounts it, so that pod starts only once the Secret exists."""

    key: str
    name: str
    namespace: str
    entries: tuple[str, ...]  # the data keys read; empty: any (a keys Secret: one entry per client)
    type: str  # Opaque, kubernetes.io/tls or kubernetes.io/dockerconfigjson
    reader: str
    mounted: bool


@dataclass(frozen=True, kw_only=True)
class ManagedSecret:
    """A Secret the program creates from Pulumi secrets of the stack (`secrets.<name>.fromConfig`): one per
    namespace that references the name. `entries` are (data key, Pulumi config key) pairs."""

    name: str
    namespace: str
    type: str
    entries: tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Access:
    """Who the front door admits where, for a stack that owns the platform's listener: the listener's
    own backstop (the platform's clients only), the LiteLLM proxy's route, the grants that let routes
    in other namespaces name a key Secret, the namespaces whose routes may send to the KEDA HTTP add-on's
    interceptor, and the LiteLLM virtual keys the platform keeps. Empty for a team's stack, which owns
    none of it."""

    platform_keys: KeySecret | None = None
    litellm_callers: tuple[str, ...] = ()
    litellm_key_secrets: tuple[KeySecret, ...] = ()
    key_grants: tuple[KeyGrant, ...] = ()
    interceptor_routes_from: tuple[str, ...] = ()
    virtual_keys: tuple[VirtualKey, ...] = ()


@dataclass(frozen=True)
class InstancePrice:
    """What one node of an instance type costs an hour on one capacity type, and where the figure is from."""

    instance_type: str
    capacity_type: str
    usd_per_hour: float
    # "table" (stacks/data/prices.json) or "stack" (addons.monitoring.cost.prices), with "+ spot
    # discount" where the stack's discount was applied.
    basis: str


@dataclass(frozen=True)
class ResolvedCost:
    """The cost rules' inputs (addons.monitoring.cost): a price per instance type and capacity type the
    stack's pools may launch, the table they come from, and what could not be priced."""

    prices: tuple[InstancePrice, ...]
    # The price table's Region, date and source (stacks/pricing.py).
    table_region: str
    table_generated: str
    table_source: str
    spot_discount: float | None
    # Instance types of the pools with no price in the table and none in the stack.
    unpriced: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ResolvedStack:
    """Everything one stack file asks for, resolved."""

    # The validated stack file this was resolved from: what the rules read key paths and the shapes of
    # the sections from.
    config: StackConfig
    environment: str
    region: str
    platform: PlatformView
    # Every models[] entry with its engine's facts, and the models placed on a pool of the platform.
    entries: tuple[ModelEntry, ...]
    models: tuple[ResolvedModel, ...]
    # The cluster this stack creates; None when it runs on a platform stack's cluster.
    cluster: ClusterSection | None
    # A workloads stack's team; None for platform and all-in-one stacks.
    team: Team | None
    # The platform stack a workloads stack runs on (org/project/stack).
    platform_stack: str | None = None
    # Model namespace -> serving-platform controller namespaces that must reach its pods, by engine.
    controller_namespaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The listener this stack's model routes attach to: the platform's exported parent, AIBrix's, or
    # the front door's own (`own` only when this stack creates it).
    route_parent: GatewayParent
    # Every engine the platform knows, by name: what its teams may deploy (prometheus-adapter serves the
    # gauges of all of them) and what the dashboards are built from.
    engines: Mapping[str, EngineFacts]
    # Engines a dashboard is provisioned for (a platform stack: every engine its pools can run).
    dashboard_engines: frozenset[str] = frozenset()
    # The platform's own images this stack renders (preparation, monitoring, LiteLLM, AIBrix ...), pinned
    # by the stack's `images` section; the models' engine images are on each model.
    images: ImageTable
    # (URL, port) of the Prometheus the platform's prometheus-adapter reads; None: no adapter here.
    prometheus_adapter: tuple[str, int | None] | None = None
    # Where the gateway's proxies and the pickers export spans (`addons.tracing` of the platform, through
    # its collector); None: no tracing.
    tracing: TraceExport | None = None
    # Who the front door admits where (stacks/resolve/access.py); empty for a team's stack.
    access: Access = field(default_factory=Access)
    # Every Secret the stack references, and those the program creates from Pulumi secrets
    # (stacks/resolve/secrets.py); the namespaces this stack creates (where a Secret needs a source).
    secret_refs: tuple[SecretRef, ...] = ()
    managed_secrets: tuple[ManagedSecret, ...] = ()
    created_namespaces: frozenset[str] = frozenset()
    # Tokens and cost per team and model (addons.monitoring.cost): None when this stack does not run the
    # platform's monitoring or the cost rules are off.
    cost: ResolvedCost | None = None

    def secrets_in(self, namespace: str) -> tuple[ManagedSecret, ...]:
        """The Secrets the program creates in one namespace."""
        return tuple(s for s in self.managed_secrets if s.namespace == namespace)

    @property
    def prod(self) -> bool:
        return self.environment == "prod"

    @property
    def acceptance_prometheus(self) -> str | None:
        """The Prometheus an acceptance Job queries for its model's `up` series: the kube-prometheus-stack
        this stack runs (its monitoring NetworkPolicy admits the stack's acceptance pods); None for a team's
        stack, an existing Prometheus, or no monitoring (the metrics step is then skipped)."""
        mon = self.platform.addons.monitoring
        if not (self.owns_platform and mon.enabled and not mon.existing_prometheus):
            return None
        return f"http://{PROMETHEUS_SERVICE}.{MONITORING_NAMESPACE}.svc:9090"

    @property
    def owns_platform(self) -> bool:
        """True when this stack creates the cluster and its add-ons (platform, all-in-one)."""
        return self.cluster is not None

    def ask_for(self, addon: str) -> str:
        """How a message asks for an add-on: in this stack, or of the platform team."""
        if self.owns_platform:
            return f"set addons.{addon}.enabled: true"
        return f"ask the platform team ({self.platform.where}) to enable addons.{addon}"

    def placed(self, entry: ModelEntry) -> ResolvedModel | None:
        """The entry placed on its pool; None when the platform has no such pool (or is unknown)."""
        return next((m for m in self.models if m.index == entry.index), None)

    def owner_of(self, namespace: str) -> str:
        """Whose namespace it is (its TEAM_LABEL value): the declared team's it belongs to, this stack's
        team's, or the platform's (PLATFORM_CLIENTS) for its own model namespaces."""
        for team in self.platform.teams:
            if namespace in team.namespaces:
                return team.name
        return self.team.name if self.team is not None else PLATFORM_CLIENTS

    def written_namespaces(self) -> tuple[tuple[str, str], ...]:
        """(namespace, key path) of every namespace this stack writes a model's own objects to (its
        workload and Service, scalers, scrapers, network policies, benchmark, endpoint picker: every
        builder puts them in the model's namespace), one per model, with the key that puts them there:
        `models[i].namespace`, or where it is unset `stack.team` (a team's home) or `models[i].name` (the
        platform's default namespace); and a team's home (`stack.team`), where its stack keeps its record.
        tests/test_team_access.py holds every team render to it."""
        home = ((self.team.home, key_path(["stack", "team"])),) if self.team is not None else ()
        return home + tuple(
            (
                entry.namespace,
                entry.key("namespace")
                if entry.config.namespace is not None
                else key_path(["stack", "team"])
                if self.team is not None
                else entry.key("name"),
            )
            for entry in self.entries
        )

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The model namespaces this stack creates: a platform's own (a team's are its tenancy's)."""
        if self.team is not None:
            return ()
        return tuple(sorted({m.namespace for m in self.models}))
