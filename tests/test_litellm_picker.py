"""LiteLLM's requests to a picked model go through the Envoy its picker's chart runs beside the picker, so the
picker chooses their pod as it does for the model's own route: the chart's proxy (llm-d-router-standalone
v0.10.0, envoy preset, sidecar mode) only where LiteLLM serves a picked model, LiteLLM's `api_base` on its
port, and NetworkPolicies that admit exactly LiteLLM -> proxy -> the model's pods."""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from components import peers
from components.gateway import isolation, picker
from components.serving import litellm
from stacks import charts, conformance
from stacks.load import ROOT
from stacks.resolved import FAIRNESS_HEADER, LITELLM_NAMESPACE, PICKER_HEADER, ResolvedStack
from tests.builders import resolved_model, resolved_stack, sourced
from tests.conftest import DEV, rendered_stack, sections_of
from tests.netpol import Peer, admitted, covers, peer_of, policies
from tests.serving_support import SERVING, serving_sections, serving_stack

SCHEMAS = conformance.schema_dir()
LITELLM_PODS = Peer.own(LITELLM_NAMESPACE, {peers.NAME: litellm.NAME})
PICKED = ("qwen3-8b-lora", "qwen3-8b-native")  # the serving example's vLLM models: prefix-cache by default


def _picker_release(name: str) -> dict[str, Any]:
    return next(r for r in rendered_stack(SERVING).releases() if r["name"] == f"{name}-picker")


@cache
def _chart_objects(name: str) -> tuple[dict[str, Any], ...]:
    """The real chart's objects for one of the serving example's picker releases, as the platform passes it."""
    root = charts.charts_dir()
    assert root is not None, "the tests that read it carry the charts marker"
    manifests = rendered_stack(SERVING).manifests()
    apis = charts.BASE_API_VERSIONS | {m["apiVersion"] for m in manifests if "/" in m["apiVersion"]}
    out = charts.template({**_picker_release(name), "skipCrds": True}, root, "1.34", apis, charts.helm())
    assert out.objects and not out.problems, out.problems
    return tuple(out.objects)


def _one(objects: tuple[dict[str, Any], ...], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _envoy(name: str) -> dict[str, Any]:
    served = resolved_model(serving_stack(), name)
    config = _one(_chart_objects(name), "ConfigMap", f"{picker.release_name(served)}{picker.PROXY_CONFIG_SUFFIX}")
    return yaml.safe_load(config["data"]["envoy.yaml"])


def _router(stack: ResolvedStack) -> dict[str, Any]:
    addons = stack.platform.addons
    objects = litellm.manifests(
        addons.litellm,
        stack.models,
        addons.monitoring.enabled,
        stack.images,
        proxies=peers.proxies(stack.route_parent),
        scraper=peers.PROMETHEUS if addons.monitoring.enabled else None,
    )
    config = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "litellm-config")
    return yaml.safe_load(config["data"]["config.yaml"])


# ---- the chart's proxy, rendered with the real chart ----------------------------------------------------


@pytest.mark.charts
@pytest.mark.schemas
@pytest.mark.parametrize("name", PICKED)
def test_the_picker_of_a_model_litellm_serves_renders_its_proxy_with_the_real_chart_into_valid_objects(name):
    stack = serving_stack()
    served = resolved_model(stack, name)
    objects = _chart_objects(name)
    assert SCHEMAS is not None
    for obj in objects:
        assert conformance.validate_object(obj, SCHEMAS, "1.34") == [], f"{obj['kind']}/{obj['metadata']['name']}"
    pod = _one(objects, "Deployment", picker.service_name(served))["spec"]["template"]["spec"]
    proxy = next(c for c in pod["containers"] if c["name"] == "envoy-proxy")
    assert proxy["image"] == stack.images["picker-proxy"].ref, "the catalog's pin, not the chart's default"
    assert {"containerPort": picker.PROXY_PORT, "name": "http-8081"} in proxy["ports"]
    ready = {"path": "/ready", "port": picker.PROXY_READY_PORT, "scheme": "HTTP"}
    assert proxy["readinessProbe"]["httpGet"] == ready
    assert proxy["livenessProbe"]["httpGet"] == ready, "a wedged Envoy is restarted, not only taken out of the Service"
    assert proxy["resources"]["requests"] == {"cpu": "250m", "memory": "256Mi"}, "not the chart's 4 CPU / 8Gi"
    assert "cpu" not in proxy["resources"]["limits"], "a throttled proxy delays every streamed token"
    assert proxy["securityContext"]["runAsUser"] == picker.PROXY_UID
    service = _one(objects, "Service", picker.service_name(served))
    port = next(p for p in service["spec"]["ports"] if p["name"] == picker.PROXY_PORT_NAME)
    assert (port["port"], port["targetPort"]) == (picker.PROXY_PORT, picker.PROXY_PORT)
    assert {p["port"] for p in service["spec"]["ports"]} >= {picker.EXT_PROC_PORT}, "the Gateway's ext_proc stays"


