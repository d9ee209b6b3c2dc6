"""Who may call whom: the pods (namespace and labels) and the ports of every caller the platform's
NetworkPolicies admit, each read from the release the platform pins. Pure values; no Pulumi.

A NetworkPolicy peer here is always a pod selector, inside a namespace selector when the caller lives
elsewhere: never a whole namespace, never everything. The one exception is the API server, which is no
pod: it calls admission webhooks and aggregated APIs from the control plane's network interfaces in
the cluster's VPC (`api_server`).

Sources, one per caller:
- Envoy Gateway v1.9.0 proxies: `EnvoyAppLabel` (internal/infrastructure/kubernetes/proxy/resource.go)
  and `GatewayOwnerLabels` (internal/gatewayapi/helpers.go; no `mergeGateways` here), in the Gateway's
  own namespace (GatewayNamespace deploy mode: internal/infrastructure/kubernetes/proxy_infra.go
  GetResourceNamespace); AIBrix 0.7.0's EnvoyProxy patch keeps the same app labels on its Gateway's
  proxies (dist/chart templates/gateway-instance).
- Prometheus and Alertmanager: the pods the Prometheus Operator v0.88.1 makes for the chart's CRs
  (`makeSelectorLabels`, pkg/prometheus/server/operator.go and pkg/alertmanager/operator.go), which are
  also the selectors of kube-prometheus-stack 81.6.2's own Services.
- The chart-installed controllers: each chart's Deployment selector at its pinned version, with the
  release named after the add-on (components/serving/platforms.py): kuberay-operator 1.7.0, aibrix
  0.7.0 (controller manager, gateway plugin), k8s-nim-operator v3.1.2 (deployments/helm templates),
  dynamo-platform 1.4 (its dynamo-operator subchart), keda 2.20.2, keda-add-ons-http 0.15.0,
  prometheus-adapter 5.3.0, dcgm-exporter 4.8.2, and kube-prometheus-stack 81.6.2 with its subcharts
  kube-state-metrics 7.1.0 and grafana 11.1.1 (prometheus-community/helm-charts and
  grafana-community/helm-charts at those tags).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stacks.engine_facts import EngineFacts
from stacks.resolved import (
    COLLECTOR_NAME,
    CONTROLLER_NAMESPACES,
    KEDA_NAMESPACE,
    MODEL_LABEL,
    MONITORING_NAMESPACE,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    PROMETHEUS_SERVICE,
    TRACING_NAMESPACE,
    GatewayParent,
)

from .autoscaling import wake
from .engines import dynamo, nim, ray_serve
from .gateway.picker import PICKER_LABEL
from .gateway.routing import PROXY_POD_LABELS

NS_LABEL = "kubernetes.io/metadata.name"
NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"


@dataclass(frozen=True)
class Pods:
    """Pods of one caller: its namespace and the labels every one of its pods carries."""

    namespace: str
    labels: Mapping[str, str]

    def __hash__(self) -> int:
        return hash((self.namespace, frozenset(self.labels.items())))

    def peer(self, from_namespace: str | None = None) -> dict[str, Any]:
        """The NetworkPolicy peer: a pod selector, inside a namespace selector unless the policy is in
        the caller's own namespace."""
        pods: dict[str, Any] = {"podSelector": {"matchLabels": dict(self.labels)}}
        if from_namespace == self.namespace:
            return pods
        return {"namespaceSelector": {"matchLabels": {NS_LABEL: self.namespace}}, **pods}


def tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in sorted(set(ports))]


def rule(callers: Iterable[Pods], ports: Iterable[int], namespace: str | None = None) -> dict[str, Any]:
    """One ingress rule: these callers' pods on these TCP ports."""
    return {"from": [c.peer(namespace) for c in callers], "ports": tcp(*ports)}


Grant = tuple[Pods, tuple[int, ...]]


def rules(grants: Iterable[Grant], namespace: str) -> list[dict[str, Any]]:
    """Ingress rules for (caller, ports) grants in a policy of `namespace`: one rule per set of ports,
    its callers in the order first granted, each once."""
    by_ports: dict[tuple[int, ...], list[Pods]] = {}
    for caller, ports in grants:
        callers = by_ports.setdefault(tuple(sorted(set(ports))), [])
        if caller not in callers:
            callers.append(caller)
    return [rule(callers, ports, namespace) for ports, callers in by_ports.items()]


def to(callers: Iterable[Pods], ports: Iterable[int], namespace: str | None = None) -> dict[str, Any]:
    """One egress rule: to these pods on these TCP ports."""
    return {"to": [c.peer(namespace) for c in callers], "ports": tcp(*ports)}


# ---- the front door ---------------------------------------------------------------------------

OWNING_GATEWAY_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_GATEWAY_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"


