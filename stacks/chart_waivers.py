"""Checkov waivers for objects the pinned Helm charts render, each with that object's own reason.

The program's own objects carry their waivers as `checkov.io/skipN` annotations written by their
builders; a chart's objects cannot, so `stacks charts` adds them here before the scan reads the files:
WAIVERS maps (chart directory, kind, name pattern) to {check: reason}. A waiver applies only to the
objects it names, and tests/test_chart_waivers.py checks every one still matches an object (a
chart upgrade that renames or fixes it makes the waiver stale, and the test says so).
"""

from __future__ import annotations

import copy
import re
from typing import Any

# (chart directory as `<chart>-<version>`, kind, regular expression on metadata.name) -> {check: reason}
WAIVERS: dict[tuple[str, str, str], dict[str, str]] = {}


def matching(chart: str, obj: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    name = (obj.get("metadata") or {}).get("name") or ""
    for (c, kind, pattern), reasons in WAIVERS.items():
        if c == chart and kind == obj.get("kind") and re.fullmatch(pattern, name):
            found |= reasons
    return found


def annotate(chart: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` carrying the waivers WAIVERS gives it (after any it already has)."""
    reasons = matching(chart, obj)
    if not reasons:
        return obj
    out = copy.deepcopy(obj)
    annotations = out["metadata"].setdefault("annotations", {}) or {}
    out["metadata"]["annotations"] = annotations
    start = 1 + sum(1 for k in annotations if k.startswith("checkov.io/skip"))
    for i, (check, why) in enumerate(sorted(reasons.items()), start):
        annotations[f"checkov.io/skip{i}"] = f"{check}={why}"
    return out
