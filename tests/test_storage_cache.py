"""The cache each serving pod gets per storage choice, the startup budget, and model preparation's
idempotency marker, lock and bounded retries (the scripts are run here against fake tools)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from components.engines.workload import startup_probe
from components.storage import prepare
from components.storage.cache import CacheContext, cache_mount
from stacks.coldstart import probe_seconds
from stacks.config import ModelSection, StackConfig
from stacks.config.storage import StorageSection
from stacks.load import ROOT
from stacks.pipeline import check_sections
from stacks.resolve import own_platform
from stacks.resolve.models import model_entry, place
from stacks.resolved import ResolvedModel
from tests.builders import CATALOG
from tests.conftest import sections_of


def config(name: str = "dev") -> StackConfig:
    path = ROOT / "Pulumi.dev.yaml" if name == "dev" else ROOT / "stacks" / "examples" / f"Pulumi.{name}.yaml"
    return check_sections(sections_of(path), "us-west-2").config


def served(cfg: StackConfig, model: ModelSection) -> ResolvedModel:
    """The model resolved on the stack's own platform (its pool, its engine's facts)."""
    view = own_platform(cfg)
    resolved = place(model_entry(0, model, view.addons, None), view, routed=True)
    assert resolved is not None
    return resolved


def mount_for(name: str, model_index: int = 0, **ctx):
    cfg = config(name)
    model = cfg.models[model_index]
    context = CacheContext(storage=cfg.storage, bucket="acme-models", reader_service_account="model-reader", **ctx)
    return cache_mount(context, served(cfg, model), CATALOG), model


def test_a_shared_cache_mounts_the_namespace_claim_and_prepares_into_it():
    mount, model = mount_for("storage-efs", claim_name="model-cache")
    assert mount.volumes[0] == {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache"}}
    assert mount.volume_mounts == [{"name": "model-cache", "mountPath": "/models"}]
    assert mount.model_dir == f"/models/platform/{model.name}/{model.revision}", (
        "weights per owner, model and pinned revision: the cache mirrors the bucket's layout"
    )
    assert mount.ephemeral_storage is None, "the weights are on the claim, not on the node's disk"
    assert not any("ephemeral" in v for v in mount.volumes), "one claim shared by every replica, none per replica"
    assert [c["name"] for c in mount.init_containers] == ["model-from-bucket", "model-from-hub"]
    assert mount.service_account == "model-reader", "pods read the bucket only through Pod Identity"


def test_fsx_mounts_its_static_claim_and_adopts_what_its_bucket_link_imported():
    # The example's second model: its first streams from the bucket and has no cache.
    mount, _ = mount_for("storage-fsx", model_index=1, claim_name="model-cache")
    assert mount.volumes[0]["persistentVolumeClaim"]["claimName"] == "model-cache"
    bucket_step = {e["name"]: e["value"] for e in mount.init_containers[0]["env"]}
    assert bucket_step["CACHE_IMPORTED"] == "true", "FSx already links the bucket: nothing is copied twice"


def test_a_local_cache_is_an_emptydir_sized_to_the_model_with_a_matching_request():
    mount, _ = mount_for("storage-local")
    volume = mount.volumes[0]
    # 8B bf16 = 16e9 bytes, +25% headroom = 18.6 GiB -> 19Gi
    assert volume == {"name": "model-cache", "emptyDir": {"sizeLimit": "19Gi"}}
    assert mount.ephemeral_storage == "19Gi", "the scheduler must place the pod where the NVMe has room"


def test_no_cache_uses_an_existing_claim_when_one_is_named():
    storage = StorageSection.model_validate(
        {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteMany"}}
    )
    cfg = config().model_copy(update={"storage": storage})
    model = cfg.models[0]
    mount = cache_mount(CacheContext(storage=storage), served(cfg, model), CATALOG)
    assert mount.volumes[0]["persistentVolumeClaim"]["claimName"] == "weights"


def test_without_a_bucket_only_the_hub_step_runs():
    cfg = config()
    model = cfg.models[0]
    mount = cache_mount(CacheContext(storage=StorageSection()), served(cfg, model), CATALOG)
    assert [c["name"] for c in mount.init_containers] == ["model-from-hub"]


def test_the_hugging_face_token_is_a_mounted_secret_file_never_an_env_value():
    mount, model = mount_for("storage-efs", claim_name="model-cache")
    secret = next(v for v in mount.volumes if v["name"] == "hf-token")
    assert secret["secret"]["secretName"] == model.secrets.hugging_face_token
    hub = mount.init_containers[-1]
    env = {e["name"]: e.get("value") for e in hub["env"]}
    assert env["HF_TOKEN_FILE"] == "/var/run/secrets/huggingface/token"
    assert "HF_TOKEN" not in env and all("valueFrom" not in e for e in hub["env"])
    assert {"name": "hf-token", "mountPath": "/var/run/secrets/huggingface", "readOnly": True} in hub["volumeMounts"]


def test_preparation_pins_the_revision_and_bounds_its_attempts():
    mount, model = mount_for("storage-efs", claim_name="model-cache")
    for container in mount.init_containers:
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["MODEL_REVISION"] == model.revision
        assert env["ATTEMPTS"] == "3"
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError", "the failure reason shows"


def test_neuron_compiled_artifacts_live_apart_from_the_weights():
    mount, model = mount_for("dev", model_index=1, claim_name="model-cache")
    # On the shared cache the compiled tree is the model's compile key (compileCache, on by default there):
    # owner, model, revision, the engine image's tag and the parallel shape (tests/test_fast_path.py).
    image = "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    assert mount.compiled_dir == f"/models/_compile/platform/{model.name}/{model.revision}/{image}/tp8-pp1"
    assert not mount.compiled_dir.startswith(mount.model_dir)
    assert {"name": "NEURON_COMPILED_ARTIFACTS", "value": mount.compiled_dir} in mount.env


def test_engines_that_fetch_their_own_artifacts_get_the_volume_without_preparation():
    cfg = config()
    raw = cfg.models[0].model_dump(by_alias=True)
    raw.update(engine="ollama", secrets={}, routing=None)
    model = ModelSection.model_validate(raw)
    mount = cache_mount(CacheContext(storage=cfg.storage, claim_name="model-cache"), served(cfg, model), CATALOG)
    assert mount.volumes and not mount.init_containers


def test_a_startup_probe_covers_its_allowance_in_whole_periods():
    probe = startup_probe("/health", 8000, probe_seconds(605))
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 605, "a probe, not a sleep, covers the load"


# --- the preparation scripts, run for real against fake tools -----------------------------------------


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {
        e["name"]: e["value"]
        for e in prepare.step_env(
            model_id="acme/tiny",
            revision="abc123",
            model_dir=str(tmp / "cache" / "tiny" / "abc123"),
            attempts=3,
            lock_timeout_seconds=60,
            backoff_seconds=0,
            lock_poll_seconds=1,
        )
    }
    return {**os.environ, **env, **extra}


def _fake_aws(tmp: Path, fail_syncs: int) -> Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (tmp / "fails").write_text(str(fail_syncs))
    script = f"""#!/bin/sh
