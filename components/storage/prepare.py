"""Model preparation: init containers that fill the cache from the model bucket or from Hugging Face
at the pinned revision.

Why init containers (not a Job): the same two containers work for every cache choice. On a shared
cache (EFS, FSx) the first pod takes a lock (an atomic `mkdir`), fills the cache and writes the
completion marker; every later pod finds the marker and starts at once. On a node-local cache each
new pod (hence each new node) refills its own volume, which is exactly when a refill is needed. A
Job would have to be re-run on every new node for the local cache, and `pulumi up` would block on it.

On FSx the bucket is already linked (data repository association), so the bucket step copies nothing:
files imported under the model's directory are adopted by writing the marker.

Each step: marker present -> exit 0 (idempotent); otherwise lock, fetch into `<dir>.partial` with a
bounded number of attempts and backoff, rename into place, write the marker `<dir>/.prepared`, and
unlock. A step that gives up exits non-zero with a message naming the model, revision, source and
fix; the pod then shows Init:Error with that message (terminationMessagePolicy
FallbackToLogsOnError). The Hugging Face token is read from a mounted Secret file, never from env.
Compiled Neuron artifacts live under a separate root (`COMPILED_ROOT`), never inside the weights.
"""

from __future__ import annotations

from typing import Any

from stacks.awaits import skip_await
from stacks.helper_pods import PREPARATION_STEP, rendered
from stacks.resolved import ImageTable

TOKEN_DIR = "/var/run/secrets/huggingface"
TOKEN_KEY = "token"  # the key the named Secret must hold
TOKEN_VOLUME = "hf-token"

S3_STEP = r"""set -eu
dir="$MODEL_DIR"; mark="$dir/.prepared"; lock="$dir.lock"; part="$dir.partial"
done_msg() { echo "model cache: $MODEL_ID@$MODEL_REVISION ready in $dir"; }
if [ -f "$mark" ]; then done_msg; exit 0; fi
if [ "$CACHE_IMPORTED" = "true" ]; then
  # FSx imports the bucket itself: files under $dir come from S3 and load on first read.
  if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    printf '{"model": "%s", "revision": "%s", "source": "fsx-import"}\n' "$MODEL_ID" "$MODEL_REVISION" > "$mark"
    done_msg; exit 0
  fi
  echo "model cache: nothing imported at $dir; the Hugging Face step fills the cache"; exit 0
fi
mkdir -p "$(dirname "$dir")"
waited=0
until mkdir "$lock" 2>/dev/null; do
  if [ -f "$mark" ]; then done_msg; exit 0; fi
  if [ "$waited" -ge "$LOCK_TIMEOUT_SECONDS" ]; then
    echo "model cache: lock $lock held for ${waited}s; its holder is gone, taking over"; rm -rf "$lock"; continue
  fi
  sleep "$LOCK_POLL_SECONDS"; waited=$((waited + LOCK_POLL_SECONDS))
done
trap 'rm -rf "$lock"' EXIT
if [ -f "$mark" ]; then done_msg; exit 0; fi
src="s3://$MODEL_BUCKET/$MODEL_PREFIX/"
set +e; aws s3 ls "$src" >/dev/null 2>&1; rc=$?; set -e
if [ "$rc" -eq 1 ]; then echo "model cache: no copy at $src; the Hugging Face step fills the cache"; exit 0; fi
if [ "$rc" -ne 0 ]; then
  echo "model preparation failed: cannot list $src (aws exit $rc);" \
    "check the pod runs as the model-reader service account and the bucket exists" >&2
  exit 1
fi
attempt=1
while :; do
  rm -rf "$part"
  if aws s3 sync --only-show-errors "$src" "$part"; then break; fi
  if [ "$attempt" -ge "$ATTEMPTS" ]; then
    echo "model preparation failed: $MODEL_ID@$MODEL_REVISION from $src after $attempt attempts" >&2
    rm -rf "$part"; exit 1
  fi
  echo "model cache: attempt $attempt of $ATTEMPTS failed; retrying"
  sleep $((attempt * BACKOFF_SECONDS)); attempt=$((attempt + 1))
done
rm -rf "$dir"; mv "$part" "$dir"
printf '{"model": "%s", "revision": "%s", "source": "%s"}\n' "$MODEL_ID" "$MODEL_REVISION" "$src" > "$mark"
done_msg
"""

