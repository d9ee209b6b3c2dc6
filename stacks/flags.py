"""Why the platform owns an engine flag: the reasons `models[].engineArgs` is refused when it sets one.

Each engine module lists the flags its parser reads for these (`Dialect.owned`, flag -> reason);
`{port}` is the serving port. The checks themselves are stacks/rules/engine_args.py.
"""

from __future__ import annotations

ADDRESS = (
    "sets where the server listens, which the platform owns: the probes, the Service, the NetworkPolicy and the "
    "route reach it on 0.0.0.0 at port {port}; remove it"
)
MODEL = (
    "chooses what the server loads, which the platform owns: it serves the prepared copy of models[].model at "
    "models[].revision; change model or revision instead"
)
NAME = "sets the served model name, which is models[].name (clients and the route use it); rename the model instead"
PARALLEL = (
    "sets a parallelism size, which the platform derives from acceleratorsPerReplica, nodesPerReplica and "
    "parallelism (the pods request exactly those accelerators); change those keys instead"
)
GROUP = (
    "sets how the pods of a multi-node group find each other, which the platform wires from the LeaderWorkerSet "
    "(nodesPerReplica); remove it"
)
TRUST = (
    "would run code from the model repository around models[].trustRemoteCode; set trustRemoteCode: true on the "
    "model if it needs it"
)
MAXLEN = "sets the context length, which is models[].maxModelLen; set maxModelLen instead"
GRAMMAR = "sets the grammar backend, which is models[].sglang.grammarBackend; set that key instead"
QUANT = "sets the quantization, which is models[].tgi.quantize (checked against tgi.weightsFormat); set that instead"
CONFIG = (
    "reads options from a file, which could set any flag out of sight of these checks; list each flag in "
    "engineArgs instead"
)
DISAGG = "sets the Dynamo role wiring, which the platform derives from dynamo.mode; remove it"
KV_EVENTS = (
    "sets how the worker publishes its KV cache events, which the platform configures on every Dynamo worker "
    "(the Frontend's KV router routes by them); remove it"
)
KV_CACHE = (
    "turns off the prefix cache whose KV events the Frontend's KV router routes by, which the platform keeps on "
    "for every Dynamo worker; remove it"
)
ROUTER = (
    "sets the router this worker set advertises, which replaces the Frontend's KV routing for it (Dynamo's "
    "per-worker-set router override); remove it"
)
API_KEY = (
    "puts a credential into the container's arguments, readable by anyone who can read the pod spec; clients "
    "authenticate at the gateway (gateway.auth: apiKey with gateway.apiKeysSecret, or jwt), and the engine's "
    "port is closed to everything but the gateway"
)
HF_TOKEN = (
    "puts a credential into the container's arguments; set secrets.huggingFaceToken to an existing Secret "
    "instead (mounted as a file)"
)
TUNNEL = (
    "opens an ngrok tunnel from the server to the internet, around the gateway and its authentication; "
    "remove it (models are reached through the gateway)"
)
CREDENTIAL = (
    "looks like a credential, and a credential never goes into arguments: use the Secret mechanisms "
    "(secrets.huggingFaceToken, secrets.ngcApiKey, gateway.apiKeysSecret, addons.litellm "
    "externalProviders[].apiKeySecret), which mount files"
)
LOADER = (
    "sets how the weights load, which the platform owns for a streamed model (`--load-format runai_streamer` and "
    "the streamer's concurrency and memory limit); remove it, or remove models[].loadFormat"
)
LORA = (
    "sets LoRA serving, which the platform sets from models[].adapters and models[].lora (the prepared adapters, "
    "their largest rank, maxLoras and maxCpuLoras); use adapters and lora instead"
)
GGUF = (
    "selects GGUF weights, and the Run:ai streamer loads only safetensors; remove it, or remove models[].loadFormat "
    "to load the model from the cache"
)
OFFLOAD = (
    "sets the KV-cache offload (a host-memory tier the pod's memory is not sized for, or a KV connector in its "
    "place), which is models[].kvCacheOffload; use kvCacheOffload (cpuGiB) instead, which also sizes the pod"
)
PAGE_SIZE = (
    "sets the KV page size, which the shared KV-cache file tier (models[].kvCacheOffload.shared) sets to 64 tokens "
    "(a file per page); remove it, or remove kvCacheOffload.shared"
)
TRACING = (
    "sets where the engine exports OpenTelemetry spans, which the platform points at its collector when tracing "
    "is on; use addons.tracing (the backend endpoint, sampling) / models[].tracing (off for this model) instead"
)
NO_OFFLOAD = (
    "offloads the KV cache into host memory the pod is not sized for, and the platform wires KV-cache offload "
    "(models[].kvCacheOffload) for vllm and sglang only; remove it"
)
