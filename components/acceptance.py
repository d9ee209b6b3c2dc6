"""Acceptance Jobs (`models[].acceptance`): after `pulumi up`, one Job per model checks its gateway route
the way a client would (components/acceptance_check.py). Pure builders and the component.

The Job is the benchmark's (components/benchmark.py), not a second copy: the same bucket reader identity
(`model-reader`, which may write only under its owner's `_benchmarks/`), the same client-key handling
(the key read from its mounted Secret file and exported at exec time, never on argv or in the pod
spec), the same upload to the bucket and the same gate (pulumi-kubernetes awaits a gated Job; others
carry `pulumi.com/skipAwait`). Its results go to `<owner prefix>/_benchmarks/<model>/<revision>/
acceptance/<UTC time>/`; the upload fails the Job when a check failed.

The key: the stack's (`acceptance.apiKeySecret`, else the benchmark's) or, by default with
`gateway.auth: apiKey`, one the platform mints per model (stacks/resolve/acceptance.py): a RandomPassword
of KEY_LENGTH letters and digits (nothing a header would mangle), kept in the Secret
`<model>-acceptance-key` in the model's namespace, whose entry `api-key` the Job mounts and the model's
route alone admits (its SecurityPolicy names the Secret: client `api-key`, that value). The password's
logical name carries the model's namespace and name, so a renamed model gets a new key and the old one
is deleted with the old Secret.

The key of another team: the Job holds only its own model's key (`acceptance.apiKeySecret` or the
benchmark's), never another team's, since a Secret mounted in this namespace is readable by whoever may
read Secrets here, and another team's key there would let them call that team's models. It checks the
same property from the other side: its own key, sent to a route of the stack none of its model's callers
may call, must be refused; with no such route it sends a key no route admits. Envoy Gateway gives every
route its own credential set (internal/xds/translator/api_key_auth.go: the per-route ApiKeyAuthPerRoute
overrides the listener's, without `allowed_clients`), so a key admitted elsewhere is as unknown there as a
made-up one: 401. With JWT the token is valid and the route's authorization denies its team: 403.

The metrics step queries the stack's own Prometheus (ResolvedStack.acceptance_prometheus); the Job's
pods may reach it on 9090 through `acceptance_egress` here and the monitoring namespace's Prometheus
policy (components/monitoring/policies.py), which admits this namespace's acceptance pods.
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
import pulumi_random as random

from stacks.awaits import await_job, skip_await
from stacks.config.gateway import GatewaySection
from stacks.helper_pods import ACCEPTANCE_CHECK, ACCEPTANCE_UPLOAD, rendered
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL, TOKEN, physical
from stacks.resolved import ACCEPTANCE_KEY_ENTRY, AcceptancePlan, ImageTable, ResolvedModel

from . import acceptance_check, peers, secretfiles
from .benchmark import (
    PYTHON,
    RESULTS,
    _aws_env,
    _pod_spec,
    _security,
    _waivers,
    _work_mounts,
    results_prefix,
    upload_script,
)
from .k8s import register
from .monitoring.collection import model_filter

ACCEPT_LABEL = "inference-platform.io/acceptance"
NAME = "acceptance"
KEY_DIR = "/var/run/secrets/acceptance"
KEY = ACCEPTANCE_KEY_ENTRY
# The minted key's length: 48 letters and digits are ~285 bits, more than any brute force reaches.
KEY_LENGTH = 48
KEY_ENV = "ACC_API_KEY"
# The check waits for the route at least READY_SECONDS (Envoy Gateway programming it), or the model's
# startup allowance when longer (a model that scales to zero wakes on the first request), then sends a
# handful of short requests, each within the script's own timeout; CHECKS_SECONDS bounds those.
READY_SECONDS = 600
CHECKS_SECONDS = 1200


def ready_seconds(model: ResolvedModel) -> int:
    """How long the check waits for the route to answer its key."""
    return max(READY_SECONDS, model.startup_seconds)


def deadline_seconds(model: ResolvedModel) -> int:
    """The Job's activeDeadlineSeconds, and the gate's await: the wait and the checks."""
    return ready_seconds(model) + CHECKS_SECONDS


@dataclass(frozen=True, kw_only=True)
class AcceptanceChecksArgs:
    models: Sequence[ResolvedModel]  # every model of the stack: the foreign routes are among them
    gateway: GatewaySection  # the front door's: its auth and key header
    hostname: str
    bucket: pulumi.Input[str]
    images: ImageTable
    provider: k8s.Provider
    prometheus: str | None  # ResolvedStack.acceptance_prometheus
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


def foreign_route(model: ResolvedModel, models: Sequence[ResolvedModel], hostname: str) -> str | None:
    """The first exposed route of the stack that none of the model's callers may call (another owner's
    model): its URL, or None."""
    for other in models:
        if other is model or not other.expose or set(other.callers) & set(model.callers):
            continue
        return f"https://{hostname}{other.path_prefix}"
    return None


def structured_form(model: ResolvedModel) -> tuple[dict[str, Any] | None, str]:
    """The request fields that ask the model's engine for JSON, or None and why the step is skipped."""
    accept = model.acceptance
    if accept is not None and not accept.structured_output:
        return None, "acceptance.structuredOutput: false"
    form = model.facts.json_output
    if form is None:
        return None, f"no structured-output form established for {model.facts.title}"
    return dict(form), ""


