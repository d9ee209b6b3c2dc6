"""Endpoint picking on a model's own route (`models[].routing`): the llm-d router's endpoint picker
and what makes Envoy Gateway call it and honour its pick. Pure builders.

Per model with strategy prefix-cache or load, the llm-d-router-standalone chart (v0.10.0) runs one
picker in the model's namespace: no InferencePool (Envoy Gateway 1.9.0 rejects that backendRef kind,
internal/gatewayapi/validate.go validateBackendRefKind) and no proxy of its own. It watches the
model's pods by their labels and scrapes each on the serving port. On the model's HTTPRoute an
EnvoyExtensionPolicy (beside the route: in the model's namespace on the front door's Gateway) sends
every request to it over ext_proc; it answers with the chosen pod in the
`x-gateway-destination-endpoint` header (routing.py `PICKER_HEADER`), which the route's
BackendTrafficPolicy turns into Envoy's pick (`loadBalancer.endpointOverride`, routing.py). The
SecurityPolicy is untouched: Envoy Gateway orders api_key_auth and jwt_authn before every ext_proc
filter (v1.9.0 internal/xds/translator/httpfilters.go), so only authenticated requests reach it.

Sources: chart values and template names from llm-d/llm-d-router v0.10.0 config/charts (routerlib
values.yaml, templates/_deployment.yaml, _service.yaml, _config.yaml, _helpers.tpl); the policy's
fields from the Envoy Gateway v1.9.0 EnvoyExtensionPolicy CRD.
"""

from __future__ import annotations

from typing import Any

from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL
from stacks.resolved import Endpoint, GatewayParent, TraceExport
from stacks.versions import Image

from ..engines.workload import OTEL_SAMPLER, sampling_arg
from .routing import EG_API, REQUEST_TIMEOUT, service_grant

# The picker's gRPC ext_proc port: routerlib values `epp.extProcPort` and the Service's
# `grpc-ext-proc` port (appProtocol kubernetes.io/h2c).
EXT_PROC_PORT = 9002
# Its own metrics (container port `metrics`, Service port `http-metrics`; --metrics-port default).
METRICS_PORT = 9090
# Per ext_proc message: Envoy Gateway's 200ms default fails a streamed generation; this is the
# route's own request timeout, so the picker never ends a request the route still allows.
MESSAGE_TIMEOUT = REQUEST_TIMEOUT
# Scheduling profiles by strategy. prefix-cache is the chart's own default-plugins.yaml (queue 2,
# kv-cache-utilization 2, prefix-cache 3; all Beta plugins, no --allow-experimental-plugins); load is
# that profile without the prefix scorer, as a custom config file the chart mounts beside it.
LOAD_CONFIG = "load.yaml"


def release_name(served: Endpoint) -> str:
    return f"{served.name}-picker"


def service_name(served: Endpoint) -> str:
    """The chart's `llm-d-router.name`: the release name, lower-cased and cut to 40, plus `-epp`: the
    Deployment, Service and ServiceAccount it renders."""
    return f"{release_name(served).lower().strip()[:40]}-epp"


def pod_labels(served: Endpoint) -> dict[str, str]:
    """The chart's selector labels of the picker's pods in standalone mode (`llm-d-router.selectorLabels`)."""
    return {"llm-d-router-standalone": service_name(served)}


