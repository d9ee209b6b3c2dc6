"""KV-cache offload (`models[].kvCacheOffload`): the engine flags of a CPU tier and the host memory it
takes, in one place for the engine modules, the sizing and the rules.

Sources, at the pinned versions:
- vLLM 0.29 (`vllm/config/cache.py`): `--kv-offloading-size` is the tier in GiB, "the total buffer size
  summed across all TP ranks", and `--kv-offloading-backend native` (the default of `native|lmcache`)
  makes `VllmConfig` wire the OffloadingConnector (`kv_role: kv_both`, `cpu_bytes_to_use` = size x 2^30).
  Its CPU tier is a shared-memory region, `/dev/shm/vllm_offload_<engine id>.mmap`
  (`vllm/v1/kv_offload/cpu/shared_offload_region.py`), so the pod's /dev/shm must hold it
  (components/engines/workload.py). `lmcache` is not offered: it selects LMCache's connector, whose store
  is LMCache's own server and image, which the platform neither pins nor runs.
- SGLang 0.5.19 (`srt/server_args.py`, docs `hicache_best_practices.md`): `--enable-hierarchical-cache`
  with `--hicache-size N`, an integer in GB (1e9 bytes) allocated *per rank*, so the per-rank figure is
  the tier over the tensor-parallel ranks, rounded down to whole GB (never more than the pod is sized
  for). SGLang also wants each rank's host pool larger than its GPU KV pool, which is known only at
  start: a tier below that fails the server's start, named in the operator guide.

The shared file-system tier (`kvCacheOffload.shared`), SGLang 0.5.19 only:
- `--hicache-storage-backend file` (srt/server_args.py choices) selects `HiCacheFile`
  (srt/mem_cache/hicache_storage.py): one `<page hash>_<served model name>_<tp rank>_<tp size>.bin` per
  KV page (MLA models drop the rank: every rank shares the file) in the directory
  SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR names (srt/environ.py; default /tmp/hicache). The platform
  points it at the model's own revision directory on the shared cache (`/models/_kvcache/<owner
  prefix>/<name>/<revision>`), so no other model or revision ever reads or deletes its pages.
- It evicts only when told to (srt/mem_cache/storage/file/lru_file_evictor.py, opt-in):
  SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE caps the bytes *one rank of one process* tracks (what it wrote,
  read or found when it started), unlinking its least-recently-used files past the cap. Each pod therefore
  keeps within `sizeGiB` when every rank gets `sizeGiB / tensor ranks`; the directory as a whole is not
  bounded by it (another replica's writes, files of pods scaled in), so a pruning CronJob
  (components/storage/kvtier.py) deletes the oldest files past `sizeGiB`.
- vLLM 0.29.0 has a file-system tier too (vllm/v1/kv_offload/tiering/fs/manager.py, a
  `TieringOffloadingSpec` secondary tier set through `--kv-transfer-config`), which never deletes what it
  writes; the platform does not wire it (its `--kv-offloading-size` path has no such tier).
"""

from __future__ import annotations

import math

from .architectures import ModelArchitecture
from .config.models import ModelSection

GIB_MIB = 1024
# SGLang's --hicache-size unit (GB, 1e9 bytes).
SGLANG_GB = 10**9
# What an engine keeps for itself beside its tier when the platform derives its memory: the engine
# process, its tokenizer, CUDA host allocations and loading. A platform floor, not an upstream figure;
# `resources.memory` sets it outright.
ENGINE_FLOOR_GIB = 16
ENGINE_FLOOR_MIB = ENGINE_FLOOR_GIB * GIB_MIB


def tier_gib(model: ModelSection) -> int:
    """The model's CPU tier in GiB per pod (0 without offload)."""
    return model.kv_cache_offload.cpu_gib if model.kv_cache_offload is not None else 0


def tier_mib(model: ModelSection) -> int:
    return tier_gib(model) * GIB_MIB


def sglang_hicache_gb(cpu_gib: int, tensor: int) -> int:
    """SGLang's per-rank `--hicache-size` (GB) for a pod's tier of `cpu_gib` GiB over `tensor` ranks."""
    return math.floor(cpu_gib * 2**30 / SGLANG_GB / max(1, tensor))


