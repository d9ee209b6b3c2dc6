"""LoRA adapters (`models[].adapters`) where what loads them can read them, laid out as it loads them.

Whatever loads an adapter reads its `s3://` artifact as the model pod's service account, `model-reader`,
whose Pod Identity role may list and read only its owner's prefix of the platform's model bucket
(`platform/`, or `teams/<team>/`; components/storage/storage_iam.py `reader_policy`): AIBrix's runtime
sidecar beside vLLM (components/serving/aibrix.py), Ray Serve LLM's replicas on the Ray workers. An
artifact in another bucket or another owner's prefix would be refused by S3 at load time, after the
rollout, as a ModelAdapter stuck in `Loading`; so it is refused here, naming the prefix it may use.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..errors import Problem
from ..resolved import READER_SERVICE_ACCOUNT, ModelEntry, ResolvedStack, owner_prefix
from .lora import adapter_settings

S3 = "s3://"


def split_s3(url: str) -> tuple[str, str]:
    """(bucket, key) of an `s3://` URL."""
    bucket, _, key = url[len(S3) :].partition("/")
    return bucket, key


def platform_bucket(stack: ResolvedStack) -> tuple[bool, str | None]:
    """(known, name): whether this stack can tell the platform's bucket name before a deploy, and the name.
    A workloads stack reads its platform's bucket at deploy time (its exports), so it cannot."""
    if not stack.owns_platform:
        return False, None
    return True, stack.platform.storage.model_bucket.name


def _bucket_problem(stack: ResolvedStack, where: str, url: str, folder: str) -> Iterable[Problem]:
    known, name = platform_bucket(stack)
    bucket, _ = split_s3(url)
    if not known:
        return
    if name is None:
        yield Problem(
            where,
            f"{url}: the model bucket's name is generated at deploy time (storage.modelBucket.name is unset), "
            f"so an adapter cannot name it; set storage.modelBucket.name and keep the adapter under "
            f"s3://<that name>/{folder}",
        )
    elif bucket != name:
        yield Problem(
            where,
            f"{url} is not in the platform's model bucket: the pods read adapters as {READER_SERVICE_ACCOUNT}, which "
            f"may read only s3://{name}/{folder}; copy the adapter there",
        )


def s3_artifact_problems(stack: ResolvedStack, entry: ModelEntry) -> Iterable[Problem]:
    """Each `s3://` adapter of one model: a folder (what loads it downloads the objects under the
    prefix; without the trailing `/` AIBrix's runtime fetches one object of that exact key), in the
    platform's model bucket, under the model owner's prefix."""
    folder = f"{owner_prefix(entry.owner)}/"
    for j, adapter in enumerate(entry.config.adapters):
        url = adapter.artifact_url
        if not url.startswith(S3):
            continue
        where = entry.key("adapters", j, "artifactURL")
        _, key = split_s3(url)
        if not key.endswith("/"):
            yield Problem(where, f"{url} names one object; an adapter is a folder: end it with '/'")
        if not key.startswith(folder):
            whose = "the platform's own models" if folder == "platform/" else f"team {entry.owner}'s models"
            yield Problem(
                where,
                f"{url} is outside {folder}, the only prefix {whose} may read ({READER_SERVICE_ACCOUNT}'s Pod "
                f"Identity role); put the adapter under s3://<model bucket>/{folder}",
            )
        yield from _bucket_problem(stack, where, url, folder)


@rule
def adapter_artifacts_are_readable_by_what_loads_them(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        yield from s3_artifact_problems(stack, entry)


def _prefix_layout(entry: ModelEntry) -> Iterable[Problem]:
    """Ray Serve LLM's layout: one `dynamic_lora_loading_path` whose subfolders are the adapters, each
    asked for as `<model>:<subfolder>`, so every adapter is an `s3://` folder named like the adapter
    under the first adapter's parent (the platform's bucket: gs:// and the others are not it)."""
    adapters = entry.config.adapters
    parent = adapters[0].folder()[0]
    for j, adapter in enumerate(adapters):
        where = entry.key("adapters", j, "artifactURL")
        here, name = adapter.folder()
        if not adapter.artifact_url.startswith(S3):
            yield Problem(
                where, f"{adapter.artifact_url}: Ray Serve loads adapters from the model bucket: an s3:// folder"
            )
        elif name != adapter.name:
            yield Problem(
                where,
                f"Ray Serve serves the folder {name!r} as {entry.name}:{name}; name the folder like the adapter "
                f"({here}{adapter.name}/) or the adapter like the folder",
            )
        elif here != parent:
            yield Problem(
                where,
                f"Ray Serve loads every adapter of a model from one prefix (dynamic_lora_loading_path), here "
                f"{parent} (the first adapter's); put this one at {parent}{adapter.name}/",
            )


def _prefix_settings(entry: ModelEntry) -> Iterable[Problem]:
    for j, adapter in enumerate(entry.config.adapters):
        yield from adapter_settings(
            entry,
            j,
            adapter,
            rank_by="Ray Serve starts vLLM with max_lora_rank the largest adapter rank",
            loads="Ray Serve loads an adapter on a replica at its first request there",
        )


@rule
def adapters_loaded_from_one_prefix_follow_its_layout(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        if entry.config.adapters and entry.facts.lora_from_prefix:
            yield from _prefix_layout(entry)
            yield from _prefix_settings(entry)
