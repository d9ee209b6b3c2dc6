"""The cold start's fast path, refused where it cannot work, at the key that asks for it:
- `nodePools[].imagePull: soci` on a pool whose types nodeadm would not enable SOCI on, or on a
  Bottlerocket release without the snapshotter setting (stacks/fastpath.py `soci_refusal`);
- `nodePools[].imagePull: snapshot` on an AL2023 pool (its images live on the AMI's root volume) or
  without `imageSnapshot`, and `imageSnapshot` on a pool that does not pull from it
  (stacks/fastpath.py `snapshot_refusal`; a malformed id is refused by the model itself);
- `models[].compileCache: true` on a cache that cannot be shared (`storage.modelCache: local` or
  `none`: each pod's emptyDir dies with it, and one claim per pod is not what the key promises), or for
  an engine that keeps no compiled artifacts the platform can place;
- `models[].neuron.compile: ahead` on a cache that cannot be shared (the Job's artifacts would die with its
  pod) or without a 40-hex `revision` (a branch moves, and the artifacts compiled for one commit would be
  loaded for another); on an engine other than neuron-vllm the stack file's model refuses the block;
- `nodePools[].warmNodes` on a static pool (its nodes are always there), on a pool with nothing to size
  a warm node by, or where the pool's limits leave no room for that many nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config.base import GIT_REVISION
from ..errors import Problem, key_path
from ..fastpath import SHARED_CACHES, SOCI, snapshot_refusal, soci_refusal, warm_chunk, warm_room
from ..hardware import expand
from ..resolved import ResolvedStack


@rule
def soci_pools_can_pull_in_parallel(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.config.node_pools):
        if pool.image_pull != SOCI:
            continue
        why = soci_refusal(pool, expand(pool.instance_types, pool.instance_families))
        if why:
            yield Problem(key_path(["nodePools", i, "imagePull"]), why)


@rule
def snapshot_pools_can_start_from_their_image_cache(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.config.node_pools):
        why = snapshot_refusal(pool)
        if why:
            yield Problem(key_path(["nodePools", i, why[0]]), why[1])


@rule
def compile_caches_are_shared(stack: ResolvedStack) -> Iterable[Problem]:
    cache = stack.platform.storage.model_cache
    for entry in stack.entries:
        if entry.config.compile_cache is not True:
            continue
        if cache not in SHARED_CACHES:
            yield Problem(
                entry.key("compileCache"),
                f"storage.modelCache is {cache}: each pod's cache is its own and dies with it, so compiled "
                f"artifacts cannot be shared across replicas; use modelCache: efs or fsx, or set compileCache: "
                f"false",
            )
        elif not entry.facts.compile_cache_env:
            yield Problem(
                entry.key("compileCache"),
                f"{entry.facts.title} keeps no compiled artifacts the platform can place on the cache; remove "
                f"compileCache",
            )


@rule
def ahead_compiles_have_a_shared_cache_and_a_pinned_revision(stack: ResolvedStack) -> Iterable[Problem]:
    cache = stack.platform.storage.model_cache
    for entry in stack.entries:
        neuron = entry.config.neuron
        if neuron is None or neuron.compile != "ahead":
            continue
        if cache not in SHARED_CACHES:
            yield Problem(
                entry.key("neuron", "compile"),
                f"storage.modelCache is {cache}: the compile Job's artifacts would stay in its own pod's volume "
                f"and no serving pod could load them; use modelCache: efs or fsx, or set neuron.compile: on-start",
            )
        revision = entry.config.revision
        if revision is None or not GIT_REVISION.match(revision):
            yield Problem(
                entry.key("revision"),
                f"neuron.compile: ahead compiles one revision for every pod, and {revision or 'no revision'!r} is "
                f"not a 40-hex commit (a branch moves under the compiled graphs); pin the model's commit sha, or "
                f"set neuron.compile: on-start",
            )


@rule
def warm_nodes_fit_their_pool(stack: ResolvedStack) -> Iterable[Problem]:
    for i, pool in enumerate(stack.platform.pools if stack.owns_platform else ()):
        if not pool.warm_nodes:
            continue
        where = key_path(["nodePools", i, "warmNodes"])
        if pool.static:
            yield Problem(where, "a static pool (replicas) keeps its nodes launched already; remove warmNodes")
            continue
        chunk = warm_chunk(pool, stack.models)
        if chunk is None:
            yield Problem(where, "no model runs on the pool and it has no accelerators to size a warm node by")
            continue
        why = warm_room(pool, chunk)
        if why:
            yield Problem(where, f"{why}: raise the pool's limits or lower warmNodes")
