"""Secrets as files: mounted read-only from their Secret and exported only into the program's process."""

from __future__ import annotations

import subprocess

import pytest

from components import secretfiles
from components.secretfiles import SecretFile


def test_the_prelude_exports_each_file_then_execs_the_program_with_its_arguments(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "key").write_text("s3cr3t value\n")
    files = [SecretFile("MY_KEY", "my-secret", "key", "vol", str(tmp_path / "a"))]
    script = secretfiles.exec_script(files, "printenv")
    out = subprocess.run(["/bin/sh", "-c", script, "prog", "MY_KEY"], capture_output=True, text=True, check=True)
    assert out.stdout == "s3cr3t value\n"


def test_a_missing_file_stops_the_program_instead_of_starting_without_its_key(tmp_path):
    files = [SecretFile("MY_KEY", "my-secret", "key", "vol", str(tmp_path / "absent"))]
    run = subprocess.run(["/bin/sh", "-c", secretfiles.exec_script(files, "true")], capture_output=True)
    assert run.returncode != 0


def test_volumes_and_mounts_are_one_per_file_and_read_only():
    files = [SecretFile("A", "s1", "k1", "v1", "/run/a"), SecretFile("B", "s2", "k2", "v2", "/run/b")]
    assert secretfiles.volumes(files)[1] == {
        "name": "v2",
        "secret": {"secretName": "s2", "items": [{"key": "k2", "path": "k2"}]},
    }
    assert all(m["readOnly"] for m in secretfiles.mounts(files))


def test_a_name_a_shell_cannot_export_is_refused():
    with pytest.raises(ValueError, match="01AI_API_KEY"):
        secretfiles.exec_script([SecretFile("01AI_API_KEY", "s", "k", "v", "/run")], "true")
