"""Config problems as the user sees them: the key path, what is wrong, what would be right.

A problem never echoes a bad value whole: `short` shows at most a prefix of it (a 5 MB string in a
stack file is not 5 MB on stderr), and `Problem` itself cuts any over-long run in its path or message,
so a rule that interpolates a value cannot echo it whole either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .config.base import PROJECT, KeyedError

__all__ = ["KeyedError"]

# How much of a bad value a message shows, and the longest path and message a problem keeps.
SHOWN_CHARS = 60
MAX_PATH_CHARS = 400
MAX_MESSAGE_CHARS = 2000
# An unbroken run longer than any name the program makes (URNs, ARNs, hostnames) is a pasted value.
_LONG_RUN = re.compile(r"\S{300,}")


def short(value: object, limit: int = SHOWN_CHARS) -> str:
    """A bad value as a message shows it: its repr, cut to a prefix with its length when long."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    if isinstance(value, (dict, list, tuple, set)):
        kind = {dict: "a map", list: "a list", tuple: "a list", set: "a set"}[type(value)]
        return f"{kind} of {len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def one_line(text: str, limit: int = 200) -> str:
    """An error's text on one line, cut to `limit` characters (for errors no check anticipated)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _cut(text: str, limit: int) -> str:
    """Cut every long unbroken run (a value pasted into a message), then the whole text."""
    text = _LONG_RUN.sub(lambda m: f"{m.group()[:SHOWN_CHARS]}… ({len(m.group())} characters)", text)
    if len(text) > limit:
        text = f"{text[:limit]}… (cut, {len(text)} characters)"
    return text


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __post_init__(self) -> None:
        if len(self.path) > MAX_PATH_CHARS or _LONG_RUN.search(self.path):
            object.__setattr__(self, "path", _cut(self.path, MAX_PATH_CHARS))
        if len(self.message) > MAX_MESSAGE_CHARS or _LONG_RUN.search(self.message):
            object.__setattr__(self, "message", _cut(self.message, MAX_MESSAGE_CHARS))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """A stack file that cannot work. Raised before any resource is registered."""

    def __init__(self, problems: list[Problem], source: str = "", warnings: list[Problem] | None = None) -> None:
        self.problems = problems
        self.source = source
        self.warnings = warnings or []  # what was found before the refusal (a misspelt key, say)
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"{self.source}: " if self.source else ""
        lines = [f"{head}{len(self.problems)} problem(s) in the stack config:"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


_PLAIN_KEY = re.compile(r"[^\s'\"\[\]]+")


def member(part: str | int) -> str:
    """One step of a key path: `.name`, `[2]`, or `['']` for a key that cannot be written bare (empty,
    or holding a space, a quote, a bracket or an unprintable character, shown escaped); a long key is
    cut to a short prefix."""
    if isinstance(part, int):
        return f"[{part}]"
    cut = part if len(part) <= SHOWN_CHARS else f"{part[:SHOWN_CHARS]}…"
    if _PLAIN_KEY.fullmatch(part) and part.isprintable():
        return f".{cut}"
    return f"[{cut!r}]"


def key_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """('models', 2, 'resources', 'gpu') -> 'inference-platform:models[2].resources.gpu'."""
    out = "".join(member(part) for part in loc)
    return f"{PROJECT}:{out.removeprefix('.')}" if out else PROJECT


def normalized(word: str) -> str:
    """A key as a careless hand may spell it: case, spaces and separators do not count."""
    return re.sub(r"[\s_\-.]", "", word).casefold()


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, transpositions."""
    if abs(len(a) - len(b)) > 2:
        return 3
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def did_you_mean(word: str, known: Iterable[str], edits: int = 1) -> str | None:
    """The known key `word` was probably meant to be: the same but for case, spaces and separators,
    or within `edits` typing mistakes (a transposition counts as one)."""
    candidates = list(known)
    for k in candidates:
        if normalized(k) == normalized(word):
            return k
    scored = sorted((_distance(word.casefold(), k.casefold()), k) for k in candidates)
    if scored and scored[0][0] <= edits and len(word) > 2:
        return scored[0][1]
    return None


# pydantic adds union-member and validator tags (`str`, `function-after[...]`) to locations.
_TAGS = {"str", "int", "float", "bool", "none", "list", "dict", "literal", "constrained-str"}


def _is_key(part: str | int) -> bool:
    return isinstance(part, int) or ("[" not in part and part not in _TAGS)


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


def _path(loc: list[str | int]) -> str:
    # The root model's aws_region is the AWS provider's own key, not a section of the namespace.
    if loc and loc[0] == "awsRegion":
        return "aws:region"
    return key_path(loc) if loc else "config"  # never the bare namespace


def problems_from(exc: ValidationError, model: type) -> list[Problem]:
    problems: list[Problem] = []

    def add(problem: Problem) -> None:
        if problem not in problems:
            problems.append(problem)

    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if _is_key(p)]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, KeyedError):
            for rel, text in cause.items:
                add(Problem(_path([*loc, *rel]), text))
            continue
        msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        kind = err["type"]
        shown = err.get("input")
        if kind == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            unknown = str(loc[-1]) if loc else ""
            meant = did_you_mean(unknown, allowed, edits=2) if allowed else None
            msg = "unknown key" + (f"; did you mean {meant}?" if meant else "")
            msg += f"; allowed here: {', '.join(allowed)}" if allowed else ""
        elif kind == "missing":
            msg = "required key is missing"
        else:
            if isinstance(shown, str) and len(shown) > SHOWN_CHARS:
                # A validator that interpolated the value: show its prefix only.
                msg = msg.replace(repr(shown), short(shown)).replace(shown, short(shown))
            if kind not in ("value_error", "assertion_error") and not isinstance(shown, (dict, list)):
                msg = f"{msg} (got {short(shown)})"
        add(Problem(_path(loc), msg))
    return problems


def duplicates(
    items: Sequence[Any],
    base: list[str | int],
    what: str,
    key: Callable[[Any], Any] = lambda x: x,
    field: str | None = None,
) -> Iterable[Problem]:
    """A problem at each later occurrence of a name already listed in `items`."""
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            path = [*base, i, field] if field else [*base, i]
            shown = k if isinstance(k, str) and len(k) <= 60 else f"{str(k)[:60]}…"
            yield Problem(
                key_path(path),
                f"{shown!r} is already listed at {key_path([*base, seen[k]])}; each {what} is listed once",
            )
        else:
            seen[k] = i
