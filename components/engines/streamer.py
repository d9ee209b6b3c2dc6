"""The Run:ai Model Streamer, as vLLM and SGLang use it for `models[].loadFormat: runai-streamer`: the
flags both engines take, and the check that the engine image carries the streamer.

Both engines take `--load-format runai_streamer` and `--model-loader-extra-config '<json>'` whose keys
are exactly `distributed`, `concurrency` and `memory_limit` (vLLM 0.29.0 engine/arg_utils.py and
model_executor/model_loader/runai_streamer_loader.py; SGLang 0.5.19 srt/server_args.py and
srt/model_loader/loader.py). 16 concurrent streams (the streamer's
object-storage default is 8) and a 5 GiB CPU buffer instead of its 40 GB default, which would outgrow
the pod's memory.

Neither engine's pip package depends on the streamer: it is their `runai` extra
(`runai-model-streamer[azure,gcs,s3]`). vLLM's image has installed it, but that `vllm/vllm-openai:v0.29.0`
carries it is not verified, and SGLang's image is not known to. So a streamed model's pod checks its
engine image first: an init container in that image imports `runai_model_streamer` and
`runai_model_streamer_s3`, and fails with a message naming the fix before the engine starts.
"""

from __future__ import annotations

from typing import Any

from .spec import WorkloadSpec
from .workload import helper_container

LOAD_FORMAT = "runai_streamer"
EXTRA_CONFIG = '{"concurrency": 16, "memory_limit": 5368709120}'

CHECK = r"""
import sys
try:
    import runai_model_streamer, runai_model_streamer_s3  # noqa: F401
except ImportError as exc:
    sys.exit(
        f"model streaming: the engine image lacks the Run:ai Model Streamer ({exc}); use an image with "
        f"runai-model-streamer[s3] installed (the engine's `runai` extra) or remove models[].loadFormat"
    )
print("model streaming: the engine image carries runai-model-streamer and its S3 backend")
"""


def args() -> list[str]:
    return ["--load-format", LOAD_FORMAT, "--model-loader-extra-config", EXTRA_CONFIG]


def image_check(spec: WorkloadSpec, run_as_user: int | None) -> list[dict[str, Any]]:
    """The init container that proves the engine image can stream (none for a model not streamed)."""
    if spec.cache.stream_uri is None:
        return []
    return [
        helper_container(
            spec,
            run_as_user,
            name="streamer-check",
            command=["python3", "-c", CHECK],
            env=[],
            cpu="100m",
            memory="512Mi",
        )
    ]