def proxies(parent: GatewayParent) -> Pods:
    """The Envoy proxies of the Gateway a stack's routes attach to (the front door's own, or AIBrix's):
    Envoy Gateway runs in GatewayNamespace mode (gateway/routing.py DEPLOY_MODE), so each Gateway's
    proxies run in the Gateway's own namespace, told apart by their owner labels."""
    return Pods(
        parent.namespace,
        {**PROXY_POD_LABELS, OWNING_GATEWAY_NAMESPACE: parent.namespace, OWNING_GATEWAY_NAME: parent.name},
    )


# ---- metrics ------------------------------------------------------------------------------------

# kube-prometheus-stack names its Prometheus and Alertmanager CRs `<release>-prometheus` and
# `<release>-alertmanager` (release kube-prometheus-stack); the operator labels their pods after them.
PROMETHEUS_NAME = PROMETHEUS_SERVICE
ALERTMANAGER_NAME = "kube-prometheus-stack-alertmanager"
PROMETHEUS = Pods(MONITORING_NAMESPACE, {NAME: "prometheus", "operator.prometheus.io/name": PROMETHEUS_NAME})
# With `existingPrometheus`: whatever Prometheus the Prometheus Operator runs in `monitoring` (the
# existing one must read the platform's PodMonitors, so the operator runs it; its name is not known).
ANY_PROMETHEUS = Pods(MONITORING_NAMESPACE, {NAME: "prometheus"})
ALERTMANAGER = Pods(MONITORING_NAMESPACE, {NAME: "alertmanager", "alertmanager": ALERTMANAGER_NAME})
PROMETHEUS_PORT = 9090  # the Prometheus CR's web port (`http-web`)
ALERTMANAGER_PORT = 9093  # Alertmanager's web port (`http-web`)
RELOADER_PORT = 8080  # both pods' config-reloader sidecar (`reloader-web`), scraped by the chart
PROMETHEUS_OPERATOR = Pods(
    MONITORING_NAMESPACE, {"app": "kube-prometheus-stack-operator", "release": "kube-prometheus-stack"}
)
OPERATOR_PORT = 10250  # `https`: its admission webhook and its own metrics
# The chart's two run-once Jobs that make and patch the webhook's certificate.
ADMISSION_JOBS = Pods(
    MONITORING_NAMESPACE,
    {NAME: "kube-prometheus-stack-prometheus-operator", COMPONENT: "prometheus-operator-webhook"},
)
KUBE_STATE_METRICS = Pods(MONITORING_NAMESPACE, {NAME: "kube-state-metrics", INSTANCE: "kube-prometheus-stack"})
KUBE_STATE_METRICS_PORT = 8080  # `http`, what the chart's ServiceMonitor scrapes
GRAFANA = Pods(MONITORING_NAMESPACE, {NAME: "grafana", INSTANCE: "kube-prometheus-stack"})
GRAFANA_PORT = 3000  # `grafana`, behind the Service's http-web
# prometheus-node-exporter runs on the host network: no NetworkPolicy selects a hostNetwork pod.
NODE_EXPORTER_PORT = 9100
KUBELET_PORT = 10250
PROMETHEUS_ADAPTER = Pods(MONITORING_NAMESPACE, {NAME: "prometheus-adapter", INSTANCE: "prometheus-adapter"})
ADAPTER_PORT = 6443  # `https`, the custom.metrics.k8s.io APIService's target
DCGM_EXPORTER = Pods(MONITORING_NAMESPACE, {NAME: "dcgm-exporter", INSTANCE: "dcgm-exporter"})
DCGM_PORT = 9400


def prometheus(existing: bool) -> Pods:
    """The Prometheus pods that scrape: the platform's own, or (existingPrometheus) any the operator
    runs in `monitoring`."""
    return ANY_PROMETHEUS if existing else PROMETHEUS


# ---- traces -------------------------------------------------------------------------------------

# The platform's own OpenTelemetry Collector (components/tracing.py builds its Deployment with these
# labels) and its OTLP receivers: gRPC, which every hop uses, and HTTP.
COLLECTOR = Pods(TRACING_NAMESPACE, {NAME: COLLECTOR_NAME})
OTLP_PORTS = (OTLP_GRPC_PORT, OTLP_HTTP_PORT)


def team_exporters(namespace: str) -> list[dict[str, Any]]:
    """The peers of a team namespace that may export spans to the platform's collector: its models'
    engine pods (every engine labels each pod with the model label, ResolvedModel.selector) and its
    pickers' pods (the chart's selector label), whatever the model; not the namespace's other pods. The
    platform cannot name a team's models (they come later, from the team's stack), so each selector
    requires the label to exist rather than a value."""
    return [
        {
            "namespaceSelector": {"matchLabels": {NS_LABEL: namespace}},
            "podSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
        }
        for key in (MODEL_LABEL, PICKER_LABEL)
    ]


# ---- the serving platforms' controllers --------------------------------------------------------


def _controller(facts: EngineFacts, labels: Mapping[str, str]) -> Pods:
    """The operator of an engine's add-on, in its namespace; the platform names its release after the
    add-on (components/serving/platforms.py), which is the pods' instance label."""
    addon = facts.controller
    assert addon is not None, f"{facts.title} runs under an operator"
    return Pods(CONTROLLER_NAMESPACES[addon], {**labels, INSTANCE: addon})


