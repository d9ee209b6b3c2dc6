"""LiteLLM virtual keys for the proxy's callers, so no client holds the master key. Pure builders.

For each virtual key the platform keeps (stacks/resolve/access.py `virtual_keys`: one per team with
`teams[].litellm`, scoped to its models and budget, and one for the platform's own clients, scoped to
every model the proxy serves), the platform renders in the caller's namespace:
- the Secret `litellm-key` (entry `api-key`) the key is written to, created empty: the platform owns the
  object, the key job its one entry (server-side apply leaves fields another manager wrote alone);
- a Role allowing `get` and `patch` of exactly that Secret, bound to the key job's service account.
And in `litellm`:
- the ServiceAccount `litellm-keys` (its token mounted: the job calls the Kubernetes API);
- the ConfigMap `litellm-keys` with the plan (`keys.json`) and the program (`sync.py`,
  components/serving/litellm_key_sync.py: standard library only);
- the Job `litellm-keys` in the proxy's own pinned image (`images.litellm`), after the proxy: it reads the
  master key from its mounted Secret file and keeps each key through the proxy's `/key/update` and
  `/key/generate` (LiteLLM 1.100.1; virtual keys live in the proxy's database, so the stack rules ask
  for `addons.litellm.databaseUrlSecret` whenever a team has access). Its name carries a digest of the
  plan and the program: a changed plan runs a new Job;
- the NetworkPolicy `litellm-keys`: the job's pod answers nothing and reaches DNS, the proxy's port and
  TCP 443 (the API server, which a NetworkPolicy cannot name).
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

from stacks.awaits import await_job
from stacks.config.addons import LiteLLM
from stacks.naming import TOKEN, scanner_waivers
from stacks.naming import labels as k8s_labels
from stacks.resolved import LITELLM_NAMESPACE, VirtualKey
from stacks.versions import Image

from ..k8s import register
from ..peers import Pods
from . import litellm, litellm_key_sync
from .litellm import MASTER_KEY_KEY, NAME, PORT

JOB = "litellm-keys"
# The Job's pod, as the proxy's NetworkPolicy admits it (the key API is on the proxy's own port).
PODS = Pods(namespace=LITELLM_NAMESPACE, labels={"app.kubernetes.io/name": JOB})
PLAN = "keys.json"
PROGRAM = "sync.py"
CONFIG_DIR = "/etc/litellm-keys"
MASTER_DIR = "/var/run/secrets/litellm/master"
# An unprivileged uid the image need not know: the program reads only its mounts and the standard library.
UID = 65532
# How long the job waits for the proxy (its pods pull the image and connect to the database first).
READY_SECONDS = 600
# The whole Job: the proxy's readiness wait, then the keys' calls.
DEADLINE_SECONDS = READY_SECONDS + 300


def alias(key: VirtualKey) -> str:
    """The key's alias in LiteLLM (aliases are unique there): one per caller."""
    return f"inference-platform-{key.caller}"


def plan(keys: Sequence[VirtualKey]) -> list[dict[str, Any]]:
    return [
        {
            "caller": k.caller,
            "namespace": k.namespace,
            "secret": k.secret,
            "alias": alias(k),
            "models": list(k.models),
            "max_budget": k.max_budget,
            "budget_duration": k.budget_duration,
            "tpm_limit": k.tpm_limit,
            "rpm_limit": k.rpm_limit,
        }
        for k in keys
    ]


def program() -> str:
    return inspect.getsource(litellm_key_sync)


def job_name(keys: Sequence[VirtualKey], image: Image) -> str:
    digest = hashlib.sha256(json.dumps([plan(keys), program(), image.ref]).encode()).hexdigest()[:10]
    return f"{JOB}-{digest}"


def _labels() -> dict[str, str]:
    return k8s_labels(JOB, NAME)


def caller_objects(key: VirtualKey) -> list[dict[str, Any]]:
    """In the caller's namespace: the (empty) Secret the key goes to, and the job's right to that one Secret."""
    meta = {"namespace": key.namespace, "labels": _labels()}
    role = f"{JOB}-writer"
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": key.secret,
                **meta,
                "annotations": {"inference-platform.io/holds": f"the LiteLLM virtual key of {key.caller} (api-key)"},
            },
            "type": "Opaque",
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role, **meta},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [key.secret], "verbs": ["get", "patch"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": JOB, "namespace": LITELLM_NAMESPACE}],
        },
    ]


