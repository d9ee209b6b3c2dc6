"""Config problems as the user sees them: the key path, what is wrong, what would be right."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from .config import PROJECT


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """A stack file that cannot work. Raised before any resource is registered."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = problems
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"{self.source}: " if self.source else ""
        lines = [f"{head}{len(self.problems)} problem(s) in the stack config:"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


def key_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """('models', 2, 'resources', 'gpu') -> 'inference-platform:models[2].resources.gpu'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return f"{PROJECT}:{out}" if out else PROJECT


def _is_key(part: str | int) -> bool:
    # pydantic adds union-member and validator tags (`str`, `function-after[...]`) to locations.
    return isinstance(part, int) or (
        "[" not in part
        and part
        not in {
            "str",
            "int",
            "float",
            "bool",
            "none",
            "list",
            "dict",
            "literal",
            "constrained-str",
        }
    )


def _allowed_keys(model: type, loc: list[str | int]) -> list[str]:
    """The camelCase keys a model accepts at `loc` (for 'unknown key' hints)."""
    from pydantic import BaseModel

    current: object = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return []
        current = _model_in(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(f.alias or n for n, f in current.model_fields.items() if not f.exclude)
    return []


def _model_in(annotation: object) -> object:
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def problems_from(exc: ValidationError, model: type) -> list[Problem]:
    problems: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if _is_key(p)]
        msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        kind = err["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            msg = "unknown key" + (f"; allowed here: {', '.join(allowed)}" if allowed else "")
        elif kind == "missing":
            msg = "required key is missing"
        elif kind not in ("value_error", "assertion_error"):
            shown = err.get("input")
            if not isinstance(shown, (dict, list)):
                msg = f"{msg} (got {shown!r})"
        problem = Problem(key_path(loc), msg)
        if problem not in problems:
            problems.append(problem)
    return problems
