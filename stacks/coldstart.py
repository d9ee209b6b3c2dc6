"""How long a model takes to start, estimated once per model by the resolution step from documented facts
(stacks/coldstart_facts.py, the image sizes of stacks/versions.py, the instances' network rates), and every
wait derived from that one number times one safety factor (coldstart_facts.SAFETY_FACTOR):

- the estimate (`estimate`): four terms, each with its source: the node (launch, join, the device plugin
  registering the accelerators; none when the pool keeps a warm node), the engine image (its compressed
  bytes over the pull path in use, SOCI parallel pull or containerd's default, bounded by the instance's
  network), the weights (their bytes over the storage path in use: FSx's provisioned throughput, EFS's
  per-client rate, the Run:ai streamer's S3 streams, the Hub, a node-local cache refilled on every new
  node), and the engine (its start with a warm compile cache, plus the compile when the cache is cold; a
  Neuron compile, or the load of cached Neuron artifacts);
- the startup probe (`probe_allowance`): the engine container's part of a first start (cold caches) times
  the factor, in whole probe periods: the kubelet never restarts a container still doing what the
  estimate says it does;
- the scale-to-zero wake budget (`budget` of the warm estimate: the interceptor's readiness timeout and the
  front door's route timeout): each term times the factor;
- the Pulumi await (`first_start`, `await_seconds`): the first start's terms times the factor, the probe's
  allowance as its engine phase, once per step of a rollout.
"""

from __future__ import annotations

import json
import math

from components.engines import streamer

from .coldstart_facts import (
    EFS_BURSTING,
    EFS_PER_CLIENT,
    ENGINE_WARM,
    FSX_SOURCE,
    GPU_NODE_READY,
    HUB,
    MEASURED_NODE_FAMILIES,
    NEURON_CACHED,
    NEURON_COMPILE,
    NODE_DISK,
    PULL_SNAPSHOT_LAZY,
    PULL_SOCI,
    PULL_STANDARD,
    S3_PER_STREAM,
    SAFETY_FACTOR,
    SNAPSHOT_FSR_SOURCE,
    TORCH_COMPILE,
    UNMEASURED_NODE_READY,
    WARM_NODE,
    Fact,
)
from .config import ModelSection
from .config.storage import StorageSection
from .fastpath import SNAPSHOT, SOCI_THROUGHPUT_MIBPS
from .resolved import (
    STARTUP_PERIOD_SECONDS,
    ColdStart,
    ColdStartEstimate,
    ModelCache,
    ResolvedPool,
    Term,
)
from .sizing import UNKNOWN_WEIGHTS_MIB, weights
from .versions import UNKNOWN_IMAGE, Image, image_size

# The Run:ai streamer's concurrent S3 streams, as the engines are given them (one copy of the figure).
STREAMER_CONCURRENCY = int(json.loads(streamer.EXTRA_CONFIG)["concurrency"])
# The AWS CLI's default `max_concurrent_requests` for `aws s3` transfers (its S3 configuration docs): the
# streamed model's one-time upload to the bucket runs with it.
AWS_CLI_CONCURRENCY = 10
GB = 1e9
# The engine figures are vLLM's, the only ones published: they bound every CUDA engine (SGLang's CUDA graphs,
# TGI's warm-up and Ollama's load are not measured apart).
VLLM_FIGURES = " (vLLM's figures, applied to every CUDA engine)"


def safe(seconds: float) -> int:
    """A wait: an estimated `seconds` times the one safety factor, in whole seconds."""
    return math.ceil(seconds * SAFETY_FACTOR)


def network_rate(pool: ResolvedPool) -> float | None:
    """Bytes per second the pool's slowest instance type moves over its network (its baseline); None
    when the catalog has no rate for its types."""
    rates = [t.network_bytes_per_second for t in pool.instance_types if t.network_mbps]
    return min(rates) if rates else None


def transfer(size: float, rate: Fact, pool: ResolvedPool, what: str) -> Term:
    """`size` bytes at a documented rate, bounded by the instance's network."""
    net = network_rate(pool)
    effective = min(rate.value, net) if net else rate.value
    bound = " (the instance's network)" if net and net < rate.value else ""
    source = f"{size / GB:.1f} GB {what} at {effective / 1e6:.0f} MB/s{bound}: {rate.source}"
    return Term(math.ceil(size / effective), source)


def node_term(pool: ResolvedPool) -> Term:
    """Launch, join and device registration of the pool's slowest family; nothing with a warm node."""
    if pool.warm_nodes > 0:
        return Term(int(WARM_NODE.value), WARM_NODE.source)
    families = {t.family for t in pool.instance_types}
    fact = GPU_NODE_READY if families and families <= MEASURED_NODE_FAMILIES else UNMEASURED_NODE_READY
    return Term(int(fact.value), fact.source)


