"""Traces (issue 30 item 4): the collector's pipeline, the gateway's EnvoyProxy tracer, the picker's
tracing values and the engines' OTLP flags, each built by a pure function."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.engines.workload import otel_sdk_env, tgi_trace_args, vllm_trace_args
from components.gateway.routing import envoy_proxy, sampling_fraction
from components.tracing import collector_config, collector_objects
from stacks.config.addons import TracingAddon
from stacks.resolve.tracing import trace_export
from stacks.versions import PLATFORM_IMAGES

ON = TracingAddon.model_validate({"enabled": True, "endpoint": "http://tempo.tempo.svc:4317", "samplingRatio": 0.05})


def test_tracing_without_a_backend_endpoint_is_refused_at_load() -> None:
    with pytest.raises(ValidationError, match="set endpoint"):
        TracingAddon(enabled=True)


def test_the_collector_receives_otlp_and_exports_to_the_stack_endpoint() -> None:
    config = collector_config(ON)
    assert config["exporters"] == {"otlp": {"endpoint": "http://tempo.tempo.svc:4317"}}, "spans reach the backend"
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    http = collector_config(ON.model_copy(update={"protocol": "http"}))
    assert "otlphttp" in http["exporters"], "an HTTP backend gets the otlphttp exporter"


def test_the_collector_runs_the_pinned_image_with_two_replicas_in_prod() -> None:
    objs = collector_objects(ON, PLATFORM_IMAGES["otel-collector"], prod=True)
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == PLATFORM_IMAGES["otel-collector"].ref


def test_the_gateway_samples_at_the_configured_ratio_and_exports_to_the_collector() -> None:
    export = trace_export(ON)
    assert export is not None
    proxy = envoy_proxy(export)
    tracing = proxy["spec"]["telemetry"]["tracing"]
    assert tracing["samplingFraction"] == {"numerator": 500, "denominator": 10000}, "5 % of requests"
    assert tracing["provider"]["type"] == "OpenTelemetry"
    assert tracing["provider"]["backendRefs"][0]["port"] == 4317
    assert sampling_fraction(1.0) == {"numerator": 10000, "denominator": 10000}


def test_vllm_and_tgi_export_to_the_collector_parent_based() -> None:
    export = trace_export(ON)
    assert export is not None
    assert vllm_trace_args(export) == ["--otlp-traces-endpoint", export.endpoint]
    assert tgi_trace_args(export, "m")[:2] == ["--otlp-endpoint", export.endpoint]
    env = {e["name"]: e["value"] for e in otel_sdk_env(export, "m")}
    assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio" and env["OTEL_TRACES_SAMPLER_ARG"] == "0.05"


def test_only_vllm_and_tgi_export_traces_and_the_others_say_why() -> None:
    from components.engines import ENGINES

    exporting = {name for name, spec in ENGINES.items() if spec.no_traces is None}
    assert exporting == {"vllm", "tgi"}, "the engines whose pinned image exports OTLP"
    assert "tracing" in (ENGINES["sglang"].no_traces or ""), "SGLang's refusal names its missing extra"


def test_no_tracing_when_the_addon_is_off() -> None:
    assert trace_export(TracingAddon()) is None


def test_the_collector_reaches_the_backend_by_its_host_and_port_and_nothing_else() -> None:
    from components.peers import COLLECTOR, DNS
    from components.tracing import collector_policies

    def backend(endpoint: str) -> dict:
        addon = TracingAddon.model_validate({"enabled": True, "endpoint": endpoint})
        policy = collector_policies(addon, [COLLECTOR])[1]
        assert policy["spec"]["egress"][0] == DNS
        return policy["spec"]["egress"][1]

    tempo = backend("http://tempo-distributor.tempo.svc.cluster.local:4317")
    assert tempo["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tempo"}}}]
    assert tempo["ports"] == [{"protocol": "TCP", "port": 4317}]
    assert backend("http://10.0.4.20:4317")["to"] == [{"ipBlock": {"cidr": "10.0.4.20/32"}}]
    vendor = backend("https://otlp.example.com/v1/traces")
    assert vendor["ports"] == [{"protocol": "TCP", "port": 443}], "the scheme's port when the endpoint names none"


def test_a_collector_with_no_exporters_admits_nobody() -> None:
    from components.tracing import collector_policies

    assert collector_policies(ON, [])[1]["spec"]["ingress"] == []


def test_the_gateways_tracer_names_the_collector_in_its_namespace_without_a_reference_grant() -> None:
    """Envoy Gateway v1.9.0 checks an EnvoyProxy's telemetry backendRefs for the Service and port only
    (internal/gatewayapi/listener.go processBackendRefsForTelemetry, validate.go validateBackendRefService),
    never for a ReferenceGrant, so the platform renders none; the source is stated beside the backendRef."""
    import inspect

    from components.gateway import routing

    export = trace_export(ON)
    assert export is not None
    ref = envoy_proxy(export)["spec"]["telemetry"]["tracing"]["provider"]["backendRefs"][0]
    assert ref == {"name": "otel-collector", "namespace": "tracing", "port": 4317}
    assert "processBackendRefsForTelemetry" in inspect.getsource(routing.envoy_proxy)


def test_a_picker_traces_for_a_model_whose_engine_cannot_export() -> None:
    """The picker's tracing follows the platform's, not the model's: SGLang opts out, its picker still traces."""
    from tests.conftest import EXAMPLES, rendered_stack

    path = next(p for p in EXAMPLES if p.name == "Pulumi.frontdoor.yaml")
    values = next(r["values"] for r in rendered_stack(path).releases() if r["name"] == "qwen3-8b-sglang-picker")
    assert values["router"]["tracing"]["otelExporterEndpoint"] == "http://otel-collector.tracing.svc.cluster.local:4317"


def test_the_collector_runs_as_the_images_own_non_root_user_and_is_awaited() -> None:
    """runAsNonRoot alone cannot be verified by the kubelet on an image whose USER is numeric only in its
    Dockerfile; the contrib image runs as 10001:10001. `pulumi up` waits for it as for any platform service."""
    from stacks.awaits import TIMEOUT_SECONDS, await_service

    objs = collector_objects(ON, PLATFORM_IMAGES["otel-collector"], prod=False)
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    ctx = deployment["spec"]["template"]["spec"]["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 10001 and ctx["runAsGroup"] == 10001
    assert deployment["metadata"]["annotations"][TIMEOUT_SECONDS] == await_service()[TIMEOUT_SECONDS]


def test_the_collector_gets_no_service_account_token_as_it_never_calls_the_api_server() -> None:
    objs = collector_objects(ON, PLATFORM_IMAGES["otel-collector"], prod=False)
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    config = next(o for o in objs if o["kind"] == "ConfigMap")
    assert "k8sattributes" not in str(config["data"]), "a k8sattributes processor would need the token"
