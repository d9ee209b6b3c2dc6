"""Workloads-stack rules: a team's models on its platform, within the team's quota and namespace.

The platform is the one the stack was resolved against (stacks/pipeline.py): read from the
StackReference under `pulumi up`, or from the platform's stack file when it is in this repository. A
replica's requests are the resolved ones (`ResolvedModel.requests`, what the builders render), so the
quota is checked against what is deployed, default sizing included; the quota comparison is
`stacks/guards.py quota_shortfalls`, which the policy pack runs on the rendered ResourceQuota and pods at
preview. When the platform cannot be read here, a replica's stated requests are a lower bound and the
rest waits for the preview.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config import ModelSection
from ..errors import Problem, key_path
from ..fit import Requests
from ..guards import QUOTA_RESOURCES, quota_shortfalls
from ..offload import tier_mib
from ..quantity import mebibytes, millicores
from ..resolved import ModelEntry, ResolvedStack

QUOTA_KEYS = {
    "requests.nvidia.com/gpu": "gpus",
    "requests.aws.amazon.com/neuron": "neuronDevices",
    "requests.nvidia.com/gpu.shared": "sharedGpus",
} | {
    "requests.cpu": "cpu",
    "requests.memory": "memory",
}
assert set(QUOTA_KEYS) == set(QUOTA_RESOURCES)


def _team_models(stack: ResolvedStack) -> Iterable[ModelEntry]:
    return stack.entries if stack.team is not None else ()


def stated_requests(model: ModelSection, accelerator: str) -> Requests:
    """A lower bound of one replica's requests when the platform's pools are not known offline: its
    accelerators, and cpu/memory only where the stack file states them (memory with its KV-cache tier)."""
    accel = model.accelerators_per_replica
    return Requests(
        cpu_m=millicores(model.resources.cpu) if model.resources.cpu else 0,
        # The KV-cache CPU tier is memory the pod requests whatever its engine's share.
        memory_mib=(mebibytes(model.resources.memory) if model.resources.memory else 0) + tier_mib(model),
        gpu=accel if accelerator == "nvidia" else 0,
        neuron=accel if accelerator == "neuron" else 0,
    )


def one_replica(stack: ResolvedStack, entry: ModelEntry) -> tuple[Requests, bool]:
    """(requests of one replica's pod, exact): the resolved ones on the platform's pool as the quota charges
    them, its sidecars (AIBrix's runtime) and preparation step included, else the stated lower bound (the
    engine tells the accelerator kind). Every replica together, and the platform's helper pods beside them:
    stacks/rules/quota.py."""
    placed = stack.placed(entry)
    if placed is not None:
        return placed.charged_serving_pod, True
    return stated_requests(entry.config, entry.facts.accelerators[0]), False


def quota_requests(stack: ResolvedStack) -> Requests | None:
    """The team's quota as requests; None when its platform (and so its quota) is not known here."""
    quota = stack.team.quota if stack.team is not None else None
    if quota is None:
        return None
    return Requests(
        cpu_m=millicores(quota.cpu),
        memory_mib=mebibytes(quota.memory),
        gpu=quota.gpus,
        neuron=quota.neuron_devices,
        gpu_shared=quota.shared_gpus,
    )


@rule
def team_models_have_what_the_platform_serves(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's exposed model needs its platform's route parent, and an HPA its platform's custom metrics."""
    if not stack.platform.known:
        return
    for entry in _team_models(stack):
        model = entry.config
        if model.expose and stack.platform.gateway_parent is None:
            yield Problem(
                entry.key("expose"),
                f"{stack.platform.where} exports no gatewayParent (it runs no gateway), so {model.name} has nothing "
                f"to attach a route to; set expose: false or ask the platform team to enable gateway",
            )
        if model.autoscaling.owner == "hpa" and stack.platform.custom_metrics is False:
            yield Problem(
                entry.key("autoscaling", "owner"),
                f"an HPA reads {model.engine}'s metrics through prometheus-adapter, which {stack.platform.where} "
                f"does not run; use autoscaling.owner: none (or aibrix, which scrapes pods itself) or ask the "
                f"platform team to enable addons.monitoring",
            )


@rule
def team_storage_is_the_platforms(stack: ResolvedStack) -> Iterable[Problem]:
    """A team's pods reach the platform's cache through what the platform made in the team's namespaces
    (components/tenancy.py): an EFS claim, or the node; never a Lustre file system."""
    storage = stack.platform.storage
    if stack.team is None or not stack.platform.known:
        return
    if storage.model_cache == "fsx" and stack.entries:
        yield Problem(
            key_path(["stack", "platformStack"]),
            f"{stack.platform.where} sets storage.modelCache: fsx, which workloads stacks cannot use: a Lustre "
            f"file system is mounted whole through a static volume, so every team would share one writable tree "
            f"(and each other's completion markers). Ask the platform team for storage.modelCache: efs (one "
            f"access point per team namespace), local or none, or serve these models from the platform's own "
            f"(all-in-one) stack",
        )


@rule
def quota_holds_one_replica(stack: ResolvedStack) -> Iterable[Problem]:
    limit = quota_requests(stack)
    if limit is None:
        return
    assert stack.team is not None
    for entry in stack.entries:
        need, exact = one_replica(stack, entry)
        for short in quota_shortfalls(need, limit):
            key = QUOTA_KEYS[short.resource]
            sized = "" if exact else "at least "
            i = entry.index
            tier = entry.config.kv_cache_offload
            lower = (
                f", or lower models[{i}].kvCacheOffload.cpuGiB ({tier.cpu_gib}GiB of it)"
                if tier is not None and key == "memory"
                else ""
            )
            yield Problem(
                entry.key(),
                f"one replica of {entry.name} needs {sized}{short.requested} of {short.resource} but team "
                f"{stack.team.name}'s quota allows {short.available} ({stack.platform.where}'s teams[].quota.{key}), "
                f"so the API server would refuse every pod; ask the platform team to raise it, or set "
                f"models[{i}].resources / use fewer accelerators per replica{lower}",
            )


@warning
def platform_checked_offline(stack: ResolvedStack) -> Iterable[Problem]:
    if stack.team is not None and not stack.platform.known:
        yield Problem(
            key_path(["stack", "platformStack"]),
            f"{stack.platform_stack} has no stack file in this repository, so the models are checked against its "
            f"pools only at preview (through the StackReference)",
        )


@rule
def workloads_stack_is_in_its_platforms_region(stack: ResolvedStack) -> Iterable[Problem]:
    """A team stack deploys into its platform's cluster, and its pods are told its own aws:region (the S3
    clients' AWS_REGION): in another region than the cluster's, they would look for the bucket elsewhere."""
    region = stack.platform.region
    if stack.team is not None and region and region != stack.region:
        yield Problem(
            "aws:region",
            f"is {stack.region}, but {stack.platform.where} runs its cluster in {region}: a workloads stack deploys "
            f"into its platform's cluster, so set aws:region: {region}",
        )
