"""AIBrix's Gateway is an exposed front door too: no path on an exposed listener is reachable without
authentication, as far as the rendered objects can show it (issue #16 items 1 and 3).

The walk covers every Gateway whose Envoy Service is a LoadBalancer (Envoy Gateway's default), every
HTTPRoute that attaches to one of its listeners, and every route an EnvoyPatchPolicy inserts into a
listener's route table. Its objects are the stack's render, the AIBrix release templated with the
pinned chart, and what AIBrix's controller creates at run time, modelled from its source
(`controller_objects`). What only a live cluster shows (the xDS Envoy Gateway builds from them) is
for `egctl`: README "AIBrix's gateway: verified offline, and on a cluster".
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import pytest

from components.serving import aibrix
from components.serving.values import AIBRIX_CLIENT_TRAFFIC, ROUTING_STRATEGY_HEADER, aibrix_listener_policy
from stacks import charts
from stacks.resolved import AIBRIX_GATEWAY
from tests.conftest import ALL_STACKS, EXAMPLES, rendered_stack

SERVING = next(p for p in EXAMPLES if p.name == "Pulumi.serving.yaml")
AUTHENTICATES = ("apiKeyAuth", "jwt", "basicAuth", "extAuth", "oidc")
# The workload kinds AIBrix 0.7.0's model router watches for `model.aibrix.ai/name` on their own
# metadata (not their pod template's).
WATCHED = {"Deployment", "ModelAdapter", "RayClusterFleet", "LeaderWorkerSet"}


def controller_objects(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """What AIBrix's controller manager creates by itself, from vllm-project/aibrix
    pkg/controller/modelrouter/modelrouter_controller.go `createHTTPRoute` and
    `createReferenceGrant` (v0.7.0): for every watched workload whose own labels carry
    `model.aibrix.ai/name`, HTTPRoute `<model>-router` in `aibrix-system` (hard-coded), parentRef
    Gateway `aibrix-eg` there with no sectionName, header `model: <name>` on its OpenAI paths, to the
    Service named after the model in the workload's namespace; and, in that namespace, ReferenceGrant
    `aibrix-system-reserved-referencegrant-in-<ns>` admitting every Service to HTTPRoutes from
    `aibrix-system`."""
    namespace, gateway, _ = AIBRIX_GATEWAY
    made: dict[tuple[str, str, str], dict[str, Any]] = {}
    for obj in objects:
        labels = obj.get("metadata", {}).get("labels") or {}
        if obj.get("kind") not in WATCHED or aibrix.MODEL_LABEL not in labels:
            continue
        model, ns = labels[aibrix.MODEL_LABEL], obj["metadata"]["namespace"]
        port = int(labels.get(aibrix.PORT_LABEL, 8000))
        route = {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": f"{model}-router", "namespace": namespace},
            "spec": {
                "parentRefs": [{"name": gateway, "namespace": namespace}],
                "rules": [
                    {
                        "matches": [
                            {"path": {"type": "PathPrefix", "value": "/v1/chat/completions"},
                             "headers": [{"type": "Exact", "name": "model", "value": model}]}
                        ],
                        "backendRefs": [{"name": model, "namespace": ns, "port": port}],
                    }
                ],
            },
        }  # fmt: skip
        made[("HTTPRoute", namespace, route["metadata"]["name"])] = route
        if ns != namespace:
            grant = {
                "apiVersion": "gateway.networking.k8s.io/v1beta1",
                "kind": "ReferenceGrant",
                "metadata": {"name": f"{namespace}-reserved-referencegrant-in-{ns}", "namespace": ns},
                "spec": {
                    "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": namespace}],
                    "to": [{"group": "", "kind": "Service"}],
                },
            }
            made[("ReferenceGrant", ns, grant["metadata"]["name"])] = grant
    return list(made.values())


def _of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def _ns(obj: dict[str, Any]) -> str:
    return obj["metadata"].get("namespace", "")


def _exposed_gateways(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gateways whose Envoy Service is a LoadBalancer: Envoy Gateway's default, unless the
    GatewayClass's EnvoyProxy sets another type."""
    proxies = {(_ns(p), p["metadata"]["name"]): p for p in _of(objects, "EnvoyProxy")}
    classes = {c["metadata"]["name"]: c for c in _of(objects, "GatewayClass")}
    exposed = []
    for gw in _of(objects, "Gateway"):
        ref = classes.get(gw["spec"]["gatewayClassName"], {}).get("spec", {}).get("parametersRef") or {}
        proxy = proxies.get((ref.get("namespace", ""), ref.get("name", ""))) or {}
        service = proxy.get("spec", {}).get("provider", {}).get("kubernetes", {}).get("envoyService", {})
        if service.get("type", "LoadBalancer") == "LoadBalancer":
            exposed.append(gw)
    return exposed


