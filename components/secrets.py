"""The Kubernetes Secrets the program creates from the stack's Pulumi secrets.

A Secret the stack references and sources with `secrets.<name>.fromConfig` (stacks/resolve/secrets.py
lists them as `ManagedSecret`s) is created in each namespace that references it, right after that
namespace and before anything that mounts it: the first `pulumi up` of a new environment needs no
Secret made by hand. Each entry's value is the Pulumi secret the stack names, read by `__main__.py` with
`Config.require_secret` and handed down as a secret Output: it is never a literal in source, a
manifest, an argument or an environment variable, Pulumi keeps it encrypted in its state, and the
pods read it as a mounted file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from stacks.naming import MANAGED_BY
from stacks.resolved import ManagedSecret

from .k8s import register


def secret_manifest(secret: ManagedSecret, values: Mapping[str, pulumi.Input[str]]) -> dict[str, Any]:
    """The Secret as applied: its type, and each entry from the Pulumi secret the stack names for it."""
    missing = [key for _, key in secret.entries if key not in values]
    if missing:
        # The load step refuses a stack whose Pulumi secrets are not set; this is its backstop.
        raise ValueError(f"Secret {secret.namespace}/{secret.name}: no value for the Pulumi secrets {missing}")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret.name, "namespace": secret.namespace, "labels": {**MANAGED_BY}},
        "type": secret.type,
        "stringData": {entry: values[key] for entry, key in secret.entries},
    }


def create_secrets(
    name: str,
    secrets: Sequence[ManagedSecret],
    values: Mapping[str, pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """Register each Secret (with `opts`: the cluster's provider, after its namespace); what mounts one
    depends on what this returns."""
    return [register(secret_manifest(s, values), opts, name=f"{name}-secret-{s.namespace}-{s.name}") for s in secrets]
