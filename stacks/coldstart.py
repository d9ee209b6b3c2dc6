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
- the engine image: a fresh node pulls it whole (the vLLM, SGLang, TGI CUDA images are several GB).
"""

from __future__ import annotations

import math

from .config import ModelSection
from .engine_facts import EngineFacts
from .resolved import STARTUP_PERIOD_SECONDS, ColdStart
from .sizing import weights

ASSUMED_READ_MIBPS = 100
STARTUP_BASE_SECONDS = 180
NEURON_COMPILE_SECONDS = 2700
# Karpenter launching an accelerator node: EC2 capacity, boot, kubelet join and the device plugin
# advertising the GPUs (typically 2 to 5 minutes; allowed 10).
NODE_LAUNCH_SECONDS = 600
# Pulling an engine image on a fresh node: one allowance for every engine (their CUDA images are 5 to
# 15 GB compressed; allowed 10 minutes at a modest registry rate, not measured per engine).
IMAGE_PULL_SECONDS = 600


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
