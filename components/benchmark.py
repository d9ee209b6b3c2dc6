"""SLO benchmark Jobs (`models[].benchmark`): guidellm 0.8.1 against a model's gateway route. Pure builders.

Per model a one-off Job after `pulumi up` and, with `benchmark.schedule`, a CronJob running the same pod
on that schedule (a schedule without `gate` is the CronJob alone: `runs_once`). A model with a canary is
measured at its stable revision (or each revision, `benchmark.revisions: each`) through that revision's
own rule on the model's route (stacks/resolved.py `measured_revisions`), never the weighted blend; the
result files, guidellm's labels and the verdict name the revision. The pod runs as the bucket reader
(`model-reader`: reads its owner's prefix, and writes only under that prefix's `_benchmarks/`):
1. `tokenizer` (aws-cli) copies the tokenizer files from the model's bucket prefix, so guidellm never
   fetches one from the Hugging Face Hub (its default);
2. `guidellm` runs one benchmark per concurrency of the sweep through `https://<gateway host>/<model>`
   with the client key read from its mounted Secret file and exported at exec time
   (components/secretfiles.py), never on argv or in the pod spec, then writes the verdict against
   the model's `slo` (components/benchmark_verdict.py);
3. `upload` (aws-cli) copies the results to `s3://<bucket>/<owner prefix>/_benchmarks/<model>/<revision>/
   <UTC time>/` (`platform` or `teams/<team>`: stacks/resolved.py `owner_prefix`) and exits non-zero
   when the verdict is a miss, which fails the Job.
The one-off Job's name carries a digest of the model, revision, images, settings and objectives, so a
change to any of them is a new Job (a Job's pod template is immutable); the CronJob keeps its name and
takes a new template in place, for its next run. Gated Jobs are awaited by
pulumi-kubernetes (its Job await logic: `pulumi up` fails when the Job fails); others carry
`pulumi.com/skipAwait`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.awaits import await_job, skip_await
from stacks.config.benchmark import Benchmark
from stacks.config.slo import Slo
from stacks.helper_pods import (
    BENCH_GUIDELLM,
    BENCH_HUB_TOKENIZER,
    BENCH_TOKENIZER,
    BENCH_UPLOAD,
    bench_runs_once,
    rendered,
)
from stacks.naming import MANAGED_BY, TOKEN, physical, scanner_waivers
from stacks.resolved import READER_SERVICE_ACCOUNT, ImageTable, ResolvedModel

from . import benchmark_verdict, secretfiles
from .k8s import register
from .storage.prepare import TOKEN_DIR, TOKEN_KEY, TOKEN_VOLUME, token_volume

# The bucket reader: it reads the tokenizer and may write only under its owner's `_benchmarks/`
# (components/storage/storage_iam.py reader_policy).
BENCH_SERVICE_ACCOUNT = READER_SERVICE_ACCOUNT
# Never the model label: the model's Service and NetworkPolicy select pods by it.
BENCH_LABEL = "inference-platform.io/benchmark"
GUIDELLM = "/opt/app-root/bin/guidellm"
PYTHON = "/opt/app-root/bin/python3"
RESULTS = "/results"
TOKENIZER = "/tokenizer"
KEY_DIR = "/var/run/secrets/benchmark"
KEY = "api-key"  # the key the named Secret must hold
# guidellm reads the backend's key from its settings (pydantic-settings, prefix GUIDELLM__, delimiter __).
KEY_ENV = "GUIDELLM__SPEC__BACKEND__API_KEY"
# Tokenizer files of a Hugging Face repository (tokenizer.json, tokenizer_config.json, vocab, merges,
# sentencepiece models) and the small configs a tokenizer load reads; never the weights.
TOKENIZER_FILES = ("tokenizer*", "*.json", "*.model", "*.txt", "*.tiktoken")
DEADLINE_SECONDS = 3 * 3600
# The scheduled benchmark: a tick the CronJob controller missed by more than this is skipped (the next
# one runs), and the last HISTORY successful and failed runs are kept.
STARTING_DEADLINE_SECONDS = 3600
HISTORY = 3
CRON_JOB_NAME_LIMIT = 52


@dataclass(frozen=True, kw_only=True)
class BenchmarksArgs:
    models: Sequence[ResolvedModel]
    hostname: str  # the front door's listener host
    bucket: pulumi.Input[str]  # the model bucket's name
    images: ImageTable
    provider: k8s.Provider
    # The models, their routes and namespaces: a Job measures only what is already served.
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


def objectives(slo: Slo | None) -> dict[str, float]:
    """The objectives the verdict holds (guidellm measures TTFT and ITL; the others stay alerts)."""
    if slo is None:
        return {}
    found = {"ttftSeconds": slo.ttft_seconds, "itlSeconds": slo.itl_seconds}
    return {k: v for k, v in found.items() if v is not None}


def target(model: ResolvedModel, hostname: str) -> str:
    """The model's route through the front door (guidellm appends /v1/chat/completions): `/<name>`, or
    `/<namespace>/<name>` for a team's model (its resolved path prefix)."""
    return f"https://{hostname}{model.path_prefix}"


