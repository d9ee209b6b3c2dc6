"""Cron schedules and time zones as a Kubernetes batch/v1 CronJob accepts them, checked before any
resource exists (a schedule the API server refuses would fail `pulumi up` half-way).

The API server (pkg/apis/batch/validation validateScheduleFormat, validateTimeZone) parses
`spec.schedule` with robfig/cron v3 `ParseStandard`: exactly five whitespace-separated fields
(minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT, names
in any case), each a comma list of `*`, `?`, `N` or `N-M`, optionally `/step` (step > 0; `N/step`
means N to the field's maximum), or one descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`,
`@daily`, `@midnight`, `@hourly`, `@every <Go duration>`). A schedule holding `TZ` is refused there
("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"). `spec.timeZone` must be an IANA
name: no `Local`, each `/` component of ASCII letters, digits, `.`, `-`, `_`, `+` (1-14 characters, not
`.`/`..`, not starting with `-`), and one the time zone database knows (Go's time.LoadLocation; here
Python's zoneinfo).
"""

from __future__ import annotations

import functools
import re
import zoneinfo

NIGHTLY = "0 3 * * *"
_EXAMPLE = f'"{NIGHTLY}" (03:00 every night) or @daily'

# (name, lowest, highest, names) of the five fields, in order.
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i for i, m in enumerate(_MONTHS, 1)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(_DAYS)}),
)
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# A Go time.Duration as time.ParseDuration reads it: one or more <decimal><unit>.
_GO_DURATION = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h)")
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _number(text: str, names: dict[str, int], field: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"{field} field: {text!r} is not a number" + (" or a name" if names else ""))
    return int(text)


def _part(part: str, field: str, low: int, high: int, names: dict[str, int]) -> None:
    """One comma-separated part of a field: `*`, `?`, `N`, `N-M`, each optionally `/step`."""
    span, _, step = part.partition("/")
    if "/" in step:
        raise ValueError(f"{field} field: {part!r} has more than one '/'")
    if step and (not step.isascii() or not step.isdigit() or int(step) == 0):
        raise ValueError(f"{field} field: the step of {part!r} must be a whole number above 0")
    if span in ("*", "?"):
        return
    first, dash, last = span.partition("-")
    if "-" in last:
        raise ValueError(f"{field} field: {part!r} has more than one '-'")
    start = _number(first, names, field)
    end = _number(last, names, field) if dash else (high if step else start)
    if start < low or end > high:
        raise ValueError(f"{field} field: {part!r} is outside {low}-{high}")
    if start > end:
        raise ValueError(f"{field} field: {part!r} starts after it ends")


def schedule_problem(schedule: str) -> str | None:
    """Why Kubernetes refuses `schedule` as a CronJob's spec.schedule, with an example; None: accepted."""
    try:
        _check(schedule)
    except ValueError as exc:
        return f"{exc}; a CronJob schedule is five fields (minute hour day-of-month month day-of-week), e.g. {_EXAMPLE}"
    return None


def _check(schedule: str) -> None:
    if "TZ" in schedule:
        raise ValueError("Kubernetes refuses TZ= or CRON_TZ= in a schedule; set timeZone instead")
    if schedule.startswith("@"):
        if schedule in DESCRIPTORS:
            return
        every = schedule.removeprefix("@every ").strip()
        if schedule.startswith("@every ") and re.fullmatch(f"(?:{_GO_DURATION.pattern})+", every):
            return
        raise ValueError(f"{schedule!r} is not one of {', '.join(DESCRIPTORS)} or @every <duration> (e.g. @every 6h)")
    fields = schedule.split()
    if len(fields) != len(_FIELDS):
        raise ValueError(f"{schedule!r} has {len(fields)} fields, not 5")
    for text, (field, low, high, names) in zip(fields, _FIELDS, strict=True):
        for part in text.split(","):
            _part(part, field, low, high, names)


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def time_zone_problem(zone: str) -> str | None:
    """Why Kubernetes refuses `zone` as a CronJob's spec.timeZone; None: accepted."""
    fix = "name an IANA time zone such as Europe/Berlin, America/New_York or UTC"
    if zone.lower() == "local":
        return f"Local is the controller's own zone, which Kubernetes refuses; {fix}"
    parts = zone.split("/")
    if any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.fullmatch(p) for p in parts):
        return f"{zone!r} is not an IANA time zone name; {fix}"
    if zone not in _zones():
        return f"{zone!r} is not in the time zone database; {fix}"
    return None
