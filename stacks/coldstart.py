"""How long a model may take to start, computed once per model by the resolution step: the startup
probe's allowance (`ResolvedModel.startup_seconds`) and, for a model that scales to zero, the budget
its first request after idle waits through (`Wake.cold_start`). The probe, the front door's route
timeout, the InterceptorRoute's timeouts and the documentation's promise to clients all read these.

Allowances are upper bounds, not measurements:
- reading the weights at a deliberately conservative rate (a floor to size a probe, not a
  performance claim about any storage choice), plus a base for the server's own start, plus a Neuron
  compile on a Neuron pool's first start;
- a node: at zero the model's accelerator node may be gone (Karpenter consolidates empty nodes), and
  launching one is an EC2 launch, boot, join and the GPU device plugin's registration;
- the engine image: a fresh node pulls it whole (the vLLM, SGLang, TGI CUDA images are several GB);
- on a first start, the platform's preparation filling the cache (stacks/awaits.py has the node and
  image figures; `ResolvedModel.allowance` is what `pulumi up` waits for a model's workload).
"""

from __future__ import annotations

import math
from dataclasses import replace

from .awaits import IMAGE_PULL_SECONDS, NODE_LAUNCH_SECONDS
from .config import ModelSection
from .engine_facts import EngineFacts
from .resolved import STARTUP_PERIOD_SECONDS, ColdStart
from .sizing import weights

ASSUMED_READ_MIBPS = 100
STARTUP_BASE_SECONDS = 180
NEURON_COMPILE_SECONDS = 2700


def startup_budget_seconds(size_bytes: int | None, neuron: bool = False, read_mibps: int = ASSUMED_READ_MIBPS) -> int:
    """Seconds to allow a server to load `size_bytes` of weights (plus a Neuron compile on first
    start) before its startup probe gives up. Unknown size: the base allowance only."""
    seconds = STARTUP_BASE_SECONDS
    if size_bytes:
        seconds += math.ceil(size_bytes / 2**20 / read_mibps)
    if neuron:
        seconds += NEURON_COMPILE_SECONDS
    return seconds


def model_startup_seconds(model: ModelSection, neuron: bool) -> int:
    """The cache's budget for this model (`ModelCache.startup_seconds`): its weights read at the
    conservative rate, plus a Neuron compile on a Neuron pool (a streamed model is never compiled)."""
    w = weights(model)
    streamed = model.load_format == "runai-streamer"
    return startup_budget_seconds(int(w.bytes) if w else None, neuron=neuron and not streamed)


def probe_seconds(seconds: int, period: int = STARTUP_PERIOD_SECONDS) -> int:
    """What a startup probe allowing `seconds` really waits: whole periods, at least one."""
    return period * max(1, math.ceil(seconds / period))


def startup_allowance(facts: EngineFacts, cache_seconds: int) -> int:
    """Seconds the startup probe allows (`ResolvedModel.startup_seconds`, whole probe periods): the
    engine's own allowance, or the cache's budget for this model's size when larger."""
    return probe_seconds(max(facts.startup_seconds, cache_seconds))


def cold_start(startup_seconds: int) -> ColdStart:
    """The budget of a model at zero: a node, the image, and its startup probe's allowance."""
    return ColdStart(node_launch=NODE_LAUNCH_SECONDS, image_pull=IMAGE_PULL_SECONDS, startup=startup_seconds)


def fill_seconds(model: ModelSection, prepared: bool, read_mibps: int = ASSUMED_READ_MIBPS) -> int:
    """Seconds the platform's preparation init containers may take to fill the cache before the engine
    starts: the weights at the conservative rate, when the platform prepares them and their size is known
    (a streamed model reads the bucket itself; an unknown size has only the startup probe's base)."""
    w = weights(model)
    if not prepared or w is None or model.load_format == "runai-streamer":
        return 0
    return math.ceil(int(w.bytes) / 2**20 / read_mibps)


def first_start(model: ModelSection, prepared: bool, startup_seconds: int) -> ColdStart:
    """What `pulumi up` waits for a model's first replica (`ResolvedModel.allowance`): a fresh node, the
    engine image, the cache fill of a first start, and its startup probe's allowance."""
    return replace(cold_start(startup_seconds), fill=fill_seconds(model, prepared))


def await_seconds(model: ModelSection, allowance: ColdStart) -> int:
    """What the model's workload's await allows (`ResolvedModel.await_seconds`): its allowance once per
    step of a rollout. A first `pulumi up` starts every replica at once; an update replaces `maxSurge`
    replicas at a time (one when there is no surge: stacks/config/models.py Rollout), each step a new
    pod's whole allowance, so the await covers the slowest case, every step of the largest count."""
    step = max(model.rollout.max_surge, 1)
    return allowance.seconds * math.ceil(model.most_replicas / step)
