"""Pure builders for the front door: the Gateway, one HTTPRoute per exposed model, the
SecurityPolicy that authenticates and authorizes every route, per-client rate limits and
ReferenceGrants. Dict in, dict out; no Pulumi.

Routing: every model shares the gateway's hostname, and a Gateway API route cannot match on the JSON
body's `model` field, so each model gets its own path prefix: a client's OpenAI base URL is
`https://<hostname>/<model>/v1` (`/<namespace>/<model>/v1` for a team's). Only the engine's
OpenAI-style paths are routed (each rewritten to the path the engine serves); management paths
(Ollama's /api/pull, /api/delete, ...) never are, and anything else gets Envoy's 404.

Where: on the front door's own Gateway a route, its SecurityPolicy and BackendTrafficPolicy live in the
model's namespace, beside its Service; the HTTPS listener admits routes from every namespace labelled
`TEAM_LABEL` (stacks/resolved.py), which only the platform sets. On AIBrix's Gateway (routes from its
own namespace only) they live there and reach the Service through a ReferenceGrant.

Who: with `auth: apiKey` a route's SecurityPolicy lists exactly its model's key Secrets (the owner's,
its consumers', its benchmark's: `Endpoint.key_secrets`), naming a Secret in another namespace where
the platform's ReferenceGrant lets it (`key_grant`; Envoy Gateway v1.9.0 refuses such a reference
without one, internal/gatewayapi/validate.go validateSecretObjectRef). With `auth: jwt` the provider
is the same everywhere and an authorization block admits only tokens whose team claim is one of the
model's callers. A route's policy replaces the listener's (a SecurityPolicy without `mergeType` is not
merged: the most specific one applies), which admits only the platform's own clients, for routes
attached some other way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stacks.config.gateway import GatewaySection
from stacks.config.teams import PLATFORM_CLIENTS
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL
from stacks.resolved import (
    BENCHMARK_PATH,
    COLLECTOR_NAME,
    DEFAULT_TLS_SECRET,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HTTPS_LISTENER,
    KEDA_NAMESPACE,
    MODEL_LABEL,
    OTLP_GRPC_PORT,
    PICKER_HEADER,
    TEAM_LABEL,
    TRACING_NAMESPACE,
    WAKE_HEADER,
    Endpoint,
    GatewayParent,
    KeyGrant,
    KeySecret,
    TraceExport,
)

from ..autoscaling import wake

GATEWAY_API = "gateway.networking.k8s.io/v1"
EG_API = "gateway.envoyproxy.io/v1alpha1"
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
PROXY_POD_LABELS = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
HTTP_LISTENER = "http"
# A model route's request timeout: generation can stream for minutes.
REQUEST_TIMEOUT = f"{wake.REQUEST_SECONDS // 60}m"
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
# The JWT provider's name in every SecurityPolicy (authorization rules name it).
JWT_PROVIDER = "stack"
# A ReferenceGrant lists at most 16 sources (the Gateway API CRD's spec.from maxItems).
GRANT_SOURCES = 16
# Routes of the HTTPS listener: from every namespace the platform labelled with its owner.
LABELLED = {
    "namespaces": {"from": "Selector", "selector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}}
}


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "gateway", **labels}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def tls_secret_name(gateway: GatewaySection) -> str:
    """The certificate Secret the HTTPS listener terminates with (when TLS is not on the NLB)."""
    if gateway.tls and gateway.tls.secret_name:
        return gateway.tls.secret_name
    return DEFAULT_TLS_SECRET


def terminates_on_load_balancer(gateway: GatewaySection) -> bool:
    return bool(gateway.tls and gateway.tls.certificate_arn)


def load_balancer_annotations(gateway: GatewaySection) -> dict[str, str]:
    """AWS Load Balancer Controller annotations for the Envoy Service: an NLB sending traffic straight
    to the proxy pods; with an ACM certificate, the NLB terminates TLS on 443 and port 80 stays plain
    TCP so Envoy can answer it with a redirect."""
    annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
        "service.beta.kubernetes.io/aws-load-balancer-scheme": gateway.scheme,
    }
    if gateway.tls and gateway.tls.certificate_arn:
        annotations |= {
            "service.beta.kubernetes.io/aws-load-balancer-ssl-cert": gateway.tls.certificate_arn,
            "service.beta.kubernetes.io/aws-load-balancer-ssl-ports": "443",
            "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy": TLS_POLICY,
            "service.beta.kubernetes.io/aws-load-balancer-backend-protocol": "tcp",
        }
    return annotations


def gateway_class() -> dict[str, Any]:
    return {
        "apiVersion": GATEWAY_API,
        "kind": "GatewayClass",
        "metadata": _meta(GATEWAY_NAME),
        "spec": {"controllerName": CONTROLLER_NAME},
    }


# The EnvoyProxy the Gateway names in `spec.infrastructure.parametersRef` (same namespace: Gateway API's
# LocalParametersReference); Envoy Gateway applies it to that Gateway's proxies only.
PROXY_CONFIG = "inference-gateway-proxy"


def sampling_fraction(ratio: float) -> dict[str, int]:
    """A ratio as the EnvoyProxy's `samplingFraction` (numerator over 10000: 0.05 -> 500/10000)."""
    return {"numerator": round(ratio * 10000), "denominator": 10000}


