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

import yaml

from stacks.helper_pods import PICKER, PICKER_PROXY, rendered
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL
from stacks.offload import PICKER_BLOCK_TOKENS
from stacks.resolved import (
    FAIRNESS_HEADER,
    FAIRNESS_HEADER_ALIAS,
    OBJECTIVE_HEADERS,
    Endpoint,
    FlowLimits,
    GatewayParent,
    RoutePicking,
    TraceExport,
)
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
# prefix-cache on a model with a KV-cache CPU tier (`models[].kvCacheOffload`): the profile above plus a
# prefix index and scorer for what the tier holds.
TIERED_CONFIG = "tiered-prefix.yaml"
CPU_PRODUCER = "cpu-prefix-cache-producer"
CPU_SCORER = "cpu-prefix-cache-scorer"
# On a model whose engine loads its LoRA adapters itself (RoutePicking.adapter_metric): either strategy's
# profile plus the adapter-affinity scorer, as a config file of the platform's own.
ADAPTERS_CONFIG = "adapters.yaml"
# llm-d-router v0.10.0 scheduling/scorer/loraaffinity (registered Beta in cmd/epp/runner/runner.go, so no
# --allow-experimental-plugins; no parameters). Per pod: 1.0 running the request's `model` as an adapter,
# 0.8 with a free adapter slot (`max_lora`), 0.6 only queueing it, 0 full. It reads the pod's adapters from
# the core-metrics-extractor's built-in vllm mapping (loraSpec vllm:lora_requests_info): no extractor
# parameter is needed. Weighed as the load scorers: it breaks ties toward the pod already running the
# adapter and away from one that would have to swap an adapter out, without outvoting a full queue.
ADAPTER_SCORER = "lora-affinity-scorer"
ADAPTER_WEIGHT = 2


# The Envoy the chart runs beside the picker (`router.proxy`, its envoy preset, sidecar mode) when LiteLLM
# calls the model (RoutePicking.litellm_proxy). Its listener `vllm` on PROXY_PORT sends each request over
# ext_proc to the picker in the same pod (127.0.0.1:9002, a STATIC cluster in sidecar mode), then to the
# pod the picker names in PICKER_HEADER (an ORIGINAL_DST cluster with `use_http_header`): the picker's own
# scoring, with no InferencePool or Gateway object. The chart exposes the listener on the picker's
# Service as the port named `http` (`extraServicePorts`, targetPort 8081 = the preset's `http-8081`).
PROXY_PORT = 8081
PROXY_PORT_NAME = "http"
# The preset's readiness listener (`/ready`, answered by Envoy's health_check filter) and its
# `/stats/prometheus`; the kubelet's probe is not pod traffic, so no policy admits it.
PROXY_READY_PORT = 19001
# The preset's `configMap.name` is a fixed `envoy` in the release's namespace: two picked models in one
# namespace would write the same ConfigMap, so each release names its own (and its volume follows).
PROXY_CONFIG_SUFFIX = "-envoy"
# The image's user: envoy's distroless stage is gcr.io/distroless/base-nossl:nonroot (ci/Dockerfile-envoy).
PROXY_UID = 65532


def release_name(served: Endpoint) -> str:
    return f"{served.name}-picker"


def service_name(served: Endpoint) -> str:
    """The chart's `llm-d-router.name`: the release name, lower-cased and cut to 40, plus `-epp`: the
    Deployment, Service and ServiceAccount it renders."""
    return f"{release_name(served).lower().strip()[:40]}-epp"


# The chart's selector label key of a picker's pods (components/peers.py admits team pickers by it).
PICKER_LABEL = "llm-d-router-standalone"


def pod_labels(served: Endpoint) -> dict[str, str]:
    """The chart's selector labels of the picker's pods in standalone mode (`llm-d-router.selectorLabels`)."""
    return {PICKER_LABEL: service_name(served)}


def proxy_url(served: Endpoint) -> str:
    """Where LiteLLM calls a model through its picker's proxy: the picker's Service on the proxy port."""
    return f"http://{service_name(served)}.{served.namespace}.svc.cluster.local:{PROXY_PORT}"