def guidellm_runs(model: ResolvedModel, bench: Benchmark, hostname: str) -> list[dict[str, Any]]:
    """One guidellm argv per measured revision and concurrency (ResolvedModel.measured_revisions: the
    model's route, or with a canary each revision's own pinned rule). Every flag is in `guidellm run
    --help` (0.8.1), the backend spec keys in its backends/openai/http.py; validate_backend=false, since
    validation first sends GET {target}/health and needs a 2xx, and the model's route serves no /health.
    A canaried model's results are named by revision (`stable-concurrency-8.json`) and carry it as
    guidellm labels (`--label`, kept in the result's metadata)."""
    runs = []
    for measured in model.measured_revisions:
        url = f"https://{hostname}{measured.path_prefix}"
        backend = f"kind=openai_http,target={url},model={model.name},validate_backend=false"
        named = f"{measured.label}-" if measured.label else ""
        labels = (
            ["--label", f"measured={measured.label}", "--label", f"revision={measured.commit}"]
            if measured.label
            else []
        )
        for level in bench.concurrency:
            output = f"{RESULTS}/{named}concurrency-{level}.json"
            argv = [
                GUIDELLM,
                "run",
                "--backend",
                backend,
                "--tokenizer",
                f"kind=huggingface_auto,model={TOKENIZER}",
                "--profile",
                f"kind=concurrent,streams={level}",
                "--data",
                f"kind=synthetic_text,prompt_tokens={bench.input_tokens},output_tokens={bench.output_tokens}",
                "--constraint",
                f"kind=max_requests,count={bench.requests}",
                "--output",
                f"kind=json,path={output}",
                *labels,
                "--disable-console-interactive",
            ]
            run = {"concurrency": level, "output": output, "argv": argv}
            runs.append(run | ({"revision": measured.label, "commit": measured.commit} if measured.label else {}))
    return runs


def settings_digest(model: ResolvedModel, images: ImageTable) -> str:
    """What makes a new Job: the model, its revision, the images, the benchmark and its objectives."""
    bench = model.config.benchmark
    assert bench is not None
    facts: dict[str, Any] = {
        "model": model.config.model,
        "revision": model.config.revision,
        "images": [images["guidellm"].ref, images["model-prep-s3"].ref],
        # Not the schedule (the CronJob's, not the Job's pod) nor `revisions` (its effect is `measured`).
        "benchmark": bench.model_dump(mode="json", by_alias=True, exclude={"schedule", "time_zone", "revisions"}),
        "slo": objectives(model.config.slo),
        "quantile": model.config.slo.p if model.config.slo else None,
    }
    pinned = [(m.label, m.commit) for m in model.measured_revisions if m.label]
    if pinned:
        # A canaried model's Job measures these revisions through their own rules.
        facts["measured"] = pinned
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:10]


def job_name(model: ResolvedModel, images: ImageTable) -> str:
    return physical("bench", model.name, settings_digest(model, images))


def results_prefix(model: ResolvedModel) -> str:
    """`<owner prefix>/_benchmarks/<model>/<revision>` (resolved): the upload adds the UTC time of the run."""
    return model.cache.results_prefix


def upload_script(job: str, subpath: str, failed: str) -> str:
    """The upload step of a results Job (this benchmark's, the acceptance check's): copies /results under
    the model's prefix at `subpath` + a timestamp, and fails the Job unless the check left /results/passed."""
    return rf"""set -eu
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
dest="s3://$BENCH_BUCKET/$BENCH_PREFIX/{subpath}$stamp/"
aws s3 cp --recursive --only-show-errors /results/ "$dest"
echo "{job}: results at $dest"
if [ -f /results/passed ]; then exit 0; fi
echo "{job}: {failed}:" >&2
cat /results/verdict.json >&2 || true
exit 1
"""


