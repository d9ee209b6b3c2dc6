"""Builder-level test helpers: resolve a stack from sections (milliseconds) and call the pure
builders directly, instead of rendering the whole program under the mocks."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from components.model_servers import model_objects, workload_spec
from components.storage.cache import CacheContext
from stacks.config.secrets import source_for
from stacks.errors import ConfigError
from stacks.exports import PlatformExports
from stacks.load import parse_sections
from stacks.pipeline import check_sections, platform_of, repo_platform
from stacks.resolve import resolve
from stacks.resolved import CACHE_CLAIM, READER_SERVICE_ACCOUNT, ImageTable, ResolvedModel, ResolvedStack
from stacks.versions import IMAGES

# Every catalog image, unpinned: for builders tested outside a resolved stack.
CATALOG = ImageTable(dict(IMAGES))


def resolved_stack(
    sections: dict[str, Any], region: str = "us-west-2", exports: dict[str, Any] | None = None
) -> ResolvedStack:
    """Check and resolve like `pulumi up` would (a workloads stack against its platform's exports: given,
    or read from the platform's stack file in this repository)."""
    given = PlatformExports(exports, "stack exports given by the test") if exports is not None else None
    return check_sections(sections, region, platforms=(lambda ref: given) if given is not None else None)


def sourced(
    sections: dict[str, Any], region: str = "us-west-2", exports: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A copy of `sections` in which every Secret they reference and do not source gets a `fromConfig`
    source in its namespace (`secrets.<namespace>/<name>`) with one placeholder Pulumi secret per entry, as
    the operator guide has a stack file do: for tests of something else that build a stack inline. Sections
    that do not load are handed back as they are, for the test's own refusal."""
    out = copy.deepcopy(sections)
    try:
        config = parse_sections(out, region)
    except ConfigError:
        return out
    given = PlatformExports(exports, "stack exports given by the test") if exports is not None else None
    platform, _ = platform_of(config, (lambda ref: given) if given is not None else repo_platform)
    for ref in resolve(config, platform).secret_refs:
        if source_for(config.secrets, ref.namespace, ref.name)[1] is not None:
            continue
        entries = {}
        for entry in ref.entries or ("default",):
            key = "test" + hashlib.sha256(f"{ref.namespace}/{ref.name}/{entry}".encode()).hexdigest()[:12]
            entries[entry] = key
            out[key] = {"secure": "v1:test-placeholder"}
        out.setdefault("secrets", {})[f"{ref.namespace}/{ref.name}"] = {"fromConfig": entries}
    return out


def resolved_model(stack: ResolvedStack, name: str) -> ResolvedModel:
    found = [m for m in stack.models if m.name == name]
    assert found, f"no model {name}; have {[m.name for m in stack.models]}"
    return found[0]


# The bucket a streamed model's context names when a test gives none (the storage component's, in a stack).
TEST_BUCKET = "acme-models"


def streaming_context(stack: ResolvedStack, model: ResolvedModel) -> CacheContext | None:
    """The storage component's context for a streamed model (bucket, region, reader), else None."""
    if not model.cache.streamed:
        return None
    shared = stack.platform.storage.model_cache in ("efs", "fsx")
    return CacheContext(
        storage=stack.platform.storage,
        bucket=TEST_BUCKET,
        claim_name=CACHE_CLAIM if shared else None,
        reader_service_account=READER_SERVICE_ACCOUNT,
        region=stack.region,
    )


def engine_objects(stack: ResolvedStack, name: str, cache: CacheContext | None = None) -> list[dict[str, Any]]:
    """The objects the model's engine module builds, as the Models component would apply them."""
    model = resolved_model(stack, name)
    cache = cache or streaming_context(stack, model)
    spec = workload_spec(model, stack.platform.storage, cache, stack.platform.neuron_scheduler, images=stack.images)
    return model_objects(spec, cache)


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]
