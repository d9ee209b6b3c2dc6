"""Team traces (issue 30 item 4): a team's stack on a platform that traces exports its engines' spans to
the platform's collector. The platform exports the collector's in-cluster endpoint and its sampling ratio
(never the backend); the team's vLLM/TGI models get the OTLP flags and a `<model>-traces` egress policy;
the platform's collector admits the team namespaces' engine and picker pods, not the namespaces whole.
The shipped platform example does not trace, so these tests turn tracing on in a copy of it."""

from __future__ import annotations

from functools import cache
from typing import Any

from components import peers
from components.tracing import collector_policies
from stacks.config.addons import TracingAddon
from stacks.exports import export_platform, read_platform
from stacks.pipeline import check_sections
from stacks.resolve import own_platform
from stacks.resolved import COLLECTOR_HOST, MODEL_LABEL
from tests.builders import resolved_stack
from tests.conftest import EXAMPLES_DIR, render_sections, sections_of

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
TEAM = EXAMPLES_DIR / "Pulumi.team-chat.yaml"
BACKEND = "http://tempo-distributor.tempo.svc.cluster.local:4317"
TRACING = {"enabled": True, "endpoint": BACKEND, "samplingRatio": 0.25}


def traced_platform() -> dict[str, Any]:
    """The platform example's sections with addons.tracing on."""
    sections = sections_of(PLATFORM)
    sections.setdefault("addons", {})["tracing"] = dict(TRACING)
    return sections


@cache
def traced_exports() -> dict[str, Any]:
    return export_platform(own_platform(check_sections(traced_platform(), "us-west-2").config))


def test_a_tracing_platform_exports_its_in_cluster_collector_and_ratio_not_the_backend():
    exported = traced_exports()["tracing"]
    assert exported == {"endpoint": f"http://{COLLECTOR_HOST}:4317", "samplingRatio": 0.25}
    assert BACKEND not in str(traced_exports()), "only the collector reaches the backend"


def test_old_exports_without_tracing_and_a_platform_that_does_not_trace_read_as_off():
    old = dict(traced_exports())
    old.pop("tracing")
    assert read_platform(old, "an older platform").tracing is None
    untraced = export_platform(own_platform(check_sections(sections_of(PLATFORM), "us-west-2").config))
    assert "tracing" not in untraced, "a platform that does not trace exports what older team stacks read"
    team = resolved_stack(sections_of(TEAM), exports=old)
    assert team.tracing is None and all(m.tracing is None for m in team.models), "no flags, no egress"
    traced = resolved_stack(sections_of(TEAM), exports=traced_exports())
    assert traced.tracing is not None and all(m.tracing == traced.tracing for m in traced.models)


@cache
def team_objects() -> list[dict[str, Any]]:
    return render_sections(sections_of(TEAM), platform_exports=traced_exports()).manifests()


def test_a_team_stack_on_a_tracing_platform_gives_its_vllm_models_the_otlp_flags_and_sampler():
    deployments = {o["metadata"]["name"]: o for o in team_objects() if o["kind"] == "Deployment"}
    for name in ("qwen3-8b", "qwen3-8b-next"):
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        args = [*container.get("command", []), *container.get("args", [])]
        flag = args.index("--otlp-traces-endpoint")
        assert args[flag + 1] == f"http://{COLLECTOR_HOST}:4317", f"{name} exports to the platform's collector"
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.25", f"{name} samples at the platform's ratio"


def test_a_team_stack_on_a_tracing_platform_opens_each_models_egress_to_the_collector_only():
    policies = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o for o in team_objects() if o["kind"] == "NetworkPolicy"
    }
    for namespace, name in (("chat", "qwen3-8b"), ("chat-staging", "qwen3-8b-next")):
        spec = policies[(namespace, f"{name}-traces")]["spec"]
        assert spec["podSelector"] == {"matchLabels": {MODEL_LABEL: name}}
        assert spec["egress"] == [peers.to([peers.COLLECTOR], peers.OTLP_PORTS, namespace)]


def test_the_platforms_collector_admits_the_team_namespaces_engine_and_picker_pods_on_otlp():
    objects = render_sections(traced_platform()).manifests()
    collector = next(
        o
        for o in objects
        if o["kind"] == "NetworkPolicy"
        and o["metadata"] == o["metadata"] | {"namespace": "tracing", "name": "otel-collector"}
    )
    rules = collector["spec"]["ingress"]
    team_rule = next(r for r in rules if any("matchExpressions" in p.get("podSelector", {}) for p in r["from"]))
    assert team_rule["ports"] == peers.tcp(4317, 4318)
    admitted = {
        (p["namespaceSelector"]["matchLabels"][peers.NS_LABEL], p["podSelector"]["matchExpressions"][0]["key"])
        for p in team_rule["from"]
    }
    namespaces = {ns for team in traced_platform()["teams"] for ns in team.get("namespaces") or [team["name"]]}
    assert {"chat", "chat-staging", "search"} <= namespaces
    assert admitted == {(ns, key) for ns in namespaces for key in (MODEL_LABEL, "llm-d-router-standalone")}
    for peer in team_rule["from"]:
        assert peer["podSelector"] != {}, "never a team namespace whole"


def test_without_teams_the_collector_admits_only_the_platforms_own_exporters():
    addon = TracingAddon.model_validate(TRACING)
    own = [peers.COLLECTOR]
    collector = collector_policies(addon, own)[1]
    assert len(collector["spec"]["ingress"]) == 1
    with_teams = collector_policies(addon, own, ("chat",))[1]
    assert with_teams["spec"]["ingress"][1]["from"] == peers.team_exporters("chat")