UPLOAD = upload_script("benchmark", "", "the SLO was missed (or nothing was measured)")


def _tokenizer_script(from_hub: bool) -> str:
    """Copy the tokenizer and config files from the model's bucket prefix. A model the platform
    fetches from the Hub may have none there: the next init container takes them from the Hub."""
    includes = " ".join(f"--include '{p}'" for p in TOKENIZER_FILES)
    missing = (
        'echo "benchmark: no tokenizer files under s3://$BENCH_BUCKET/$MODEL_PREFIX/; taking them from the Hub"'
        if from_hub
        else 'echo "benchmark: no tokenizer files under s3://$BENCH_BUCKET/$MODEL_PREFIX/; copy the model there '
        'first" >&2; exit 1'
    )
    return (
        'set -eu\naws s3 cp --recursive --only-show-errors "s3://$BENCH_BUCKET/$MODEL_PREFIX/" /tokenizer/ '
        f"--exclude '*' {includes}\n"
        f'[ -n "$(ls -A /tokenizer)" ] || {{ {missing}; }}\n'
    )


# The Hub fallback, in guidellm's image (huggingface_hub comes with its transformers): the model's
# own pinned revision, only the tokenizer and config files, the token (a gated repo) from its file
# through HF_TOKEN_PATH, which huggingface_hub reads itself.
HUB_TOKENIZER = """
import json, os, pathlib, sys
if any(pathlib.Path("/tokenizer").iterdir()):
    sys.exit(0)
from huggingface_hub import snapshot_download
snapshot_download(os.environ["BENCH_REPO"], revision=os.environ["BENCH_REVISION"], local_dir="/tokenizer",
                  allow_patterns=json.loads(os.environ["BENCH_PATTERNS"]))
print("benchmark: tokenizer taken from the Hub at", os.environ["BENCH_REVISION"])
"""


def _security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}


def _template(model: ResolvedModel, hostname: str, bucket: Any, images: ImageTable) -> dict[str, Any]:
    """The benchmark's pod template, the same for the one-off Job and the scheduled one."""
    bench = model.config.benchmark
    assert bench is not None, "only for a model with benchmark"
    repo = model.hub_repo
    key = secretfiles.SecretFile(env=KEY_ENV, secret=bench.api_key_secret, key=KEY, volume="api-key", directory=KEY_DIR)
    work, aws_env = _work_mounts(), _aws_env(bucket)  # shared by the containers below
    init = [_tokenizer_container(model, aws_env, images, from_hub=repo is not None)]
    token_volumes: list[dict[str, Any]] = []
    if repo is not None:
        secret = model.config.secrets.hugging_face_token
        init.append(_hub_tokenizer_container(model, repo, images, secret))
        token_volumes = [token_volume(secret)] if secret else []
    pod = _pod_spec(
        init=[*init, _guidellm_container(model, bench, hostname, images, key, work)],
        upload=_upload_container(model, aws_env, work, images),
        volumes=[*secretfiles.volumes([key]), *token_volumes],
    )
    return {"metadata": {"labels": _labels(model)}, "spec": pod}


def _labels(model: ResolvedModel) -> dict[str, str]:
    return {**MANAGED_BY, "app.kubernetes.io/name": "benchmark", BENCH_LABEL: model.name}


def _job_spec(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "backoffLimit": 0,
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        # No ttlSecondsAfterFinished: a Job the cluster deleted would be recreated, and so re-run, by
        # the next `pulumi up --refresh`. The Job stays until a new name replaces it.
        "template": template,
    }


def runs_once(model: ResolvedModel) -> bool:
    """The one-off Job after `pulumi up`: without a schedule, or with a gate (only a Job `pulumi up`
    awaits can fail it); a schedule alone is the CronJob only."""
    bench = model.config.benchmark
    return bench is not None and bench_runs_once(bench)


def job(model: ResolvedModel, hostname: str, bucket: Any, images: ImageTable) -> dict[str, Any]:
    """The benchmark Job for one model (`bucket`: the model bucket's name, a plain or Pulumi value)."""
    bench = model.config.benchmark
    assert bench is not None, "only for a model with benchmark"
    name = job_name(model, images)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": model.namespace,
            "labels": _labels(model),
            "annotations": _annotations(bench),
        },
        "spec": _job_spec(_template(model, hostname, bucket, images)),
    }


def cron_job_name(model: ResolvedModel) -> str:
    """`bench-<model>-scheduled`: a fixed name, since a CronJob's template may change in place. Cut to 52
    characters, the API server's limit for a CronJob (its Jobs' names add 11)."""
    return physical("bench", model.name, "scheduled", limit=CRON_JOB_NAME_LIMIT)


