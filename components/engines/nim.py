"""NVIDIA NIM (LLM 2.0) on NVIDIA GPUs.

An explicit NIM_MODEL_PROFILE from `models[].nim.profile`: a profile id from the container's own
list, never an invented one. The image-pull secret (`nim.imagePullSecret`, a dockerconfigjson for
nvcr.io) is separate from the runtime model credential. The model comes from a prepared path
(`nim.modelPath`, no credential at run time) or with the NGC key from `secrets.ngcApiKey`, mounted as
a file and read into the server's environment by a one-line adapter in front of the image's own
entrypoint, so the key never appears in the pod spec. Metrics at /v1/metrics, health at
/v1/health/live and /v1/health/ready.

With `addons.nimOperator.enabled` the model is a NIMService (apps.nvidia.com/v1alpha1) instead; the
operator builds the Deployment and Service and injects the `authSecret` itself. The NIMService CRD
(v3.1.2) has no service-account field: the operator runs the pods under an account it creates.
"""

from __future__ import annotations

from typing import Any

from stacks.engines import facts
from stacks.sizing import container_resources

from .. import secretfiles
from ..secretfiles import SecretFile
from ..served import NIM_API_VERSION
from . import WorkloadSpec
from .common import (
    EngineContainer,
    hpa_scaling,
    metadata,
    pod_labels,
    probes,
    requests,
)
from .common import manifests as workload_manifests

NGC_DIR = "/var/run/secrets/ngc"
NGC_KEY = "NGC_API_KEY"  # the key the ngcApiKey Secret must carry
CACHE = "/opt/nim/.cache"
RUN_AS = 1000


def nim_env(spec: WorkloadSpec) -> list[dict[str, Any]]:
    m = spec.model
    assert m.nim is not None
    env = [
        {"name": "NIM_MODEL_PROFILE", "value": m.nim.profile},
        {"name": "NIM_SERVER_PORT", "value": str(facts("nim").port)},
        {"name": "NIM_CACHE_PATH", "value": spec.cache.model_dir},
    ]
    source = m.nim.model_path or (m.model if "://" in m.model else None)
    if source:
        env.append({"name": "NIM_MODEL_PATH", "value": source})
    return env


def serve_args(spec: WorkloadSpec) -> list[str]:
    """vLLM-format flags NIM 2.0 takes after `nim-serve` (or in NIM_PASSTHROUGH_ARGS)."""
    args = ["--served-model-name", spec.served.served_model_name]
    if spec.model.max_model_len:
        args += ["--max-model-len", str(spec.model.max_model_len)]
    return [*args, *spec.model.engine_args]


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    assert m.nim is not None
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if m.secrets.ngc_api_key:
        key = [SecretFile("NGC_API_KEY", m.secrets.ngc_api_key, NGC_KEY, "ngc-api-key", NGC_DIR)]
        volumes, mounts = secretfiles.volumes(key), secretfiles.mounts(key)
        # Runs through the image's ENTRYPOINT (command is left unset), which execs its arguments.
        # "$@" carries the serve flags; "nim" fills $0.
        args = ["/bin/sh", "-c", secretfiles.exec_script(key, "nim-serve"), "nim", *serve_args(spec)]
    else:
        args = ["nim-serve", *serve_args(spec)]
    return EngineContainer(
        command=None,
        args=args,
        env=nim_env(spec),
        volumes=volumes,
        volume_mounts=mounts,
        image_pull_secrets=[m.nim.image_pull_secret],
        append_engine_args=False,
        startup_seconds=1800,
        run_as_user=RUN_AS,
    )


def _cache_storage(spec: WorkloadSpec) -> dict[str, Any]:
    """The NIMService storage block: the shared cache claim when the storage concern made one."""
    for volume in spec.cache.volumes:
        claim = volume.get("persistentVolumeClaim")
        if claim:
            return {"pvc": {"name": claim["claimName"], "create": False}}
    return {"emptyDir": {"sizeLimit": "200Gi"}}


def nim_service(spec: WorkloadSpec) -> dict[str, Any]:
    """The NIMService custom resource the NIM Operator reconciles into a Deployment and Service."""
    m = spec.model
    assert m.nim is not None
    f = facts("nim")
    image = spec.image
    tag = f"{image.tag}@{image.digest}" if image.digest else image.tag
    pr = probes(spec, 1800)
    body: dict[str, Any] = {
        "image": {
            "repository": image.repository,
            "tag": tag,
            "pullPolicy": "IfNotPresent",
            "pullSecrets": [m.nim.image_pull_secret],
        },
        # The operator requires it and injects it as NGC_API_KEY from the Secret (not a file).
        "authSecret": m.secrets.ngc_api_key,
        "storage": _cache_storage(spec),
        "env": [
            *(e for e in nim_env(spec) if e["name"] != "NIM_CACHE_PATH"),
            {"name": "NIM_PASSTHROUGH_ARGS", "value": " ".join(serve_args(spec))},
        ],
        "resources": container_resources(requests(spec)),
        "tolerations": spec.placement.tolerations,
        "nodeSelector": spec.placement.node_selector,
        "labels": pod_labels(spec),
        "userID": RUN_AS,
        "groupID": RUN_AS,
        "expose": {"service": {"type": "ClusterIP", "port": f.port, "name": spec.served.service}},
        "metrics": {"enabled": True},
        "startupProbe": {"enabled": True, "probe": _numeric_port(pr["startupProbe"], f.port)},
        "readinessProbe": {"enabled": True, "probe": _numeric_port(pr["readinessProbe"], f.port)},
        "livenessProbe": {"enabled": True, "probe": _numeric_port(pr["livenessProbe"], f.port)},
    }
    if m.autoscaling.owner == "hpa":
        body["scale"] = {"enabled": True, "hpa": hpa_scaling(m)}
    else:
        body["replicas"] = m.replicas
    if m.accelerators_per_replica > 1:
        body["storage"]["sharedMemorySizeLimit"] = "16Gi"
    return {
        "apiVersion": NIM_API_VERSION,
        "kind": "NIMService",
        "metadata": metadata(spec),
        "spec": body,
    }


def _numeric_port(probe: dict[str, Any], port: int) -> dict[str, Any]:
    return {**probe, "httpGet": {**probe["httpGet"], "port": port}}


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    if spec.config.addons.nim_operator.enabled:
        return [nim_service(spec)]
    return workload_manifests(spec, container(spec))