def envoy_proxy(tracing: TraceExport) -> dict[str, Any]:
    """EnvoyProxy (gateway.envoyproxy.io/v1alpha1, Envoy Gateway v1.9.0 CRD) whose proxies trace with the
    OpenTelemetry provider to the platform's collector (`backendRefs` to its Service, OTLP/gRPC): a
    request without a `traceparent` is sampled at `samplingFraction`, and Envoy propagates W3C trace
    context to the picker and the model."""
    return {
        "apiVersion": EG_API,
        "kind": "EnvoyProxy",
        "metadata": _meta(PROXY_CONFIG, GATEWAY_NAMESPACE),
        "spec": {
            "telemetry": {
                "tracing": {
                    "samplingFraction": sampling_fraction(tracing.sampling_ratio),
                    "provider": {
                        "type": "OpenTelemetry",
                        "serviceName": GATEWAY_NAME,
                        # Into `tracing` without a ReferenceGrant: Envoy Gateway v1.9.0 resolves an
                        # EnvoyProxy's telemetry backendRefs in processBackendRefsForTelemetry
                        # (internal/gatewayapi/listener.go), which checks only that the Service and port
                        # exist (validateBackendRefService, validate.go); it never calls
                        # isCrossNamespaceReferencePermitted as it does for a Gateway's or a route's refs.
                        # The CRD's field text repeats Gateway API's generic ReferenceGrant note.
                        "backendRefs": [
                            {"name": COLLECTOR_NAME, "namespace": TRACING_NAMESPACE, "port": OTLP_GRPC_PORT}
                        ],
                    },
                }
            }
        },
    }


def gateway(gw: GatewaySection, *, traced: bool = False) -> dict[str, Any]:
    """HTTPS on `hostname` (443), admitting routes from the namespaces the platform labels, and HTTP (80)
    that only redirects (its one route, in the Gateway's namespace). With an ACM certificate the NLB
    terminates TLS and forwards plaintext to the 443 listener; otherwise Envoy terminates with the
    referenced kubernetes.io/tls Secret."""
    same = {"namespaces": {"from": "Same"}}
    if terminates_on_load_balancer(gw):
        https: dict[str, Any] = {"name": HTTPS_LISTENER, "protocol": "HTTP", "port": 443}
    else:
        https = {
            "name": HTTPS_LISTENER,
            "protocol": "HTTPS",
            "port": 443,
            "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": tls_secret_name(gw)}]},
        }
    https |= {"hostname": gw.hostname, "allowedRoutes": LABELLED}
    http = {"name": HTTP_LISTENER, "protocol": "HTTP", "port": 80, "hostname": gw.hostname, "allowedRoutes": same}
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": _meta(GATEWAY_NAME, GATEWAY_NAMESPACE),
        "spec": {
            "gatewayClassName": GATEWAY_NAME,
            "infrastructure": {
                "annotations": load_balancer_annotations(gw),
                **(
                    {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": PROXY_CONFIG}}
                    if traced
                    else {}
                ),
            },
            "listeners": [https, http],
        },
    }


def redirect_route(gw: GatewaySection) -> dict[str, Any]:
    """The only route on the HTTP listener: a 301 to the same URL over https."""
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _meta("https-redirect", GATEWAY_NAMESPACE),
        "spec": {
            "parentRefs": [{"name": GATEWAY_NAME, "sectionName": HTTP_LISTENER}],
            "hostnames": [gw.hostname],
            "rules": [
                {"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}
            ],
        },
    }


