"""Helm values of the serving-platform charts. Pure functions; every key exists in the pinned
chart's values.yaml (checked by the conformance tests against the pinned charts' own values)."""

from __future__ import annotations

import copy
from typing import Any

from stacks.config.addons import Aibrix, Dynamo, KubeRay
from stacks.config.gateway import GatewaySection
from stacks.naming import MANAGED_BY
from stacks.resolved import AIBRIX_GATEWAY, ImageTable
from stacks.versions import Image

AIBRIX_IMAGES = {
    "controllerManager": "aibrix/controller-manager",
    "gatewayPlugin": "aibrix/gateway-plugins",
    "metadata": "aibrix/metadata-service",
    "gpuOptimizer": "aibrix/runtime",
}


def dynamo_values(addon: Dynamo) -> dict[str, Any]:
    """dynamo-platform 1.4: the operator (cluster-wide) applies its CRDs from its image's crd-apply
    init container (`upgradeCRD`; the chart ships none since 1.4.0); service discovery uses the
    Kubernetes API, so no etcd; no NATS either: since 1.4 the request plane is TCP and the event
    plane ZMQ by default (chart values: "NATS is optional"), so a graph's frontend and workers talk
    to each other directly, inside the model's namespace, and call nothing in the platform's.

    Grove (the chart's bundled subchart) only with `addons.dynamo.grove`, which stacks/resolve/platform.py
    `with_grove` turns on when some Dynamo model spans nodes: the multinode orchestrator. Both keys,
    because the chart's operator-config.yaml renders `orchestrators.grove.enabled` explicitly and a
    false there disables Grove even where its API is installed; the operator reads it at start."""
    global_values: dict[str, Any] = {"etcd": {"install": False}, "nats": {"install": False}}
    if addon.grove:
        global_values["grove"] = {"install": True, "enabled": True}
    return {
        "global": global_values,
        "dynamo-operator": {
            "upgradeCRD": True,
            "discoveryBackend": "kubernetes",
            "webhook": {"failurePolicy": "Fail"},
        },
    }


# Envoy Gateway runs a listener on a privileged port p on container port p + 10000 (its
# wellKnownPortShift): AIBrix's `http` listener (80) is served by the Envoy pods on 10080.
AIBRIX_LISTENER_CONTAINER_PORT = 10080


def aibrix_envoy_service(gateway: GatewaySection, annotations: dict[str, str]) -> dict[str, Any]:
    """`gateway.envoyProxy.service` (the chart renders it as its EnvoyProxy's `envoyService`): the
    front door's NLB annotations, so AIBrix's gateway gets the same load balancer as ours. AIBrix's
    Gateway has one plain-HTTP listener on 80; with an ACM certificate the NLB terminates TLS on 443
    (the annotations' ssl-ports), so the Service gets a 443 port onto that listener and loses its
    plain port 80: keys never cross the network in clear text. Envoy Gateway applies
    `envoyService.patch` as a strategic merge patch on the core Service
    (KubernetesServiceSpec.ApplyMergePatch), so `$patch: delete` drops port 80 by its merge key."""
    service: dict[str, Any] = {"type": "LoadBalancer", "annotations": dict(annotations)}
    tls = gateway.tls
    if tls is not None and tls.certificate_arn:
        https = {"name": "https", "port": 443, "protocol": "TCP", "targetPort": AIBRIX_LISTENER_CONTAINER_PORT}
        service["patch"] = {
            "type": "StrategicMerge",
            "value": {"spec": {"ports": [https, {"port": 80, "$patch": "delete"}]}},
        }
    return service


# The client-side settings of AIBrix's Gateway: the chart's defaults (values.yaml
# `gateway.clientTrafficPolicy`; the 4 MiB buffer matches its gateway plugin's gRPC message limit),
# stated here because two policies carry them: the chart's Gateway-wide ClientTrafficPolicy
# `<fullname>-client-connection-buffersize` (from these values) and our listener's
# (`aibrix_listener_policy`), which Envoy Gateway applies instead of it, whole.
AIBRIX_CLIENT_TRAFFIC: dict[str, Any] = {
    "connection": {"bufferLimit": 4194304, "connectionLimit": {"value": 1024}},
    "http2": {"maxConcurrentStreams": 1024},
}
# The header whose presence selects the route AIBrix's EnvoyPatchPolicy `<fullname>-epp` inserts at
# `virtual_hosts/0/routes/0` of the `http` listener (dist/chart/templates/gateway-instance/gateway.yaml:
# prefix `/`, header `routing-strategy` ~ `.*`, to its ORIGINAL_DST cluster). That route belongs to no
# HTTPRoute, so no SecurityPolicy reaches it; only the gateway plugin may set the header, after an
# authenticated route sent the request through it.
ROUTING_STRATEGY_HEADER = "routing-strategy"