def _client_policy(objects: list[dict[str, Any]], gw: dict[str, Any], listener: str) -> dict[str, Any] | None:
    """The ClientTrafficPolicy Envoy Gateway applies to a listener: a section-level one replaces a
    Gateway-wide one whole."""
    section, wide = None, None
    for ctp in _of(objects, "ClientTrafficPolicy"):
        if _ns(ctp) != _ns(gw):
            continue
        for ref in ctp["spec"].get("targetRefs", []):
            if ref["kind"] == "Gateway" and ref["name"] == gw["metadata"]["name"]:
                if ref.get("sectionName") == listener:
                    section = ctp
                elif "sectionName" not in ref:
                    wide = ctp
    return section or wide


def _authenticated(objects: list[dict[str, Any]], gw: dict[str, Any], listener: str, route: dict[str, Any]) -> bool:
    for sp in _of(objects, "SecurityPolicy"):
        if not any(k in sp["spec"] for k in AUTHENTICATES):
            continue
        for ref in sp["spec"].get("targetRefs", []):
            if ref["kind"] == "HTTPRoute" and ref["name"] == route["metadata"]["name"] and _ns(sp) == _ns(route):
                return True
            on_gateway = ref["kind"] == "Gateway" and ref["name"] == gw["metadata"]["name"] and _ns(sp) == _ns(gw)
            if on_gateway and ref.get("sectionName") in (None, listener):
                return True
    return False


def _redirect_only(route: dict[str, Any]) -> bool:
    return all(
        not rule.get("backendRefs") and any(f["type"] == "RequestRedirect" for f in rule.get("filters", []))
        for rule in route["spec"].get("rules", [])
    )


def _attaches(route: dict[str, Any], gw: dict[str, Any], listener: dict[str, Any]) -> bool:
    allowed = (listener.get("allowedRoutes") or {}).get("namespaces", {}).get("from", "Same")
    if allowed == "Same" and _ns(route) != _ns(gw):
        return False
    for ref in route["spec"].get("parentRefs", []):
        if ref.get("kind", "Gateway") != "Gateway" or ref["name"] != gw["metadata"]["name"]:
            continue
        if ref.get("namespace", _ns(route)) == _ns(gw) and ref.get("sectionName") in (None, listener["name"]):
            return True
    return False


def escapes(objects: list[dict[str, Any]]) -> list[str]:
    """Every way onto an exposed listener that no authentication covers."""
    found = []
    for gw in _exposed_gateways(objects):
        gw_name = f"{_ns(gw)}/{gw['metadata']['name']}"
        for listener in gw["spec"]["listeners"]:
            where = f"{gw_name}/{listener['name']}"
            for route in _of(objects, "HTTPRoute"):
                if not _attaches(route, gw, listener) or _redirect_only(route):
                    continue
                if not _authenticated(objects, gw, listener["name"], route):
                    found.append(f"{where}: HTTPRoute {_ns(route)}/{route['metadata']['name']} is not authenticated")
            ctp = _client_policy(objects, gw, listener["name"])
            early = (ctp or {}).get("spec", {}).get("headers", {}).get("earlyRequestHeaders") or {}
            stripped = set(early.get("remove", []))
            for epp in _of(objects, "EnvoyPatchPolicy"):
                target = epp["spec"].get("targetRef", {})
                if (target.get("kind"), target.get("name"), _ns(epp)) != ("Gateway", gw["metadata"]["name"], _ns(gw)):
                    continue
                for patch in epp["spec"].get("jsonPatches", []):
                    op = patch["operation"]
                    if not patch["type"].endswith("RouteConfiguration") or patch["name"] != where:
                        continue
                    if op["op"] != "add" or not re.fullmatch(r"/virtual_hosts/\d+/routes/\d+", op["path"]):
                        continue
                    # A route of no HTTPRoute: no SecurityPolicy reaches it. Only a header it requires,
                    # removed from every client request before routing, keeps clients off it.
                    needed = {h["name"] for h in op["value"].get("match", {}).get("headers", [])}
                    if not needed & stripped:
                        found.append(f"{where}: EnvoyPatchPolicy {epp['metadata']['name']} route "
                                     f"{op['value'].get('name')} is reachable by any client")  # fmt: skip
    return found