def route_duration(seconds: int) -> str:
    """A Gateway API Duration covering `seconds`: at most five digits per unit (the CRD's pattern), so
    whole seconds up to 99999, whole minutes (rounded up) beyond."""
    return f"{seconds}s" if seconds <= 99999 else f"{-(-seconds // 60)}m"


def route_prefix(served: Endpoint) -> str:
    """The resolved path prefix: `/<name>`, or `/<namespace>/<name>` for a team's model."""
    return served.path_prefix


def routed_paths(served: Endpoint) -> list[str]:
    """The engine paths this model's route forwards: its OpenAI paths minus any management path."""
    blocked = served.management_paths
    return [p for p in served.route_paths if not any(p == b or p.startswith(b.rstrip("/") + "/") for b in blocked)]


def http_route(gw: GatewaySection, served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """`/<model>/v1/...` -> the model's Service at `/v1/...`, one rule per allowed path. A model that
    scales to zero goes to the KEDA HTTP add-on's interceptor instead, with the platform header naming
    it cluster-wide (`<namespace>/<name>`; `set` overwrites whatever a client sent) and a timeout that
    covers its cold start too."""
    rules = []
    for path in routed_paths(served):
        filters: list[dict[str, Any]] = [
            {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": path}}}
        ]
        if served.wake is not None:
            filters.append(
                {
                    "type": "RequestHeaderModifier",
                    "requestHeaderModifier": {"set": [{"name": WAKE_HEADER, "value": served.wake.header}]},
                }
            )
            backends = [
                {"kind": "Service", "name": wake.PROXY_SERVICE, "namespace": KEDA_NAMESPACE, "port": wake.PROXY_PORT}
            ]
            timeout = route_duration(wake.request_seconds(served))
        else:
            # With a canary, the stable and canary Services weighted (Endpoint.backends).
            backends = [
                {"kind": "Service", "name": service, "namespace": served.namespace, "port": served.port}
                | ({"weight": weight} if len(served.backends) > 1 else {})
                for service, weight in served.backends
            ]
            timeout = REQUEST_TIMEOUT
        rules.append(
            {
                "matches": [{"path": {"type": "PathPrefix", "value": route_prefix(served) + path}}],
                "filters": filters,
                "backendRefs": backends,
                # Generation can stream for minutes; Envoy Gateway's 15s default would cut it off.
                "timeouts": {"request": timeout},
            }
        )
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _meta(served.name, parent.route_namespace(served.namespace), **{MODEL_LABEL: served.name}),
        "spec": {
            "parentRefs": [{"name": parent.name, "namespace": parent.namespace, "sectionName": parent.listener}],
            "hostnames": [gw.hostname],
            "rules": rules + revision_rules(served),
        },
    }


def revision_rules(served: Endpoint) -> list[dict[str, Any]]:
    """A canaried model's benchmark measures each revision it names through a rule of its own:
    `<prefix>/-/<stable|canary>/v1/chat/completions` to that revision's Service alone, unweighted. The
    rules hang on the model's route, so its SecurityPolicy (the same callers and benchmark key), its
    picker and its traffic policy apply to them as to the weighted rules; a picker's pick of the other
    revision's pod is outside the rule's Service and falls back to its balancing."""
    return [
        {
            "matches": [{"path": {"type": "PathPrefix", "value": measured.path_prefix + BENCHMARK_PATH}}],
            "filters": [
                {
                    "type": "URLRewrite",
                    "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": BENCHMARK_PATH}},
                }
            ],
            "backendRefs": [
                {"kind": "Service", "name": measured.service, "namespace": served.namespace, "port": served.port}
            ],
            "timeouts": {"request": REQUEST_TIMEOUT},
        }
        for measured in served.measured_revisions
        if measured.label is not None
    ]


def credential_ref(keys: KeySecret, namespace: str) -> dict[str, str]:
    """A SecurityPolicy's reference to a Secret of keys, by namespace when it is another than the policy's."""
    ref = {"group": "", "kind": "Secret", "name": keys.name}
    return ref if keys.namespace == namespace else {**ref, "namespace": keys.namespace}


