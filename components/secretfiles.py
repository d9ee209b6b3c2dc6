"""Existing Secrets mounted as files, read into a program's environment at start.

Some servers take a credential only from an environment variable (NIM's NGC_API_KEY, LiteLLM's
`os.environ/...` config references). Putting it there with `secretKeyRef` writes the wiring into the
pod spec and exposes the value to anything that can read the container's env from the API. Instead
each key is mounted read-only from its Secret, and a one-line shell prelude in front of the
program exports it just before `exec`, so it lives only in that process. Pure builders.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SecretFile:
    env: str  # the variable the program reads
    secret: str  # an existing Secret in the pod's namespace
    key: str  # the key within it
    volume: str  # the volume name (a DNS label, unique in the pod)
    directory: str  # where the key is mounted, as a file named after the key

    @property
    def path(self) -> str:
        return f"{self.directory}/{self.key}"


def volumes(files: Sequence[SecretFile]) -> list[dict[str, Any]]:
    return [
        {"name": f.volume, "secret": {"secretName": f.secret, "items": [{"key": f.key, "path": f.key}]}} for f in files
    ]


def mounts(files: Sequence[SecretFile]) -> list[dict[str, Any]]:
    return [{"name": f.volume, "mountPath": f.directory, "readOnly": True} for f in files]


def exec_script(files: Sequence[SecretFile], program: str) -> str:
    """`sh -c` text that exports each file's content as its variable, then execs `program "$@"`."""
    for f in files:
        if not _IDENTIFIER.match(f.env):
            raise ValueError(f"{f.env!r} is not an environment variable name a shell can export")
    exports = [f'{f.env}="$(cat {shlex.quote(f.path)})" && export {f.env}' for f in files]
    return " && ".join([*exports, f'exec {program} "$@"'])
