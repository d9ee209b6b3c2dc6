"""The `secrets` section: where each Kubernetes Secret the stack references comes from.

A Secret the platform's pods or policies reference (a model's Hugging Face token, the gateway's client
keys, LiteLLM's master key, Alertmanager's configuration, ...) is named at its key as before
(`models[].secrets.huggingFaceToken: hf-token`); this section says, per Secret name, who makes it:

- `fromConfig`: the program creates it, in every namespace that references it, from Pulumi secrets of
  this stack (`pulumi config set --secret <configKey> <value>`): one config key per entry of the Secret.
  The values stay encrypted in the stack file and in Pulumi's state and never enter this section;
A key `<namespace>/<name>` gives the Secret of that name in that namespace alone (the gateway's and each
team's client keys may share one name but never their keys).

- `external: true`: something outside this stack creates it (allowed only where the Secret lives in a
  namespace this stack does not create: a team's namespace seen from its own stack).

stacks/resolve/secrets.py lists every reference; stacks/rules/secrets.py refuses a reference without a
source before any resource is registered.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, StringConstraints, model_validator

from .base import Strict

# A Secret's data key (Kubernetes: `[-._a-zA-Z0-9]+`, at most 253 characters).
EntryKey = Annotated[str, StringConstraints(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)]
# A Pulumi config key of this project holding one secret value (`inference-platform:<key>`): a name that
# reads as one, starting with a letter, so it is never taken for a section of the stack file.
ConfigKey = Annotated[str, StringConstraints(pattern=r"^[a-z][A-Za-z0-9]*$", max_length=64)]


class SecretSource(Strict):
    """Where one Secret (by name) comes from: this stack's Pulumi secrets, or outside the stack."""

    from_config: dict[EntryKey, ConfigKey] | None = Field(
        default=None,
        min_length=1,
        description="The program creates the Secret (in every namespace that references it), one entry per "
        "item: `<entry>: <configKey>`, where `<configKey>` is a Pulumi secret of this stack set with "
        "`pulumi config set --secret <configKey> <value>` (key `inference-platform:<configKey>`). The value is "
        "read with `Config.require_secret`, stays secret in Pulumi's state and is mounted into pods as a file.",
    )
    external: bool = Field(
        default=False,
        description="`true`: the Secret is made outside this stack (by hand, or by another controller) and only "
        "named here. Allowed only when it lives in a namespace this stack does not create (a team's namespace, "
        "seen from the team's own workloads stack); the platform's own namespaces get their Secrets from "
        "`fromConfig`, so a first `pulumi up` needs no hand step.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.from_config is None) == (not self.external):
            raise ValueError(
                "give exactly one source: fromConfig (entries from Pulumi secrets of this stack) or external: true"
            )
        return self


# A `secrets` key: a Secret's name (its source serves every namespace that references the name), or
# `<namespace>/<name>` for that namespace alone (teams' key Secrets often share one name), which wins.
SecretKey = Annotated[
    str,
    StringConstraints(
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        max_length=317,
    ),
]
SecretsSection = dict[SecretKey, SecretSource]


def source_for(secrets: SecretsSection, namespace: str, name: str) -> tuple[str, SecretSource] | tuple[str, None]:
    """The `secrets` key and source that provide Secret `name` in `namespace` (`<namespace>/<name>` first)."""
    for key in (f"{namespace}/{name}", name):
        if key in secrets:
            return key, secrets[key]
    return name, None
