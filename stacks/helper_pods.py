"""What the platform's helper containers ask of a node and of a team's ResourceQuota: the one copy of each
figure, which the builders render (components/acceptance.py, benchmark.py, storage/kvtier.py,
storage/prepare.py) and the resolve step sums into each helper pod's requests (stacks/resolve/helpers.py),
so the quota rules count exactly what the API server will be asked to admit.

A pod's requests, as the scheduler and a ResourceQuota count them, are per resource the larger of its
containers' sum and any one init container (init containers run one at a time, before the rest):
`pod_requests`, which the policy pack also runs on a rendered pod.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from .config.benchmark import Benchmark
from .fit import Requests, at_least, requests_of

Resources = Mapping[str, Mapping[str, str]]

# The acceptance Job (components/acceptance.py): its checks (an init container) and the upload of the verdict.
ACCEPTANCE_CHECK: Resources = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
ACCEPTANCE_UPLOAD: Resources = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
# The benchmark (components/benchmark.py): the tokenizer copies and the guidellm sweep (init containers, in
# order), then the upload. guidellm's sweep holds every request's timings in memory.
BENCH_GUIDELLM: Resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
BENCH_TOKENIZER: Resources = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
BENCH_HUB_TOKENIZER: Resources = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
BENCH_UPLOAD: Resources = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
# The KV-cache file tier's pruner (components/storage/kvtier.py): one busybox container.
KV_PRUNE: Resources = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
# A picked model's endpoint picker (components/gateway/picker.py): the llm-d-router-standalone v0.10.0 chart's
# one pod (router.epp.replicas 1; its proxy and tokenizer containers off). The chart's defaults (8 CPU, 8Gi)
# are for 100-pod pools; its sizing guide measured 1.19 cores and 0.26 GiB peak at 5 req/s with approximate
# prefix matching, and the limit leaves room for the 4-6 GiB it reports at 50-100 req/s. No CPU limit, as
# the chart: a throttled picker delays every request.
PICKER: Resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}
# The Envoy beside a picker that LiteLLM calls through (components/gateway/picker.py proxy_values): LiteLLM's
# streams to one model, bytes moved without buffering bodies; no CPU limit, as the picker.
PICKER_PROXY: Resources = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
# Every preparation step (components/storage/prepare.py): the serving pods' init containers (weights,
# adapters, a streamed model's wait for its fill) and the streamed fill Job's two steps. A 4Gi limit for
# the Hub client's and the aws CLI's buffers on large files.
PREPARATION_STEP: Resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}


def rendered(resources: Resources) -> dict[str, dict[str, str]]:
    """A container's `resources` as a builder renders it: a fresh copy (a builder may add to it, as the fill
    Job adds its scratch room)."""
    return {part: dict(values) for part, values in copy.deepcopy(dict(resources)).items()}


def effective(*, init: Iterable[Resources] = (), containers: Iterable[Resources] = ()) -> Requests:
    """One pod's requests as a ResourceQuota charges them: per resource, the larger of the containers' sum
    and any single init container."""
    total = Requests()
    for resources in containers:
        total = total + requests_of(resources)
    for resources in init:
        total = at_least(total, requests_of(resources))
    return total


def pod_requests(pod_spec: Mapping[str, Any]) -> Requests:
    """A rendered pod's requests, counted as `effective` counts them."""
    return effective(
        init=[c.get("resources") or {} for c in pod_spec.get("initContainers") or []],
        containers=[c.get("resources") or {} for c in pod_spec.get("containers") or []],
    )


def bench_runs_once(bench: Benchmark) -> bool:
    """The benchmark's one-off Job after `pulumi up`: without a schedule, or with a gate (only a Job `pulumi
    up` awaits can fail it); a schedule alone is the CronJob only."""
    return bench.schedule is None or bench.gate
