"""Where the project is: the repository root that the program, the command line, the tests and the
tools read every shipped file from. A module of its own so that reading it imports nothing else."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The directory of the pinned charts, unpacked (`<chart>-<version>/`): stacks/charts.py renders them and
# stacks/conformance.py reads the CRDs they ship; here so that neither imports the other for it.
CHARTS_ENV = "INFERENCE_PLATFORM_CHARTS"


def charts_dir(root: Path = ROOT) -> Path | None:
    """$INFERENCE_PLATFORM_CHARTS, else ../shared/charts beside the checkout `root`; None when not there."""
    raw = os.environ.get(CHARTS_ENV)
    path = Path(raw) if raw else root.parent / "shared" / "charts"
    return path if path.is_dir() else None
