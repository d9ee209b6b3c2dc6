"""Where the project is: the repository root that the program, the command line, the tests and the
tools read every shipped file from. A module of its own so that reading it imports nothing else."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