def _jwt(gw: GatewaySection, callers: tuple[str, ...]) -> dict[str, Any]:
    """The one JWT provider, and authorization that admits only tokens whose team claim names a caller."""
    assert gw.jwt is not None
    client = gw.rate_limit.client_header if gw.rate_limit else "x-client-id"
    provider: dict[str, Any] = {
        "name": JWT_PROVIDER,
        "issuer": str(gw.jwt.issuer),
        "remoteJWKS": {"uri": str(gw.jwt.jwks_uri)},
        "claimToHeaders": [{"claim": "sub", "header": client}],
    }
    if gw.jwt.audiences:
        provider["audiences"] = list(gw.jwt.audiences)
    claim = {"name": gw.jwt.team_claim, "values": list(callers)}
    allow = {"name": "callers", "action": "Allow", "principal": {"jwt": {"provider": JWT_PROVIDER, "claims": [claim]}}}
    return {"jwt": {"providers": [provider]}, "authorization": {"defaultAction": "Deny", "rules": [allow]}}


def _auth(gw: GatewaySection, callers: tuple[str, ...], keys: tuple[KeySecret, ...], namespace: str) -> dict[str, Any]:
    if gw.auth == "jwt":
        return _jwt(gw, callers)
    client = gw.rate_limit.client_header if gw.rate_limit else "x-client-id"
    return {
        "apiKeyAuth": {
            "credentialRefs": [credential_ref(k, namespace) for k in keys],
            "extractFrom": [{"headers": [gw.api_key_header]}],
            # The authenticated client's name (its key in the Secret), overwriting anything the
            # client sent: rate limits and access logs key on it.
            "forwardClientIDHeader": client,
            "sanitize": True,
        }
    }


@dataclass(frozen=True)
class Admits:
    """Who a SecurityPolicy lets in: callers by name (the JWT team claim's values) and, with API keys,
    the Secrets of their keys."""

    callers: tuple[str, ...]
    keys: tuple[KeySecret, ...]


def security_policy(
    gw: GatewaySection,
    name: str,
    namespace: str,
    target: tuple[str, str, str | None],
    admits: Admits,
) -> dict[str, Any]:
    """Authentication and authorization in front of a route or a Gateway listener: `target` is
    (kind, name, listener or None)."""
    kind, target_name, section = target
    ref = {"group": "gateway.networking.k8s.io", "kind": kind, "name": target_name}
    if section:
        ref["sectionName"] = section
    return {
        "apiVersion": EG_API,
        "kind": "SecurityPolicy",
        "metadata": _meta(name, namespace),
        "spec": {"targetRefs": [ref], **_auth(gw, admits.callers, admits.keys, namespace)},
    }


def route_policy(gw: GatewaySection, served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """The SecurityPolicy of one model's route: exactly its callers, with exactly their keys."""
    namespace = parent.route_namespace(served.namespace)
    admits = Admits(served.callers, served.key_secrets)
    return security_policy(gw, f"{served.name}-auth", namespace, ("HTTPRoute", served.name, None), admits)


def traffic_policy_name(served: Endpoint, gw: GatewaySection) -> str:
    """One BackendTrafficPolicy per route (a second on the same route loses to the oldest, Envoy
    Gateway's "Multiple Policies at the Same Level"): `-ratelimit`, its name since before routing,
    whenever rate limits exist, so adding routing never replaces the live policy."""
    return f"{served.name}-ratelimit" if gw.rate_limit else f"{served.name}-traffic"


def backend_traffic_policy(gw: GatewaySection, served: Endpoint, parent: GatewayParent) -> dict[str, Any] | None:
    """The route's one BackendTrafficPolicy: the per-client local rate limit (each distinct
    authenticated client id gets its own bucket, per Envoy replica) and, with `routing`, how Envoy
    picks the pod. With a picker, `endpointOverride` takes the pod from the picker's header; its
    fallback, when that pod is gone from the cluster, is the round robin beside it. None: nothing to set."""
    spec: dict[str, Any] = {}
    if gw.rate_limit:
        rl = gw.rate_limit
        spec["rateLimit"] = {
            "local": {
                "rules": [
                    {
                        "clientSelectors": [{"headers": [{"name": rl.client_header, "type": "Distinct"}]}],
                        "limit": {"requests": rl.requests_per_minute, "unit": "Minute"},
                    }
                ]
            }
        }
    routing = served.routing
    if routing is not None:
        balancer: dict[str, Any] = {"type": "RoundRobin"}
        if routing.picker:
            balancer["endpointOverride"] = {"extractFrom": [{"header": PICKER_HEADER}]}
        spec["loadBalancer"] = balancer
    if not spec:
        return None
    return {
        "apiVersion": EG_API,
        "kind": "BackendTrafficPolicy",
        "metadata": _meta(traffic_policy_name(served, gw), parent.route_namespace(served.namespace)),
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": served.name}],
            **spec,
        },
    }


