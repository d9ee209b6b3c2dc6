"""Scale to zero that wakes up: the KEDA HTTP add-on 0.15.0 (kedacore/charts keda-add-ons-http).

A model at zero has no pod exporting the engine's gauge, so its Prometheus trigger never activates. Its
requests go instead through the add-on's interceptor, which holds each one while KEDA starts a replica:
- `http_addon_values`: the chart (interceptor, external scaler, operator) in `keda`, after KEDA (the
  chart renders a ScaledObject that scales the interceptor itself, so KEDA's CRDs come first);
- `interceptor_route`: per model, an InterceptorRoute (http.keda.sh/v1beta1) in the model's namespace
  to its Service and port, matching the platform header the front door and LiteLLM set
  (stacks/resolved.py WAKE_HEADER: every model reaches the interceptor under one host and `/v1/...`)
  with the value `<namespace>/<name>` (`Wake.header`), which no model of another namespace shares,
  with the model's `autoscaling.requests` as its scaling metric and timeouts from the cold-start budget;
- `push_trigger`: the ScaledObject's `external-push` trigger (0 to 1), placed before the engine's
  Prometheus trigger (1 to N); for a model on the add-on's request count it is the only trigger (0..N).
  The ScaledObject is created after its InterceptorRoute: before, the
  scaler answers an empty metric spec and KEDA falls back to a CPU metric (the add-on's user guide).

The chart names its Services after the chart, not the release (templates/*/service*.yaml:
`{{ .Chart.Name }}-<service>`), so the names below hold whatever the release is called; the platform
still calls it after the chart.
"""

from __future__ import annotations

from typing import Any

from stacks.naming import MANAGED_BY
from stacks.resolved import KEDA_NAMESPACE, MODEL_LABEL, WAKE_HEADER, Endpoint, ResolvedModel

API_VERSION = "http.keda.sh/v1beta1"
CHART_NAME = "keda-add-ons-http"
RELEASE_NAME = CHART_NAME
# The chart's Services (values.yaml interceptor.proxy/admin, scaler.grpcPort at their defaults).
PROXY_SERVICE = f"{CHART_NAME}-interceptor-proxy"
PROXY_PORT = 8080
ADMIN_PORT = 9090
SCALER_SERVICE = f"{CHART_NAME}-external-scaler"
SCALER_PORT = 9090
SCALER_ADDRESS = f"{SCALER_SERVICE}.{KEDA_NAMESPACE}:{SCALER_PORT}"
PROXY_URL = f"http://{PROXY_SERVICE}.{KEDA_NAMESPACE}.svc.cluster.local:{PROXY_PORT}"
# The labels the chart puts on its pods (templates/interceptor/deployment.yaml, scaler/deployment.yaml).
INTERCEPTOR_POD_LABELS = {"app.kubernetes.io/component": "interceptor", "app.kubernetes.io/name": "http-add-on"}
SCALER_POD_LABELS = {"app.kubernetes.io/component": "scaler", "app.kubernetes.io/name": "http-add-on"}
# The interceptor runs on every to-zero model's request path: two replicas keep one through a node
# drain (the chart's default floor of 3 is a permanent cost for a handful of models); it scales itself
# on its own queue above that.
INTERCEPTOR_MIN_REPLICAS = 2
INTERCEPTOR_MAX_REPLICAS = 10
# The scaler answers KEDA's activation stream; two keep the 0 to 1 path through a node drain.
SCALER_REPLICAS = 2
# The add-on's three components, each a static Go binary that writes nothing (read-only root): run as
# a high non-root uid under the runtime's seccomp profile, which the chart's defaults leave unset.
COMPONENTS = ("interceptor", "scaler", "operator")
NON_ROOT_UID = 65532
POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": NON_ROOT_UID,
    "runAsGroup": NON_ROOT_UID,
    "fsGroup": NON_ROOT_UID,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
# A served request's own allowance once a replica runs (the front door's route timeout without a cold
# start: generation can stream for minutes).
REQUEST_SECONDS = 30 * 60


def http_addon_values(version: str) -> dict[str, Any]:
    """The chart's values: its images at the chart's own version (the tag its appVersion would pick,
    pinned so a values change cannot drift it), the replica floors above, the interceptor given room for
    long generations it holds open, and the chart's hardened container defaults (no privilege
    escalation, every capability dropped, a read-only root file system) kept with a non-root uid and
    the runtime's seccomp profile added (per component: the chart renders a component's own security
    context whole in place of the shared one)."""
    return {
        "podSecurityContext": {c: dict(POD_SECURITY) for c in COMPONENTS},
        "securityContext": {c: dict(CONTAINER_SECURITY) for c in COMPONENTS},
        "crds": {"install": True},
        "images": {"tag": version},
        "interceptor": {
            "replicas": {"min": INTERCEPTOR_MIN_REPLICAS, "max": INTERCEPTOR_MAX_REPLICAS},
            "resources": {
                "requests": {"cpu": "250m", "memory": "128Mi"},
                "limits": {"cpu": "1", "memory": "512Mi"},
            },
        },
        "scaler": {"replicas": SCALER_REPLICAS},
        "operator": {"replicas": 1},
    }


def seconds(value: int) -> str:
    return f"{value}s"


def request_seconds(served: Endpoint) -> int:
    """A request's whole allowance through the interceptor: the cold start, then the normal request."""
    assert served.wake is not None
    return served.wake.cold_start.seconds + REQUEST_SECONDS


def scaling_metric(served: ResolvedModel) -> dict[str, Any]:
    """The route's `scalingMetric` (`autoscaling.requests`): what the add-on's scaler reports to the push
    trigger per replica, the whole 0..N signal of `signal: requests`, and beside the engine's gauge the
    count that wakes a model at zero (the HPA follows whichever asks for more replicas). The request
    rate keeps the add-on's window (1 minute in 1 s buckets)."""
    wanted = served.config.autoscaling.requests
    return {wanted.metric: {"targetValue": wanted.target_value}}


def interceptor_route(served: ResolvedModel) -> dict[str, Any]:
    """The model's InterceptorRoute: requests carrying its platform header (any host: the front door and
    LiteLLM arrive under different ones) go to its Service and port. It waits for readiness as long as
    the cold-start budget, for response headers as long as a normal request (a non-streamed completion
    sends its headers when done), and in all as long as both."""
    assert served.wake is not None
    return {
        "apiVersion": API_VERSION,
        "kind": "InterceptorRoute",
        "metadata": {
            "name": served.wake.route,
            "namespace": served.namespace,
            "labels": {MODEL_LABEL: served.name, **MANAGED_BY},
        },
        "spec": {
            "target": {"service": served.service, "port": served.port},
            "rules": [{"hosts": ["*"], "headers": [{"name": WAKE_HEADER, "value": served.wake.header}]}],
            "scalingMetric": scaling_metric(served),
            "timeouts": {
                "readiness": seconds(served.wake.cold_start.seconds),
                "responseHeader": seconds(REQUEST_SECONDS),
                "request": seconds(request_seconds(served)),
            },
        },
    }


def push_trigger(served: ResolvedModel) -> dict[str, Any]:
    """The 0 to 1 trigger: the add-on's scaler pushes the interceptor's pending requests for the route."""
    assert served.wake is not None
    return {
        "type": "external-push",
        "name": "wake",
        "metadata": {"scalerAddress": SCALER_ADDRESS, "interceptorRoute": served.wake.route},
    }
