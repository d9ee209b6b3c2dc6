"""The benchmark Job's runner and verdict, shipped as this file's source into the guidellm container.

Standard library only: it runs under the guidellm image's own Python. It runs guidellm once per
concurrency of the sweep (argv lists from the Job's environment, built by components/benchmark.py),
then reads each JSON result and compares the SLO's quantile of time to first token and inter-token
latency (guidellm reports both in milliseconds, `benchmarks[].metrics.*_ms.successful.percentiles`)
with the model's objectives. It writes `verdict.json` beside the results (for a model with a canary,
which revision each part measured, `stable`/`canary` and its commit; else the bucket path names the
commit) and a `passed` marker only when every objective holds at every concurrency of every measured
revision; the uploader exits non-zero without the marker, so the results reach the bucket even when
the Job fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# guidellm's percentile keys: p001 ... p999 (thousandths; p95 is "p95", p99.9 "p999").
_METRICS = {"ttftSeconds": "time_to_first_token_ms", "itlSeconds": "inter_token_latency_ms"}


def percentile_key(p: float) -> str:
    """guidellm's key for quantile p: 0.95 -> p95, 0.999 -> p999, 0.5 -> p50, 0.001 -> p001."""
    thousandths = round(p * 1000)
    if thousandths % 10 == 0:
        return f"p{thousandths // 10:02d}"
    return f"p{thousandths:03d}"


def misses(result: dict[str, Any], slo: dict[str, float], p: float, concurrency: int) -> list[str]:
    """Every objective the result misses, one sentence each; a benchmark with no successful request
    misses them all (no measurement is not a pass)."""
    key = percentile_key(p)
    found: list[str] = []
    benchmarks = result.get("benchmarks") or []
    if not benchmarks:
        return [f"no benchmark result at concurrency {concurrency}"]
    for bench in benchmarks:
        metrics = bench.get("metrics", {})
        for objective, limit in slo.items():
            metric = _METRICS[objective]
            value = metrics.get(metric, {}).get("successful", {}).get("percentiles", {}).get(key)
            if value is None:
                found.append(f"{metric} {key} missing at concurrency {concurrency} (no successful request?)")
            elif value / 1000.0 > limit:
                found.append(
                    f"{metric} {key} {value / 1000.0:.3f}s > {objective} {limit}s at concurrency {concurrency}"
                )
    return found


def verdict(
    results: dict[int, dict[str, Any]], slo: dict[str, float], p: float, revision: str | None = None
) -> dict[str, Any]:
    """The verdict over every concurrency's result of one revision (`revision`: `stable` or `canary` for
    a canaried model, whose misses it names; None: the model's only revision)."""
    found = [m for level, r in sorted(results.items()) for m in misses(r, slo, p, level)]
    if revision is not None:
        found = [f"{revision} revision: {m}" for m in found]
    return {"passed": not found, "quantile": percentile_key(p), "slo": slo, "misses": found}


def overall(
    measured: list[tuple[str | None, str, dict[int, dict[str, Any]]]], slo: dict[str, float], p: float
) -> dict[str, Any]:
    """The Job's verdict over each measured (label, commit, results): it passes when every revision
    does, and says which revision (label and commit) each part measured."""
    parts = {label: (commit, verdict(results, slo, p, label)) for label, commit, results in measured}
    if list(parts) == [None]:
        # The model's only revision: the results' bucket path names its commit.
        return parts[None][1]
    return {
        "passed": all(v["passed"] for _, v in parts.values()),
        "quantile": percentile_key(p),
        "slo": slo,
        "misses": [m for _, v in parts.values() for m in v["misses"]],
        "revisions": {str(label): {"commit": commit, "passed": v["passed"]} for label, (commit, v) in parts.items()},
    }


def main() -> int:
    runs: list[dict[str, Any]] = json.loads(os.environ["BENCH_RUNS"])
    slo: dict[str, float] = json.loads(os.environ["BENCH_SLO"])
    p = float(os.environ["BENCH_QUANTILE"])
    out = Path(os.environ["BENCH_RESULTS"])
    measured: dict[str | None, tuple[str, dict[int, dict[str, Any]]]] = {}
    for run in runs:
        level, path, label = int(run["concurrency"]), Path(run["output"]), run.get("revision")
        _, results = measured.setdefault(label, (run.get("commit", ""), {}))
        rc = subprocess.run(run["argv"], check=False).returncode
        if rc != 0 or not path.is_file():
            print(f"benchmark: guidellm exited {rc} at concurrency {level}", file=sys.stderr)
            results[level] = {"benchmarks": []}
            continue
        results[level] = json.loads(path.read_text())
    decided = overall([(label, commit, results) for label, (commit, results) in measured.items()], slo, p)
    (out / "verdict.json").write_text(json.dumps(decided, indent=2))
    print(json.dumps(decided))
    if decided["passed"]:
        (out / "passed").write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