def image_term(image: Image, pool: ResolvedPool) -> Term:
    """The engine image's compressed bytes over the pool's pull path. From a pre-pulled image cache with
    fast snapshot restore: those bytes read at the data volume's throughput (the instance's network is not
    in that path; its EBS bandwidth is not in the catalog, a term a live cluster confirms); without it, as
    a standard pull (no published rate for lazy loading)."""
    size = image_size(image) or UNKNOWN_IMAGE
    if pool.image_pull == SNAPSHOT:
        snapshot = pool.config.image_snapshot
        if snapshot is not None and snapshot.fast_snapshot_restore:
            volume = SOCI_THROUGHPUT_MIBPS * 2**20
            source = (
                f"snapshot with fast snapshot restore: {size.bytes / GB:.1f} GB of {image.repository}:{image.tag} "
                f"({size.source}) read at {volume / 1e6:.0f} MB/s: {SNAPSHOT_FSR_SOURCE}"
            )
            return Term(math.ceil(size.bytes / volume), source)
        term = transfer(size.bytes, PULL_SNAPSHOT_LAZY, pool, f"of {image.repository}:{image.tag} ({size.source})")
        return Term(term.seconds, f"snapshot without fast snapshot restore: {term.source}")
    rate = PULL_SOCI if pool.image_pull == "soci" else PULL_STANDARD
    term = transfer(size.bytes, rate, pool, f"of {image.repository}:{image.tag} ({size.source})")
    return Term(term.seconds, f"{pool.image_pull} pull: {term.source}")


def weights_bytes(model: ModelSection) -> tuple[float, str]:
    """The weights' bytes (parameters x dtype), or the stated bound when the stack gives neither."""
    w = weights(model)
    if w is not None:
        return w.bytes, f"({model.parameters} parameters in {model.dtype})"
    return UNKNOWN_WEIGHTS_MIB * 2**20, "(no parameters/dtype given: bounded at 50 GiB, stacks/sizing.py)"


def cache_rate(storage: StorageSection, cache: ModelCache) -> Fact:
    """The read rate of the model's cache once filled: FSx's provisioned throughput, EFS by mode, or the
    node-disk bound (a node-local cache, or an existing claim of unknown storage)."""
    if cache.claim is not None and storage.model_cache == "fsx":
        tib = storage.fsx.storage_capacity_gib / 1024
        return Fact(storage.fsx.throughput_per_tib * 1e6 * tib, "B/s", FSX_SOURCE)
    if cache.claim is not None and storage.model_cache == "efs":
        if storage.efs.throughput_mode == "bursting":
            return EFS_BURSTING
        provisioned = storage.efs.provisioned_throughput_mibps
        if provisioned is not None and provisioned * 2**20 < EFS_PER_CLIENT.value:
            return Fact(provisioned * 2**20, "B/s", "EFS provisioned throughput (storage.efs)")
        return EFS_PER_CLIENT
    return NODE_DISK


def weights_term(
    model: ModelSection, pool: ResolvedPool, storage: StorageSection, cache: ModelCache, prepared: bool, first: bool
) -> tuple[Term, int]:
    """(the weights' term, the part of it the preparation's fill takes before the engine starts)."""
    size, what = weights_bytes(model)
    if cache.streamed:
        rate = Fact(
            STREAMER_CONCURRENCY * S3_PER_STREAM.value,
            "B/s",
            f"{STREAMER_CONCURRENCY} streams x {S3_PER_STREAM.source}",
        )
        stream = transfer(size, rate, pool, f"{what} streamed from the bucket")
        if not first:
            return stream, 0
        # A first start waits for the one-time fill of the bucket prefix: a Hub download, then the upload.
        upload = Fact(
            AWS_CLI_CONCURRENCY * S3_PER_STREAM.value,
            "B/s",
            f"aws s3 sync's {AWS_CLI_CONCURRENCY} "
            f"concurrent requests (AWS CLI S3 configuration docs) x {S3_PER_STREAM.source}",
        )
        steps = [transfer(size, HUB, pool, f"{what} fetched from the Hub"), transfer(size, upload, pool, "uploaded")]
        seconds = sum(t.seconds for t in steps)
        return Term(seconds + stream.seconds, "; ".join(t.source for t in [*steps, stream])), seconds
    if not prepared:
        return transfer(size, HUB, pool, f"{what} fetched by the engine from the Hub"), 0
    # A shared cache is filled once (a first start); a node-local one on every new node. The bucket step
    # finds nothing for a model that is not streamed (only the streamer's fill uploads weights), so the
    # fill is the Hub's.
    filled = first or cache.claim is None
    fill = transfer(size, HUB, pool, f"{what} filled from the Hub") if filled else None
    read = transfer(size, cache_rate(storage, cache), pool, f"{what} read from the {storage.model_cache} cache")
    if fill is None:
        return read, 0
    return Term(fill.seconds + read.seconds, f"{fill.source}; then {read.source}"), fill.seconds