echo "$@" >> {tmp}/calls
case "$1 $2" in
  "s3 ls") exit 0 ;;
  "s3 sync")
    left=$(cat {tmp}/fails)
    if [ "$left" -gt 0 ]; then echo $((left - 1)) > {tmp}/fails; echo "network error" >&2; exit 2; fi
    mkdir -p "$5"; echo weights > "$5/model.safetensors"; exit 0 ;;
esac
exit 9
"""
    aws = bin_dir / "aws"
    aws.write_text(script)
    aws.chmod(0o755)
    return bin_dir


def _run_s3(tmp: Path, bin_dir: Path, imported: bool = False) -> subprocess.CompletedProcess[str]:
    env = _env(
        tmp,
        MODEL_BUCKET="acme-models",
        MODEL_PREFIX="tiny/abc123",
        CACHE_IMPORTED="true" if imported else "false",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    )
    return subprocess.run(["/bin/sh", "-c", prepare.S3_STEP], env=env, capture_output=True, text=True, timeout=30)


def test_the_bucket_step_retries_then_writes_the_marker_and_is_idempotent(tmp_path):
    bin_dir = _fake_aws(tmp_path, fail_syncs=2)
    first = _run_s3(tmp_path, bin_dir)
    assert first.returncode == 0, first.stderr
    target = tmp_path / "cache" / "tiny" / "abc123"
    assert (target / "model.safetensors").read_text() == "weights\n"
    assert '"revision": "abc123"' in (target / ".prepared").read_text(), "the marker names model and revision"
    assert not (tmp_path / "cache" / "tiny" / "abc123.lock").exists(), "the lock is released"
    syncs = [c for c in (tmp_path / "calls").read_text().splitlines() if c.startswith("s3 sync")]
    assert len(syncs) == 3, "two failures then a success"
    second = _run_s3(tmp_path, bin_dir)
    assert second.returncode == 0 and "ready" in second.stdout
    assert len((tmp_path / "calls").read_text().splitlines()) == 4, "a prepared cache is never fetched again"


def test_the_bucket_step_gives_up_after_its_attempts_with_a_clear_message(tmp_path):
    bin_dir = _fake_aws(tmp_path, fail_syncs=10)
    result = _run_s3(tmp_path, bin_dir)
    assert result.returncode == 1
    assert "model preparation failed: acme/tiny@abc123" in result.stderr and "after 3 attempts" in result.stderr
    assert not (tmp_path / "cache" / "tiny" / "abc123" / ".prepared").exists(), "no marker on failure"
    assert not (tmp_path / "cache" / "tiny" / "abc123.partial").exists(), "no half-written weights left behind"


def _fake_hub(tmp: Path, fail: int) -> Path:
    pkg = tmp / "fakehub" / "huggingface_hub"
    pkg.mkdir(parents=True)
    (tmp / "hub-fails").write_text(str(fail))
    (pkg / "__init__.py").write_text(
        f"""