def aibrix_listener_policy(client_header: str | None = None) -> dict[str, Any]:
    """A ClientTrafficPolicy on every listener of AIBrix's Gateway (it has one, `http`) that removes a
    client-sent `routing-strategy` header before Envoy routes (`headers.earlyRequestHeaders`, the
    HCM's early header mutation), so no client request can match the patched route and skip
    authentication; with JWT auth also a client-sent `client_header`, which the routes' jwt_authn
    appends the token's `sub` to rather than replacing (components/gateway/routing.py
    client_header_policy says why). A section-level policy takes precedence over the chart's
    Gateway-wide one as a whole (Envoy Gateway's ClientTrafficPolicy precedence), so it carries the
    chart's settings too."""
    namespace, gateway, listener = AIBRIX_GATEWAY
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "ClientTrafficPolicy",
        "metadata": {
            "name": f"{gateway}-{listener}-client",
            "namespace": namespace,
            "labels": {**MANAGED_BY, "app.kubernetes.io/component": "gateway"},
        },
        "spec": {
            "targetRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway, "sectionName": listener}
            ],
            **copy.deepcopy(AIBRIX_CLIENT_TRAFFIC),
            "headers": {"earlyRequestHeaders": {"remove": [ROUTING_STRATEGY_HEADER, *filter(None, [client_header])]}},
        },
    }


def _tagged(image: Image) -> str:
    return f"{image.repository}:{image.tag}"


def aibrix_values(
    addon: Aibrix, gateway: GatewaySection, images: ImageTable, service_annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """AIBrix 0.7.0: pinned component images (the chart's values.yaml says `nightly`; its
    stable.yaml pins v0.7.0, and so do we), CRDs kept on uninstall, webhooks on, and its Envoy
    Service behind the front door's load balancer (`aibrix_envoy_service`)."""
    version = addon.version or "0.7.0"
    tag = f"v{version.removeprefix('v')}"
    busybox = images["busybox"]
    init = {"image": {"repository": busybox.repository, "tag": busybox.tag}}
    return {
        "gateway": {
            "clientTrafficPolicy": copy.deepcopy(AIBRIX_CLIENT_TRAFFIC),
            "envoyProxy": {
                "service": aibrix_envoy_service(gateway, service_annotations or {}),
                # The data plane and shutdown manager our Envoy Gateway runs, not the chart's older pair.
                "container": {
                    "envoy": {"image": _tagged(images["envoy-proxy"])},
                    "shutdownManager": {"image": _tagged(images["envoy-gateway"])},
                },
            },
        },
        "controllerManager": {"container": {"image": {"repository": AIBRIX_IMAGES["controllerManager"], "tag": tag}}},
        "gatewayPlugin": {
            "initContainer": init,
            "container": {"image": {"repository": AIBRIX_IMAGES["gatewayPlugin"], "tag": tag}},
        },
        "metadata": {
            "service": {
                "initContainer": init,
                "container": {"image": {"repository": AIBRIX_IMAGES["metadata"], "tag": tag}},
            },
            # Redis's memory bounded (the chart sets only its requests).
            "redis": {"container": {"resources": {"limits": {"memory": "1Gi"}}}},
        },
        "gpuOptimizer": {"container": {"image": {"repository": AIBRIX_IMAGES["gpuOptimizer"], "tag": tag}}},
        "crd": {"enable": True, "keep": True},
        "webhook": {"enable": True},
    }


def kuberay_values(addon: KubeRay) -> dict[str, Any]:
    version = addon.version or "1.7.0"
    return {
        "image": {"repository": "quay.io/kuberay/operator", "tag": f"v{version.removeprefix('v')}"},
        # A pod-level context (the chart's is empty): the uid of the image's nonroot user, and the
        # runtime's seccomp profile; the container context (non-root, read-only, no caps) is the chart's.
        "podSecurityContext": {"runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
    }


def nim_operator_values() -> dict[str, Any]:
    """The NIM Operator. Its CRDs are the program's (components/crds.py, the chart's crds/ at the tag), so
    the chart's pre-upgrade hook that applies them again from the operator image stays off: one owner per
    CRD. The admission controller needs cert-manager, which this platform does not install, so it stays
    off (the chart default)."""
    return {"operator": {"upgradeCRD": False, "admissionController": {"enabled": False}}}


def lws_values(version: str) -> dict[str, Any]:
    """LeaderWorkerSet v0.10.0 (charts/lws/values.yaml at the tag). The webhook certificate comes
    from the controller's own rotator (`enableCertManager: false`, the chart default, stated: the
    platform installs no cert-manager). The image pinned to the chart's release (`version`, the
    catalog's or `addons.lws.version`): the chart source at the tag says `main` with `Always`, which
    only the release packaging rewrites (hack/push-chart.sh)."""
    return {
        "enableCertManager": False,
        "image": {"manager": {"repository": "registry.k8s.io/lws/lws", "tag": version, "pullPolicy": "IfNotPresent"}},
        # The image is distroless `nonroot` (uid 65532); the runtime's seccomp profile; the chart's
        # requests (1 CPU, 1Gi) bounded by a memory limit.
        "podSecurityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
        "resources": {"limits": {"memory": "1Gi"}},
    }
