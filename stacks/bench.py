"""Benchmark: the offline render of synthetic stacks against the Pulumi SDK's own floor.

`python -m stacks bench --sizes 100,200` does, for each k:
- render: a synthetic all-in-one stack with k GPU/Inferentia pools and one model per pool
  (`synthetic`), exactly as `stacks render` does it (validate the sections, run `__main__.py` under
  the recording mocks, write resources.json, manifests, Helm values and outputs to a scratch
  directory), timed in this process after a warm-up render.
- floor: what the Pulumi SDK alone costs for the same resources. The records of that render (type,
  name, parent, provider, dependsOn, inputs, protect, retainOnDelete, custom or component) are
  replayed in a fresh interpreter through plain `pulumi.CustomResource`, `ProviderResource` and
  `ComponentResource` registrations, in the order the program registered them, under trivial mocks
  that return the inputs as outputs and record nothing (`replay`). The replay checks that it
  produced exactly the render's URNs. No program code, config validation, manifest building or
  file writing runs there: the ratio render/floor is what the project adds on top of the SDK.
Render and replay alternate, --repeat times each, and the best CPU time of each is reported (wall
time beside it), so both see the same load on the machine.
Then the marginal cost of one more pool+model between consecutive sizes, for both: when it stays
flat, the render is linear. This is a measurement, not a test: nothing here asserts a time.
Beside it, the cold start on paper (`cold_start_report`): the reference models' estimates with the fast
path on, term by term with their sources, against the goals (4 minutes for Qwen3-8B on g6e.xlarge, 8 for
Llama 3.3 70B on p5.48xlarge).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .hardware import catalog
from .resolved import ColdStartEstimate

REVISION = "0123456789abcdef0123456789abcdef01234567"
REGION = "us-west-2"


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


@dataclass(frozen=True)
class Seconds:
    """CPU time of this process (all threads: the SDK runs monitor calls in an executor) and wall
    time. CPU is the figure compared: on a quiet machine they agree, and it does not count the time
    other work on the machine's two cores takes away."""

    cpu: float
    wall: float

    def best(self, other: Seconds) -> Seconds:
        return self if self.cpu <= other.cpu else other


class Clock:
    def __init__(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def seconds(self) -> Seconds:
        return Seconds(time.process_time() - self.cpu, time.perf_counter() - self.wall)


# ---- the render ----------------------------------------------------------------------------------


def render_once(sections: dict[str, Any], out: Path) -> tuple[Seconds, list[Any]]:
    """Validate, run the program under the recording mocks and write the files, as `stacks render`."""
    from .load import sections_to_pulumi_config
    from .pipeline import check_sections
    from .render import run_program, write

    clock = Clock()
    check_sections(sections, REGION)
    rendered = run_program(sections_to_pulumi_config(sections, REGION))
    write(rendered, out)
    return clock.seconds(), rendered.resources


# ---- the SDK floor ---------------------------------------------------------------------------------


def replay_spec(records: list[Any]) -> list[dict[str, Any]]:
    """What the SDK was asked to register, as JSON: one entry per record, in registration order."""
    spec = []
    for r in records:
        if not r.urn:
            raise ValueError(f"{r.type} {r.name}: a read, not a registration; the replay registers only")
        spec.append(
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                "parent": r.parent,
                "provider": r.provider,
                "dependsOn": r.depends_on,
                "inputs": r.inputs,
                "custom": r.custom,
                "remote": r.remote,
                "protect": r.protect,
                "retainOnDelete": r.retain_on_delete,
            }
        )
    return spec


