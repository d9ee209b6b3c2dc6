"""Names: unique where they name one thing, and valid as what they become (stacks/names.py).

- Every list of named things has each name once: pools, models, a model's adapters (across models
  and against model names: stacks/rules/collisions.py), external providers, their models and egress
  hosts, admins, log types, adopted subnets (a subnet is private or public, once),
  endpoint CIDRs, instance types and families, disruption-budget reasons, Ollama pulls, pip
  packages, JWT audiences and fallback targets.
- A model's name, with every suffix the platform and its operators add, fits the Kubernetes rule of
  each object it names (and a RayService's, KubeRay's 47).
- Models and teams keep out of Kubernetes' namespaces and the platform's own.
- The cluster's name, as the IAM roles, SQS queue, EventBridge rules and generated model bucket it
  names, satisfies those services' rules (the bucket prefix: S3's, so no `_` and no reserved prefix).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..checks import rule
from ..config import StackConfig
from ..config.base import bucket_name_problem
from ..errors import Problem, key_path
from ..names import BUCKET_SUFFIX, aws_names, bucket_prefix, model_names, name_problem, reserved_namespace

Path = list[str | int]


def _duplicates(
    items: Sequence[Any], base: Path, what: str, key: Callable[[Any], Any] = lambda x: x, field: str | None = None
) -> Iterable[Problem]:
    """A problem at each later occurrence of a name already listed in `items`."""
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            path = [*base, i, field] if field else [*base, i]
            shown = k if isinstance(k, str) and len(k) <= 60 else f"{str(k)[:60]}…"
            yield Problem(
                key_path(path),
                f"{shown!r} is already listed at {key_path([*base, seen[k]])}; each {what} is listed once",
            )
        else:
            seen[k] = i


def _pip_name(requirement: str) -> str:
    """PEP 503 normalized project name of a requirement (`Foo_Bar[x]==1` -> `foo-bar`)."""
    name = re.split(r"[\[<>=!~]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


@rule
def unique_names(config: StackConfig) -> Iterable[Problem]:
    yield from _duplicates(config.node_pools, ["nodePools"], "pool name", lambda p: p.name, "name")
    yield from _duplicates(config.models, ["models"], "model name", lambda m: m.name, "name")
    cluster = config.cluster
    if cluster is not None:
        yield from _duplicates(cluster.admins, ["cluster", "admins"], "admin (one access entry per principal)")
        yield from _duplicates(cluster.log_types, ["cluster", "logTypes"], "log type")
        yield from _duplicates(cluster.system_nodes.instance_types, ["cluster", "systemNodes", "instanceTypes"], "type")
        yield from _duplicates(
            cluster.endpoint.public_access_cidrs, ["cluster", "endpoint", "publicAccessCidrs"], "CIDR"
        )
        vpc = cluster.vpc
        yield from _duplicates(vpc.private_subnet_ids, ["cluster", "vpc", "privateSubnetIds"], "subnet")
        yield from _duplicates(vpc.public_subnet_ids, ["cluster", "vpc", "publicSubnetIds"], "subnet")
        private = set(vpc.private_subnet_ids)
        for j, subnet in enumerate(vpc.public_subnet_ids):
            if subnet in private:
                yield Problem(
                    key_path(["cluster", "vpc", "publicSubnetIds", j]),
                    f"{subnet} is also listed in privateSubnetIds; a subnet is private or public, listed once",
                )
    for i, pool in enumerate(config.node_pools):
        base: Path = ["nodePools", i]
        yield from _duplicates(pool.instance_types, [*base, "instanceTypes"], "instance type")
        yield from _duplicates(pool.instance_families, [*base, "instanceFamilies"], "instance family")
        for b, budget in enumerate(pool.disruption_budgets or []):
            yield from _duplicates(budget.reasons or [], [*base, "disruptionBudgets", b, "reasons"], "reason")
    for i, model in enumerate(config.models):
        base = ["models", i]
        if model.ollama is not None:
            yield from _duplicates(model.ollama.pull, [*base, "ollama", "pull"], "model to pull")
        if model.ray_serve is not None:
            yield from _duplicates(model.ray_serve.pip, [*base, "rayServe", "pip"], "package", _pip_name)
    yield from _adapters(config)
    litellm = config.addons.litellm
    providers: Path = ["addons", "litellm", "externalProviders"]
    yield from _duplicates(litellm.external_providers, providers, "provider name", lambda p: p.name, "name")
    for p, provider in enumerate(litellm.external_providers):
        yield from _duplicates(provider.egress_hosts, [*providers, p, "egressHosts"], "host")
        yield from _duplicates(provider.models, [*providers, p, "models"], "model")
    for source, targets in litellm.fallbacks.items():
        yield from _duplicates(targets, ["addons", "litellm", "fallbacks", source], "fallback")
    if config.gateway.jwt is not None:
        yield from _duplicates(config.gateway.jwt.audiences, ["gateway", "jwt", "audiences"], "audience")


def _adapters(config: StackConfig) -> Iterable[Problem]:
    """One model's adapters each named once (a ModelAdapter and its Service per name); across models and
    against model names, stacks/rules/collisions.py `adapters_are_named_apart_from_models`."""
    for i, model in enumerate(config.models):
        yield from _duplicates(model.adapters, ["models", i, "adapters"], "adapter name", lambda a: a.name, "name")


@rule
def derived_kubernetes_names(config: StackConfig) -> Iterable[Problem]:
    """Every name the platform or an operator derives from a model's fits that object's rule."""
    for i, model in enumerate(config.models):
        for derived in model_names(model):
            if (why := name_problem(derived)) is not None:
                yield Problem(key_path(["models", i, "name"]), f"{model.name!r} {why}; shorten the model's name")
                break


@rule
def namespaces_are_not_reserved(config: StackConfig) -> Iterable[Problem]:
    team = config.stack.team
    if team is not None and (why := reserved_namespace(team, team=True)):
        yield Problem(key_path(["stack", "team"]), f"the team names its namespace, and {why}; choose another team name")
    for i, model in enumerate(config.models):
        if model.namespace is not None and (why := reserved_namespace(model.namespace)):
            yield Problem(
                key_path(["models", i, "namespace"]),
                f"{why}; the platform would put the model's NetworkPolicies, quota and claims there: choose a "
                f"namespace of your own (or leave it unset)",
            )


@rule
def cluster_derived_aws_names(config: StackConfig) -> Iterable[Problem]:
    """The cluster's name as the AWS resources it names: roles, queue, rules and the bucket prefix."""
    cluster = config.cluster
    if cluster is None:
        return
    path = key_path(["cluster", "name"])
    bucket = config.storage.model_bucket
    if bucket.create and bucket.name is None:
        prefix = bucket_prefix(cluster.name)
        why = bucket_name_problem(prefix + BUCKET_SUFFIX)
        if why is not None:
            yield Problem(
                path,
                f"names the generated model bucket ({prefix}<unique suffix>), a name S3 refuses: {why}; use "
                f"letters, digits and '-' in cluster.name (no '_', no xn--/sthree-/amzn-s3-demo- start), or give "
                f"storage.modelBucket.name",
            )
    for name, what, pattern in aws_names(cluster.name):
        if not pattern.match(name):
            yield Problem(path, f"names the {what} {name!r}, which AWS refuses; use letters, digits and '-'")