from pathlib import Path
def snapshot_download(repo_id, revision, local_dir, token=None):
    state = Path({str(tmp)!r}) / "hub-fails"
    with open(Path({str(tmp)!r}) / "hub-calls", "a") as f:
        f.write(f"{{repo_id}} {{revision}} {{token}}\\n")
    left = int(state.read_text())
    if left:
        state.write_text(str(left - 1))
        raise OSError("503 from the hub")
    Path(local_dir).mkdir(parents=True, exist_ok=True)
    (Path(local_dir) / "config.json").write_text("{{}}")
"""
    )
    return tmp / "fakehub"


def _run_hub(tmp: Path, fake: Path, token: str | None) -> subprocess.CompletedProcess[str]:
    extra = {"PYTHONPATH": str(fake)}
    if token:
        (tmp / "token").write_text(token + "\n")
        extra["HF_TOKEN_FILE"] = str(tmp / "token")
    return subprocess.run(
        [sys.executable, "-c", prepare.HUB_STEP], env=_env(tmp, **extra), capture_output=True, text=True, timeout=30
    )


def test_the_hub_step_reads_the_token_file_retries_and_is_idempotent(tmp_path):
    fake = _fake_hub(tmp_path, fail=1)
    first = _run_hub(tmp_path, fake, token="hf_secret")
    assert first.returncode == 0, first.stderr
    calls = (tmp_path / "hub-calls").read_text().splitlines()
    assert calls == ["acme/tiny abc123 hf_secret"] * 2, "pinned revision, token from the file, one retry"
    assert (tmp_path / "cache" / "tiny" / "abc123" / ".prepared").is_file()
    assert _run_hub(tmp_path, fake, token="hf_secret").returncode == 0
    assert len((tmp_path / "hub-calls").read_text().splitlines()) == 2, "a prepared cache is never fetched again"


def test_the_hub_step_fails_clearly_after_its_attempts(tmp_path):
    fake = _fake_hub(tmp_path, fail=5)
    result = _run_hub(tmp_path, fake, token=None)
    assert result.returncode == 1
    assert "after 3 attempts" in result.stderr and "huggingFaceToken" in result.stderr
    assert not (tmp_path / "cache" / "tiny" / "abc123.lock").exists()


def test_a_waiting_filler_takes_over_a_lock_whose_holder_died(tmp_path):
    fake = _fake_hub(tmp_path, fail=0)
    (tmp_path / "cache" / "tiny").mkdir(parents=True)
    (tmp_path / "cache" / "tiny" / "abc123.lock").mkdir()
    env = _env(tmp_path, PYTHONPATH=str(fake), LOCK_TIMEOUT_SECONDS="1")
    result = subprocess.run(
        [sys.executable, "-c", prepare.HUB_STEP], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert "taking over" in result.stdout
    assert (tmp_path / "cache" / "tiny" / "abc123" / ".prepared").is_file()


def test_on_fsx_the_bucket_step_adopts_imported_files_without_copying(tmp_path):
    bin_dir = _fake_aws(tmp_path, fail_syncs=0)
    target = tmp_path / "cache" / "tiny" / "abc123"
    empty = _run_s3(tmp_path, bin_dir, imported=True)
    assert empty.returncode == 0 and not (target / ".prepared").exists(), "nothing imported: the hub step fills"
    target.mkdir(parents=True)
    (target / "model.safetensors").write_text("imported from s3")
    result = _run_s3(tmp_path, bin_dir, imported=True)
    assert result.returncode == 0, result.stderr
    assert '"source": "fsx-import"' in (target / ".prepared").read_text()
    assert not (tmp_path / "calls").exists(), "no S3 call: FSx loads the content on first read"
