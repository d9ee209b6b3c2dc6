"""Names that must be unique within a stack."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule
from ..config import StackConfig
from ..errors import Problem, key_path


@rule
def unique_names(config: StackConfig) -> Iterable[Problem]:
    sections: tuple[tuple[str, list[str]], ...] = (
        ("nodePools", [p.name for p in config.node_pools]),
        ("models", [m.name for m in config.models]),
    )
    for section, names in sections:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                yield Problem(
                    key_path([section, i, "name"]),
                    f"{name!r} is already used by {section}[{seen[name]}]; names must be unique",
                )
            seen.setdefault(name, i)