@cache
def _serving_objects() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The serving example's objects and its AIBrix release's, templated once."""
    root = charts.charts_dir()
    assert root is not None, "the tests that read it carry the charts marker"
    rendered = rendered_stack(SERVING)
    manifests = rendered.manifests()
    release = next(r for r in rendered.releases() if r["name"] == "aibrix")
    apis = charts.BASE_API_VERSIONS | {m["apiVersion"] for m in manifests if "/" in m["apiVersion"]}
    # Without the chart's CRDs: the walk reads routes, gateways and policies, and the CRDs are nine
    # tenths of the templating (test_charts.py and `make charts` template them with everything else).
    chart = charts.template({**release, "skipCrds": True}, root, "1.34", apis, charts.helm())
    assert chart.objects and not chart.problems, chart.problems
    return manifests, chart.objects


def everything() -> list[dict[str, Any]]:
    manifests, chart = _serving_objects()
    objects = copy.deepcopy([*manifests, *chart])
    return [*objects, *controller_objects(objects)]


@pytest.mark.charts
def test_no_route_on_an_exposed_listener_of_the_serving_example_escapes_authentication():
    objects = everything()
    gateways = {(_ns(g), g["metadata"]["name"]) for g in _exposed_gateways(objects)}
    assert (AIBRIX_GATEWAY[0], AIBRIX_GATEWAY[1]) in gateways, "AIBrix's Gateway is behind an NLB"
    assert _of(objects, "EnvoyPatchPolicy"), "the chart's patched route is part of the walk"
    assert escapes(objects) == []


@pytest.mark.parametrize("path", [p for p in ALL_STACKS if p != SERVING], ids=lambda p: p.name)
def test_no_route_on_an_exposed_listener_of_any_other_shipped_stack_escapes_authentication(path):
    objects = rendered_stack(path).manifests()
    assert escapes([*objects, *controller_objects(objects)]) == []


@pytest.mark.charts
def test_the_walk_sees_the_routes_aibrix_adds_by_itself():
    objects = everything()
    names = {r["metadata"]["name"] for r in _of(objects, "HTTPRoute") if _ns(r) == AIBRIX_GATEWAY[0]}
    assert {"aibrix-reserved-router", "aibrix-reserved-router-metadata-endpoint"} <= names, "the chart's"
    assert {"support-lora-router", "sql-lora-router"} <= names, "the controller's, from the ModelAdapters' labels"
    grants = [g for g in _of(objects, "ReferenceGrant") if g["metadata"]["name"].startswith("aibrix-system-reserved")]
    assert grants, "the namespace-wide grant the controller issues to those routes"


@pytest.mark.charts
def test_without_the_header_strip_the_patched_route_is_a_way_around_authentication():
    objects = [o for o in everything() if o != aibrix_listener_policy()]
    assert any("original_route is reachable by any client" in e for e in escapes(objects)), (
        "the walk must see the chart's EnvoyPatchPolicy route as a bypass when nothing strips the header"
    )


@pytest.mark.charts
def test_without_the_listener_policy_the_controllers_routes_are_unauthenticated():
    objects = [o for o in everything() if o["metadata"]["name"] != f"{AIBRIX_GATEWAY[1]}-auth"]
    found = escapes(objects)
    assert any("support-lora-router is not authenticated" in e for e in found), found
    assert any("aibrix-reserved-router is not authenticated" in e for e in found), found


@pytest.mark.charts
def test_the_listener_policy_keeps_the_charts_gateway_wide_client_settings():
    _, chart = _serving_objects()
    wide = next(c for c in _of(chart, "ClientTrafficPolicy") if "sectionName" not in c["spec"]["targetRefs"][0])
    ours = aibrix_listener_policy()["spec"]
    for key in ("connection", "http2"):
        assert ours[key] == wide["spec"][key] == AIBRIX_CLIENT_TRAFFIC[key], (
            f"a section-level policy replaces the chart's whole: its {key} settings must be carried over"
        )
    assert ours["headers"]["earlyRequestHeaders"]["remove"] == [ROUTING_STRATEGY_HEADER]


@pytest.mark.charts
def test_the_header_strip_covers_every_listener_of_aibrixs_gateway_and_the_header_the_patch_matches():
    objects = everything()
    gw = next(g for g in _of(objects, "Gateway") if g["metadata"]["name"] == AIBRIX_GATEWAY[1])
    for listener in gw["spec"]["listeners"]:
        assert _client_policy(objects, gw, listener["name"]) == aibrix_listener_policy(), listener["name"]
    epp = next(iter(_of(objects, "EnvoyPatchPolicy")))
    routes = [p["operation"]["value"] for p in epp["spec"]["jsonPatches"] if p["type"].endswith("RouteConfiguration")]
    matched = {h["name"] for route in routes for h in route["match"]["headers"]}
    assert matched == {ROUTING_STRATEGY_HEADER}, "the chart's route is selected by the header we strip"


@pytest.mark.charts
def test_aibrixs_envoy_still_runs_the_image_envoy_gateway_1_9_supports():
    _, chart = _serving_objects()
    proxy = next(iter(_of(chart, "EnvoyProxy")))
    patch = proxy["spec"]["provider"]["kubernetes"]["envoyDeployment"]["patch"]["value"]
    images = {c["name"]: c["image"] for c in patch["spec"]["template"]["spec"]["containers"]}
    assert images == {
        "envoy": "docker.io/envoyproxy/envoy:distroless-v1.39.0",
        "shutdown-manager": "docker.io/envoyproxy/gateway:v1.9.0",
    }
