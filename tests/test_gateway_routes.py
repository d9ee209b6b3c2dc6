"""The front door: an authenticated HTTPS route per exposed model, nothing else routed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.engines import ENGINES
from components.gateway.routing import gateway, gateway_objects, model_routing, routed_paths
from stacks.load import ROOT
from stacks.pipeline import check_file
from stacks.resolved import GATEWAY_NAMESPACE, Endpoint
from stacks.versions import chart
from tests.builders import resolved_stack, sourced
from tests.conftest import ALL_STACKS, DEV, render_sections, rendered_stack, sections_of, stack_manifests

SERVING = ROOT / "stacks" / "examples" / "Pulumi.serving.yaml"


def manifests_of(path: Path) -> list[dict[str, Any]]:
    return stack_manifests(path)


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def targets(policy: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["kind"], t["name"]) for t in policy["spec"]["targetRefs"]}


def model_routes(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in of_kind(objs, "HTTPRoute") if "inference-platform.io/model" in r["metadata"]["labels"]]


def test_the_dev_stack_exposes_its_models_through_an_authenticated_https_route(dev_render, dev):
    objs = dev_render.manifests()
    (gw,) = of_kind(objs, "Gateway")
    https = next(li for li in gw["spec"]["listeners"] if li["name"] == "https")
    assert https["port"] == 443 and https["hostname"] == dev["gateway"]["hostname"], "HTTPS on the stack's hostname"
    annotations = gw["spec"]["infrastructure"]["annotations"]
    assert (
        annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == dev["gateway"]["tls"]["certificateArn"]
    )
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "443", "TLS on 443 only"

    exposed = {m["name"] for m in dev["models"] if m.get("expose", True)}
    routes = {r["metadata"]["name"]: r for r in model_routes(objs)}
    assert set(routes) == exposed, "one route per exposed model"
    policies = of_kind(objs, "SecurityPolicy")
    for name, route in routes.items():
        assert route["metadata"]["namespace"] == "inference", "beside its model"
        assert route["spec"]["parentRefs"] == [
            {"name": "inference", "namespace": GATEWAY_NAMESPACE, "sectionName": "https"}
        ]
        assert route["spec"]["hostnames"] == [dev["gateway"]["hostname"]]
        auth = [p for p in policies if ("HTTPRoute", name) in targets(p) and p["metadata"]["namespace"] == "inference"]
        assert len(auth) == 1, f"{name}: exactly one SecurityPolicy on its route"
        key_auth = auth[0]["spec"]["apiKeyAuth"]
        assert key_auth["credentialRefs"] == [
            {"group": "", "kind": "Secret", "name": dev["gateway"]["apiKeysSecret"], "namespace": GATEWAY_NAMESPACE},
            {"group": "", "kind": "Secret", "name": f"{name}-acceptance-key"},
        ], "the platform's clients' keys, beside the Gateway, and the model's own acceptance key, beside the route"
        assert key_auth["extractFrom"] == [{"headers": ["Authorization"]}], "Authorization: Bearer <key>"
    assert dev_render.outputs["inferenceUrl"] == f"https://{dev['gateway']['hostname']}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_no_exposed_route_lacks_a_security_policy(path):
    objs = manifests_of(path)
    # The gateway the routes are built with: the stack's own, or (a team's stack) its platform's.
    if resolved_stack(sections_of(path)).platform.gateway.auth == "none":
        pytest.skip("this stack accepts an unauthenticated gateway (allowUnauthenticated, not prod)")
    protected = {(p["metadata"]["namespace"], t) for p in of_kind(objs, "SecurityPolicy") for t in targets(p)}
    for route in model_routes(objs):
        ns, name = route["metadata"]["namespace"], route["metadata"]["name"]
        assert (ns, ("HTTPRoute", name)) in protected, f"route {ns}/{name} has no SecurityPolicy"
    for gw in of_kind(objs, "Gateway"):
        ns, name = gw["metadata"]["namespace"], gw["metadata"]["name"]
        assert (ns, ("Gateway", name)) in protected, "a gateway-wide policy backs up routes added later"


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_no_management_path_is_routed(path):
    management = {p for e in ENGINES.values() for p in e.facts.management_paths}
    served = {m.name: m for m in check_file(path).stack.models}
    for route in model_routes(manifests_of(path)):
        name = route["metadata"]["name"]
        prefix = served[name].path_prefix if name in served else "/" + name  # a model's, or LiteLLM's
        for rule in route["spec"]["rules"]:
            for match in rule["matches"]:
                engine_path = match["path"]["value"].removeprefix(prefix)
                if engine_path.startswith("/-/"):  # a canaried model's revision-pinned rule (its benchmark's)
                    _, _, label, engine_path = engine_path.split("/", 3)
                    assert label in ("stable", "canary"), label
                    engine_path = "/" + engine_path
                assert engine_path.startswith("/v1/"), f"only OpenAI paths are routed, not {engine_path}"
                assert not any(engine_path.startswith(m) for m in management), f"{engine_path} is a management path"
            rewrites = [
                f["urlRewrite"]["path"]["replacePrefixMatch"] for f in rule["filters"] if f["type"] == "URLRewrite"
            ]
            assert not any(r.startswith("/api/") for r in rewrites), "nothing reaches Ollama's /api"


def test_ollamas_management_api_is_never_routed_even_if_its_paths_were_offered():
    f = ENGINES["ollama"].facts
    crafted = Endpoint(
        name="m",
        served_model_name="m",
        engine="ollama",
        namespace="inference",
        service="m",
        port=f.port,
        metrics_path=None,
        metrics_port=None,
        route_paths=(*f.route_paths, "/api/pull", "/api/delete/x"),
        management_paths=f.management_paths,
        expose=True,
    )
    assert not {"/api/pull", "/api/delete/x"} & set(routed_paths(crafted)), "management paths are filtered out"


def test_the_http_listener_only_redirects_to_https(dev_render):
    objs = dev_render.manifests()
    listener_policies = [
        t for p in of_kind(objs, "SecurityPolicy") for t in p["spec"]["targetRefs"] if t["kind"] == "Gateway"
    ]
    assert listener_policies and all(t.get("sectionName") == "https" for t in listener_policies), (
        "authentication sits on the HTTPS listener, so plain HTTP still gets its redirect rather than a 401"
    )
    on_http = [
        r for r in of_kind(objs, "HTTPRoute") if any(p.get("sectionName") == "http" for p in r["spec"]["parentRefs"])
    ]
    assert [r["metadata"]["name"] for r in on_http] == ["https-redirect"]
    (rule,) = on_http[0]["spec"]["rules"]
    assert rule["filters"] == [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]
    assert "backendRefs" not in rule, "the redirect reaches no backend"


def test_a_certificate_secret_terminates_tls_at_envoy(dev):
    dev["gateway"]["tls"] = {"secretName": "inference-dev-tls"}
    gw = gateway(resolved_stack(sourced(dev)).platform.gateway)
    https = next(li for li in gw["spec"]["listeners"] if li["name"] == "https")
    assert https["protocol"] == "HTTPS"
    assert https["tls"] == {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "inference-dev-tls"}]}
    assert "service.beta.kubernetes.io/aws-load-balancer-ssl-cert" not in gw["spec"]["infrastructure"]["annotations"]


def test_api_keys_are_stripped_and_the_client_named_before_the_model_sees_the_request(dev):
    stack = resolved_stack(dev)
    routing = model_routing(stack.platform.gateway, stack.models[0], stack.route_parent)
    policy = next(o for o in routing if o["kind"] == "SecurityPolicy")
    assert policy["spec"]["apiKeyAuth"]["sanitize"] is True, "the key never reaches the engine"
    assert policy["spec"]["apiKeyAuth"]["forwardClientIDHeader"] == "x-client-id"


def test_jwt_authentication_checks_issuer_and_jwks(dev):
    dev["gateway"] |= {
        "auth": "jwt",
        "jwt": {"issuer": "https://login.example.com/", "jwksUri": "https://login.example.com/jwks.json"},
    }
    stack = resolved_stack(dev)
    policy = next(
        o
        for o in gateway_objects(stack.platform.gateway, stack.route_parent, stack.access.platform_keys)
        if o["kind"] == "SecurityPolicy"
    )
    (provider,) = policy["spec"]["jwt"]["providers"]
    assert provider["issuer"] == "https://login.example.com/"
    assert provider["remoteJWKS"] == {"uri": "https://login.example.com/jwks.json"}
    assert "apiKeyAuth" not in policy["spec"]


def test_rate_limits_are_per_authenticated_client(dev):
    stack = resolved_stack(dev)
    routing = model_routing(stack.platform.gateway, stack.models[0], stack.route_parent)
    (btp,) = [o for o in routing if o["kind"] == "BackendTrafficPolicy"]
    (rule,) = btp["spec"]["rateLimit"]["local"]["rules"]
    assert rule["clientSelectors"] == [{"headers": [{"name": "x-client-id", "type": "Distinct"}]}], (
        "one bucket per client"
    )
    assert rule["limit"] == {"requests": dev["gateway"]["rateLimit"]["requestsPerMinute"], "unit": "Minute"}


def test_no_rate_limit_policy_unless_asked(dev):
    del dev["gateway"]["rateLimit"]
    stack = resolved_stack(dev)
    for served in stack.models:
        objs = model_routing(stack.platform.gateway, served, stack.route_parent)
        assert all("rateLimit" not in p["spec"] for p in of_kind(objs, "BackendTrafficPolicy")), served.name
        if served.routing is None:
            assert not of_kind(objs, "BackendTrafficPolicy"), f"{served.name}: nothing to set, no policy"


def test_a_route_reaches_another_namespace_only_through_a_grant_for_that_one_service(dev_render):
    objs = dev_render.manifests()
    grants = {(g["metadata"]["namespace"], t["name"]) for g in of_kind(objs, "ReferenceGrant") for t in g["spec"]["to"]}
    for route in model_routes(objs):
        for rule in route["spec"]["rules"]:
            for ref in rule["backendRefs"]:
                if ref["namespace"] != route["metadata"]["namespace"]:
                    assert (ref["namespace"], ref["name"]) in grants, f"no ReferenceGrant for {ref}"


def aibrix_without_own_gateway() -> dict[str, Any]:
    sections = copy.deepcopy(sections_of(DEV))
    sections["addons"]["aibrix"] = {"enabled": True}
    sections["gateway"]["enabled"] = False
    return sections


def test_with_aibrix_the_routes_attach_to_its_gateway_and_no_second_gateway_is_built():
    stack = resolved_stack(aibrix_without_own_gateway())
    gw, parent = stack.platform.gateway, stack.route_parent
    assert (parent.namespace, parent.name, parent.listener, parent.own) == ("aibrix-system", "aibrix-eg", "http", False)
    objs = gateway_objects(gw, parent, stack.access.platform_keys)
    assert not of_kind(objs, "Gateway") and not of_kind(objs, "GatewayClass"), "AIBrix's gateway is the only one"
    routes = [o for m in stack.models if m.expose for o in model_routing(gw, m, parent) if o["kind"] == "HTTPRoute"]
    assert routes, "the exposed models are still routed, through AIBrix's gateway"
    for route in routes:
        assert route["metadata"]["namespace"] == "aibrix-system"
        assert route["spec"]["parentRefs"] == [
            {"name": "aibrix-eg", "namespace": "aibrix-system", "sectionName": "http"}
        ]
    gateway_policy = [p for p in of_kind(objs, "SecurityPolicy") if ("Gateway", "aibrix-eg") in targets(p)]
    assert gateway_policy, "AIBrix's own routes are authenticated too"


def test_the_aibrix_stack_renders_its_routes_on_aibrixs_gateway_and_no_gateway_of_its_own():
    """Wiring: the serving example enables both the front door's gateway and AIBrix; AIBrix's wins."""
    rendered = rendered_stack(SERVING)
    objs = rendered.manifests()
    assert not of_kind(objs, "Gateway") and not of_kind(objs, "GatewayClass"), "AIBrix's gateway is the only one"
    routes = model_routes(objs)
    assert routes, "the serving example exposes models"
    for route in routes:
        assert route["metadata"]["namespace"] == "aibrix-system"
        assert route["spec"]["parentRefs"] == [
            {"name": "aibrix-eg", "namespace": "aibrix-system", "sectionName": "http"}
        ]
    gateway_policy = [p for p in of_kind(objs, "SecurityPolicy") if ("Gateway", "aibrix-eg") in targets(p)]
    assert gateway_policy, "AIBrix's own routes are authenticated too"


def test_aibrix_alone_still_installs_envoy_gateway_and_no_gateway_of_the_front_doors():
    """Wiring no shipped stack covers (AIBrix on, the front door's gateway off): a fresh render."""
    rendered = render_sections(aibrix_without_own_gateway())
    objs = rendered.manifests()
    assert not of_kind(objs, "Gateway") and not of_kind(objs, "GatewayClass"), "AIBrix's gateway is the only one"
    assert {r["metadata"]["namespace"] for r in model_routes(objs)} == {"aibrix-system"}, "routed through AIBrix's"
    releases = {r["name"] for r in rendered.releases()}
    assert "envoy-gateway" in releases, "AIBrix's gateway runs on Envoy Gateway"


def test_envoy_gateway_is_pinned_and_every_gateway_object_waits_for_its_crds(dev_render):
    (release,) = [
        r for r in dev_render.mocks.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("name") == "envoy-gateway"
    ]
    pinned = chart("envoy-gateway")
    assert release.inputs["chart"] == f"{pinned.repo}/{pinned.chart}" == "oci://docker.io/envoyproxy/gateway-helm"
    assert release.inputs["version"] == pinned.version == "v1.9.0"
    assert release.inputs["namespace"] == "envoy-gateway-system"
    crs = [
        r
        for r in dev_render.resources
        if r.type.startswith(("kubernetes:gateway.networking.k8s.io/", "kubernetes:gateway.envoyproxy.io/"))
    ]
    assert crs, "the front door's custom resources are registered"
    for r in crs:
        assert release.urn in r.depends_on, f"{r.type} {r.name} must wait for the chart that installs its CRD"


def test_the_litellm_proxy_route_is_one_of_the_routes_that_must_carry_a_security_policy():
    """The auth rule above covers the LiteLLM proxy's route: it carries the same label as a model's."""
    from components.serving import litellm

    names = {r["metadata"]["name"] for r in model_routes(manifests_of(SERVING))}
    assert litellm.NAME in names, "with addons.litellm the proxy is routed, and so checked for a SecurityPolicy"


def test_with_jwt_a_route_admits_only_tokens_whose_team_claim_names_a_caller(dev):
    dev["gateway"] |= {
        "auth": "jwt",
        "jwt": {
            "issuer": "https://login.example.com/",
            "jwksUri": "https://login.example.com/jwks.json",
            "teamClaim": "org.team",
        },
    }
    dev["teams"] = [
        {
            "name": "search",
            "deployers": ["arn:aws:iam::111122223333:role/s"],
            "quota": {"gpus": 1, "cpu": "16", "memory": "64Gi"},
        }
    ]
    dev["models"][0]["consumers"] = ["search"]
    stack = resolved_stack(dev)
    (policy,) = [
        o
        for o in model_routing(stack.platform.gateway, stack.models[0], stack.route_parent)
        if o["kind"] == "SecurityPolicy"
    ]
    authz = policy["spec"]["authorization"]
    assert authz["defaultAction"] == "Deny", "a token of any other team is refused"
    (rule,) = authz["rules"]
    assert rule["action"] == "Allow"
    assert rule["principal"] == {
        "jwt": {"provider": "stack", "claims": [{"name": "org.team", "values": ["platform", "search"]}]}
    }, "the owner (the platform's clients) and the consumer, by the configured claim"
    assert policy["spec"]["jwt"]["providers"][0]["name"] == "stack", "the provider the rule names is the policy's own"
    (listener,) = [
        o
        for o in gateway_objects(stack.platform.gateway, stack.route_parent, stack.access.platform_keys)
        if o["kind"] == "SecurityPolicy"
    ]
    assert listener["spec"]["authorization"]["rules"][0]["principal"]["jwt"]["claims"] == [
        {"name": "org.team", "values": ["platform"]}
    ], "the listener's backstop admits the platform's own clients only"


@pytest.mark.schemas
def test_the_jwt_authorization_is_valid_against_envoy_gateways_crd(dev):
    from stacks import conformance

    dev["gateway"] |= {
        "auth": "jwt",
        "jwt": {"issuer": "https://login.example.com/", "jwksUri": "https://login.example.com/k"},
    }
    stack = resolved_stack(dev)
    schemas = conformance.schema_dir()
    assert schemas is not None
    for obj in model_routing(stack.platform.gateway, stack.models[0], stack.route_parent):
        assert conformance.validate_custom(obj, schemas) == [], obj["kind"]


def _jwt(dev: dict[str, Any]) -> dict[str, Any]:
    dev["gateway"] |= {
        "auth": "jwt",
        "jwt": {"issuer": "https://login.example.com/", "jwksUri": "https://login.example.com/k"},
        "rateLimit": {"requestsPerMinute": 60, "clientHeader": "x-team-client"},
    }
    return dev


def test_with_jwt_a_client_sent_client_id_header_is_removed_before_any_filter_runs(dev):
    """Envoy's jwt_authn appends the `sub` claim to the client-id header (authenticator.cc
    addJWTClaimToHeader: addCopy) and writes nothing without one, so the client's own value must go
    before it runs: the HCM's early header mutation, which a ClientTrafficPolicy sets."""
    stack = resolved_stack(_jwt(dev))
    objs = gateway_objects(stack.platform.gateway, stack.route_parent, stack.access.platform_keys)
    (ctp,) = [o for o in objs if o["kind"] == "ClientTrafficPolicy"]
    assert ctp["spec"]["headers"] == {"earlyRequestHeaders": {"remove": ["x-team-client"]}}, (
        "the rate limit and the picker's fairness id read only what the token says"
    )
    assert ctp["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": stack.route_parent.name}
    ]
    assert ctp["metadata"]["namespace"] == GATEWAY_NAMESPACE


