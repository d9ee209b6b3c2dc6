"""Front-door rules: no unauthenticated gateway in prod, no unauthenticated exposure of an engine that
has no authentication of its own, no `expose: true` that nothing would honour, and TLS that exists.

`models[].expose: true` while no gateway would carry the model (gateway.enabled: false and no AIBrix
gateway) is an ERROR, not a warning: a parsed option must be used, and a silently cluster-internal
model is exactly the "a ClusterIP is not authentication / not exposure" confusion the seed warns about.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.engines import ENGINES

from ..checks import rule, warning
from ..config import StackConfig
from ..errors import Problem, key_path
from ..resolve.scaling import through_interceptor
from ..resolved import PICKER_HEADER, WAKE_HEADER, ResolvedStack


def _carried(config: StackConfig) -> bool:
    """Whether some gateway carries exposed models: ours, or AIBrix's."""
    return config.gateway.enabled or config.addons.aibrix.enabled


@rule
def no_unauthenticated_gateway_in_prod(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.stack.prod and config.gateway.auth == "none" and _carried(config):
        yield Problem(
            key_path(["gateway", "auth"]),
            "auth: none is refused in environment: prod (allowUnauthenticated does not apply there); "
            "use auth: apiKey with apiKeysSecret, or auth: jwt with jwt.issuer and jwt.jwksUri",
        )


@rule
def no_open_engine_without_auth(stack: ResolvedStack) -> Iterable[Problem]:
    """A workloads stack's models are exposed through its platform's gateway (its exported gateway)."""
    platform = stack.platform
    if platform.gateway.auth != "none" or platform.gateway_parent is None:
        return
    for entry in stack.entries:
        if entry.config.expose and entry.facts.management_paths:
            yield Problem(
                entry.key("expose"),
                f"engine {entry.config.engine} has no authentication of its own and a model-management API; "
                f"it cannot be exposed while gateway.auth is none. Set gateway.auth: apiKey or jwt, "
                f"or expose: false",
            )


@rule
def exposed_models_need_a_gateway(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if _carried(config):
        return
    for i, model in enumerate(config.models):
        if model.expose:
            yield Problem(
                key_path(["models", i, "expose"]),
                "expose: true but gateway.enabled is false (and AIBrix's gateway is off): nothing would "
                "route to this model. Set gateway.enabled: true, or expose: false to keep it cluster-internal",
            )


@rule
def gateway_needs_envoy_gateway(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if _carried(config) and not config.addons.envoy_gateway.enabled:
        yield Problem(
            key_path(["addons", "envoyGateway", "enabled"]),
            "the gateway (and AIBrix's) runs on Envoy Gateway; set addons.envoyGateway.enabled: true, "
            "or gateway.enabled: false with addons.aibrix.enabled: false",
        )


@rule
def aibrix_gateway_terminates_tls_on_the_load_balancer(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    tls = config.gateway.tls
    if config.addons.aibrix.enabled and tls is not None and tls.secret_name:
        yield Problem(
            key_path(["gateway", "tls", "secretName"]),
            "with AIBrix, models attach to AIBrix's gateway, whose only listener is plain HTTP: a "
            "certificate Secret cannot be used there. Use tls.certificateArn (ACM on the load balancer)",
        )


def _no_tls(config: StackConfig) -> Iterable[Problem]:
    if config.stack.role == "workloads":
        return  # the platform stack owns the Gateway and its TLS
    if config.gateway.enabled and not config.addons.aibrix.enabled and config.gateway.tls is None:
        yield Problem(
            key_path(["gateway", "tls"]),
            "no TLS configured: the HTTPS listener terminates with the kubernetes.io/tls Secret inference-tls in "
            "namespace inference-gateway, which `secrets.inference-tls.fromConfig` (tls.crt, tls.key) must make. "
            "Set tls.certificateArn (ACM on the load balancer) or tls.secretName",
        )


@rule
def prod_gateway_names_its_tls(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.stack.prod:
        yield from _no_tls(config)


@warning
def dev_gateway_tls(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if not config.stack.prod:
        yield from _no_tls(config)


@rule
def routing_reads_the_engine(stack: ResolvedStack) -> Iterable[Problem]:
    """The endpoint picker scores pods by the engine's own metrics; on an engine it cannot read it would
    score every pod alike (as an unread vLLM), which is round robin with a picker in the way."""
    readable = sorted(name for name, spec in ENGINES.items() if spec.facts.picker_engine)
    for entry in stack.entries:
        routing = entry.config.routing
        if routing is None or routing.strategy == "round-robin" or entry.facts.picker_engine is not None:
            continue
        yield Problem(
            entry.key("routing", "strategy"),
            f"routing.strategy {routing.strategy} needs the llm-d router's endpoint picker, which cannot read "
            f"engine {entry.config.engine}'s metrics (it reads {', '.join(readable)}); use strategy: round-robin, or "
            f"remove routing",
        )


@rule
def routing_needs_the_route(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    for i, model in enumerate(config.models):
        if model.routing is not None and not model.expose:
            yield Problem(
                key_path(["models", i, "routing"]),
                "routing applies to the model's gateway route, and expose: false gives it none; set expose: true, "
                "or remove routing",
            )


@rule
def flow_control_needs_a_picker_and_a_client(stack: ResolvedStack) -> Iterable[Problem]:
    """Flow control runs in the endpoint picker, and its fair queues are keyed by the authenticated
    client: without a picker (round-robin, or a model the KEDA interceptor wakes, whose requests it
    forwards to the Service past any picker) there is no queue, and without authentication every request
    lands in the one `default-flow` queue, which is no fairness at all."""
    auth = stack.platform.gateway.auth
    for entry in stack.entries:
        routing = entry.config.routing
        if routing is None or routing.flow_control is None:
            continue
        key = entry.key("routing", "flowControl")
        if routing.strategy == "round-robin":
            why = (
                "its requests go through the KEDA HTTP add-on's interceptor, which forwards to the model's Service "
                "past any picker (it scales to zero)"
                if through_interceptor(entry.config, entry.facts)
                else "routing.strategy round-robin runs no picker"
            )
            yield Problem(
                key,
                f"flow control queues requests in the endpoint picker, and {why}; remove routing.flowControl, or "
                "route through a picker (strategy prefix-cache or load, with minReplicas of at least 1 and a gauge "
                "signal)",
            )
        elif auth == "none":
            yield Problem(
                key,
                "flow control keeps one fair queue per authenticated client, and gateway.auth is none, so every "
                "request would share one queue; set gateway.auth to apiKey or jwt, or remove routing.flowControl",
            )


# Headers that carry a credential: a limiter keyed on one counts (and its metrics and logs name) each
# client by its secret.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
# Headers Envoy removes or rewrites before its filters see a client's request: the HTTP/1.1
# connection-specific ones (stripped by the HTTP connection manager), the ones it sets itself, and its
# own `x-envoy-` headers (removed from requests from untrusted clients).
ENVOY_MANAGED_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host", "content-length"}
)


@rule
def no_secret_header_as_a_limit_key(stack: ResolvedStack) -> Iterable[Problem]:
    """The rate limit counts by `gateway.rateLimit.clientHeader`, which the gateway writes the client id
    into: naming the credential header there would overwrite the key it authenticates with, and key the
    limiter (its metrics and logs) on a secret."""
    gateway = stack.config.gateway
    if gateway.rate_limit is None:
        return
    header = gateway.rate_limit.client_header.lower()
    if header in CREDENTIAL_HEADERS | {gateway.api_key_header.lower()}:
        yield Problem(
            key_path(["gateway", "rateLimit", "clientHeader"]),
            f"{header} carries the client's credential (gateway.apiKeyHeader is {gateway.api_key_header}): a limit "
            "keyed on it counts each client by its secret and puts the secret into the limiter's keys, metrics "
            "and logs; keep the default x-client-id (the gateway writes the authenticated client's name there)",
        )


@rule
def api_key_header_reaches_the_gateway(stack: ResolvedStack) -> Iterable[Problem]:
    """A client's key is read from `gateway.apiKeyHeader`; a header Envoy strips or sets itself never
    carries it there."""
    header = stack.config.gateway.api_key_header.lower()
    if header in ENVOY_MANAGED_HEADERS or header.startswith("x-envoy-"):
        yield Problem(
            key_path(["gateway", "apiKeyHeader"]),
            f"{stack.config.gateway.api_key_header} is a header Envoy removes or sets itself before its filters "
            "run (connection-specific headers, host, content-length, x-envoy-*), so no client key would arrive "
            "in it; use Authorization (the default) or x-api-key",
        )


# Headers the platform itself writes on a model's requests (overwriting a client's): the wake header the
# front door and LiteLLM set for the KEDA HTTP add-on's interceptor, and the pick the endpoint picker writes.
PLATFORM_HEADERS = {
    WAKE_HEADER: "the front door writes the model's wake name there for the KEDA HTTP add-on's interceptor",
    PICKER_HEADER: "the endpoint picker writes the pod it chose there",
}


@rule
def client_headers_stay_apart_from_the_platforms(stack: ResolvedStack) -> Iterable[Problem]:
    """The credential header, the rate limit's client-id header and the headers the platform writes are
    different headers: a credential in a header the platform overwrites never authenticates (or is
    forwarded to the interceptor and picker), and a client id written over a header the platform routes
    by sends the request to the wrong model or pod."""
    gateway = stack.config.gateway
    written = {"gateway.apiKeyHeader": gateway.api_key_header.lower()}
    if gateway.rate_limit is not None:
        written["gateway.rateLimit.clientHeader"] = gateway.rate_limit.client_header.lower()
    for key, header in written.items():
        why = PLATFORM_HEADERS.get(header)
        if (
            why is None
            and key.endswith("clientHeader")
            and (header in ENVOY_MANAGED_HEADERS or header.startswith("x-envoy-"))
        ):
            why = "Envoy removes or sets it itself"
        if why is not None:
            default = "Authorization" if key.endswith("apiKeyHeader") else "x-client-id"
            yield Problem(
                key_path(tuple(key.split("."))),
                f"{header} is a header the platform relies on ({why}); a setting here would be overwritten or "
                f"would misroute requests: use another name (the default is {default})",
            )