def sglang_smallest_gib(tensor: int) -> int:
    """The smallest tier (GiB) that gives every one of `tensor` ranks at least 1 GB."""
    return math.ceil(tensor * SGLANG_GB / 2**30)


# The shared tier's directory tree on the model cache: `_` starts no model name (a DNS label), so it never
# meets a model's weights, and a revision's pages never mix with another's (a new revision's KV differs).
KV_DIR = "_kvcache"
# SGLang 0.5.19's HiCacheFile variables (srt/environ.py): its directory and each rank's LRU cap in bytes
# (a plain integer; srt/utils/common.py human_readable_int).
SGLANG_FILE_DIR_ENV = "SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR"
SGLANG_FILE_MAX_ENV = "SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE"


def shared_gib(model: ModelSection) -> int:
    """The model's shared tier in GiB (0 without one)."""
    offload = model.kv_cache_offload
    return offload.shared.size_gib if offload is not None and offload.shared is not None else 0


def sglang_rank_cap_bytes(size_gib: int, tensor: int) -> int:
    """Each rank's HiCacheFile LRU cap: the tier over the tensor-parallel ranks, so one pod keeps within it."""
    return size_gib * 2**30 // max(1, tensor)


def sglang_shared_env(model: ModelSection, tensor: int, directory: str | None) -> list[dict[str, str]]:
    """SGLang's file-tier variables for a model with `shared` whose directory the cache resolved."""
    size = shared_gib(model)
    if not size or directory is None:
        return []
    return [
        {"name": SGLANG_FILE_DIR_ENV, "value": directory},
        {"name": SGLANG_FILE_MAX_ENV, "value": str(sglang_rank_cap_bytes(size, tensor))},
    ]


def vllm_args(model: ModelSection) -> list[str]:
    if model.kv_cache_offload is None:
        return []
    return ["--kv-offloading-backend", "native", "--kv-offloading-size", str(model.kv_cache_offload.cpu_gib)]


def sglang_args(model: ModelSection, tensor: int) -> list[str]:
    if model.kv_cache_offload is None:
        return []
    args = [
        "--enable-hierarchical-cache",
        "--hicache-size",
        str(sglang_hicache_gb(model.kv_cache_offload.cpu_gib, tensor)),
    ]
    if model.kv_cache_offload.shared is not None:
        # The write and prefetch policies stay SGLang's defaults (write_through, timeout).
        args += ["--hicache-storage-backend", "file"]
    return args


# The endpoint picker's approximate prefix index (llm-d-router v0.10.0 `approx-prefix-cache-producer`):
# it hashes prompts in blocks of `blockSizeTokens`, clamped up to 64 ("values below the minimum of 64
# are clamped up at request time"), and keeps `lruCapacityPerServer` blocks per pod.
PICKER_BLOCK_TOKENS = 64
# The KV cache's element size: 16-bit, as both engines' `auto` KV dtype follows the model's compute
# dtype (bf16/fp16 even for fp8 or int4 weights); an fp8 KV cache set in engineArgs holds twice the
# tokens, so the picker then remembers half of what the tier holds (it under-scores, never over-scores).
KV_ELEMENT_BYTES = 2


def kv_bytes_per_token(arch: ModelArchitecture) -> int | None:
    """A token's K and V over every layer and KV head (all tensor-parallel ranks together); None when
    the head size is not known."""
    if arch.head_dim is None:
        return None
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * KV_ELEMENT_BYTES


def picker_tier_blocks(model: ModelSection, arch: ModelArchitecture | None) -> int | None:
    """How many of the picker's prefix blocks the model's CPU tier holds per pod: the tier's bytes over a
    token's KV bytes, in blocks of PICKER_BLOCK_TOKENS; None without a tier or a known head size."""
    per_token = kv_bytes_per_token(arch) if arch is not None else None
    if model.kv_cache_offload is None or per_token is None:
        return None
    return max(1, model.kv_cache_offload.cpu_gib * 2**30 // (per_token * PICKER_BLOCK_TOKENS))
