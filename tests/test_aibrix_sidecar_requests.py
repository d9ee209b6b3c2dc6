"""AIBrix's runtime sidecar counts in its model's pod (issue 28 follow-up): where AIBrix loads a model's
adapters, the serving pod holds the sidecar beside the engine, so the requests Karpenter packs and a
team's ResourceQuota charges are the engine's plus the sidecar's. One fact (stacks/fit.py
AIBRIX_RUNTIME_REQUESTS) is what the sidecar renders and what the pod shape adds."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from components.serving import aibrix
from stacks.errors import ConfigError
from stacks.fit import AIBRIX_RUNTIME_REQUESTS, aibrix_runtime_requests, cpu_millicores, memory_mib
from stacks.pipeline import check_sections, exports_from_file
from tests.conftest import EXAMPLES_DIR, live_platform, sections_of, stack_manifests
from tests.serving_support import SERVING

NAME = "qwen3-8b-lora"
TEAM = EXAMPLES_DIR / "Pulumi.team-search.yaml"
ADAPTERS = [{"name": "support-lora", "artifactURL": "huggingface://acme/qwen3-8b-support-lora"}]


def _model(path: Path, name: str):
    stack = check_sections(sections_of(path), "us-west-2")
    return next(m for m in stack.models if m.name == name)


def test_the_runtime_sidecar_renders_the_requests_the_pod_shape_counts():
    sidecar = aibrix.runtime_sidecar(image="x", engine="vllm", engine_port=8000, region=None, security={})
    assert sidecar["resources"]["requests"] == AIBRIX_RUNTIME_REQUESTS, "one fact for the builder and the sizing"


def test_a_model_whose_adapters_aibrix_loads_counts_the_sidecar_in_its_serving_pod():
    model = _model(SERVING, NAME)
    assert model.adapter_loader == "aibrix"
    (server,) = [p for p in model.pods if p.role == "server"]
    assert server.requests == model.requests + aibrix_runtime_requests(), "fit and quota see engine + sidecar"
    assert model.serving_pod_requests == server.requests
    (deployment,) = [o for o in stack_manifests(SERVING) if o["kind"] == "Deployment" and o["metadata"]["name"] == NAME]
    containers = deployment["spec"]["template"]["spec"]["containers"]
    cpu = sum(cpu_millicores(c["resources"]["requests"]["cpu"]) for c in containers)
    memory = sum(memory_mib(c["resources"]["requests"]["memory"]) for c in containers)
    assert (cpu, memory) == (server.requests.cpu_m, server.requests.memory_mib), (
        "the pod shape is exactly the rendered pod's containers summed"
    )


def test_a_model_without_aibrix_adapters_counts_only_its_engine():
    model = _model(SERVING, "qwen3-8b-native")
    assert model.adapter_loader != "aibrix"
    assert all(p.requests == model.requests for p in model.pods if p.role == "server")


def _team_problems(cpu_m: int, adapters: bool) -> list[str]:
    live = _live()
    next(t for t in live["teams"] if t["name"] == "search")["quota"]["cpu"] = f"{cpu_m}m"
    team = sections_of(TEAM)
    model = team["models"][0] | ({"adapters": ADAPTERS} if adapters else {})
    team["models"] = [model | {"replicas": 1}]
    try:
        check_sections(team, "us-west-2", platforms=live_platform(live))
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_a_team_quota_tight_to_the_engine_alone_is_refused_once_the_sidecar_counts():
    engine = check_sections(sections_of(TEAM), "us-west-2", platforms=live_platform(_live())).models[0].requests
    one_replica = [p for p in _team_problems(engine.cpu_m, adapters=False) if "one replica of" in p]
    assert not one_replica, "the engine alone fits the quota exactly"
    found = _team_problems(engine.cpu_m, adapters=True)
    need = engine.cpu_m + aibrix_runtime_requests().cpu_m
    assert any("one replica of qwen3-8b" in p and f"{need}m" in p and "quota" in p for p in found), found


def _live() -> dict[str, Any]:
    live: dict[str, Any] = copy.deepcopy(exports_from_file(EXAMPLES_DIR / "Pulumi.platform.yaml"))
    live["addons"]["aibrix"] = True
    return live
