"""Hugging Face TGI on NVIDIA GPUs, for existing deployments only.

TGI is in maintenance mode upstream: the config refuses it unless `tgi.acceptMaintenanceMode: true`,
and `tgi.quantize: awq|gptq` only for weights already in that format (stacks/config/models.py).
`text-generation-launcher` on the prepared model directory (the pinned revision; TGI takes a local
directory as `--model-id`), one shard per GPU and a long startup deadline (shard start-up and
warm-up run before /health answers). The token is
mounted as a file both at HF_TOKEN_PATH (Python shards) and as `$HF_HOME/token`, where the Rust
router's hub client looks for it. Checked against v3.3.7: the image's entrypoint execs
`text-generation-launcher "$@"`, /health and /metrics are served on the main port (the launcher
also opens a Prometheus listener on 9000), and the image runs as root.
"""

from __future__ import annotations

from typing import Any

from stacks.config import ModelSection
from stacks.config.addons import AddonsSection

from .facts import EngineFacts
from .spec import WorkloadSpec
from .workload import HF_TOKEN_KEY, HOME, EngineContainer, deployment
from .workload import manifests as workload_manifests

# Weights download, shard start-up and warm-up all precede /health.
FACTS = EngineFacts(
    port=8080, health_path="/health", ready_path="/health", metrics_path="/metrics", startup_seconds=3600
)

HF_HOME = f"{HOME}/.cache/huggingface"


def container(spec: WorkloadSpec) -> EngineContainer:
    m = spec.model
    args = [
        "--model-id",
        spec.cache.model_dir,  # a local directory, prepared by the init containers
        "--hostname",
        "0.0.0.0",
        "--port",
        str(FACTS.port),
        "--num-shard",
        str(max(1, m.accelerators_per_replica)),
    ]
    if m.max_model_len:
        args += ["--max-total-tokens", str(m.max_model_len), "--max-input-tokens", str(m.max_model_len - 1)]
    if m.tgi and m.tgi.quantize:
        args += ["--quantize", m.tgi.quantize]
    if m.trust_remote_code:
        args.append("--trust-remote-code")
    mounts = []
    if m.secrets.hugging_face_token:
        mounts.append(
            {"name": "hf-token", "mountPath": f"{HF_HOME}/{HF_TOKEN_KEY}", "subPath": HF_TOKEN_KEY, "readOnly": True}
        )
    return EngineContainer(
        # The image's /tgi-entrypoint.sh activates the venv and execs the launcher with these args.
        command=None,
        args=args,
        env=[{"name": "HF_HOME", "value": HF_HOME}, {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "0"}],
        volume_mounts=mounts,
        # The image's Python interpreter lives under /root (uv-managed); another uid cannot run it.
        run_as_user=None,
        root_reason="the TGI image's Python interpreter lives under /root (uv-managed); another uid cannot run it",
    )


def manifests(spec: WorkloadSpec) -> list[dict[str, Any]]:
    return workload_manifests(spec, container(spec))


def service(model: ModelSection) -> tuple[str, int]:
    return model.name, FACTS.port


def workload(model: ModelSection, addons: AddonsSection) -> tuple[str, str, str]:
    del addons
    return deployment(model)