def _image(image: Image) -> dict[str, str]:
    # The template composes `registry/repository:tag`; a digest rides on the tag.
    registry, _, repository = image.repository.partition("/")
    tag = f"{image.tag}@{image.digest}" if image.digest else image.tag
    return {"registry": registry, "repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}


def _load_config(engine_type: str, metrics_path: str) -> str:
    extractor = "- type: core-metrics-extractor\n"
    if engine_type != "vllm":
        extractor += f"  parameters:\n    defaultEngine: {engine_type}\n"
    return (
        "apiVersion: llm-d.ai/v1alpha1\n"
        "kind: EndpointPickerConfig\n"
        "plugins:\n"
        "- type: queue-scorer\n"
        "- type: kv-cache-utilization-scorer\n"
        "- type: metrics-data-source\n"
        "  parameters:\n"
        "    scheme: http\n"
        f"    path: {metrics_path}\n"
        "    insecureSkipVerify: false\n"
        f"{extractor}"
        "schedulingProfiles:\n"
        "- name: default\n"
        "  plugins:\n"
        "  - pluginRef: queue-scorer\n"
        "    weight: 2\n"
        "  - pluginRef: kv-cache-utilization-scorer\n"
        "    weight: 2\n"
    )


def values(served: Endpoint, image: Image, tracing: TraceExport | None = None) -> dict[str, Any]:
    """llm-d-router-standalone values for one model's picker (every key under `router:`, the library
    chart's alias). With tracing, the chart's `router.tracing` (templates/_deployment.yaml: `--tracing=true`
    and the OTEL_* variables) sends the picker's spans to the platform's collector."""
    routing = served.routing
    assert routing is not None and routing.engine_type is not None, "only a picked model has a picker"
    metrics_path = served.metrics_path or "/metrics"
    epp: dict[str, Any] = {
        "image": _image(image),
        # Plaintext h2c: Envoy Gateway's ext_proc cluster to a Service speaks no TLS unless a
        # BackendTLSPolicy says so, and the picker serves TLS by default (--secure-serving).
        "flags": {"secure-serving": False},
        "metricsDataSource": {"scheme": "http", "path": metrics_path},
        # The chart's defaults (8 CPU, 8Gi) are for 100-pod pools. Its sizing guide
        # (docs/operations.md) measured 1.19 cores and 0.26 GiB peak at 5 req/s with approximate
        # prefix matching; the limit leaves room for the 4-6 GiB it reports at 50-100 req/s. No CPU
        # limit, as the chart: a throttled picker delays every request.
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
        # The chart has no nodeSelector value; the platform's own pods run on system nodes.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": k, "operator": "In", "values": [v]} for k, v in SYSTEM_NODE_LABEL.items()
                            ]
                        }
                    ]
                }
            }
        },
    }
    if routing.strategy == "load":
        epp["pluginsConfigFile"] = LOAD_CONFIG
        epp["pluginsCustomConfig"] = {LOAD_CONFIG: _load_config(routing.engine_type, metrics_path)}
    return {
        "router": {
            "modelServers": {
                "matchLabels": dict(served.metrics_selector),
                "type": routing.engine_type,
                "protocol": "http",
                # The pods' serving port: Envoy builds the route's cluster from the Service's
                # EndpointSlices (podIP:targetPort), and an override outside them falls back.
                "targetPorts": [{"number": served.port}],
            },
            "inferencePool": {"create": False},
            "proxy": {"enabled": False},
            # The standalone chart's default adds port 8081 for its own proxy, which is off.
            "extraServicePorts": [],
            "epp": epp,
            # --metrics-endpoint-auth=false: the platform's Prometheus scrapes a PodMonitor without a
            # token, as it does the engines; `<model>-picker-ingress` admits only the scraper's
            # namespace to the metrics port.
            "monitoring": {"prometheus": {"auth": {"enabled": False}}},
            # The chart's default is off: said only when on, so a stack without tracing renders as before.
            **({"tracing": picker_tracing(tracing)} if tracing else {}),
        }
    }


def picker_tracing(tracing: TraceExport) -> dict[str, Any]:
    """`router.tracing` of the v0.10.0 chart: the collector with the platform's sampler (the chart sets
    OTEL_TRACES_SAMPLER and its argument from `sampling`)."""
    return {
        "enabled": True,
        "otelExporterEndpoint": tracing.endpoint,
        "sampling": {"sampler": OTEL_SAMPLER, "samplerArg": sampling_arg(tracing.sampling_ratio)},
    }


def extension_policy(served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """The model's route calls its picker for every request. The picker rewrites bodies in streamed
    chunks, so both directions are FullDuplexStreamed, which the CRD allows only with failOpen: false:
    with the picker down, the route answers 5xx rather than routing blind."""
    return {
        "apiVersion": EG_API,
        "kind": "EnvoyExtensionPolicy",
        "metadata": {
            "name": f"{served.name}-picker",
            "namespace": parent.route_namespace(served.namespace),
            "labels": {**MANAGED_BY, "app.kubernetes.io/component": "gateway"},
        },
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": served.name}],
            "extProc": [
                {
                    "backendRefs": [
                        {"name": service_name(served), "namespace": served.namespace, "port": EXT_PROC_PORT}
                    ],
                    "processingMode": {
                        "request": {"body": "FullDuplexStreamed"},
                        "response": {"body": "FullDuplexStreamed"},
                    },
                    "messageTimeout": MESSAGE_TIMEOUT,
                    "failOpen": False,
                }
            ],
        },
    }


def reference_grant(served: Endpoint, parent: GatewayParent) -> dict[str, Any]:
    """Lets the policy in the Gateway's namespace (on AIBrix's Gateway, whose routes live there) call this
    one picker Service (Envoy Gateway checks an ext_proc backendRef across namespaces like a route's)."""
    return service_grant(
        f"{served.name}-picker-from-gateway",
        served.namespace,
        ("gateway.envoyproxy.io", "EnvoyExtensionPolicy", parent.namespace),
        [service_name(served)],
    )


def picker_objects(served: Endpoint, parent: GatewayParent) -> list[dict[str, Any]]:
    """The objects beside the chart's release that wire one model's picker into its route."""
    objs = [extension_policy(served, parent)]
    if parent.route_namespace(served.namespace) != served.namespace:
        objs.append(reference_grant(served, parent))
    return objs
