"""Shared pieces of the stack-config models: the strict base class and reusable field types.

Every model forbids unknown keys and is frozen, so a typo in a stack file is an error, never a
silently ignored setting. Stack-file keys are camelCase; Python attributes are snake_case.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

PROJECT = "inference-platform"


def stack_key(field: str) -> str:
    """snake_case attribute -> the stack file's camelCase key, with unit suffixes as the contract
    spells them (root_volume_gib -> rootVolumeGiB, throughput_per_tib -> throughputPerTiB)."""
    key = to_camel(field)
    for wrong, right in (("Gib", "GiB"), ("Tib", "TiB"), ("Mibps", "MiBps")):
        if key.endswith(wrong):
            key = key[: -len(wrong)] + right
    return key


class Strict(BaseModel):
    """Base of every stack-config model: camelCase keys only, unknown keys refused, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=stack_key,
        validate_by_alias=True,
        validate_by_name=False,
        str_strip_whitespace=True,
    )


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(
            f"{value!r} is not a CIDR block; write one like 10.42.0.0/16 (host bits zero): {exc}"
        ) from None
    return str(net)


Cidr = Annotated[str, AfterValidator(_cidr)]

# RFC 1123 label: Kubernetes namespaces, Service names and most of our logical names.
DnsLabel = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]

IamArn = Annotated[str, StringConstraints(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")]

# Karpenter durations: no day unit (`30d` is invalid upstream).
Duration = Annotated[str, StringConstraints(pattern=r"^([0-9]+(s|m|h))+$")]

SecretName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)]

SHA256_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
GIT_REVISION = re.compile(r"^[0-9a-f]{40}$")


class Addon(Strict):
    """An optional add-on: whether it is installed and, optionally, a version overriding the catalog."""

    enabled: bool = Field(default=False, description="Whether the add-on is installed.")
    version: str | None = Field(
        default=None, description="Chart version overriding the pin in `stacks/versions.py`; unset: the pin."
    )


class KeyedError(ValueError):
    """A model validator's refusal that belongs to keys below the model: `problems_from` reports each
    (relative location, message) at that deeper key path instead of at the model's own path.

        raise KeyedError([(("models",), "a platform stack serves no models ...")])
    """

    def __init__(self, items: Sequence[tuple[tuple[str | int, ...], str]]) -> None:
        self.items = list(items)
        super().__init__("; ".join(msg for _, msg in self.items))