def _aibrix(component: str) -> Pods:
    return Pods(CONTROLLER_NAMESPACES["aibrix"], {NAME: "aibrix", INSTANCE: "aibrix", COMPONENT: component})


KUBERAY_OPERATOR = _controller(ray_serve.FACTS, {NAME: "kuberay-operator"})
# RayService reconciling (ray-operator v1.7.0 controllers/ray/rayservice_controller.go): the Serve
# config goes to the head's dashboard (utils.FetchHeadServiceURL with the `dashboard` port,
# DefaultDashboardPort 8265), and the head's Serve proxy is probed on its serve port
# (`updateHeadPodServeLabel`, CheckProxyActorHealth `/-/healthz`), which decides whether the head
# serves. KubeRay labels a head pod `ray.io/node-type: head` (utils.RayNodeTypeLabelKey).
RAY_DASHBOARD_PORT = 8265
RAY_HEAD_LABELS = {"ray.io/node-type": "head"}
AIBRIX_CONTROLLER = _aibrix("aibrix-controller-manager")
AIBRIX_GATEWAY_PLUGIN = _aibrix("aibrix-gateway-plugin")
# AIBrix 0.7.0 calls a model pod on fixed ports: the adapter controller lists and loads LoRA adapters
# through the pod's `aibrix-runtime` sidecar at http://<pod>:8080 (DefaultRuntimeAPIPort; the platform
# puts the sidecar beside every engine whose adapters AIBrix loads, components/serving/aibrix.py), and
# at http://<pod>:8000 on a pod without one (DefaultInferenceEnginePort); the gateway plugin reads pod
# metrics on `model.aibrix.ai/metric-port`, which the platform does not set, else 8000 (pkg/cache
# defaultMetricPort).
AIBRIX_ENGINE_PORT = 8000
AIBRIX_RUNTIME_PORT = 8080
# The EKS Pod Identity agent: a hostNetwork DaemonSet answering on a link-local address (not the node IP
# the VPC CNI always admits), where the AWS SDKs fetch a pod's role credentials
# (AWS_CONTAINER_CREDENTIALS_FULL_URI, http://169.254.170.23/v1/credentials).
POD_IDENTITY_AGENT: dict[str, Any] = {
    "to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}],
    "ports": [{"protocol": "TCP", "port": 80}],
}
# The NIM Operator (v3.1.2 internal/controller/platform/standalone/nimservice.go getNIMModelName)
# lists a NIMService's models at its Service's port (`/v1/models`).
NIM_OPERATOR = _controller(nim.FACTS, {"control-plane": "controller-manager", NAME: "k8s-nim-operator"})
# The Dynamo 1.4 operator calls no pod of a DynamoGraphDeployment: only a DynamoModel's workers (LoRA,
# none here) and, for a DynamoGraphDeploymentRequest's GPU discovery, the DCGM exporter's pods on 9400
# (deploy/operator/internal/gpu/discovery.go; node labels are its fallback). Source: the operator at
# the 1.4.0 branch cut e147ceea, every HTTP client under deploy/operator.
DYNAMO_OPERATOR = _controller(dynamo.FACTS, {"control-plane": "controller-manager", NAME: "dynamo-operator"})
# KEDA's Prometheus scaler runs in its operator, which queries Prometheus for every trigger.
KEDA_OPERATOR = Pods(KEDA_NAMESPACE, {"app": "keda-operator"})
INTERCEPTOR = Pods(KEDA_NAMESPACE, wake.INTERCEPTOR_POD_LABELS)
HTTP_SCALER = Pods(KEDA_NAMESPACE, wake.SCALER_POD_LABELS)


# ---- the API server -----------------------------------------------------------------------------

# EKS assigns Service addresses from 10.100.0.0/16 or 172.20.0.0/16 when the cluster names no block
# (the platform names none: EKS API KubernetesNetworkConfigRequest.serviceIpv4Cidr); the `kubernetes`
# Service, the API server in-cluster clients dial, is the first address of the block. The VPC CNI's
# policy agent sees that address, not the endpoint it is translated to.
KUBERNETES_SERVICE_IPS = ("10.100.0.1/32", "172.20.0.1/32")
API_PORT = 443


def api_server(blocks: Iterable[str]) -> list[dict[str, Any]]:
    """The API server as a peer: the control plane's network interfaces, in the VPC's subnets."""
    return [{"ipBlock": {"cidr": cidr}} for cidr in blocks]


def to_api_server(blocks: Iterable[str]) -> dict[str, Any]:
    """Egress to the API server: its Service address and its endpoints in the VPC, on 443."""
    cidrs = [*KUBERNETES_SERVICE_IPS, *blocks]
    return {"to": [{"ipBlock": {"cidr": c}} for c in cidrs], "ports": tcp(API_PORT)}


DNS: dict[str, Any] = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {NS_LABEL: "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}
