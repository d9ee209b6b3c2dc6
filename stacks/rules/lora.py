"""Native multi-LoRA (`models[].lora`): vLLM or SGLang loads every `models[].adapters` entry itself at
start, from the directory the preparation init containers filled (`<model>/adapters/<name>/<revision>`
in the model cache), without AIBrix.

So each adapter must be something the preparation steps can fetch and pin: a Hub repository
(`hf://org/name` at `revision`) or an `s3://` folder under the owner's prefix of the model bucket
(stacks/rules/adapters.py holds that prefix rule for every loader); its rank known (the engine starts with
`--max-lora-rank` the largest; vLLM's default 16 refuses a larger adapter at its first request); no
AIBrix-only `replicas`; a token for a gated Hub organisation (the download would fail with 401 in the init
container, after the rollout began); all of them held at once by the engine's CPU cache (`lora.held`),
so none is reloaded from disk under load; and in prod a 40-hex revision, as for the weights.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config.base import GIT_REVISION
from ..config.models import Adapter
from ..errors import Problem
from ..resolved import ModelEntry, ResolvedStack
from .models import gated_repo

HUB_SCHEMES = ("hf://", "huggingface://")


def hub_repo(adapter: Adapter) -> str | None:
    """The Hub repository (`org/name`) of an `hf://` or `huggingface://` adapter; None for any other."""
    for scheme in HUB_SCHEMES:
        if adapter.artifact_url.startswith(scheme):
            return adapter.artifact_url[len(scheme) :].rstrip("/")
    return None


def _source_problems(entry: ModelEntry, j: int, adapter: Adapter) -> Iterable[Problem]:
    url = adapter.artifact_url
    where = entry.key("adapters", j, "artifactURL")
    repo = hub_repo(adapter)
    if repo is None and not url.startswith("s3://"):
        yield Problem(
            where,
            f"{url}: with models[].lora the adapter is prepared into the model cache from the Hub (hf://org/name "
            f"with revision) or from the model bucket (an s3:// folder under the model owner's prefix); copy it to "
            f"one of those",
        )
    if repo is not None and gated_repo(repo) and entry.config.secrets.hugging_face_token is None:
        yield Problem(
            where,
            f"{repo.split('/', 1)[0]} gates its repositories on the Hugging Face Hub: the preparation step would "
            f"fail to fetch {repo} without a token; set models[{entry.index}].secrets.huggingFaceToken to an "
            f"existing Secret holding a token of an account that accepted the licence",
        )


def adapter_settings(entry: ModelEntry, j: int, adapter: Adapter, *, rank_by: str, loads: str) -> Iterable[Problem]:
    """An adapter loaded by the engine itself (native LoRA, Ray Serve) needs its rank, which sets
    max_lora_rank (`rank_by`: what starts the engine with it), and takes no AIBrix `replicas` (`loads`:
    how this loader places adapters instead)."""
    if adapter.rank is None:
        yield Problem(
            entry.key("adapters", j, "rank"),
            f"{rank_by} (vLLM's default 16 refuses a larger adapter at its first request): give the adapter's "
            "rank (r in its adapter_config.json)",
        )
    if adapter.replicas is not None:
        yield Problem(
            entry.key("adapters", j, "replicas"),
            f"replicas is an AIBrix ModelAdapter's; {loads}: remove it",
        )


def _setting_problems(entry: ModelEntry, j: int, adapter: Adapter) -> Iterable[Problem]:
    return adapter_settings(
        entry,
        j,
        adapter,
        rank_by="the engine starts with --max-lora-rank the largest adapter rank",
        loads="with models[].lora every pod of the model loads every adapter",
    )


def _held_problems(entry: ModelEntry) -> Iterable[Problem]:
    lora, adapters = entry.config.lora, entry.config.adapters
    assert lora is not None
    if entry.config.load_format == "runai-streamer":
        yield Problem(
            entry.key("lora"),
            "a model streamed from the bucket (loadFormat: runai-streamer) has no cache volume to prepare adapters "
            "into; remove loadFormat or lora",
        )
    if not adapters:
        yield Problem(
            entry.key("lora"),
            "lora without adapters starts the engine with LoRA for nothing: list models[].adapters or remove lora",
        )
    elif len(adapters) > lora.held:
        yield Problem(
            entry.key("lora", "maxCpuLoras"),
            f"{len(adapters)} adapters and the engine holds {lora.held} in memory (maxCpuLoras, or maxLoras when "
            f"unset): the others would be evicted and reloaded from disk under load; set maxCpuLoras to at least "
            f"{len(adapters)} or list fewer adapters",
        )


@rule
def natively_loaded_adapters_can_be_prepared_and_held(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        if entry.config.lora is None or entry.adapter_loader != "engine":
            continue
        yield from _held_problems(entry)
        for j, adapter in enumerate(entry.config.adapters):
            yield from _source_problems(entry, j, adapter)
            yield from _setting_problems(entry, j, adapter)
            revision = adapter.revision
            if stack.prod and (revision is None or not GIT_REVISION.match(revision)):
                yield Problem(
                    entry.key("adapters", j, "revision"),
                    f"{revision!r} is not a 40-hex commit; prod pins every adapter like the weights: give the "
                    f"adapter's exact revision (the Hub commit, or the commit its s3:// copy was made from)",
                )