def _container(image: Image) -> dict[str, Any]:
    return {
        "name": "sync",
        "image": image.ref,
        "command": ["python3", f"{CONFIG_DIR}/{PROGRAM}"],
        "env": [
            {"name": "KEYS_PLAN", "value": f"{CONFIG_DIR}/{PLAN}"},
            {"name": "MASTER_KEY_FILE", "value": f"{MASTER_DIR}/{MASTER_KEY_KEY}"},
            {"name": "LITELLM_URL", "value": f"http://{NAME}.{LITELLM_NAMESPACE}.svc.cluster.local:{PORT}"},
            {"name": "READY_SECONDS", "value": str(READY_SECONDS)},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        "volumeMounts": [
            {"name": "plan", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "master-key", "mountPath": MASTER_DIR, "readOnly": True},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
    }


def job(addon: LiteLLM, keys: Sequence[VirtualKey], image: Image) -> dict[str, Any]:
    """The key job: the plan and program from its ConfigMap, the master key from its Secret, as a file."""
    master = {"secretName": addon.master_key_secret, "items": [{"key": MASTER_KEY_KEY, "path": MASTER_KEY_KEY}]}
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": JOB,
        "automountServiceAccountToken": True,  # it reads and writes the callers' Secrets
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": UID,
            "runAsGroup": UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_container(image)],
        "volumes": [
            {"name": "plan", "configMap": {"name": JOB}},
            {"name": "master-key", "secret": master},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(keys, image),
            "namespace": LITELLM_NAMESPACE,
            "labels": _labels(),
            # `pulumi up` waits for the keys (a caller's Secret is empty until the Job writes it), as long
            # as the Job may run.
            "annotations": scanner_waivers(
                {
                    "CKV_K8S_38": "the job reads and writes the callers' key Secrets through the Kubernetes API, "
                    "as its own account, whose Roles allow get and patch of exactly those Secrets"
                }
            )
            | await_job(DEADLINE_SECONDS),
        },
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "template": {"metadata": {"labels": _labels()}, "spec": pod},
        },
    }


def network_policy() -> dict[str, Any]:
    """The job answers nothing; it reaches DNS, the proxy and the API server (TCP 443)."""
    proxy = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": JOB, "namespace": LITELLM_NAMESPACE, "labels": _labels()},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": JOB}},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                litellm.dns_egress(),
                {"to": [proxy], "ports": [{"protocol": "TCP", "port": PORT}]},
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]},
            ],
        },
    }


def manifests(addon: LiteLLM, keys: Sequence[VirtualKey], image: Image) -> list[dict[str, Any]]:
    """Every object of the key job: the callers' Secrets and Roles first, then the job's own in `litellm`."""
    own_meta = {"name": JOB, "namespace": LITELLM_NAMESPACE, "labels": _labels()}
    return [
        *(obj for key in keys for obj in caller_objects(key)),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": own_meta},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": own_meta,
            "data": {PLAN: json.dumps(plan(keys), indent=2), PROGRAM: program()},
        },
        network_policy(),
        job(addon, keys, image),
    ]


@dataclass(frozen=True, kw_only=True)
class LiteLLMKeysArgs:
    addon: LiteLLM
    keys: tuple[VirtualKey, ...]
    image: Image  # the proxy's own (`images.litellm`)
    provider: k8s.Provider
    # The proxy's Deployment: the job runs once it is up.
    proxy: pulumi.Resource | None
    # Namespaces that exist already, by name: a caller's objects wait for theirs.
    namespaces: dict[str, pulumi.Resource] = field(default_factory=dict)


class LiteLLMKeys(pulumi.ComponentResource):
    """The virtual keys the platform keeps for LiteLLM's callers: their Secrets and Roles, then the job."""

    def __init__(self, name: str, args: LiteLLMKeysArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:LiteLLMKeys", name, None, opts)
        before: list[pulumi.Resource] = []
        for obj in manifests(args.addon, args.keys, args.image):
            namespace = obj["metadata"]["namespace"]
            depends = [r for r in (args.namespaces.get(namespace), args.proxy) if r is not None]
            if obj["kind"] == "Job":
                depends += before  # its Secrets, Roles, account and program first
            created = register(obj, pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends))
            before.append(created)
        self.register_outputs({})
