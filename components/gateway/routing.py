"""Pure builders for the front door: the Gateway, one HTTPRoute per exposed model, the
SecurityPolicy that authenticates every route, per-client rate limits, ReferenceGrants and the
model namespaces' NetworkPolicies. Dict in, dict out; no Pulumi.

Routing: every model shares the gateway's hostname, and a Gateway API route cannot match on the JSON
body's `model` field, so each model gets its own path prefix: a client's OpenAI base URL is
`https://<hostname>/<model>/v1`. Only the engine's OpenAI-style paths are routed (each rewritten to
the path the engine serves); management paths (Ollama's /api/pull, /api/delete, ...) never are, and
anything else gets Envoy's 404.

Routes live in the Gateway's namespace next to their SecurityPolicy and the API-key Secret; they
reach the model's Service across namespaces through a ReferenceGrant the model namespace issues.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stacks.config.gateway import GatewaySection
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL
from stacks.resolved import (
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    HTTPS_LISTENER,
    KEDA_NAMESPACE,
    MODEL_LABEL,
    WAKE_HEADER,
    Endpoint,
    GatewayParent,
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
# The header the llm-d router's endpoint picker writes its pick into, `podIP:port`
# (llm-d-router v0.10.0 pkg/epp/metadata/consts.go; GAIE 004 endpoint-picker protocol).
PICKER_HEADER = "x-gateway-destination-endpoint"
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, "app.kubernetes.io/component": "gateway", **labels}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def tls_secret_name(gateway: GatewaySection) -> str:
    """The certificate Secret the HTTPS listener terminates with (when TLS is not on the NLB)."""
    if gateway.tls and gateway.tls.secret_name:
        return gateway.tls.secret_name
    return f"{GATEWAY_NAME}-tls"


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


def gateway(gw: GatewaySection) -> dict[str, Any]:
    """HTTPS on `hostname` (443) and HTTP (80) that only redirects. With an ACM certificate the NLB
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
    https |= {"hostname": gw.hostname, "allowedRoutes": same}
    http = {"name": HTTP_LISTENER, "protocol": "HTTP", "port": 80, "hostname": gw.hostname, "allowedRoutes": same}
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": _meta(GATEWAY_NAME, GATEWAY_NAMESPACE),
        "spec": {
            "gatewayClassName": GATEWAY_NAME,
            "infrastructure": {"annotations": load_balancer_annotations(gw)},
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
        "metadata": _meta(served.name, parent.namespace, **{MODEL_LABEL: served.name}),
        "spec": {
            "parentRefs": [{"name": parent.name, "namespace": parent.namespace, "sectionName": parent.listener}],
            "hostnames": [gw.hostname],
            "rules": rules,
        },
    }


def _auth(gw: GatewaySection) -> dict[str, Any]:
    client = gw.rate_limit.client_header if gw.rate_limit else "x-client-id"
    if gw.auth == "apiKey":
        return {
            "apiKeyAuth": {
                "credentialRefs": [{"group": "", "kind": "Secret", "name": gw.api_keys_secret}],
                "extractFrom": [{"headers": [gw.api_key_header]}],
                # The authenticated client's name (its key in the Secret), overwriting anything the
                # client sent: rate limits and access logs key on it.
                "forwardClientIDHeader": client,
                "sanitize": True,
            }
        }
    assert gw.jwt is not None
    provider: dict[str, Any] = {
        "name": "stack",
        "issuer": str(gw.jwt.issuer),
        "remoteJWKS": {"uri": str(gw.jwt.jwks_uri)},
        "claimToHeaders": [{"claim": "sub", "header": client}],
    }
    if gw.jwt.audiences:
        provider["audiences"] = list(gw.jwt.audiences)
    return {"jwt": {"providers": [provider]}}


def security_policy(
    gw: GatewaySection, name: str, namespace: str, target_kind: str, target: str, section: str | None = None
) -> dict[str, Any]:
    """Authentication in front of a route, or a Gateway listener (`section`)."""
    ref = {"group": "gateway.networking.k8s.io", "kind": target_kind, "name": target}
    if section:
        ref["sectionName"] = section
    return {
        "apiVersion": EG_API,
        "kind": "SecurityPolicy",
        "metadata": _meta(name, namespace),
        "spec": {"targetRefs": [ref], **_auth(gw)},
    }


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
        "metadata": _meta(traffic_policy_name(served, gw), parent.namespace),
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": served.name}],
            **spec,
        },
    }


