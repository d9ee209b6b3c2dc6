"""The AWS Regions a commercial account provides and their Availability Zones, from the committed
table stacks/data/regions.json (its sources are named in the file): what `aws:region` may name, how
many zones `cluster.vpc.availabilityZones` may ask for, and what the mocks answer
getAvailabilityZones with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "data" / "regions.json"


@dataclass(frozen=True)
class Region:
    code: str
    name: str
    opt_in: bool
    zones: tuple[str, ...]  # the zone names a new account gets
    zone_ids: tuple[str, ...]


@cache
def regions() -> dict[str, Region]:
    data = json.loads(TABLE.read_text())
    return {
        code: Region(code, r["name"], bool(r["optIn"]), tuple(r["zones"]), tuple(r["zoneIds"]))
        for code, r in data["regions"].items()
    }


def region(code: str) -> Region | None:
    return regions().get(code)