def reference_grant(
    name: str, namespace: str, sources: list[tuple[str, str, str]], targets: list[tuple[str, str, str]]
) -> dict[str, Any]:
    """A ReferenceGrant in `namespace` letting objects of `sources` (group, kind, namespace) reference the
    `targets` (group, kind, name) there."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": _meta(name, namespace),
        "spec": {
            "from": [{"group": g, "kind": k, "namespace": ns} for g, k, ns in sources],
            "to": [{"group": g, "kind": k, "name": n} for g, k, n in targets],
        },
    }


def service_grant(name: str, namespace: str, source: tuple[str, str, str], services: Iterable[str]) -> dict[str, Any]:
    """A ReferenceGrant in `namespace` letting objects of `source` (group, kind, namespace) reference these
    Services there (Envoy Gateway checks a cross-namespace backendRef, a route's or an ext_proc's)."""
    return reference_grant(name, namespace, [source], [("", "Service", s) for s in services])


def chunked_grants(
    name: str,
    namespace: str,
    group_kind: tuple[str, str],
    namespaces: Iterable[str],
    targets: list[tuple[str, str, str]],
) -> list[dict[str, Any]]:
    """Grants for objects of `group_kind` in each of `namespaces`, 16 sources to a grant: `<name>`,
    `<name>-2`, ..."""
    group, kind = group_kind
    sources = [(group, kind, ns) for ns in namespaces]
    chunks = [sources[i : i + GRANT_SOURCES] for i in range(0, len(sources), GRANT_SOURCES)]
    return [
        reference_grant(name if i == 0 else f"{name}-{i + 1}", namespace, chunk, targets)
        for i, chunk in enumerate(chunks)
    ]


def backend_grant(served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """Lets the route in the Gateway's namespace (AIBrix's Gateway admits no other) send traffic to this
    model's Services (a canary's too)."""
    return service_grant(
        f"{served.name}-from-gateway",
        served.namespace,
        ("gateway.networking.k8s.io", "HTTPRoute", parent.namespace),
        [service for service, _ in served.backends],
    )


def interceptor_grants(namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """Let the routes in these namespaces send traffic to the KEDA HTTP add-on's interceptor, the one
    Service every scale-to-zero model's route points at (issued by the stack that installs the add-on,
    for every namespace a route to a model that scales to zero may live in: each team's, and the
    platform's own such models')."""
    return chunked_grants(
        "interceptor-for-routes",
        KEDA_NAMESPACE,
        ("gateway.networking.k8s.io", "HTTPRoute"),
        namespaces,
        [("", "Service", wake.PROXY_SERVICE)],
    )


def key_grant(grant: KeyGrant) -> list[dict[str, Any]]:
    """Let the SecurityPolicies of `grant.from_namespaces` name this one Secret of keys (in its namespace)."""
    return chunked_grants(
        "api-keys-for-routes",
        grant.keys.namespace,
        ("gateway.envoyproxy.io", "SecurityPolicy"),
        grant.from_namespaces,
        [("", "Secret", grant.keys.name)],
    )


def model_routing(gw: GatewaySection, served: Endpoint, parent: GatewayParent) -> list[dict[str, Any]]:
    """Everything one exposed model needs at the front door."""
    objs = [http_route(gw, served, parent)]
    if gw.auth != "none":
        objs.append(route_policy(gw, served, parent))
    traffic = backend_traffic_policy(gw, served, parent)
    if traffic is not None:
        objs.append(traffic)
    if parent.route_namespace(served.namespace) != served.namespace and served.wake is None:
        objs.append(backend_grant(served, parent))
    return objs


def client_header_policy(gw: GatewaySection, parent: GatewayParent) -> dict[str, Any]:
    """A ClientTrafficPolicy on our Gateway that removes a client-sent client-id header before any
    filter runs (`headers.earlyRequestHeaders`: the HCM's early header mutation, "before envoy performs
    routing"). With JWT auth the gateway writes the token's `sub` there (claimToHeaders), but Envoy's
    jwt_authn appends it (source/extensions/filters/http/jwt_authn/authenticator.cc addJWTClaimToHeader:
    `headers_->addCopy`) and writes nothing for a token without a string `sub`, so a client's own value
    would otherwise reach the rate limit and the picker's fairness id beside, or instead of, the token's.
    An HTTPRoute header modifier runs after the filters and would remove the token's value too. API-key
    mode is unchanged: its apiKeyAuth writes the client id itself (`_auth`, forwardClientIDHeader)."""
    return {
        "apiVersion": EG_API,
        "kind": "ClientTrafficPolicy",
        "metadata": _meta(f"{parent.name}-client-id", parent.namespace),
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": parent.name}],
            "headers": {"earlyRequestHeaders": {"remove": [gw.client_header]}},
        },
    }


def gateway_objects(
    gw: GatewaySection, parent: GatewayParent, platform_keys: KeySecret | None, tracing: TraceExport | None = None
) -> list[dict[str, Any]]:
    """The Gateway itself (own gateway only) and a SecurityPolicy on the models' listener: a backstop
    for any route attached later, by hand or by AIBrix's controller, without its own policy. It admits
    the platform's own clients only: a team's keys reach its models through their routes' policies.
    With tracing, the Gateway's EnvoyProxy (its proxies' OpenTelemetry tracer) goes first."""
    objs: list[dict[str, Any]] = []
    if parent.own:
        traced = [envoy_proxy(tracing)] if tracing else []
        objs += [gateway_class(), *traced, gateway(gw, traced=tracing is not None), redirect_route(gw)]
        if gw.auth == "jwt":
            objs.append(client_header_policy(gw, parent))
    if gw.auth != "none":
        assert platform_keys is not None, "a stack that owns the listener resolves the platform's keys"
        admits = Admits((PLATFORM_CLIENTS,), (platform_keys,))
        # On the listener models use: the HTTP listener of our own Gateway must still answer with its
        # redirect, not a 401.
        target = ("Gateway", parent.name, parent.listener)
        objs.append(security_policy(gw, f"{parent.name}-auth", parent.namespace, target, admits))
    return objs


# Where Envoy Gateway puts each Gateway's data plane (api/v1alpha1/envoygateway_types.go
# KubernetesDeployModeType): in `GatewayNamespace` mode the proxy Deployment, its LoadBalancer Service and
# ServiceAccount live in the Gateway's own namespace, owned by the Gateway (proxy/resource_provider.go
# ownerReferences), instead of in the controller's namespace.
DEPLOY_MODE = "GatewayNamespace"


def envoy_gateway_values(*, prod: bool, aibrix: bool) -> dict[str, Any]:
    """gateway-helm values (keys from the v1.9.0 chart's values.tmpl.yaml). Every Gateway's proxies
    and LoadBalancer Service run in the Gateway's namespace (DEPLOY_MODE): a namespace the program
    owns and deletes, awaited, while the AWS Load Balancer Controller still runs, so on destroy the
    controller removes the Service's NLB (and its finalizer) before it is uninstalled itself. In the
    default ControllerNamespace mode they would sit in `envoy-gateway-system`, which the Helm release
    creates and never deletes, and nothing would wait for the NLB. With AIBrix, the controller must
    accept EnvoyPatchPolicy (`config.envoyGateway.extensionApis`; off by default): AIBrix's chart
    patches its Gateway's route and cluster config with one, and without it the gateway plugin's
    routing never reaches Envoy."""
    envoy_gateway: dict[str, Any] = {
        "provider": {"type": "Kubernetes", "kubernetes": {"deploy": {"type": DEPLOY_MODE}}}
    }
    if aibrix:
        envoy_gateway["extensionApis"] = {"enableEnvoyPatchPolicy": True}
    values: dict[str, Any] = {
        "deployment": {
            "replicas": 2 if prod else 1,
            "pod": {"nodeSelector": dict(SYSTEM_NODE_LABEL)},
        },
        "podDisruptionBudget": {"minAvailable": 1 if prod else 0},
        # The certificate job's requests and memory bound (the chart leaves them empty).
        "certgen": {"job": {"resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}},
        "config": {"envoyGateway": envoy_gateway},
        # The CRDs and the Gateway API safe-upgrade policy come from gateway-crds-helm (components/crds.py):
        # off here, as Envoy Gateway's install guide says when they are managed separately.
        "crds": {"enabled": False},
    }
    return values
