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
  KV page (`_<pp size>_<pp rank>` added with pipeline stages) in the directory
  SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR names (srt/environ.py; default /tmp/hicache). The platform
  points it at the model's own revision directory on the shared cache (`/models/_kvcache/<owner
  prefix>/<name>/<revision>`), so no other model or revision ever reads or deletes its pages.
- `sizeGiB` bounds the whole directory. SGLang evicts only when told to
  (srt/mem_cache/storage/file/lru_file_evictor.py, opt-in): SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE caps
  the bytes one writer rank of one process tracks (what it wrote, read, or found with its suffix when it
  started), unlinking its least-recently-used files past the cap. So every writer rank of every pod
  that can share the directory at once (the most replicas plus a rollout's surge: `kv_pods`) gets
  `sizeGiB / writers`, and the engines' own access-ordered LRU keeps the directory within `sizeGiB`; the
  pruning CronJob (components/storage/kvtier.py) only cleans up after pods that are gone. A file two
  ranks track is counted twice, which only makes the bound safer. A canary serves another revision,
  so it has a directory (and a bound of `sizeGiB`) of its own.
- MLA models (DeepSeek-style: SGLang's MLATokenToKVPool) drop the tp rank from the file name and every
  rank shares the file; only rank 0 of each pipeline stage tracks and evicts, and with a cap set the
  other ranks write nothing new (`LRUFileEvictor._is_storage_owner`). Such a pod has one writer per
  stage, which then gets the whole per-pod share, where the architecture says MLA
  (`ModelArchitecture.mla`); a model the platform cannot tell apart counts every rank, which keeps an
  MLA model within a tensor-th of `sizeGiB` (safe, not full).
- Pages: SGLang 0.5.19 resolves `--page-size` to 1 token on CUDA when unset
  (srt/arg_groups/overrides.py `_page_size_default`), which makes one file per token: hundreds of
  thousands of files per 100 GiB, slow on EFS and heavy to list. With the tier the platform sets
  `--page-size 64` (SGLANG_FILE_PAGE_TOKENS), the size SGLang's storage tests use
  (test/hicache_spec_storage_common.py) and one every attention backend the platform's GPUs default to
  accepts (fa3 on Hopper, flashinfer or triton on Ampere and Ada, trtllm_mha on Blackwell, which snaps
  to 16/32/64/128; the MLA backends' own snaps (flashmla 64, cutlass_mla 128) still win).
- vLLM 0.29.0 has a file-system tier too (vllm/v1/kv_offload/tiering/fs/manager.py, a
  `TieringOffloadingSpec` secondary tier set through `--kv-transfer-config`), which never deletes what it
  writes; the platform does not wire it (its `--kv-offloading-size` path has no such tier).
"""

from __future__ import annotations

import math

from .architectures import ModelArchitecture, architecture
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


# The least a writer rank may cap its files at: a few hundred pages of a large model at 64 tokens a page,
# below which the tier would evict what it just wrote (a platform floor, not an upstream figure).
MIN_RANK_GIB = 1
# The tokens of an SGLang KV page (`--page-size`) with the file tier: a file per page.
SGLANG_FILE_PAGE_TOKENS = 64


def kv_pods(model: ModelSection) -> int:
    """The most pods that can write one revision's directory at once: the model's most replicas plus a
    rollout's surge (a rollout that keeps the revision keeps the directory). A canary's config has one
    replica, no autoscaler and the model's rollout (stacks/resolve/models.py canary_of)."""
    return model.most_replicas + model.rollout.max_surge


def kv_writer_ranks(model: ModelSection, tensor: int, pipeline: int) -> int:
    """A pod's HiCacheFile writers: every tensor-parallel rank of every stage, or one per stage on an MLA
    model (the ranks share the files and rank 0 alone tracks them)."""
    arch = architecture(model)
    per_stage = 1 if arch is not None and arch.mla else max(1, tensor)
    return per_stage * max(1, pipeline)


def kv_writers(model: ModelSection, tensor: int, pipeline: int) -> int:
    """Every writer rank that can share the model's revision directory at once."""
    return kv_pods(model) * kv_writer_ranks(model, tensor, pipeline)


def sglang_rank_cap_bytes(size_gib: int, writers: int) -> int:
    """Each writer rank's HiCacheFile LRU cap: the tier over every writer that can share the directory, so
    together they keep it within `size_gib`."""
    return size_gib * 2**30 // max(1, writers)


def kv_smallest_gib(writers: int) -> int:
    """The smallest `sizeGiB` that leaves each of `writers` ranks MIN_RANK_GIB."""
    return writers * MIN_RANK_GIB


def sglang_shared_env(directory: str | None, rank_bytes: int) -> list[dict[str, str]]:
    """SGLang's file-tier variables for a model whose cache resolved the tier's directory and rank cap."""
    if directory is None or not rank_bytes:
        return []
    return [
        {"name": SGLANG_FILE_DIR_ENV, "value": directory},
        {"name": SGLANG_FILE_MAX_ENV, "value": str(rank_bytes)},
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
        args += ["--hicache-storage-backend", "file", "--page-size", str(SGLANG_FILE_PAGE_TOKENS)]
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
    the head size is not known, or on an MLA model (its cache holds one compressed latent per token, not
    K and V per head)."""
    if arch.head_dim is None or arch.mla:
        return None
    return 2 * arch.layers * arch.kv_heads * arch.head_dim * KV_ELEMENT_BYTES


def picker_tier_blocks(model: ModelSection, arch: ModelArchitecture | None) -> int | None:
    """How many of the picker's prefix blocks the model's CPU tier holds per pod: the tier's bytes over a
    token's KV bytes, in blocks of PICKER_BLOCK_TOKENS; None without a tier or a known head size."""
    per_token = kv_bytes_per_token(arch) if arch is not None else None
    if model.kv_cache_offload is None or per_token is None:
        return None
    return max(1, model.kv_cache_offload.cpu_gib * 2**30 // (per_token * PICKER_BLOCK_TOKENS))