def service_grant(name: str, namespace: str, source: tuple[str, str, str], services: Iterable[str]) -> dict[str, Any]:
    """A ReferenceGrant in `namespace` letting objects of `source` (group, kind, namespace) reference these
    Services there (Envoy Gateway checks a cross-namespace backendRef, a route's or an ext_proc's)."""
    group, kind, from_namespace = source
    return {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": _meta(name, namespace),
        "spec": {
            "from": [{"group": group, "kind": kind, "namespace": from_namespace}],
            "to": [{"group": "", "kind": "Service", "name": service} for service in services],
        },
    }


def reference_grant(served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """Lets the route in the Gateway's namespace send traffic to this model's Services (a canary's too)."""
    return service_grant(
        f"{served.name}-from-gateway",
        served.namespace,
        ("gateway.networking.k8s.io", "HTTPRoute", parent.namespace),
        [service for service, _ in served.backends],
    )


def interceptor_grant(parent: GatewayParent) -> dict[str, Any]:
    """Lets the routes in the Gateway's namespace send traffic to the KEDA HTTP add-on's interceptor, the
    one Service every scale-to-zero model's route points at (issued once, by the stack that installs the
    add-on: a team's routes live in the same Gateway namespace)."""
    return service_grant(
        "interceptor-from-gateway",
        KEDA_NAMESPACE,
        ("gateway.networking.k8s.io", "HTTPRoute", parent.namespace),
        [wake.PROXY_SERVICE],
    )


def model_routing(gw: GatewaySection, served: Endpoint, parent: GatewayParent) -> list[dict[str, Any]]:
    """Everything one exposed model needs at the front door."""
    objs = [http_route(gw, served, parent)]
    if gw.auth != "none":
        objs.append(security_policy(gw, f"{served.name}-auth", parent.namespace, "HTTPRoute", served.name))
    traffic = backend_traffic_policy(gw, served, parent)
    if traffic is not None:
        objs.append(traffic)
    if served.namespace != parent.namespace and served.wake is None:
        objs.append(reference_grant(served, parent))
    return objs


def gateway_objects(gw: GatewaySection, parent: GatewayParent) -> list[dict[str, Any]]:
    """The Gateway itself (own gateway only) and a SecurityPolicy on the models' listener: a backstop
    for any route attached later, by hand or by AIBrix's controller, without its own policy."""
    objs: list[dict[str, Any]] = []
    if parent.own:
        objs += [gateway_class(), gateway(gw), redirect_route(gw)]
    if gw.auth != "none":
        # On the listener models use: the HTTP listener of our own Gateway must still answer with its
        # redirect, not a 401.
        objs.append(
            security_policy(gw, f"{parent.name}-auth", parent.namespace, "Gateway", parent.name, parent.listener)
        )
    return objs


def envoy_gateway_values(*, prod: bool, aibrix: bool) -> dict[str, Any]:
    """gateway-helm values (keys from the v1.9.0 chart's values.tmpl.yaml). With AIBrix, the
    controller must accept EnvoyPatchPolicy (`config.envoyGateway.extensionApis`; off by default):
    AIBrix's chart patches its Gateway's route and cluster config with one, and without it the
    gateway plugin's routing never reaches Envoy."""
    values: dict[str, Any] = {
        "deployment": {
            "replicas": 2 if prod else 1,
            "pod": {"nodeSelector": dict(SYSTEM_NODE_LABEL)},
        },
        "podDisruptionBudget": {"minAvailable": 1 if prod else 0},
        # The certificate job's requests and memory bound (the chart leaves them empty).
        "certgen": {"job": {"resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}},
    }
    if aibrix:
        values["config"] = {"envoyGateway": {"extensionApis": {"enableEnvoyPatchPolicy": True}}}
    return values
