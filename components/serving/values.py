"""Helm values of the serving-platform charts. Pure functions; every key exists in the pinned
chart's values.yaml (checked by the conformance tests against shared/schemas)."""

from __future__ import annotations

from typing import Any

from stacks.config import StackConfig

AIBRIX_IMAGES = {
    "controllerManager": "aibrix/controller-manager",
    "gatewayPlugin": "aibrix/gateway-plugins",
    "metadata": "aibrix/metadata-service",
    "gpuOptimizer": "aibrix/runtime",
}


def dynamo_values(config: StackConfig) -> dict[str, Any]:
    """dynamo-platform: the operator (cluster-wide) applies its CRDs through the pre-install hook
    (`upgradeCRD`); service discovery uses the Kubernetes API, so no etcd is installed; NATS is
    installed because the runtime's event plane defaults to NATS (chart >= 1.1.0). Workers on the
    GPU nodes reach NATS through its ClusterIP Service; NATS itself runs on the system nodes."""
    del config
    return {
        "global": {"etcd": {"install": False}, "nats": {"install": True}},
        "dynamo-operator": {
            "upgradeCRD": True,
            "discoveryBackend": "kubernetes",
            "webhook": {"failurePolicy": "Fail"},
        },
    }


def aibrix_values(config: StackConfig) -> dict[str, Any]:
    """AIBrix 0.7.0: pinned component images (the chart's values.yaml says `nightly`; its
    stable.yaml pins v0.7.0, and so do we), CRDs kept on uninstall, webhooks on."""
    version = config.addons.aibrix.version or "0.7.0"
    tag = f"v{version.removeprefix('v')}"
    return {
        "controllerManager": {"container": {"image": {"repository": AIBRIX_IMAGES["controllerManager"], "tag": tag}}},
        "gatewayPlugin": {"container": {"image": {"repository": AIBRIX_IMAGES["gatewayPlugin"], "tag": tag}}},
        "metadata": {"service": {"container": {"image": {"repository": AIBRIX_IMAGES["metadata"], "tag": tag}}}},
        "gpuOptimizer": {"container": {"image": {"repository": AIBRIX_IMAGES["gpuOptimizer"], "tag": tag}}},
        "crd": {"enable": True, "keep": True},
        "webhook": {"enable": True},
    }


def kuberay_values(config: StackConfig) -> dict[str, Any]:
    version = config.addons.kuberay.version or "1.7.0"
    return {"image": {"repository": "quay.io/kuberay/operator", "tag": f"v{version.removeprefix('v')}"}}


def nim_operator_values(config: StackConfig) -> dict[str, Any]:
    """The NIM Operator with its CRD upgrade hook; the admission controller needs cert-manager,
    which this platform does not install, so it stays off (the chart default)."""
    del config
    return {"operator": {"upgradeCRD": True, "admissionController": {"enabled": False}}}