HUB_STEP = r"""
import os, shutil, sys, time
from pathlib import Path

env = os.environ
target, model, revision = Path(env["MODEL_DIR"]), env["MODEL_ID"], env["MODEL_REVISION"]
mark, lock, part = target / ".prepared", Path(f"{target}.lock"), Path(f"{target}.partial")
attempts, backoff = int(env["ATTEMPTS"]), int(env["BACKOFF_SECONDS"])
poll, lock_timeout = int(env["LOCK_POLL_SECONDS"]), int(env["LOCK_TIMEOUT_SECONDS"])


def ready():
    if mark.is_file():
        print(f"model cache: {model}@{revision} ready in {target}")
        return True
    return False


if ready():
    sys.exit(0)
target.parent.mkdir(parents=True, exist_ok=True)
waited = 0
while True:
    try:
        lock.mkdir()
        break
    except FileExistsError:
        if ready():
            sys.exit(0)
        if waited >= lock_timeout:
            print(f"model cache: lock {lock} held for {waited}s; its holder is gone, taking over")
            shutil.rmtree(lock, ignore_errors=True)
            continue
        time.sleep(poll)
        waited += poll
try:
    if ready():
        sys.exit(0)
    token_file = Path(env.get("HF_TOKEN_FILE", ""))
    token = token_file.read_text().strip() if env.get("HF_TOKEN_FILE") and token_file.is_file() else None
    from huggingface_hub import snapshot_download

    for attempt in range(1, attempts + 1):
        shutil.rmtree(part, ignore_errors=True)
        try:
            snapshot_download(repo_id=model, revision=revision, local_dir=str(part), token=token)
            break
        except Exception as exc:  # every failure is retried the same bounded way
            if attempt == attempts:
                shutil.rmtree(part, ignore_errors=True)
                hint = "" if token else " (no token mounted: a gated model needs models[].secrets.huggingFaceToken)"
                sys.exit(
                    f"model preparation failed: {model}@{revision} from Hugging Face after {attempt} attempts: "
                    f"{exc}{hint}"
                )
            print(f"model cache: attempt {attempt} of {attempts} failed ({exc}); retrying")
            time.sleep(attempt * backoff)
    shutil.rmtree(target, ignore_errors=True)
    part.rename(target)
    mark.write_text(f'{{"model": "{model}", "revision": "{revision}", "source": "huggingface"}}\n')
    ready()
finally:
    shutil.rmtree(lock, ignore_errors=True)
"""


# A LoRA adapter the engine loads itself (`models[].lora`) from an `s3://` folder: the bucket step, except
# that no Hugging Face step follows it, so a missing folder fails the pod here, naming it, rather than the
# engine at start.
_HUB_FOLLOWS = 'then echo "model cache: no copy at $src; the Hugging Face step fills the cache"; exit 0; fi'
_NOTHING_FOLLOWS = (
    'then echo "adapter preparation failed: no adapter at $src; copy it there (adapter_config.json and its '
    'weights) or fix models[].adapters[].artifactURL" >&2; exit 1; fi'
)
assert _HUB_FOLLOWS in S3_STEP
ADAPTER_S3_STEP = S3_STEP.replace(_HUB_FOLLOWS, _NOTHING_FOLLOWS)


def step_env(
    *,
    model_id: str,
    revision: str,
    model_dir: str,
    attempts: int,
    lock_timeout_seconds: int,
    backoff_seconds: int = 30,
    lock_poll_seconds: int = 10,
) -> list[dict[str, Any]]:
    values = {
        "MODEL_ID": model_id,
        "MODEL_REVISION": revision,
        "MODEL_DIR": model_dir,
        "ATTEMPTS": str(attempts),
        "BACKOFF_SECONDS": str(backoff_seconds),
        "LOCK_POLL_SECONDS": str(lock_poll_seconds),
        "LOCK_TIMEOUT_SECONDS": str(lock_timeout_seconds),
    }
    return [{"name": k, "value": v} for k, v in values.items()]


# Writers that must own files on a root-owned file system (FSx): root, with every capability dropped,
# so it writes only where root's own permission bits allow.
AS_ROOT = {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False}