@pytest.mark.charts
def test_the_proxy_asks_the_picker_in_its_own_pod_and_sends_the_request_to_the_pod_it_names():
    envoy = _envoy("qwen3-8b-lora")
    clusters = {c["name"]: c for c in envoy["static_resources"]["clusters"]}
    ext_proc = clusters["ext_proc"]
    address = ext_proc["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    assert (ext_proc["type"], address["address"], address["port_value"]) == ("STATIC", "127.0.0.1", 9002)
    assert "transport_socket" not in ext_proc, "plaintext, as the picker serves it (secure-serving false)"
    pick = clusters["original_destination_cluster"]
    assert pick["type"] == "ORIGINAL_DST"
    assert pick["original_dst_lb_config"] == {"use_http_header": True, "http_header_name": PICKER_HEADER}
    listener = next(x for x in envoy["static_resources"]["listeners"] if x["name"] == "vllm")
    assert listener["address"]["socket_address"]["port_value"] == picker.PROXY_PORT


@pytest.mark.charts
def test_the_proxy_fails_closed_and_has_no_destination_but_the_picked_pod():
    """The operator guide's statement: failOpen false, so a silent picker fails the request (a request
    let past it would find no host in the ORIGINAL_DST cluster without a pick, but would follow a
    destination header it brought itself); the only way out is the picked pod."""
    envoy = _envoy("qwen3-8b-lora")
    listener = next(x for x in envoy["static_resources"]["listeners"] if x["name"] == "vllm")
    http = listener["filter_chains"][0]["filters"][0]["typed_config"]
    ext_proc = next(f for f in http["http_filters"] if f["name"] == "envoy.filters.http.ext_proc")
    assert ext_proc["typed_config"]["failure_mode_allow"] is False, "no request routed by a header it brought"
    assert "listener_filters" not in listener, "no original_dst listener filter: no destination to fall back to"
    route = http["route_config"]["virtual_hosts"][0]["routes"][0]["route"]
    assert route["cluster"] == "original_destination_cluster", "the only way out is the picked pod"


@pytest.mark.charts
def test_two_picked_models_in_one_namespace_each_get_their_own_proxy_config():
    names = {
        o["metadata"]["name"]
        for name in PICKED
        for o in _chart_objects(name)
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith(picker.PROXY_CONFIG_SUFFIX)
    }
    assert names == {f"{name}-picker{picker.PROXY_CONFIG_SUFFIX}" for name in PICKED}, "the preset's `envoy` twice"


# ---- only where LiteLLM serves the picked model ---------------------------------------------------------


def test_the_proxy_runs_only_where_litellm_serves_a_picked_model():
    stack = serving_stack()
    for name in PICKED:
        routing = resolved_model(stack, name).routing
        assert routing is not None and routing.picker and routing.litellm_proxy, name
        assert _picker_release(name)["values"]["router"]["proxy"]["enabled"] is True
    sections = serving_sections()
    sections["addons"]["litellm"] = {"enabled": False}
    without = serving_stack(sections)
    for name in PICKED:
        served = resolved_model(without, name)
        assert served.routing is not None and not served.routing.litellm_proxy
        router = picker.values(served, without.images["endpoint-picker"])["router"]
        assert router["proxy"] == {"enabled": False} and router["extraServicePorts"] == [], "as before"
    assert "picker-proxy" not in without.images, "no proxy, no image to pin"


def test_litellm_calls_a_picked_model_at_its_pickers_proxy_and_an_unpicked_one_at_its_service():
    stack = serving_stack()
    params = {m["model_name"]: m["litellm_params"] for m in _router(stack)["model_list"]}
    for name in PICKED:
        served = resolved_model(stack, name)
        expected = f"http://{name}-picker-epp.inference.svc.cluster.local:{picker.PROXY_PORT}/v1"
        assert params[name]["api_base"] == expected == f"{picker.proxy_url(served)}/v1"
    native = resolved_model(stack, "qwen3-8b-native")
    for adapter in native.proxied_adapter_names:
        assert params[adapter]["api_base"] == f"{picker.proxy_url(native)}/v1", "its adapters are picked too"
    dynamo = resolved_model(stack, "qwen3-8b-dynamo")
    assert dynamo.routing is None or not dynamo.routing.picker, "the example's unpicked model"
    assert (
        params["qwen3-8b-dynamo"]["api_base"] == "http://qwen3-8b-dynamo-frontend.inference.svc.cluster.local:8000/v1"
    )


def test_through_litellm_the_picker_sees_no_fairness_id_and_no_client_header_is_forwarded():
    """The operator guide's statement: LiteLLM forwards no client header (no forward_client_headers_to_llm_api)
    and sets no fairness id, so the picker's flow control queues all of LiteLLM's requests as one flow."""
    router = _router(serving_stack())
    assert "forward_client_headers_to_llm_api" not in router.get("general_settings", {})
    assert "forward_client_headers_to_llm_api" not in router.get("model_group_settings", {})
    for entry in router["model_list"]:
        assert FAIRNESS_HEADER not in entry["litellm_params"].get("extra_headers", {})


def test_the_models_own_route_still_calls_its_picker_over_ext_proc():
    stack = serving_stack()
    served = resolved_model(stack, "qwen3-8b-lora")
    policy = picker.extension_policy(served, stack.route_parent)
    assert policy["spec"]["extProc"][0]["backendRefs"][0]["port"] == picker.EXT_PROC_PORT
    assert policy["spec"]["extProc"][0]["failOpen"] is False, "the Gateway path is as it was"


# ---- NetworkPolicies: LiteLLM -> proxy -> model pods, exactly ---------------------------------------------


def _egress_peers(objects: list[dict[str, Any]], namespace: str, labels: dict[str, str], port: int) -> set[Peer]:
    """Every peer the egress policies selecting these pods admit on this TCP port."""
    out: set[Peer] = set()
    for policy in policies(objects):
        spec = policy["spec"]
        if policy["metadata"]["namespace"] != namespace or "Egress" not in spec.get("policyTypes", []):
            continue
        if not (spec.get("podSelector", {}).get("matchLabels") or {}).items() <= labels.items():
            continue
        for rule in spec.get("egress") or []:
            if covers(rule.get("ports"), port):
                out |= {peer_of(p, namespace) for p in rule.get("to") or [{}]}
    return out


@pytest.mark.parametrize("name", PICKED)
def test_network_policies_admit_exactly_litellm_to_the_proxy_and_the_picker_to_the_models_pods(name):
    stack = serving_stack()
    served = resolved_model(stack, name)
    objects = rendered_stack(SERVING).manifests()
    pickers = Peer.own(served.namespace, picker.pod_labels(served))
    on_proxy = admitted(objects, served.namespace, picker.pod_labels(served), picker.PROXY_PORT)
    assert on_proxy == {LITELLM_PODS}, "only LiteLLM calls the proxy"
    on_model = admitted(objects, served.namespace, served.selector, served.port)
    assert pickers in on_model, "the proxy sends each request to the pod its picker chose"
    assert LITELLM_PODS not in on_model, "LiteLLM no longer calls the picked model's pods itself"
    out_of_litellm = _egress_peers(objects, LITELLM_NAMESPACE, {peers.NAME: litellm.NAME}, picker.PROXY_PORT)
    assert pickers in out_of_litellm
    out_of_picker = _egress_peers(objects, served.namespace, picker.pod_labels(served), served.port)
    assert Peer(served.namespace, None) in out_of_picker, "the namespace's own pods, the model's among them"


def test_without_litellm_the_picker_admits_no_one_on_the_proxy_port():
    sections = serving_sections()
    sections["addons"]["litellm"] = {"enabled": False}
    stack = serving_stack(sections)
    served = resolved_model(stack, "qwen3-8b-lora")
    callers = isolation.Callers(proxies=peers.proxies(stack.route_parent), litellm=False)
    policy = isolation.picker_ingress(served, callers)
    assert admitted([policy], served.namespace, picker.pod_labels(served), picker.PROXY_PORT) == set()


def test_the_model_admits_its_picker_on_the_serving_port_for_litellms_requests_not_only_for_its_scrape():
    """vLLM and SGLang serve their metrics on the serving port, where the picker already scrapes; the proxy's
    grant is its own, so it holds for an engine whose metrics are elsewhere."""
    stack = serving_stack()
    served = resolved_model(stack, "qwen3-8b-lora")
    elsewhere = replace(served, metrics_port=served.port + 1)
    callers = isolation.Callers(proxies=peers.proxies(stack.route_parent), litellm=True)
    policy = isolation.model_ingress(elsewhere, callers)
    on_serving = admitted([policy], served.namespace, served.selector, served.port)
    assert Peer.own(served.namespace, picker.pod_labels(served)) in on_serving
    assert LITELLM_PODS not in on_serving


def test_the_operator_guide_says_both_paths_are_picked_what_fail_open_means_and_whose_queue_litellm_gets():
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    section = guide[guide.index("#### LiteLLM and the endpoint picker") :]
    section = section[: section.index("\n## ")]
    for fact in (
        f"{picker.PROXY_PORT}",
        "`failOpen: false`",
        "503",
        "500",
        "default-flow",
        "forward_client_headers_to_llm_api",
        "traceparent",
        "250m CPU and 256Mi",
        "canary",
    ):
        assert fact in section, fact


def test_stacks_plan_says_which_models_litellm_calls_through_their_picker():
    from stacks.plan import plan

    text = plan(serving_stack())
    for name in PICKED:
        block = text[text.index(f"{name} ") :].split("\n\n")[0]
        assert "through LiteLLM: picked too, by the Envoy beside its picker" in block, name
    assert text.count("through LiteLLM: picked too") == len(PICKED), "never an unpicked model"


@pytest.mark.schemas
def test_the_values_check_reads_the_standalone_charts_proxy_keys_over_the_library_charts_as_helm_does():
    """llm-d-router-standalone's values.yaml sets `router.proxy` (enabled, mode, failOpen, resources,
    presets) over routerlib's `proxy: {enabled: false}`; Helm coalesces them deep, so every key the platform
    sets under `router.proxy` is one the chart reads."""
    assert SCHEMAS is not None
    defaults = conformance.chart_defaults(SCHEMAS, "llm-d-router-standalone")
    assert defaults is not None
    proxy = defaults["router"]["proxy"]
    assert {"enabled", "mode", "failOpen", "resources", "presets"} <= proxy.keys()
    assert "tokenizer" in defaults["router"], "routerlib's own keys stay"
    served = resolved_model(serving_stack(), "qwen3-8b-lora")
    stack = serving_stack()
    values = picker.values(served, stack.images["endpoint-picker"], proxy_image=stack.images["picker-proxy"])
    assert conformance.validate_values("llm-d-router-standalone", values, SCHEMAS) == []


def test_a_picked_model_with_a_canary_keeps_litellm_at_its_stable_service_so_the_canarys_weight_holds():
    """The proxy sends a request straight to the picked pod and the picker selects stable and canary pods
    alike, so through it the canary's weight would not hold."""
    sections = sections_of(DEV)
    sections["addons"]["litellm"] = {"enabled": True, "masterKeySecret": "litellm-master-key"}
    name = "qwen3-8b"
    plain = resolved_model(resolved_stack(sourced(copy.deepcopy(sections))), name)
    assert plain.routing is not None and plain.routing.litellm_proxy, "picked, and LiteLLM calls it"
    entry = next(m for m in sections["models"] if m["name"] == name)
    entry["canary"] = {"revision": "0123456789abcdef0123456789abcdef01234567", "weight": 10}
    stack = resolved_stack(sourced(sections))
    served = resolved_model(stack, name)
    assert served.routing is not None and served.routing.picker, "still picked on its route"
    assert not served.routing.litellm_proxy
    assert (
        litellm.model_params(served)["api_base"]
        == f"http://{served.service}.{served.namespace}.svc.cluster.local:{served.port}/v1"
    )
    assert "picker-proxy" not in stack.images


def test_the_picker_pod_is_charged_its_proxy_beside_the_picker_where_litellm_calls_through_it():
    """One copy of the proxy's resources (stacks/helper_pods.py PICKER_PROXY): the rendered values and the
    picker pod's resolved requests, which the quota rules and `stacks plan` read."""
    from stacks.helper_pods import PICKER_PROXY, rendered

    stack = serving_stack()
    for name in PICKED:
        model = resolved_model(stack, name)
        [pod] = [h for h in model.helpers if h.kind == "endpoint-picker"]
        assert (pod.requests.cpu_m, pod.requests.memory_mib) == (1250, 1280), "picker 1/1Gi + proxy 250m/256Mi"
        assert _picker_release(name)["values"]["router"]["proxy"]["resources"] == rendered(PICKER_PROXY)
    without = serving_sections()
    without["addons"]["litellm"] = {"enabled": False}
    model = resolved_model(serving_stack(without), PICKED[0])
    [pod] = [h for h in model.helpers if h.kind == "endpoint-picker"]
    assert (pod.requests.cpu_m, pod.requests.memory_mib) == (1000, 1024), "no proxy, no charge"