class Floor:
    """A fresh interpreter that replays these records (see `replay`) each time it is asked, so the
    floor and the render are measured in alternation, under the same load on the machine."""

    def __init__(self, records: list[Any]) -> None:
        from .load import ROOT

        self._tmp = tempfile.TemporaryDirectory()
        path = Path(self._tmp.name) / "records.json"
        path.write_text(json.dumps(replay_spec(records)))
        code = f"from stacks.bench import replay_serve; replay_serve({str(path)!r})"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._read()  # "ready": imported, mocks set, warmed up

    def _read(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the replay process ended (exit {self._proc.wait()})")
        return line

    def seconds(self) -> Seconds:
        assert self._proc.stdin is not None
        self._proc.stdin.write("replay\n")
        self._proc.stdin.flush()
        cpu, wall = self._read().split()
        return Seconds(float(cpu), float(wall))

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait()
        self._tmp.cleanup()


def replay(spec: list[dict[str, Any]]) -> dict[str, Any]:
    """Register every entry of `spec` through the plain SDK classes, under whatever mocks are set;
    return the resources by URN once every registration has completed."""
    import pulumi
    from pulumi.runtime import rpc

    def value(v: Any) -> Any:
        if isinstance(v, dict):
            if v.get(rpc._special_sig_key) == rpc._special_secret_sig:
                return pulumi.Output.secret(value(v.get("value")))
            if rpc._special_sig_key in v:
                raise ValueError(f"cannot replay the special value {v}")
            return {k: value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [value(x) for x in v]
        return v

    made: dict[str, pulumi.Resource] = {}
    providers: dict[str, pulumi.ProviderResource] = {}
    outside: dict[str, pulumi.Resource] = {}

    def dependency(urn: str) -> pulumi.Resource:
        """A replayed resource, or a resource only the engine knows (such as the eks:index:Cluster
        component's own aws:eks Cluster, read from its outputs) as the SDK represents those."""
        if urn in made:
            return made[urn]
        if urn not in outside:
            outside[urn] = pulumi.resource.DependencyResource(urn)
        return outside[urn]

    @pulumi.runtime.test
    def program() -> Any:
        for e in spec:
            provider = providers[e["provider"].rsplit("::", 1)[0]] if e["provider"] else None
            opts = pulumi.ResourceOptions(
                parent=made.get(e["parent"]),  # the Stack (not a record) is the default parent
                provider=provider if e["custom"] else None,
                depends_on=[dependency(u) for u in e["dependsOn"]],
                protect=e["protect"],
                retain_on_delete=e["retainOnDelete"],
            )
            typ, name, props = e["type"], e["name"], value(e["inputs"])
            res: pulumi.Resource
            if typ.startswith("pulumi:providers:"):
                res = providers[e["urn"]] = pulumi.ProviderResource(typ[len("pulumi:providers:") :], name, props, opts)
            elif e["custom"]:
                res = pulumi.CustomResource(typ, name, props, opts)
            else:
                res = pulumi.ComponentResource(typ, name, props, opts, remote=e["remote"])
                if not e["remote"]:
                    res.register_outputs({})  # what the program's components do
            made[e["urn"]] = res
        return pulumi.Output.all(*[r.urn for r in made.values()])

    program()
    return made


class TrivialMocks:
    """Inputs back as outputs; nothing recorded beyond what the SDK's MockMonitor keeps itself."""

    def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return {}, []


def replay_serve(path: str) -> None:
    """In a fresh interpreter: for each line read, replay the records at `path` and print the CPU
    and wall seconds it took, after checking it registered exactly the render's URNs."""
    import pulumi
    from pulumi.runtime.mocks import MockMonitor

    from .config import PROJECT
    from .mocks import without_source_positions

    without_source_positions()  # as the render runs (stacks/mocks.py install)
    spec = json.loads(Path(path).read_text())
    urns = {e["urn"] for e in spec}
    monitor = MockMonitor(TrivialMocks())  # type: ignore[arg-type]
    pulumi.runtime.set_mocks(TrivialMocks(), project=PROJECT, stack="render", preview=False, monitor=monitor)  # type: ignore[arg-type]
    replay(spec[: min(len(spec), 50)])  # warm-up, as the render's
    print("ready", flush=True)
    for _ in sys.stdin:
        monitor.resources.clear()
        clock = Clock()
        made = replay(spec)
        took = clock.seconds()
        if set(made) != urns or set(monitor.resources) != urns:
            raise RuntimeError("the replay registered other resources than the render")
        del made
        print(f"{took.cpu:.6f} {took.wall:.6f}", flush=True)


# ---- the report ------------------------------------------------------------------------------------


def main(sizes: list[int], repeat: int = 3) -> int:
    print(f"import pulumi + pulumi-aws + pulumi-eks + pulumi-kubernetes (fresh interpreter): {import_seconds():.2f}s")
    head = f"{'k':>4} {'resources':>9} {'floor':>7} {'render':>7} {'ratio':>6} {'floor/k':>8} {'render/k':>8}"
    print(f"{head} {'wall: floor':>11} {'render':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        render_once(synthetic(1), out)  # warm imports and caches
        prev: tuple[int, Seconds, Seconds] | None = None
        for k in sizes:
            sections = synthetic(k)
            render, records = render_once(sections, out)
            replayer = Floor(records)
            floor = replayer.seconds()
            for _ in range(repeat - 1):
                render = render.best(render_once(sections, out)[0])
                floor = floor.best(replayer.seconds())
            replayer.close()
            per_k = f"{'':>8} {'':>8}"
            if prev is not None:
                dk = k - prev[0]
                per_k = (
                    f"{(floor.cpu - prev[1].cpu) / dk * 1000:>6.1f}ms {(render.cpu - prev[2].cpu) / dk * 1000:>6.1f}ms"
                )
            print(
                f"{k:>4} {len(records):>9} {floor.cpu:>6.2f}s {render.cpu:>6.2f}s {render.cpu / floor.cpu:>5.2f}x "
                f"{per_k} {floor.wall:>10.2f}s {render.wall:>6.2f}s"
            )
            prev = (k, floor, render)
    print(
        "floor: the same registrations through the bare SDK under trivial mocks, in a fresh interpreter; "
        "render: validate + program under the recording mocks + write, as `stacks render`; measured in "
        f"alternation, CPU seconds, best of {repeat}. floor/k, render/k: marginal cost of one more "
        "pool+model since the previous size (flat when linear)."
    )
    print("\ncold start on paper (stacks/coldstart.py; docs/performance.md has the table):")
    print("\n".join(cold_start_report()))
    return 0


# ---- the cold start, on paper ----------------------------------------------------------------------

# The goal: zero to first token, node included, with the fast path on (SOCI parallel pull or a pre-pulled
# image snapshot, a warm compile cache, weights streamed from the bucket or read from FSx).
QWEN_GOAL_SECONDS = 4 * 60
LLAMA_GOAL_SECONDS = 8 * 60


def reference_sections(
    name: str, hf: str, parameters: str, instance: str, storage: dict[str, Any], pool: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An all-in-one stack with one pool of `instance` (with `pool`'s keys) and one bf16 vLLM model on it."""
    gpus = catalog()[instance].gpu_count
    model: dict[str, Any] = {
        "name": name,
        "engine": "vllm",
        "model": hf,
        "revision": REVISION,
        "pool": "gpu",
        "acceleratorsPerReplica": gpus,
        "replicas": 1,
        "maxModelLen": 8192,
        "parameters": parameters,
        "dtype": "bf16",
    }
    if storage.get("modelCache") is None:
        model["loadFormat"] = "runai-streamer"
    return {
        "stack": {"role": "all-in-one", "environment": "dev"},
        "cluster": {"name": "bench", "admins": ["arn:aws:iam::111122223333:role/admins"]},
        "nodePools": [{"name": "gpu", "accelerator": "nvidia", "instanceTypes": [instance], **(pool or {})}],
        "storage": {k: v for k, v in storage.items() if v is not None},
        "models": [model],
    }


QWEN = ("qwen3-8b", "Qwen/Qwen3-8B", "8B", "g6e.xlarge")
SNAPSHOT_CASE = (
    "Qwen3-8B bf16 on g6e.xlarge, FSx, on a Bottlerocket pool with a pre-pulled image snapshot (fast snapshot restore)"
)
REFERENCES: dict[str, tuple[tuple[str, str, str, str], int]] = {
    "Qwen3-8B bf16 on g6e.xlarge, FSx": (QWEN, QWEN_GOAL_SECONDS),
    "Qwen3-8B bf16 on g6e.xlarge, streamed": (QWEN, QWEN_GOAL_SECONDS),
    SNAPSHOT_CASE: (QWEN, QWEN_GOAL_SECONDS),
    "Llama 3.3 70B bf16 on p5.48xlarge, streamed": (
        ("llama-70b", "meta-llama/Llama-3.3-70B-Instruct", "70B", "p5.48xlarge"),
        LLAMA_GOAL_SECONDS,
    ),
}
# The pool keys a case sets itself; every other case pulls with SOCI. The snapshot id is AWS's documentation
# placeholder: the estimate reads only whether fast snapshot restore is on.
REFERENCE_POOLS: dict[str, dict[str, Any]] = {
    SNAPSHOT_CASE: {
        "amiAlias": "bottlerocket@latest",
        "imagePull": "snapshot",
        "imageSnapshot": {"id": "snap-0123456789abcdef0", "fastSnapshotRestore": True},
    },
}
FSX = {"modelCache": "fsx", "fsx": {"storageCapacityGiB": 1200, "throughputPerTiB": 1000}}


def reference_estimate(label: str) -> tuple[ColdStartEstimate, int]:
    """A reference model's estimate with the fast path on (the pool's pull SOCI unless the case names its
    own image path, the compile cache warm), and its goal. Resolved (not checked: the inline stack pins no
    digests) from an inline stack."""
    from .coldstart import estimate
    from .load import parse_sections
    from .resolve import resolve

    (name, hf, parameters, instance), goal = REFERENCES[label]
    storage = FSX if "FSx" in label else {"modelCache": None}
    own = REFERENCE_POOLS.get(label)
    stack = resolve(parse_sections(reference_sections(name, hf, parameters, instance, storage, own), REGION))
    served = stack.models[0]
    pool = served.pool if own else replace(served.pool, image_pull="soci")
    est = estimate(
        served.config,
        pool,
        stack.platform.storage,
        served.cache,
        served.image,
        prepared=served.prepared,
        compile_cache=True,
    )
    return est, goal


def cold_start_report() -> list[str]:
    """Each reference model's estimate against its goal, term by term, with the sources."""
    lines = []
    for label in REFERENCES:
        est, goal = reference_estimate(label)
        verdict = "meets" if est.seconds <= goal else "MISSES"
        lines.append(f"{label}: {est.seconds}s, {verdict} the {goal // 60}-minute goal")
        lines += [f"  {name:<8}{term.seconds:>5}s  {term.source}" for name, term in est.terms().items()]
    return lines