def proxy_values(served: Endpoint, image: Image) -> dict[str, Any]:
    """`router.proxy` with the chart's envoy preset in sidecar mode: one proxy per picker pod, reaching it
    on loopback (service mode would add a Deployment, and a hop, for a proxy only LiteLLM calls).

    failOpen false: failing open gains no availability here. A request let past ext_proc without a pick
    finds no host in the preset's ORIGINAL_DST cluster (its listener restores no original destination;
    v1.33 original_dst_cluster.cc chooseHost) and gets a 503 either way, but one that already carries a
    destination header would be sent where the header says: failing closed (500) never routes by a header
    the picker did not write. LiteLLM retries or falls back on either status.

    Resources: the chart's 4 CPU / 8Gi request is sized for a shared proxy in front of a whole pool at
    high fan-in. This one carries only LiteLLM's requests to one model, tens to hundreds of open streams,
    and moves bytes without buffering bodies (full-duplex streamed ext_proc, 32 KiB per-connection buffer);
    Envoy at that load runs in a fraction of a core and well under 256Mi. No CPU limit, as the picker: a
    throttled proxy delays every token it streams."""
    config = f"{release_name(served)}{PROXY_CONFIG_SUFFIX}"
    return {
        "enabled": True,
        "proxyType": "envoy",
        "mode": "sidecar",
        "failOpen": False,
        "image": image.ref,
        "configMap": {"name": config},
        "volumes": [
            {"name": "config", "configMap": {"name": config, "items": [{"key": "envoy.yaml", "path": "envoy.yaml"}]}}
        ],
        "resources": rendered(PICKER_PROXY),
        # The preset probes readiness only: a wedged Envoy would leave the Service but never restart.
        "livenessProbe": {
            "httpGet": {"path": "/ready", "port": PROXY_READY_PORT, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": PROXY_UID,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def _image(image: Image) -> dict[str, str]:
    # The template composes `registry/repository:tag`; a digest rides on the tag.
    registry, _, repository = image.repository.partition("/")
    tag = f"{image.tag}@{image.digest}" if image.digest else image.tag
    return {"registry": registry, "repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}


# With flow control both strategies run a config of the platform's own: the chart's default file has no
# `featureGates` or `flowControl`. prefix-cache's mirrors the chart's default profile.
FLOW_CONTROL_CONFIG = "flow-control.yaml"
# The flow-control gate (pkg/epp/flowcontrol/config.go FeatureGate) and the fairness policy that serves
# the clients' queues in turn (a Beta plugin, cmd/epp/runner/runner.go): the default,
# global-strict-fairness-policy, takes the oldest request of any queue, which is no fairness.
FLOW_CONTROL_GATE = "flowControl"
ROUND_ROBIN_FAIRNESS = "round-robin-fairness-policy"


def _flow_control(limits: FlowLimits) -> dict[str, Any]:
    """The `flowControl:` block (apix/config/v1alpha1 FlowControlConfig at v0.10.0). One priority band is
    in use (no InferenceObjective resolves in standalone mode), so the global caps and the default band's
    are the same bounds; quantities as strings, as the type's examples write them."""
    bounds = {"maxBytes": f"{limits.max_queued_mib}Mi", "maxRequests": str(limits.max_requests)}
    return {
        **bounds,
        "defaultRequestTTL": f"{limits.queue_timeout_seconds}s",
        "defaultPriorityBand": {"priority": 0, **bounds, "fairnessPolicyRef": ROUND_ROBIN_FAIRNESS},
    }


def _cpu_tier(cpu_blocks: int) -> list[dict[str, Any]]:
    """A second approximate prefix index for the KV-cache CPU tier and its scorer (llm-d-router v0.10.0
    docs, approx-prefix-cache-producer "multiple named instances ... for tiered caching";
    prefix-cache-scorer's `prefixMatchInfoProducerName`). The GPU index keeps the default name (the
    conditional-decode gate reads it, RELEASE-NOTES #1288) and auto-tunes from the pods' metrics; the CPU
    one is sized by hand (the engines export no CPU-tier block metrics), to the blocks the tier holds."""
    return [
        {"type": "approx-prefix-cache-producer"},
        {
            "name": CPU_PRODUCER,
            "type": "approx-prefix-cache-producer",
            "parameters": {
                "autoTune": False,
                "blockSizeTokens": PICKER_BLOCK_TOKENS,
                "lruCapacityPerServer": cpu_blocks,
            },
        },
        {
            "name": CPU_SCORER,
            "type": "prefix-cache-scorer",
            "parameters": {"prefixMatchInfoProducerName": CPU_PRODUCER},
        },
    ]


def picker_config(
    engine_type: str,
    metrics_path: str,
    prefix: bool,
    limits: FlowLimits | None,
    cpu_blocks: int | None = None,
    *,
    adapters: bool = False,
) -> dict[str, Any]:
    """The EndpointPickerConfig the picker runs: the queue and KV-cache scorers (and the prefix scorer for
    prefix-cache, weights as the chart's default profile), reading the pods' metrics on their path; with
    a KV-cache CPU tier, its own prefix index and scorer (a CPU hit saves the prefill but costs a
    host-to-GPU copy: it weighs 2 to the GPU hit's 3, a platform choice); with engine-loaded adapters, the
    adapter-affinity scorer; with flow control, the gate, the fair policy and the `flowControl:` block."""
    extractor: dict[str, Any] = {"type": "core-metrics-extractor"}
    if engine_type != "vllm":
        extractor["parameters"] = {"defaultEngine": engine_type}
    scorers = [
        ("queue-scorer", 2),
        ("kv-cache-utilization-scorer", 2),
        *([("prefix-cache-scorer", 3)] * prefix),
        *([(ADAPTER_SCORER, ADAPTER_WEIGHT)] * adapters),
    ]
    tier = _cpu_tier(cpu_blocks) if prefix and cpu_blocks is not None else []
    source = {"scheme": "http", "path": metrics_path, "insecureSkipVerify": False}
    config: dict[str, Any] = {"apiVersion": "llm-d.ai/v1alpha1", "kind": "EndpointPickerConfig"}
    if limits is not None:
        config["featureGates"] = [FLOW_CONTROL_GATE]
    config["plugins"] = [
        *({"type": name} for name, _ in scorers),
        *tier,
        {"type": "metrics-data-source", "parameters": source},
        extractor,
        *([{"type": ROUND_ROBIN_FAIRNESS}] if limits is not None else []),
    ]
    weights = [*scorers, *([(CPU_SCORER, 2)] if tier else [])]
    config["schedulingProfiles"] = [
        {"name": "default", "plugins": [{"pluginRef": name, "weight": weight} for name, weight in weights]}
    ]
    if limits is not None:
        config["flowControl"] = _flow_control(limits)
    return config


def _load_config(engine_type: str, metrics_path: str) -> str:
    # Written as text since before flow control: its ConfigMap's bytes stay as they were.
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


def _config_file(routing: RoutePicking, metrics_path: str) -> dict[str, Any]:
    """The config the picker runs when not the chart's default profile: the platform's own with flow
    control, a KV-cache CPU tier or engine-loaded adapters, or load's; empty for a plain prefix-cache."""
    assert routing.engine_type is not None
    prefix = routing.strategy == "prefix-cache"
    tier = routing.cpu_tier_blocks if prefix else None
    adapters = routing.adapter_metric is not None
    if routing.flow_control is not None or tier is not None or adapters:
        name = (
            FLOW_CONTROL_CONFIG
            if routing.flow_control is not None
            else TIERED_CONFIG
            if tier is not None
            else ADAPTERS_CONFIG
        )
        config = picker_config(routing.engine_type, metrics_path, prefix, routing.flow_control, tier, adapters=adapters)
        return {"pluginsConfigFile": name, "pluginsCustomConfig": {name: yaml.safe_dump(config, sort_keys=False)}}
    if routing.strategy == "load":
        return {
            "pluginsConfigFile": LOAD_CONFIG,
            "pluginsCustomConfig": {LOAD_CONFIG: _load_config(routing.engine_type, metrics_path)},
        }
    return {}


def values(
    served: Endpoint, image: Image, tracing: TraceExport | None = None, proxy_image: Image | None = None
) -> dict[str, Any]:
    """llm-d-router-standalone values for one model's picker (every key under `router:`, the library
    chart's alias). With tracing, the chart's `router.tracing` (templates/_deployment.yaml: `--tracing=true`
    and the OTEL_* variables) sends the picker's spans to the platform's collector. Where LiteLLM calls the
    model (RoutePicking.litellm_proxy), the chart's own Envoy runs beside the picker (`proxy_values`) and
    the picker's Service gains its port; otherwise the Gateway's ext_proc is the picker's only caller."""
    routing = served.routing
    assert routing is not None and routing.engine_type is not None, "only a picked model has a picker"
    metrics_path = served.metrics_path or "/metrics"
    epp: dict[str, Any] = {
        "image": _image(image),
        # Plaintext h2c: Envoy Gateway's ext_proc cluster to a Service speaks no TLS unless a
        # BackendTLSPolicy says so, and the picker serves TLS by default (--secure-serving).
        "flags": {"secure-serving": False},
        "metricsDataSource": {"scheme": "http", "path": metrics_path},
        # Sized against the chart's sizing guide (docs/operations.md), in the one place a team's quota
        # rules read it too.
        "resources": rendered(PICKER),
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
    epp.update(_config_file(routing, metrics_path))
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
            **_proxy(served, proxy_image),
            "epp": epp,
            # --metrics-endpoint-auth=false: the platform's Prometheus scrapes a PodMonitor without a
            # token, as it does the engines; `<model>-picker-ingress` admits only the scraper's
            # namespace to the metrics port.
            "monitoring": {"prometheus": {"auth": {"enabled": False}}},
            # The chart's default is off: said only when on, so a stack without tracing renders as before.
            **({"tracing": picker_tracing(tracing)} if tracing else {}),
        }
    }


def _proxy(served: Endpoint, proxy_image: Image | None) -> dict[str, Any]:
    """`proxy` and `extraServicePorts`: the chart's Envoy and its port where LiteLLM calls the model; off,
    and without the standalone chart's default port 8081, where only the Gateway calls the picker."""
    routing = served.routing
    if routing is None or not routing.litellm_proxy:
        return {"proxy": {"enabled": False}, "extraServicePorts": []}
    assert proxy_image is not None, "a model LiteLLM calls through its picker needs the proxy's image"
    port = {"name": PROXY_PORT_NAME, "port": PROXY_PORT, "protocol": "TCP", "targetPort": PROXY_PORT}
    return {"proxy": proxy_values(served, proxy_image), "extraServicePorts": [port]}


def fairness_script(limits: FlowLimits) -> str:
    """The Lua the route runs before its picker: the fairness id is the authenticated client id the
    auth filter wrote, over whatever the client sent (under either header name the picker reads), and
    the objective headers go: no InferenceObjective resolves in standalone mode (v0.10.0
    cmd/epp/runner/runner.go starts no CRD reconciler with --endpoint-selector), so a client's
    objective would only name a priority the platform never set."""
    removed = "".join(f'  headers:remove("{h}")\n' for h in (FAIRNESS_HEADER_ALIAS, *OBJECTIVE_HEADERS))
    return (
        "function envoy_on_request(request_handle)\n"
        "  local headers = request_handle:headers()\n"
        f'  local client = headers:get("{limits.client_header}")\n'
        f"{removed}"
        "  if client then\n"
        f'    headers:replace("{FAIRNESS_HEADER}", client)\n'
        "  else\n"
        f'    headers:remove("{FAIRNESS_HEADER}")\n'
        "  end\n"
        "end\n"
    )


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
    with the picker down, the route answers 5xx rather than routing blind.

    With flow control, a Lua filter first writes the fairness id. Not a route's RequestHeaderModifier:
    Envoy applies a route's header additions in its router filter, after every ext_proc, so the picker
    would never see them. Envoy Gateway v1.9.0 orders Lua (13) after api_key_auth (7) and jwt_authn (10)
    and before ext_proc (100+) (internal/xds/translator/httpfilters.go), and enables both on this route
    alone."""
    routing = served.routing
    lua = (
        {"lua": [{"type": "Inline", "inline": fairness_script(routing.flow_control)}]}
        if routing is not None and routing.flow_control is not None
        else {}
    )
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
            **lua,
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