def cron_job(model: ResolvedModel, hostname: str, bucket: Any, images: ImageTable) -> dict[str, Any]:
    """The scheduled benchmark (`benchmark.schedule`): the Job's own pod at every tick, never two at
    once (Forbid: a run still going skips the next), a tick missed by more than STARTING_DEADLINE_SECONDS
    (the controller down, say) skipped rather than run late, the last runs of each outcome kept to read
    their logs. Each run's upload adds its own UTC time to the results prefix, so no run overwrites
    another."""
    bench = model.config.benchmark
    assert bench is not None and bench.schedule is not None, "only for a scheduled benchmark"
    spec: dict[str, Any] = {"schedule": bench.schedule}
    if bench.time_zone is not None:
        spec["timeZone"] = bench.time_zone
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": cron_job_name(model),
            "namespace": model.namespace,
            "labels": _labels(model),
            "annotations": _waivers(),
        },
        "spec": spec
        | {
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": HISTORY,
            "failedJobsHistoryLimit": HISTORY,
            "jobTemplate": {
                "metadata": {"labels": _labels(model)},
                "spec": _job_spec(_template(model, hostname, bucket, images)),
            },
        },
    }


def _waivers() -> dict[str, str]:
    """The scanner waiver for the pod's uid (on the Job and on the CronJob)."""
    return scanner_waivers(
        {
            "CKV_K8S_40": "runs as uid 1001, the non-root user guidellm's image is built for (the aws CLI runs as "
            "anyone); a uid shared with a host user matters only through host namespaces or hostPath volumes, and "
            "the pod has neither"
        }
    )


def _annotations(bench: Benchmark) -> dict[str, str]:
    """The Job's annotations: the scanner waiver for its uid; skipAwait unless the Job gates `pulumi up`."""
    annotations = _waivers()
    if bench.gate:
        # `pulumi up` fails with the Job: the await outlasts its whole run (activeDeadlineSeconds).
        return annotations | await_job(DEADLINE_SECONDS)
    # Nothing waits for an ungated benchmark: its verdict goes to the bucket, and the model it measures
    # was awaited already (the Job depends on it).
    return annotations | skip_await()


def _work_mounts() -> list[dict[str, Any]]:
    """The results and scratch volumes, mounted by guidellm and the upload."""
    return [{"name": "results", "mountPath": RESULTS}, {"name": "tmp", "mountPath": "/tmp"}]


def _aws_env(bucket: Any) -> list[dict[str, Any]]:
    """What the aws-cli containers share: the bucket and a writable HOME."""
    return [
        {"name": "BENCH_BUCKET", "value": bucket},
        {"name": "HOME", "value": "/tmp"},
    ]


def _guidellm_container(
    model: ResolvedModel,
    bench: Benchmark,
    hostname: str,
    images: ImageTable,
    key: secretfiles.SecretFile,
    work: list[dict[str, Any]],
) -> dict[str, Any]:
    """`guidellm`: the sweep and the verdict (components/benchmark_verdict.py), the client key from its file."""
    slo = model.config.slo
    return {
        "name": "guidellm",
        "image": images["guidellm"].ref,
        "command": ["sh", "-c", secretfiles.exec_script([key], f'{PYTHON} -c "$BENCH_SCRIPT"'), "sh"],
        "env": [
            {"name": "BENCH_SCRIPT", "value": inspect.getsource(benchmark_verdict)},
            {"name": "BENCH_RUNS", "value": json.dumps(guidellm_runs(model, bench, hostname))},
            {"name": "BENCH_SLO", "value": json.dumps(objectives(slo))},
            {"name": "BENCH_QUANTILE", "value": str(slo.p if slo else 0.95)},
            {"name": "BENCH_RESULTS", "value": RESULTS},
            {"name": "HOME", "value": "/tmp"},
            # The root file system is read-only: guidellm's log file (`guidellm env`) and the Hugging Face
            # cache go to /tmp, and the Hub is never asked (the tokenizer is the local copy).
            {"name": "GUIDELLM__LOGGING__LOG_FILE", "value": "/tmp/guidellm.log"},
            {"name": "HF_HOME", "value": "/tmp/hf"},
            {"name": "HF_HUB_OFFLINE", "value": "1"},
        ],
        "volumeMounts": [
            *work,
            {"name": "tokenizer", "mountPath": TOKENIZER, "readOnly": True},
            *secretfiles.mounts([key]),
        ],
        "securityContext": _security(),
        "resources": rendered(BENCH_GUIDELLM),
    }


