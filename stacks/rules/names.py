"""Names: unique where they name one thing, and valid as what they become (stacks/names.py).

- Every list of named things has each name once: pools, models, a model's adapters (across models
  and against model names: stacks/rules/collisions.py), external providers, their models and egress
  hosts, admins, log types, adopted subnets (a subnet is private or public, once),
  endpoint CIDRs, instance types and families, disruption-budget reasons, JWT audiences and fallback
  targets (an engine's own lists, Ollama's pulls and Ray Serve's pip packages, in its checks).
- A model's name, with every suffix the platform and its operators add, fits the Kubernetes rule of
  each object it names (and a RayService's, KubeRay's 47).
- Models and teams keep out of Kubernetes' namespaces and the platform's own.
- The cluster's name, as the IAM roles, SQS queue, EventBridge rules and generated model bucket it
  names, satisfies those services' rules (the bucket prefix: S3's, so no `_` and no reserved prefix);
  with a team's name, its reader and deploy roles' names too, each unlike every other role's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..config.base import bucket_name_problem
from ..errors import Problem, duplicates, key_path
from ..names import (
    BUCKET_SUFFIX,
    IAM_ROLE,
    ROLE_PURPOSES,
    aws_names,
    bucket_prefix,
    model_names,
    name_problem,
    reserved_namespace,
    team_role_purposes,
)
from ..naming import iam_role_name
from ..resolved import ResolvedStack

Path = list[str | int]


@rule
def unique_names(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    yield from duplicates(config.node_pools, ["nodePools"], "pool name", lambda p: p.name, "name")
    yield from duplicates(config.models, ["models"], "model name", lambda m: m.name, "name")
    cluster = config.cluster
    if cluster is not None:
        yield from duplicates(cluster.admins, ["cluster", "admins"], "admin (one access entry per principal)")
        yield from duplicates(cluster.log_types, ["cluster", "logTypes"], "log type")
        yield from duplicates(cluster.system_nodes.instance_types, ["cluster", "systemNodes", "instanceTypes"], "type")
        yield from duplicates(
            cluster.endpoint.public_access_cidrs, ["cluster", "endpoint", "publicAccessCidrs"], "CIDR"
        )
        vpc = cluster.vpc
        yield from duplicates(vpc.private_subnet_ids, ["cluster", "vpc", "privateSubnetIds"], "subnet")
        yield from duplicates(vpc.public_subnet_ids, ["cluster", "vpc", "publicSubnetIds"], "subnet")
        private = set(vpc.private_subnet_ids)
        for j, subnet in enumerate(vpc.public_subnet_ids):
            if subnet in private:
                yield Problem(
                    key_path(["cluster", "vpc", "publicSubnetIds", j]),
                    f"{subnet} is also listed in privateSubnetIds; a subnet is private or public, listed once",
                )
    for i, pool in enumerate(config.node_pools):
        base: Path = ["nodePools", i]
        yield from duplicates(pool.instance_types, [*base, "instanceTypes"], "instance type")
        yield from duplicates(pool.instance_families, [*base, "instanceFamilies"], "instance family")
        for b, budget in enumerate(pool.disruption_budgets or []):
            yield from duplicates(budget.reasons or [], [*base, "disruptionBudgets", b, "reasons"], "reason")
    yield from _adapters(config)
    litellm = config.addons.litellm
    providers: Path = ["addons", "litellm", "externalProviders"]
    yield from duplicates(litellm.external_providers, providers, "provider name", lambda p: p.name, "name")
    for p, provider in enumerate(litellm.external_providers):
        yield from duplicates(provider.egress_hosts, [*providers, p, "egressHosts"], "host")
        yield from duplicates(provider.models, [*providers, p, "models"], "model")
    for source, targets in litellm.fallbacks.items():
        yield from duplicates(targets, ["addons", "litellm", "fallbacks", source], "fallback")
    if config.gateway.jwt is not None:
        yield from duplicates(config.gateway.jwt.audiences, ["gateway", "jwt", "audiences"], "audience")


def _adapters(config: StackConfig) -> Iterable[Problem]:
    """One model's adapters each named once (a ModelAdapter and its Service per name); across models and
    against model names, stacks/rules/collisions.py `adapters_are_named_apart_from_models`."""
    for i, model in enumerate(config.models):
        yield from duplicates(model.adapters, ["models", i, "adapters"], "adapter name", lambda a: a.name, "name")


@rule
def derived_kubernetes_names(stack: ResolvedStack) -> Iterable[Problem]:
    """Every name the platform or an operator derives from a model's fits that object's rule."""
    for entry in stack.entries:
        for derived in model_names(entry):
            if (why := name_problem(derived)) is not None:
                yield Problem(entry.key("name"), f"{entry.name!r} {why}; shorten the model's name")
                break


@rule
def namespaces_are_not_reserved(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
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
def cluster_derived_aws_names(stack: ResolvedStack) -> Iterable[Problem]:
    """The cluster's name as the AWS resources it names: roles, queue, rules and the bucket prefix."""
    config = stack.config
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
    yield from _team_role_names(stack)


def _team_role_names(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's reader and deploy roles, named after the cluster and the team: valid IAM names, and none
    the name of another role of the platform's."""
    cluster = stack.config.cluster
    assert cluster is not None
    taken = {iam_role_name(cluster.name, p) for p in ROLE_PURPOSES}
    for i, team in enumerate(stack.config.teams):
        for purpose in team_role_purposes(team.name):
            name = iam_role_name(cluster.name, purpose)
            if not IAM_ROLE.match(name):
                yield Problem(
                    key_path(["teams", i, "name"]),
                    f"names the IAM role ({purpose}) {name!r}, which AWS refuses; use letters, digits and '-'",
                )
            elif name in taken:
                yield Problem(
                    key_path(["teams", i, "name"]),
                    f"names the IAM role ({purpose}) {name!r}, which another of the platform's roles has; choose "
                    f"another team name",
                )
            taken.add(name)