def engine_term(pool: ResolvedPool, cache: ModelCache, compile_cache: bool, first: bool, ahead: bool = False) -> Term:
    """The engine's own start: warm, plus the compile a cold cache costs (torch.compile on CUDA; on Neuron
    the compile, or the cached artifacts' load where they survive: the shared cache, or `compileCache`, or
    `ahead`: the compile Job put them there before the pod started)."""
    if pool.accelerator == "neuron":
        if ahead:
            return Term(int(NEURON_CACHED.value), f"compiled ahead by the model's compile Job: {NEURON_CACHED.source}")
        cached = not first and (compile_cache or cache.claim is not None)
        fact = NEURON_CACHED if cached else NEURON_COMPILE
        return Term(int(fact.value), fact.source)
    if not first and compile_cache:
        return Term(int(ENGINE_WARM.value), f"compile cache warm: {ENGINE_WARM.source}{VLLM_FIGURES}")
    seconds = int(ENGINE_WARM.value + TORCH_COMPILE.value)
    return Term(seconds, f"compile cache cold: {ENGINE_WARM.source}; plus {TORCH_COMPILE.source}{VLLM_FIGURES}")


def estimate(
    model: ModelSection,
    pool: ResolvedPool,
    storage: StorageSection,
    cache: ModelCache,
    image: Image,
    *,
    prepared: bool,
    compile_cache: bool,
    first: bool = False,
    ahead: bool = False,
) -> ColdStartEstimate:
    """From nothing to the first token: with its caches as a restart finds them (`first` False: a shared
    cache filled, the compile cache warm where it is kept), or on its first start (everything cold but what
    an ahead-of-time compile Job, `ahead`, compiled before it)."""
    weights_, fill = weights_term(model, pool, storage, cache, prepared, first)
    return ColdStartEstimate(
        node=node_term(pool),
        image=image_term(image, pool),
        weights=weights_,
        engine=engine_term(pool, cache, compile_cache, first, ahead),
        fill=fill,
        first=first,
    )


def probe_seconds(seconds: int, period: int = STARTUP_PERIOD_SECONDS) -> int:
    """What a startup probe allowing `seconds` really waits: whole periods, at least one."""
    return period * max(1, math.ceil(seconds / period))


def probe_allowance(first: ColdStartEstimate) -> int:
    """Seconds the startup probe allows (`ResolvedModel.startup_seconds`): the engine container's part of a
    first start (its slowest: cold compile caches) times the safety factor, in whole probe periods."""
    return probe_seconds(safe(first.in_container))


def budget(est: ColdStartEstimate) -> ColdStart:
    """Every term of an estimate times the safety factor: a scale-to-zero model's wake budget (`Wake`)."""
    return ColdStart(
        node_launch=safe(est.node.seconds),
        image_pull=safe(est.image.seconds),
        fill=safe(est.fill),
        startup=safe(est.in_container),
    )


def first_start(first: ColdStartEstimate, startup_seconds: int) -> ColdStart:
    """What `pulumi up` waits for a model's first replica (`ResolvedModel.allowance`): its first start's
    node, image and fill times the safety factor, and its startup probe's allowance."""
    return ColdStart(
        node_launch=safe(first.node.seconds),
        image_pull=safe(first.image.seconds),
        fill=safe(first.fill),
        startup=startup_seconds,
    )


def compile_job_deadline(job: ColdStartEstimate) -> int:
    """A Neuron compile Job's activeDeadlineSeconds: its pod's first start (node, image, fill, the compile)
    with each term times the safety factor, as a serving pod's first start is allowed."""
    return first_start(job, probe_allowance(job)).seconds


def await_seconds(model: ModelSection, allowance: ColdStart) -> int:
    """What the model's workload's await allows (`ResolvedModel.await_seconds`): its allowance once per
    step of a rollout. A first `pulumi up` starts every replica at once; an update replaces `maxSurge`
    replicas at a time (one when there is no surge: stacks/config/models.py Rollout), each step a new
    pod's whole allowance, so the await covers the slowest case, every step of the largest count."""
    step = max(model.rollout.max_surge, 1)
    return allowance.seconds * math.ceil(model.most_replicas / step)
