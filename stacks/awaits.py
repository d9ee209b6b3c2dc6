"""How long `pulumi up` waits for what it applies, in one place: the Pulumi Kubernetes provider's await
annotations, and the times every allowance is built from.

pulumi-kubernetes (provider/pkg/await, provider/pkg/metadata/overrides.go) waits for a Deployment,
StatefulSet or Job 10 minutes by default, and a DaemonSet 10; `pulumi.com/timeoutSeconds` (whole
seconds) replaces that default for create and update, and `pulumi.com/skipAwait: "true"` makes the
object ready as soon as the API server accepts it. A custom resource (a LeaderWorkerSet, a
DynamoGraphDeployment, a RayService) is not awaited at all unless it carries `pulumi.com/waitFor`, so
no timeout applies to it. A model's allowance is `ResolvedModel.allowance` (stacks/coldstart.py); the
platform's own workloads build theirs from the figures here, and each Helm release's timeout is
stacks/versions.py `RELEASE_WAITS`.
"""

from __future__ import annotations

from typing import Any

TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"
# The program's own estimate of how long a Job runs (a Neuron compile: stacks/coldstart.py), written on the
# Job so that `stacks lifecycle`, which reads only the render, counts it on the critical path.
ESTIMATED_SECONDS = "inference-platform.io/estimated-seconds"
SKIP_AWAIT = "pulumi.com/skipAwait"
WAIT_FOR = "pulumi.com/waitFor"

# Karpenter launching an accelerator node: EC2 capacity, boot, kubelet join and the device plugin
# advertising the GPUs (typically 2 to 5 minutes; allowed 10).
NODE_LAUNCH_SECONDS = 600
# Pulling an image on a fresh node: one allowance for every image (the engines' CUDA images are 5 to
# 15 GB compressed; allowed 10 minutes at a modest registry rate, not measured per image).
IMAGE_PULL_SECONDS = 600
# A platform service's own start once its image is on the node (LiteLLM's database migrations, an
# exporter's first scrape): its readiness probe passes well within this.
SERVICE_START_SECONDS = 300
# What the provider waits for a workload without an annotation (the awaiters' defaults).
PROVIDER_DEFAULT_SECONDS = 600
# A Job past its activeDeadlineSeconds is failed by the Job controller; the await outlasts the deadline
# by this much so that `pulumi up` reports the Job's own failure, not a timeout of its own.
JOB_REPORT_SECONDS = 60


def await_for(seconds: int) -> dict[str, str]:
    """The annotation that makes `pulumi up` wait `seconds` for a workload to become ready."""
    return {TIMEOUT_SECONDS: str(int(seconds))}


def estimated(seconds: int) -> dict[str, str]:
    """The annotation that tells `stacks lifecycle` how long the object's work is estimated to take."""
    return {ESTIMATED_SECONDS: str(int(seconds))}


def await_service(window: int = 0) -> dict[str, str]:
    """The await of a platform service on nodes that exist (the system nodes, or a DaemonSet's): its
    image's pull and its own start, or its startup probe's `window` when longer."""
    return await_for(IMAGE_PULL_SECONDS + max(SERVICE_START_SECONDS, window))


def await_job(active_deadline_seconds: int) -> dict[str, str]:
    """The await of a Job bounded by its activeDeadlineSeconds (counted from its start, so the pod's
    scheduling and image pull are inside it): the deadline, and time to see the Job fail."""
    return await_for(active_deadline_seconds + JOB_REPORT_SECONDS)


def await_operator(ready: str, seconds: int) -> dict[str, str]:
    """The await of a model an operator runs (a LeaderWorkerSet, RayService, NIMService,
    DynamoGraphDeployment): the provider waits for no custom resource unless `pulumi.com/waitFor`
    names what ready means (a `condition=<type>` or `jsonpath={...}=<value>`, pulumi-kubernetes 4.18+,
    CHANGELOG "The pulumi.com/waitFor annotation"), for `seconds`, so what waits for the model (a
    gated benchmark, `pulumi up` itself) waits for it being served, as it does for a Deployment."""
    return {WAIT_FOR: ready, **await_for(seconds)}


def skip_await() -> dict[str, str]:
    """The annotation that makes `pulumi up` not wait for a workload: only where something else
    gates its readiness (the caller says what, beside the call)."""
    return {SKIP_AWAIT: "true"}


def probe_window(probe: dict[str, Any] | None) -> int:
    """Seconds a startup probe allows before the kubelet restarts the container: its initial delay and
    `failureThreshold` periods (Kubernetes defaults: 0 s, 3 failures, every 10 s)."""
    if not probe:
        return 0
    return int(probe.get("initialDelaySeconds", 0)) + int(probe.get("failureThreshold", 3)) * int(
        probe.get("periodSeconds", 10)
    )


def pod_window(pod_spec: dict[str, Any]) -> int:
    """The longest startup-probe window of a pod's containers."""
    return max((probe_window(c.get("startupProbe")) for c in pod_spec.get("containers", [])), default=0)