def metrics_query(model: ResolvedModel) -> str:
    """The model's scrape targets as Prometheus sees them: `up` with the PodMonitor's model label."""
    return f"up{{{model_filter(model)}}}"


def check_env(model: ResolvedModel, args: AcceptanceChecksArgs) -> list[dict[str, str]]:
    """What the check reads (acceptance_check.run): the route, the model, the key header, the foreign
    route, the JSON form, the Prometheus and its query."""
    form, why = structured_form(model)
    prometheus = args.prometheus if model.metrics_path is not None else None
    unasked = (
        "the engine exports no metrics the platform scrapes"
        if model.metrics_path is None
        else "no Prometheus this Job may query (a team's stack, an existing Prometheus, or no monitoring)"
    )
    return [
        {"name": "ACC_BASE", "value": f"https://{args.hostname}{model.path_prefix}"},
        {"name": "ACC_MODEL", "value": model.name},
        {"name": "ACC_HEADER", "value": "Authorization" if args.gateway.auth == "jwt" else args.gateway.api_key_header},
        {"name": "ACC_AUTH", "value": args.gateway.auth},
        {"name": "ACC_FOREIGN", "value": foreign_route(model, args.models, args.hostname) or ""},
        {"name": "ACC_STRUCTURED", "value": json.dumps(form)},
        {"name": "ACC_STRUCTURED_WHY", "value": why},
        {"name": "ACC_PROMETHEUS", "value": prometheus or ""},
        {"name": "ACC_METRICS_QUERY", "value": metrics_query(model)},
        {"name": "ACC_METRICS_WHY", "value": "" if prometheus else unasked},
        {"name": "ACC_READY_SECONDS", "value": str(ready_seconds(model))},
        {"name": "ACC_RESULTS", "value": RESULTS},
    ]


def job_name(model: ResolvedModel, args: AcceptanceChecksArgs) -> str:
    """`accept-<model>-<digest>`: the digest of the model's settings, the images, the check's inputs and
    its source, so a change to any of them is a new Job (a Job's pod template is immutable) and the
    changed model is checked again."""
    facts = {
        "model": model.config.model_dump(mode="json", by_alias=True),
        "images": [args.images["guidellm"].ref, args.images["model-prep-s3"].ref],
        "env": check_env(model, args),
        "check": hashlib.sha256(inspect.getsource(acceptance_check).encode()).hexdigest(),
    }
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:10]
    return physical("accept", model.name, digest)


def labels(model: ResolvedModel) -> dict[str, str]:
    return {**MANAGED_BY, "app.kubernetes.io/name": NAME, ACCEPT_LABEL: model.name}


UPLOAD = upload_script("acceptance", "acceptance/", "a check failed (or none ran)")


def _check_container(model: ResolvedModel, args: AcceptanceChecksArgs, key: secretfiles.SecretFile) -> dict[str, Any]:
    return {
        "name": "check",
        "image": args.images["guidellm"].ref,
        "command": ["sh", "-c", secretfiles.exec_script([key], f'{PYTHON} -c "$ACC_SCRIPT"'), "sh"],
        "env": [
            {"name": "ACC_SCRIPT", "value": inspect.getsource(acceptance_check)},
            *check_env(model, args),
            {"name": "HOME", "value": "/tmp"},
        ],
        "volumeMounts": [*_work_mounts(), *secretfiles.mounts([key])],
        "securityContext": _security(),
        "resources": rendered(ACCEPTANCE_CHECK),
    }


def _upload_container(model: ResolvedModel, args: AcceptanceChecksArgs) -> dict[str, Any]:
    return {
        "name": "upload",
        "image": args.images["model-prep-s3"].ref,
        "command": ["sh", "-c", UPLOAD],
        "env": [*_aws_env(args.bucket), {"name": "BENCH_PREFIX", "value": results_prefix(model)}],
        "volumeMounts": _work_mounts(),
        "securityContext": _security(),
        "resources": rendered(ACCEPTANCE_UPLOAD),
    }


