"""The versions catalog: every chart, image and EKS add-on the platform installs, pinned in one place.

Defaults are the versions the source document (shared/seed/inference-frameworks.md) inspected, or the
versions whose schemas sit in shared/schemas. A stack overrides a chart's version with
`addons.<name>.version` and a model's image with `models[].image`; nothing else picks versions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Chart:
    """A Helm chart: `repo` is an https chart repository or an `oci://` registry path."""

    chart: str
    version: str
    repo: str

    def with_version(self, version: str | None) -> Chart:
        return self if version is None else replace(self, version=version)


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    digest: str | None = None

    @property
    def ref(self) -> str:
        base = f"{self.repository}:{self.tag}"
        return f"{base}@{self.digest}" if self.digest else base

    @property
    def pinned(self) -> bool:
        return self.digest is not None


CHARTS: dict[str, Chart] = {}
IMAGES: dict[str, Image] = {}

# EKS managed add-ons, pinned per Kubernetes minor version (aws eks describe-addon-versions).
EKS_ADDONS: dict[str, dict[str, str]] = {}


def chart(name: str, override: str | None = None) -> Chart:
    return CHARTS[name].with_version(override)


def image(name: str) -> Image:
    return IMAGES[name]