def security_context(as_root: bool) -> dict[str, Any]:
    """No privilege escalation and no capabilities; otherwise the pod's user (the engine's uid where
    the engine runs non-root, so the kubelet's runAsNonRoot check passes for these images too)."""
    ctx: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return {**ctx, **AS_ROOT} if as_root else ctx


def _container(
    name: str,
    ref: str,
    command: list[str],
    env: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    as_root: bool,
) -> dict[str, Any]:
    return {
        "name": name,
        "image": ref,
        "command": command,
        # The images' HOME (/root) is not writable by the pod's user; the CLI and the Hub client
        # keep their small caches in /tmp.
        "env": [*env, {"name": "HOME", "value": "/tmp"}],
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": security_context(as_root),
        "resources": rendered(PREPARATION_STEP),
    }


def init_containers(
    *,
    env: list[dict[str, Any]],
    cache_mount: dict[str, Any],
    bucket: Any | None,
    bucket_prefix: str,
    token_secret: str | None,
    images: ImageTable,
    imported: bool = False,
    as_root: bool = False,
) -> list[dict[str, Any]]:
    """The bucket step (when there is a bucket) then the Hugging Face step, in that order, in the
    stack's `model-prep-s3` and `model-prep-hub` images. With `imported` (FSx), the bucket step only
    adopts what the data repository association imported."""
    containers = []
    if bucket is not None:
        s3_env = [
            *env,
            {"name": "MODEL_BUCKET", "value": bucket},
            {"name": "MODEL_PREFIX", "value": bucket_prefix},
            {"name": "CACHE_IMPORTED", "value": "true" if imported else "false"},
        ]
        containers.append(
            _container(
                "model-from-bucket",
                images["model-prep-s3"].ref,
                ["/bin/sh", "-c", S3_STEP],
                s3_env,
                [cache_mount],
                as_root,
            )
        )
    hub_env = list(env)
    mounts = [cache_mount]
    if token_secret:
        hub_env.append({"name": "HF_TOKEN_FILE", "value": f"{TOKEN_DIR}/{TOKEN_KEY}"})
        mounts.append({"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True})
    hub = images["model-prep-hub"].ref
    containers.append(_container("model-from-hub", hub, ["python3", "-c", HUB_STEP], hub_env, mounts, as_root))
    return containers


def adapter_container(
    *,
    name: str,
    source: str,
    revision: str,
    adapter_dir: str,
    cache_mount: dict[str, Any],
    token_secret: str | None,
    images: ImageTable,
    attempts: int,
    lock_timeout_seconds: int,
    as_root: bool = False,
) -> dict[str, Any]:
    """The init container that prepares one adapter into `adapter_dir`, after the weights' steps and
    with their lock, marker and retries: an `s3://` folder by the bucket step (copied, also on FSx: the
    association imports bucket keys at their own paths, not at the adapter's directory), a Hub repository
    (`hf://org/name`) at `revision` by the Hugging Face step."""
    env = step_env(
        model_id=source,
        revision=revision,
        model_dir=adapter_dir,
        attempts=attempts,
        lock_timeout_seconds=lock_timeout_seconds,
    )
    container_name = f"adapter-{name}"[:63].rstrip("-")
    if source.startswith("s3://"):
        bucket, _, key = source[len("s3://") :].partition("/")
        s3_env = [
            *env,
            {"name": "MODEL_BUCKET", "value": bucket},
            {"name": "MODEL_PREFIX", "value": key.rstrip("/")},
            {"name": "CACHE_IMPORTED", "value": "false"},
        ]
        command = ["/bin/sh", "-c", ADAPTER_S3_STEP]
        return _container(container_name, images["model-prep-s3"].ref, command, s3_env, [cache_mount], as_root)
    repo = source.split("://", 1)[1].rstrip("/")
    hub_env = [e if e["name"] != "MODEL_ID" else {"name": "MODEL_ID", "value": repo} for e in env]
    mounts = [cache_mount]
    if token_secret:
        hub_env.append({"name": "HF_TOKEN_FILE", "value": f"{TOKEN_DIR}/{TOKEN_KEY}"})
        mounts.append({"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True})
    hub = images["model-prep-hub"].ref
    return _container(container_name, hub, ["python3", "-c", HUB_STEP], hub_env, mounts, as_root)


def token_volume(secret: str) -> dict[str, Any]:
    """The named Secret's `token` key as a read-only file."""
    return {
        "name": TOKEN_VOLUME,
        "secret": {"secretName": secret, "items": [{"key": TOKEN_KEY, "path": TOKEN_KEY}], "defaultMode": 0o400},
    }


# Streaming (`models[].loadFormat: runai-streamer`): the engine reads the bucket prefix itself, so the
# serving pod copies nothing. It waits (reading only) until the prefix holds the `.prepared` marker
# the fill Job writes last, so a first start does not crash-loop on a half-filled prefix.
BUCKET_WAIT_STEP = r"""set -eu
src="s3://$MODEL_BUCKET/$MODEL_PREFIX/"; waited=0
until aws s3 ls "${src}.prepared" >/dev/null 2>&1; do
  if [ "$waited" -ge "$LOCK_TIMEOUT_SECONDS" ]; then
    echo "model preparation failed: $MODEL_ID@$MODEL_REVISION: no ${src}.prepared after ${waited}s;" \
      "the model's fill Job (label app.kubernetes.io/name=model-fill) fills the prefix: see its logs" >&2
    exit 1
  fi
  echo "model bucket: waiting for ${src}.prepared (the model's fill Job writes it last)"
  sleep "$LOCK_POLL_SECONDS"; waited=$((waited + LOCK_POLL_SECONDS))
done
echo "model bucket: $MODEL_ID@$MODEL_REVISION ready at $src"
"""

# The fill Job's upload, after the Hugging Face step downloaded the revision into $MODEL_DIR: a prefix
# with the marker is done; one already holding safetensors (uploaded by hand) is adopted with the
# marker; otherwise only what the streamer and the engine read goes up (safetensors, config and
# tokenizer files), never `.bin`/`.pt` weights. No safetensors at all: the streamer cannot load the
# model, so the Job fails saying so.
UPLOAD_STEP = r"""set -eu
dst="s3://$MODEL_BUCKET/$MODEL_PREFIX/"; mark="${dst}.prepared"
if aws s3 ls "$mark" >/dev/null 2>&1; then echo "model bucket: $dst already filled"; exit 0; fi
marker() { printf '{"model": "%s", "revision": "%s", "source": "%s"}\n' "$MODEL_ID" "$MODEL_REVISION" "$1" \
  | aws s3 cp --only-show-errors - "$mark"; }
if aws s3 ls "$dst" 2>/dev/null | grep -q '\.safetensors$'; then
  marker "bucket"; echo "model bucket: adopted $dst"; exit 0
fi
if ! ls "$MODEL_DIR"/*.safetensors >/dev/null 2>&1; then
  echo "model preparation failed: $MODEL_ID@$MODEL_REVISION has no *.safetensors weights, and the Run:ai" \
    "streamer loads only safetensors; remove models[].loadFormat to load it from the cache" >&2
  exit 1
fi
attempt=1
until aws s3 sync --only-show-errors --exclude ".prepared" --exclude ".cache/*" --exclude "*.bin" \
    --exclude "*.pt" --exclude "*.pth" --exclude "*.gguf" "$MODEL_DIR/" "$dst"; do
  if [ "$attempt" -ge "$ATTEMPTS" ]; then
    echo "model preparation failed: $MODEL_ID@$MODEL_REVISION to $dst after $attempt attempts" >&2; exit 1
  fi
  sleep $((attempt * BACKOFF_SECONDS)); attempt=$((attempt + 1))
done
marker "huggingface"
echo "model bucket: $MODEL_ID@$MODEL_REVISION uploaded to $dst"
"""

STAGING_VOLUME = "staging"


def bucket_wait(*, env: list[dict[str, Any]], bucket: Any, bucket_prefix: str, images: ImageTable) -> dict[str, Any]:
    """The streamed model's one init container: wait, read-only, for its prefix's marker."""
    s3_env = [
        *env,
        {"name": "MODEL_BUCKET", "value": bucket},
        {"name": "MODEL_PREFIX", "value": bucket_prefix},
    ]
    return _container(
        "model-in-bucket", images["model-prep-s3"].ref, ["/bin/sh", "-c", BUCKET_WAIT_STEP], s3_env, [], False
    )


def fill_job(
    *,
    name: str,
    namespace: str,
    labels: dict[str, str],
    env: list[dict[str, Any]],
    bucket: Any,
    bucket_prefix: str,
    token_secret: str | None,
    service_account: str,
    images: ImageTable,
    staging_gib: int | None,
    node_selector: dict[str, str],
    tolerations: list[dict[str, Any]],
) -> dict[str, Any]:
    """The one-time fill of a streamed model's bucket prefix: the Hugging Face step downloads the
    revision into a scratch volume, then the upload step copies it to the prefix, as the writer account
    (write access to the streamed prefixes only). `pulumi up` does not wait for it (skipAwait): the
    serving pods wait for the marker instead. Completed Jobs are kept, so a re-run is explicit. It
    runs on the model's own pool (`node_selector`, `tolerations`), whose nodes have the disk for the
    weights, as the preparation init containers of a copied model do; the system nodes have not."""
    hub, upload = _fill_containers(
        env=env,
        bucket=bucket,
        bucket_prefix=bucket_prefix,
        token_secret=token_secret,
        images=images,
        staging_gib=staging_gib,
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            # Not awaited: the serving pods' preparation step waits for the marker this Job's upload
            # writes, so the model's own workload (and its await) gates readiness.
            "annotations": skip_await(),
        },
        "spec": {
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": labels},
                "spec": _fill_pod_spec(
                    service_account=service_account,
                    node_selector=node_selector,
                    tolerations=tolerations,
                    hub=hub,
                    upload=upload,
                    volumes=_fill_volumes(token_secret, staging_gib),
                ),
            },
        },
    }


def _fill_containers(
    *,
    env: list[dict[str, Any]],
    bucket: Any,
    bucket_prefix: str,
    token_secret: str | None,
    images: ImageTable,
    staging_gib: int | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fill Job's two steps: `model-from-hub` downloads into the scratch volume, `model-to-bucket`
    uploads from it; both with a read-only root and room on the node's disk for the weights."""
    mount: dict[str, Any] = {"name": STAGING_VOLUME, "mountPath": "/staging"}
    hub_env = list(env)
    hub_mounts: list[dict[str, Any]] = [mount]
    if token_secret:
        hub_env.append({"name": "HF_TOKEN_FILE", "value": f"{TOKEN_DIR}/{TOKEN_KEY}"})
        hub_mounts.append({"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True})
    hub = _container(
        "model-from-hub", images["model-prep-hub"].ref, ["python3", "-c", HUB_STEP], hub_env, hub_mounts, False
    )
    up_env = [*env, {"name": "MODEL_BUCKET", "value": bucket}, {"name": "MODEL_PREFIX", "value": bucket_prefix}]
    upload = _container(
        "model-to-bucket", images["model-prep-s3"].ref, ["/bin/sh", "-c", UPLOAD_STEP], up_env, [mount], False
    )
    # A read-only root: both steps write only to the scratch volume and to HOME (/tmp, its own emptyDir).
    for c in (hub, upload):
        c["securityContext"]["readOnlyRootFilesystem"] = True
        c["volumeMounts"].append({"name": "tmp", "mountPath": "/tmp"})
        if staging_gib:
            c["resources"]["requests"]["ephemeral-storage"] = f"{staging_gib}Gi"
    return hub, upload


def _fill_volumes(token_secret: str | None, staging_gib: int | None) -> list[dict[str, Any]]:
    """The scratch volume (bounded by `staging_gib` when given), the token file, and /tmp."""
    volumes: list[dict[str, Any]] = [
        {"name": STAGING_VOLUME, "emptyDir": {"sizeLimit": f"{staging_gib}Gi"} if staging_gib else {}}
    ]
    if token_secret:
        volumes.append(token_volume(token_secret))
    volumes.append({"name": "tmp", "emptyDir": {}})
    return volumes


def _fill_pod_spec(
    *,
    service_account: str,
    node_selector: dict[str, str],
    tolerations: list[dict[str, Any]],
    hub: dict[str, Any],
    upload: dict[str, Any],
    volumes: list[dict[str, Any]],
) -> dict[str, Any]:
    """The fill Job's pod: non-root, on the model's own pool, the download before the upload."""
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "fsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "nodeSelector": dict(node_selector),
        **({"tolerations": list(tolerations)} if tolerations else {}),
        "initContainers": [hub],
        "containers": [upload],
        "volumes": volumes,
    }