def plan(model: ResolvedModel) -> AcceptancePlan:
    accept = model.acceptance
    assert accept is not None, "only for a model with an acceptance Job (ResolvedModel.acceptance)"
    return accept


def key_secret(model: ResolvedModel, value: pulumi.Input[str], namespace: str | None = None) -> dict[str, Any]:
    """The Secret of the key the platform minted for the model's Job: in the model's namespace the Job
    mounts its `api-key`; where the route lives (`namespace`, AcceptancePlan.admitted_namespace, when that
    is elsewhere) the model's route admits it (stacks/resolve/access.py: the acceptance caller's KeySecret)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": plan(model).key_secret,
            "namespace": namespace or model.namespace,
            "labels": {**MANAGED_BY, "app.kubernetes.io/component": "acceptance-key", ACCEPT_LABEL: model.name},
        },
        "type": "Opaque",
        "stringData": {KEY: value},
    }


def job(model: ResolvedModel, args: AcceptanceChecksArgs) -> dict[str, Any]:
    """The acceptance Job of one model with `acceptance`."""
    accept = plan(model)
    key = secretfiles.SecretFile(env=KEY_ENV, secret=accept.key_secret, key=KEY, volume="api-key", directory=KEY_DIR)
    pod = _pod_spec(
        init=[_check_container(model, args, key)],
        upload=_upload_container(model, args),
        volumes=secretfiles.volumes([key]),
    )
    # A few requests through the front door: the system nodes, which are always there, rather than a node
    # Karpenter would launch for it on a CPU pool.
    pod["nodeSelector"] = dict(SYSTEM_NODE_LABEL)
    # `pulumi up` fails with a gated Job; nothing waits for an ungated one (its verdict goes to the bucket).
    awaits = await_job(deadline_seconds(model)) if accept.gate else skip_await()
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(model, args),
            "namespace": model.namespace,
            "labels": labels(model),
            "annotations": _waivers() | awaits,
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline_seconds(model),
            "template": {"metadata": {"labels": labels(model)}, "spec": pod},
        },
    }


def acceptance_egress(namespace: str) -> dict[str, Any]:
    """The acceptance pods of `namespace` may reach Prometheus's web port (the namespace's own egress
    policy already admits DNS and 443, the front door)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "acceptance-to-prometheus",
            "namespace": namespace,
            "labels": {**MANAGED_BY, "app.kubernetes.io/component": "isolation"},
        },
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME, **MANAGED_BY}},
            "policyTypes": ["Egress"],
            "egress": [peers.to([peers.PROMETHEUS], (peers.PROMETHEUS_PORT,), namespace)],
        },
    }


def acceptance_pods(namespace: str) -> peers.Pods:
    """The acceptance Jobs' pods in one namespace, as the Prometheus policy admits them."""
    return peers.Pods(namespace, {"app.kubernetes.io/name": NAME, **MANAGED_BY})


def minted_key(name: str, model: ResolvedModel, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """A new key for the model's Job (a secret Output): letters and digits only, so no header or Secret
    encoding changes it. The logical name carries the model, so a renamed model gets a new key."""
    password = random.RandomPassword(
        f"{name}-{model.namespace}-{model.name}-key", length=KEY_LENGTH, special=False, opts=opts
    )
    return password.result


class AcceptanceChecks(pulumi.ComponentResource):
    """Per model with an acceptance Job (ResolvedModel.acceptance), after the models, their routes and key
    Secrets exist: its minted key and that key's Secret when the platform mints it, and its Job; per
    namespace of those models, when the check may query Prometheus, the egress policy to it."""

    def __init__(self, name: str, args: AcceptanceChecksArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:AcceptanceChecks", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        checked = [m for m in args.models if m.acceptance is not None]
        for model in checked:
            after = self._minted(name, model, child) if plan(model).minted else child
            obj = job(model, args)
            register(obj, after, name=f"{name}-{obj['metadata']['name']}")
        if args.prometheus is not None:
            for namespace in sorted({m.namespace for m in checked}):
                register(acceptance_egress(namespace), child, name=f"{name}-{namespace}-to-prometheus")
        self.register_outputs({})

    def _minted(self, name: str, model: ResolvedModel, child: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
        """The model's minted key and its Secrets (the Job's; the route's when that is elsewhere); the
        options of a Job that waits for them."""
        value = minted_key(name, model, pulumi.ResourceOptions(parent=self))
        secrets = [register(key_secret(model, value), child, name=f"{name}-{model.namespace}-{model.name}-key")]
        admitted = plan(model).admitted_namespace
        if admitted != model.namespace:
            obj = key_secret(model, value, admitted)
            secrets.append(register(obj, child, name=f"{name}-{admitted}-{model.name}-key"))
        return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=secrets))