def _tokenizer_container(
    model: ResolvedModel, aws_env: list[dict[str, Any]], images: ImageTable, *, from_hub: bool
) -> dict[str, Any]:
    """`tokenizer`: copies the tokenizer files from the model's bucket prefix."""
    return {
        "name": "tokenizer",
        "image": images["model-prep-s3"].ref,
        "command": ["sh", "-c", _tokenizer_script(from_hub)],
        "env": [*aws_env, {"name": "MODEL_PREFIX", "value": model.cache.bucket_prefix}],
        "volumeMounts": [{"name": "tokenizer", "mountPath": TOKENIZER}, {"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": _security(),
        "resources": rendered(BENCH_TOKENIZER),
    }


def _hub_tokenizer_container(model: ResolvedModel, repo: str, images: ImageTable, secret: str | None) -> dict[str, Any]:
    """`tokenizer-from-hub`: the Hub fallback (HUB_TOKENIZER) when the bucket has no tokenizer files;
    `secret`: the model's Hugging Face token Secret, if any."""
    token_env = [{"name": "HF_TOKEN_PATH", "value": f"{TOKEN_DIR}/{TOKEN_KEY}"}] if secret else []
    return {
        "name": "tokenizer-from-hub",
        "image": images["guidellm"].ref,
        "command": [PYTHON, "-c", HUB_TOKENIZER],
        "env": [
            {"name": "BENCH_REPO", "value": repo},
            {"name": "BENCH_REVISION", "value": model.config.revision},
            {"name": "BENCH_PATTERNS", "value": json.dumps(list(TOKENIZER_FILES))},
            {"name": "HOME", "value": "/tmp"},
            {"name": "HF_HOME", "value": "/tmp/hf"},
            *token_env,
        ],
        "volumeMounts": [
            {"name": "tokenizer", "mountPath": TOKENIZER},
            {"name": "tmp", "mountPath": "/tmp"},
            *([{"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True}] if secret else []),
        ],
        "securityContext": _security(),
        "resources": rendered(BENCH_HUB_TOKENIZER),
    }


def _upload_container(
    model: ResolvedModel, aws_env: list[dict[str, Any]], work: list[dict[str, Any]], images: ImageTable
) -> dict[str, Any]:
    """`upload`: copies the results to the bucket and fails the Job on a missed SLO (UPLOAD)."""
    return {
        "name": "upload",
        "image": images["model-prep-s3"].ref,
        "command": ["sh", "-c", UPLOAD],
        "env": [*aws_env, {"name": "BENCH_PREFIX", "value": results_prefix(model)}],
        "volumeMounts": work,
        "securityContext": _security(),
        "resources": rendered(BENCH_UPLOAD),
    }


def _pod_spec(*, init: list[dict[str, Any]], upload: dict[str, Any], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """The Job's pod: `init` in order, then `upload`; `volumes` after the results, tokenizer and tmp ones."""
    return {
        "restartPolicy": "Never",
        "serviceAccountName": BENCH_SERVICE_ACCOUNT,
        # The Job never calls the Kubernetes API; Pod Identity mounts its own token
        # (eks-pod-identity-token), independent of this.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        # guidellm's image runs as 1001; the aws CLI runs as anyone with HOME writable.
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1001,
            "runAsGroup": 1001,
            "fsGroup": 1001,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "initContainers": init,
        "containers": [upload],
        "volumes": [
            {"name": "results", "emptyDir": {}},
            {"name": "tokenizer", "emptyDir": {}},
            {"name": "tmp", "emptyDir": {}},
            *volumes,
        ],
    }


class Benchmarks(pulumi.ComponentResource):
    """Per model with `benchmark`, after the models and their routes exist: the one-off Job (`runs_once`)
    and, with a `schedule`, the CronJob."""

    def __init__(self, name: str, args: BenchmarksArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Benchmarks", name, None, opts)
        for model in args.models:
            if model.config.benchmark is None:
                continue
            built = [job(model, args.hostname, args.bucket, args.images)] if runs_once(model) else []
            if model.config.benchmark.schedule is not None:
                built.append(cron_job(model, args.hostname, args.bucket, args.images))
            for obj in built:
                register(
                    obj,
                    pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on)),
                    name=f"{name}-{obj['metadata']['name']}",
                )
        self.register_outputs({})
