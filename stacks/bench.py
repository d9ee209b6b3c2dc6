"""Benchmark: render synthetic stacks of growing size and report wall time.

`python -m stacks bench` renders stacks with k pools and k models for k in --sizes, under the same
mocks as `stacks render`, and prints each time next to the time of merely importing pulumi,
pulumi-aws, pulumi-eks and pulumi-kubernetes in a fresh interpreter. The marginal cost of one more
pool and model (last column) should stay roughly constant as k grows: that is linear growth.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

REVISION = "0123456789abcdef0123456789abcdef01234567"


def synthetic(k: int) -> dict[str, Any]:
    """An all-in-one stack with k GPU/Inferentia pools (alternating) and one model per pool."""
    pools, models = [], []
    for i in range(k):
        neuron = i % 2 == 1
        pools.append(
            {
                "name": f"pool-{i}",
                "accelerator": "neuron" if neuron else "nvidia",
                "instanceTypes": ["inf2.xlarge", "inf2.24xlarge"] if neuron else ["g6.xlarge", "g6.12xlarge"],
                "limits": {"accelerators": 16},
            }
        )
        models.append(
            {
                "name": f"model-{i}",
                "engine": "neuron-vllm" if neuron else "vllm",
                "model": "Qwen/Qwen3-0.6B",
                "revision": REVISION,
                "pool": f"pool-{i}",
                "acceleratorsPerReplica": 1,
                "replicas": 1,
                "maxModelLen": 4096,
            }
        )
    return {
        "stack": {"role": "all-in-one", "environment": "dev"},
        "cluster": {"name": "bench", "admins": ["arn:aws:iam::111122223333:role/admins"]},
        "nodePools": pools,
        "models": models,
    }


def import_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pulumi, pulumi_aws, pulumi_eks, pulumi_kubernetes"], check=True)
    return time.perf_counter() - start


def main(sizes: list[int], repeat: int = 3) -> int:
    from .load import parse_sections, sections_to_pulumi_config
    from .render import run_program

    print(f"import pulumi + pulumi-aws + pulumi-eks + pulumi-kubernetes (fresh interpreter): {import_seconds():.2f}s")
    run_program(sections_to_pulumi_config(synthetic(1), "us-west-2"))  # warm imports
    print(f"{'k':>4} {'resources':>10} {'validate':>9} {'render':>8} {'marginal per k':>15}")
    prev: tuple[int, float] | None = None
    for k in sizes:
        sections = synthetic(k)
        best_v = best_r = float("inf")
        count = 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            parse_sections(sections, "us-west-2")
            t1 = time.perf_counter()
            rendered = run_program(sections_to_pulumi_config(sections, "us-west-2"))
            t2 = time.perf_counter()
            best_v, best_r = min(best_v, t1 - t0), min(best_r, t2 - t1)
            count = len(rendered.resources)
        marginal = "" if prev is None else f"{(best_r - prev[1]) / (k - prev[0]) * 1000:>13.1f}ms"
        print(f"{k:>4} {count:>10} {best_v:>8.3f}s {best_r:>7.3f}s {marginal:>15}")
        prev = (k, best_r)
    print("Linear growth: the marginal cost per pool+model stays roughly constant as k grows.")
    return 0