def test_with_api_keys_no_client_traffic_policy_is_needed(dev):
    stack = resolved_stack(dev)
    objs = gateway_objects(stack.platform.gateway, stack.route_parent, stack.access.platform_keys)
    assert not [o for o in objs if o["kind"] == "ClientTrafficPolicy"], "apiKeyAuth writes the client id itself"


def test_with_jwt_and_aibrix_its_listener_policy_removes_the_client_id_header_too():
    from components.serving.values import ROUTING_STRATEGY_HEADER, aibrix_listener_policy

    removed = aibrix_listener_policy("x-team-client")["spec"]["headers"]["earlyRequestHeaders"]["remove"]
    assert removed == [ROUTING_STRATEGY_HEADER, "x-team-client"]
    assert aibrix_listener_policy()["spec"]["headers"]["earlyRequestHeaders"]["remove"] == [ROUTING_STRATEGY_HEADER]


@pytest.mark.schemas
def test_the_client_id_policy_is_valid_against_envoy_gateways_crd(dev):
    from stacks import conformance

    stack = resolved_stack(_jwt(dev))
    schemas = conformance.schema_dir()
    assert schemas is not None
    objs = gateway_objects(stack.platform.gateway, stack.route_parent, stack.access.platform_keys)
    (ctp,) = [o for o in objs if o["kind"] == "ClientTrafficPolicy"]
    assert conformance.validate_custom(ctp, schemas) == []
