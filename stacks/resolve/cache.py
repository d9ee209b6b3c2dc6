"""Where a model's weights are, resolved once from the storage choice (`ResolvedModel.cache`): the
builders render volumes, init containers and the engine's paths from this and compute none of it.

- efs / fsx: the namespace's shared ReadWriteMany claim `model-cache`, filled once and reused by
  every replica and restart;
- local: an emptyDir on the node's RAID0 instance store, sized to the model (weights plus
  `storage.local.headroomPercent`, plus compiled artifacts on Neuron), the same size the pod's
  ephemeral-storage request counts (stacks/sizing.py);
- none: an emptyDir on the node's root volume, or `storage.existingClaim` when given.
Weights live per owner, model and revision, in the bucket (`<owner prefix>/<name>/<revision>/`,
stacks/resolved.py `owner_prefix`: `platform/` or `teams/<team>/`) and in the cache below `/models` at
the same path, so a new revision never mixes with an old one and each owner's reader role is granted its
own prefix only; compiled Neuron artifacts live in a tree of their own.
"""

from __future__ import annotations

import math

from ..config.models import ModelSection
from ..config.pools import NodePoolSection
from ..config.storage import StorageSection
from ..fastpath import COMPILE_DIR, SHARED_CACHES
from ..offload import KV_DIR, sglang_rank_cap_bytes, shared_gib
from ..resolved import CACHE_CLAIM, CACHE_ROOT, RESULTS_DIR, ModelCache, owner_prefix
from ..sizing import cache_on_node, local_cache_gib, weights

# Compiled Neuron artifacts: a separate tree, so weights and compiler output never mix. `_` cannot
# start a model name (DNS label), so it cannot collide with a model directory.
COMPILED_ROOT = f"{CACHE_ROOT}/_neuron"


def revision_path(model: ModelSection) -> str:
    """`<name>/<revision>`: the model's path under its owner's prefix (and its compiled artifacts')."""
    return f"{model.name}/{model.revision or 'latest'}"


def bucket_prefix(model: ModelSection, owner: str) -> str:
    """`<owner prefix>/<name>/<revision>`: the model's weights in the bucket and under the cache root."""
    return f"{owner_prefix(owner)}/{revision_path(model)}"


def adapter_dirs(model: ModelSection, owner: str) -> tuple[tuple[str, str], ...]:
    """(name, directory) of each adapter the engine loads itself (`models[].lora`): under the model's own
    directory of its owner's prefix, `adapters/<adapter>/<revision>` (`latest` when unpinned, as for the weights)."""
    if model.lora is None:
        return ()
    root = f"{CACHE_ROOT}/{owner_prefix(owner)}/{model.name}/adapters"
    return tuple((a.name, f"{root}/{a.name}/{a.revision or 'latest'}") for a in model.adapters)


def results_prefix(model: ModelSection, owner: str) -> str:
    """`<owner prefix>/_benchmarks/<name>/<revision>`: its benchmark results (the run adds its UTC time)."""
    return f"{owner_prefix(owner)}/{RESULTS_DIR}/{revision_path(model)}"


def claim(storage: StorageSection) -> str | None:
    """The claim every replica mounts: the namespace's shared one (efs, fsx), the stack's existing one,
    or None for an emptyDir on the node."""
    if storage.model_cache in ("efs", "fsx"):
        return CACHE_CLAIM
    if storage.model_cache == "none" and storage.existing_claim is not None:
        return storage.existing_claim.name
    return None


def staging_gib(model: ModelSection, storage: StorageSection) -> int | None:
    """Room to download the weights once before copying them to the bucket: their size with the local
    cache's headroom."""
    w = weights(model)
    headroom = storage.local.headroom_percent
    return max(1, math.ceil(w.bytes * (1 + headroom / 100) / 2**30)) if w else None


def compile_dir(model: ModelSection, owner: str, compile_key: str) -> str:
    """`/models/_compile/<owner prefix>/<name>/<revision>/<compile key>`: the model's compiled artifacts on
    the shared cache, apart from every owner's weights; `compile_key` is `<image key>/tp<T>-pp<P>`."""
    return f"{CACHE_ROOT}/{COMPILE_DIR}/{bucket_prefix(model, owner)}/{compile_key}"


def kv_dir(model: ModelSection, storage: StorageSection, owner: str) -> str | None:
    """`/models/_kvcache/<owner prefix>/<name>/<revision>`: the model's KV-cache file tier on the shared claim
    (`kvCacheOffload.shared`, stacks/offload.py), apart from every weight and every other revision; None
    without the tier or a shared cache (refused: stacks/rules/offload.py)."""
    if not shared_gib(model) or storage.model_cache not in SHARED_CACHES:
        return None
    return f"{CACHE_ROOT}/{KV_DIR}/{bucket_prefix(model, owner)}"


def kv_live(model: ModelSection) -> tuple[str, ...]:
    """The revision directories a live workload of the model serves: its own and its canary's."""
    live = [model.revision or "latest"]
    if model.canary is not None:
        live.append(model.canary.revision)
    return tuple(live)


def model_cache(
    model: ModelSection,
    pool: NodePoolSection,
    storage: StorageSection,
    owner: str,
    compile_key: str | None = None,
    kv_writers: int = 1,
) -> ModelCache:
    """The cache of `owner`'s model (a team's name, or PLATFORM_CLIENTS); with `compile_key` (the model keeps
    a compile cache, `ResolvedModel.compile_cache`) its compiled artifacts' directory on the shared claim,
    where a Neuron model's compiled tree then lives too; `kv_writers`: the SGLang ranks that can share its
    KV-cache file tier at once (stacks/offload.py kv_writers), over which the tier's bound is split."""
    neuron = pool.accelerator == "neuron"
    streamed = model.load_format == "runai-streamer"
    on_node = cache_on_node(storage) and not streamed
    prefix = bucket_prefix(model, owner)
    compiled = compile_dir(model, owner, compile_key) if compile_key else None
    return ModelCache(
        model_dir=f"{CACHE_ROOT}/{prefix}",
        compiled_dir=(compiled or f"{COMPILED_ROOT}/{revision_path(model)}") if neuron else None,
        compile_dir=compiled,
        bucket_prefix=prefix,
        results_prefix=results_prefix(model, owner),
        streamed=streamed,
        claim=None if streamed else claim(storage),
        local_gib=local_cache_gib(model, pool, storage.local.headroom_percent) if on_node else None,
        staging_gib=staging_gib(model, storage) if streamed else None,
        writes_as_root=storage.model_cache == "fsx",
        adapter_dirs=() if streamed else adapter_dirs(model, owner),
        kv_dir=kv_dir(model, storage, owner),
        kv_gib=shared_gib(model),
        kv_live=kv_live(model) if shared_gib(model) else (),
        kv_writers=kv_writers if shared_gib(model) else 0,
        kv_rank_bytes=sglang_rank_cap_bytes(shared_gib(model), kv_writers) if shared_gib(model) else 0,
    )
