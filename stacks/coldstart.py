"""The cold-start budget of a model that scales to zero (`autoscaling.minReplicas: 0`): how long the
first request after idle may wait while the KEDA HTTP add-on's interceptor holds it. Pure, computed
once per model (stacks/resolve.py); the front door's route timeout, the InterceptorRoute's timeouts and
the documentation's promise to clients all read it.

Three allowances, each an upper bound rather than a measurement:
- a node: at zero the model's accelerator node may be gone (Karpenter consolidates empty nodes), and
  launching one is an EC2 launch, boot, join and the GPU device plugin's registration;
- the engine image: a fresh node pulls it whole (the vLLM, SGLang, TGI CUDA images are several GB);
- the startup probe's own allowance, the very number the model's probe uses
  (components/engines/workload.py startup_allowance over components/storage/cache.py
  model_startup_seconds, rounded to whole probe periods).
"""

from __future__ import annotations

from components.engines.workload import startup_allowance
from components.storage.cache import model_startup_seconds, probe_seconds

from .config import ModelSection
from .engine_facts import EngineFacts
from .resolved import ColdStart

# Karpenter launching an accelerator node: EC2 capacity, boot, kubelet join and the device plugin
# advertising the GPUs (typically 2 to 5 minutes; allowed 10).
NODE_LAUNCH_SECONDS = 600
# Pulling an engine image on a fresh node: one allowance for every engine (their CUDA images are 5 to
# 15 GB compressed; allowed 10 minutes at a modest registry rate, not measured per engine).
IMAGE_PULL_SECONDS = 600


def cold_start(model: ModelSection, facts: EngineFacts, neuron: bool) -> ColdStart:
    """The budget of one model: node, image, and its startup probe's allowance."""
    startup = probe_seconds(startup_allowance(facts, model_startup_seconds(model, neuron)))
    return ColdStart(node_launch=NODE_LAUNCH_SECONDS, image_pull=IMAGE_PULL_SECONDS, startup=startup)
