"""The upstream files the offline checks read, pinned by digest in upstream.lock (`make upstream`).

The conformance checks read a schema directory (INFERENCE_PLATFORM_SCHEMAS: upstream CRDs, chart values,
tool help texts) and a chart directory (INFERENCE_PLATFORM_CHARTS: every pinned chart unpacked as
`<chart>-<version>/`). CI has both beside the checkout (../shared); anyone else fetches them here:

    python -m stacks.upstream fetch          download every locked file that has a public URL, each
                                             checked against its sha256 before it is written
    python -m stacks.upstream verify         check the directories against the lock (offline)
    python -m stacks.upstream --update-lock  rewrite the lock from the directories (after a pin changes
                                             in stacks/versions.py and the new files are in place)

The lock has two parts. `pins`: one entry per chart and per CRD source stacks/versions.py pins (CHARTS,
CRD_SOURCES at the chart's pin), naming the folder that holds it or saying why none does, so a pin the
lock does not cover is caught offline (tests/test_upstream.py). `files`: every file of both directories
with its sha256 and the URL it was taken from (a git blob at the recorded commit, or a member of a
published chart archive), taken from the directories' own provenance records (charts/SOURCES.json,
charts/MANIFEST-routing.tsv, schemas/SOURCES*.md). A file with no public URL (a release-time edit the
collector made, a help text captured by running a tool) says so in `origin`, with how it was made.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .paths import ROOT
from .versions import CHARTS, CRD_SOURCES, crd_source

LOCK = ROOT / "upstream.lock"
# Environment variable -> the folder name the lock's paths start with (the layout of ../shared).
FOLDERS = {"INFERENCE_PLATFORM_SCHEMAS": "schemas", "INFERENCE_PLATFORM_CHARTS": "charts"}
# The collectors' own notes at the top of each directory (their findings and provenance records), not
# upstream files the checks read.
NOTES = re.compile(r"^(schemas/[^/]+\.md|charts/[^/]+\.(json|tsv))$")

Download = Callable[[str], bytes]


@dataclass(frozen=True)
class Locked:
    """One locked file: its path under the folders (`schemas/...`, `charts/...`), its sha256, and the URL
    it is fetched from (`<archive URL>#<member>` for a file inside a published chart archive) or, when it
    has none, `origin`: where it came from and how to make it again."""

    path: str
    sha256: str
    url: str | None
    origin: str = ""


def folders() -> dict[str, Path]:
    """The two directories by lock prefix: the variables, else ../shared/<name> beside the checkout."""
    return {name: Path(os.environ.get(env) or ROOT.parent / "shared" / name) for env, name in FOLDERS.items()}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- what stacks/versions.py pins ---------------------------------------------------------------------


def required_pins() -> dict[str, dict[str, str]]:
    """Every chart and CRD source the catalog pins, by lock key (`chart <key>`, `crds <owner>`)."""
    pins = {
        f"chart {key}": {"chart": c.chart, "version": c.version, "repo": c.repo or "git only"}
        for key, c in CHARTS.items()
    }
    for owner in CRD_SOURCES:
        source = crd_source(owner)
        pins[f"crds {owner}"] = {"version": source.version, "source": source.label}
    return pins


def uncovered(lock: dict[str, Any]) -> list[str]:
    """Pins of stacks/versions.py the lock has no entry for, or an entry for another version."""
    problems = []
    locked = lock.get("pins", {})
    for key, pin in required_pins().items():
        entry = locked.get(key)
        if entry is None:
            problems.append(f"{key} {pin['version']}: pinned in stacks/versions.py, no entry in upstream.lock")
        elif entry.get("version") != pin["version"]:
            problems.append(
                f"{key}: stacks/versions.py pins {pin['version']}, upstream.lock has {entry.get('version')} "
                "(run `python -m stacks.upstream --update-lock` with the new files in place)"
            )
    problems += [
        f"{key}: in upstream.lock, pinned nowhere in stacks/versions.py"
        for key in locked.keys() - required_pins().keys()
    ]
    return problems


# ---- reading and checking the lock ----------------------------------------------------------------------


def read_lock(path: Path = LOCK) -> dict[str, Any]:
    return json.loads(path.read_text())


def entries(lock: dict[str, Any]) -> list[Locked]:
    return [Locked(f["path"], f["sha256"], f.get("url"), f.get("origin", "")) for f in lock["files"]]


def on_disk(roots: dict[str, Path]) -> dict[str, Path]:
    """Every file of the folders by lock path, the collectors' notes left out."""
    found = {}
    for name, root in roots.items():
        if root.is_dir():
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                key = f"{name}/{path.relative_to(root).as_posix()}"
                if not NOTES.match(key):
                    found[key] = path
    return found


def verify(lock: dict[str, Any], roots: dict[str, Path]) -> list[str]:
    """Each locked file present with its locked digest, and no file the lock does not name: the checks read
    whole directories, so an extra file changes what they check."""
    problems = []
    present = on_disk(roots)
    for entry in entries(lock):
        path = present.pop(entry.path, None)
        if path is None:
            problems.append(f"{entry.path}: missing (`make upstream` fetches it)")
            continue
        digest = sha256(path.read_bytes())
        if digest != entry.sha256:
            problems.append(f"{entry.path}: sha256 {digest} on disk, upstream.lock has {entry.sha256}")
    problems += [f"{key}: not in upstream.lock (`python -m stacks.upstream --update-lock`)" for key in present]
    return problems


# ---- fetching -------------------------------------------------------------------------------------------


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:
        data: bytes = response.read()
        return data


def _member(archive: bytes, member: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        handle = tar.extractfile(member)
        if handle is None:
            raise KeyError(f"{member} is not a file of the archive")
        return handle.read()


def fetch(lock: dict[str, Any], roots: dict[str, Path], download: Download = _download) -> list[str]:
    """Download every locked file not already on disk with its digest; write it only when its sha256 is the
    locked one. Returns the problems: a digest that differs (the file and both digests), a download that
    failed, a file with no public URL that is not on disk (its origin says how to make it)."""
    problems: list[str] = []
    archives: dict[str, bytes] = {}
    for entry in entries(lock):
        target = roots[entry.path.split("/", 1)[0]] / entry.path.split("/", 1)[1]
        if target.is_file() and sha256(target.read_bytes()) == entry.sha256:
            continue
        if entry.url is None:
            problems.append(f"{entry.path}: no public URL; {entry.origin}")
            continue
        try:
            data = _fetched(entry.url, archives, download)
        except (OSError, KeyError, tarfile.TarError) as err:
            problems.append(f"{entry.path}: {entry.url}: {err}")
            continue
        if (digest := sha256(data)) != entry.sha256:
            problems.append(f"{entry.path}: {entry.url} has sha256 {digest}, upstream.lock has {entry.sha256}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return problems


def _fetched(url: str, archives: dict[str, bytes], download: Download) -> bytes:
    """A URL's bytes; `<archive>#<member>` reads one member of a .tgz, the archive downloaded once."""
    if "#" not in url:
        return download(url)
    archive, member = url.split("#", 1)
    if archive not in archives:
        archives[archive] = download(archive)
    return _member(archives[archive], member)


# ---- writing the lock -------------------------------------------------------------------------------


def blob(repo: str, commit: str, path: str) -> str:
    """The URL of a file at a commit (a full or abbreviated SHA, or a tag): github.com resolves both."""
    return f"https://github.com/{repo}/raw/{commit}/{path}"


def _provenance_rows(schemas: Path) -> Iterator[tuple[str, str, str, str]]:
    """(local file, repo, upstream path, commit) from the per-file tables of schemas/SOURCES*.md."""
    for doc in sorted(schemas.glob("SOURCES*.md")):
        for line in doc.read_text().splitlines():
            cells = _cells(line)
            if len(cells) < 5 or not (schemas / cells[0]).is_file():
                continue
            repo = re.split(r"\s|-via-", cells[1])[0]
            if re.fullmatch(r"[\w.-]+/[\w.-]+", repo) and re.fullmatch(r"[0-9a-f]{7,40}", cells[4]):
                yield cells[0], repo, cells[2], cells[4]


def _cells(line: str) -> list[str]:
    """A markdown table row's cells, a leading `schemas/` dropped from the first (the tables differ)."""
    cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
    return [re.sub(r"^schemas/", "", cells[0]), *cells[1:]]


def schema_urls(schemas: Path) -> dict[str, str]:
    return {f"schemas/{local}": blob(repo, commit, path) for local, repo, path, commit in _provenance_rows(schemas)}


def chart_urls(charts: Path) -> dict[str, str]:
    """Lock path -> URL for the chart files whose upstream bytes are known: the routing charts' per-file
    manifest, a chart unpacked from its published archive, and the git source of the others (its files
    under a release-time edit left out: they have no public URL)."""
    urls = {}
    manifest = charts / "MANIFEST-routing.tsv"
    if manifest.is_file():
        for line in manifest.read_text().splitlines()[1:]:
            local, repo, path, _ref, commit, *_ = line.split("\t")
            urls[local] = blob(repo, commit, path)
    for folder, source in json.loads((charts / "SOURCES.json").read_text()).items():
        for rel in (p.relative_to(charts / folder).as_posix() for p in (charts / folder).rglob("*") if p.is_file()):
            url = _chart_file_url(source, rel)
            if url is not None:
                urls.setdefault(f"charts/{folder}/{rel}", url)
    return urls


def _chart_file_url(source: dict[str, Any], rel: str) -> str | None:
    published = str(source.get("published", "")).split(" ")[0]
    if source.get("tgz_sha256") and published.endswith(".tgz"):
        return f"{published}#{source['chart']}/{rel}"
    if " + " in source["path"] or not source.get("exact"):
        return None
    edited = " ".join(source.get("patches") or [])
    if (rel == "Chart.yaml" and "Chart.yaml" in edited) or (rel == "values.yaml" and "values" in edited):
        return None
    if "crds/ symlinks" in source.get("note", "") and rel.startswith("crds/"):
        return blob(source["repo"], source["commit"], f"pkg/apis/{rel}")  # the chart's crds/ links there
    return blob(source["repo"].split()[0], source["commit"], f"{source['path'].rstrip('/')}/{rel}")


def _origins(roots: dict[str, Path]) -> dict[str, str]:
    """Lock path -> how a file with no public URL was made, from the folders' provenance records."""
    origins = {}
    charts = roots["charts"]
    for folder, source in json.loads((charts / "SOURCES.json").read_text()).items():
        edits = "; ".join(source.get("patches") or []) or "none"
        origins[f"charts/{folder}/"] = (
            f"made by the collector of ../shared from {source['repo']} {source['path']} at {source['commit']} "
            f"({source.get('ref', '')}); release-time edits: {edits}; {source.get('note', '')}".rstrip("; ")
        )
    for doc in sorted(roots["schemas"].glob("SOURCES*.md")):
        for line in doc.read_text().splitlines():
            cells = _cells(line)
            key = f"schemas/{cells[0]}"
            if len(cells) >= 5 and (roots["schemas"] / cells[0]).is_file() and "/" in cells[1]:
                origins[key] = f"schemas/{doc.name}: {' | '.join(cells[1:])}"
            elif line.startswith("|") and len(cells) >= 2:
                origins.setdefault(f"mentions {cells[0]}", f"schemas/{doc.name}: {' | '.join(cells)}")
    return origins


def _origin(path: str, origins: dict[str, str]) -> str:
    if path in origins:
        return origins[path]
    folder = next((k for k in origins if k.endswith("/") and path.startswith(k)), None)
    if folder is not None:
        return origins[folder]
    # A derived file: the row of the provenance tables that names it, or its folder (`cli/` is cli-scaling).
    name, parent = path.rsplit("/", 1)[-1], path.split("/")[-2].removesuffix("-scaling")
    for key, text in origins.items():
        if key.startswith("mentions ") and (name.split("-")[0] in key or f"{parent}/" in key):
            return text
    return "not listed file by file in schemas/SOURCES*.md: copied by the collector of ../shared (its README)"


def locked_files(roots: dict[str, Path]) -> list[dict[str, str | None]]:
    """Every file of the folders with its digest and URL; a file with the same bytes as one whose URL is
    known shares it (the Karpenter chart's values are the post-release commit's, on file in schemas/)."""
    urls = {**schema_urls(roots["schemas"]), **chart_urls(roots["charts"])}
    digests = {key: sha256(path.read_bytes()) for key, path in on_disk(roots).items()}
    by_digest = {digests[k]: u for k, u in urls.items() if k in digests}
    origins = _origins(roots)
    files = []
    for key, digest in digests.items():
        url = urls.get(key) or by_digest.get(digest)
        entry: dict[str, str | None] = {"path": key, "sha256": digest, "url": url}
        if url is None:
            entry["origin"] = _origin(key, origins)
        files.append(entry)
    return files


def _chart_pin(pin: dict[str, str], roots: dict[str, Path], present: set[str]) -> dict[str, Any]:
    from .conformance import CHART_VALUES

    folder = f"charts/{pin['chart']}-{pin['version']}"
    entry: dict[str, Any] = dict(pin)
    if any(p.startswith(folder + "/") for p in present):
        entry["folder"] = folder
        return entry
    entry["folder"] = None
    nearest = sorted(p.name for p in roots["charts"].glob(f"{pin['chart']}-*") if p.is_dir())
    values = [f"schemas/{f}" for _, f in CHART_VALUES.get(pin["chart"], ([], None))[0] if f"schemas/{f}" in present]
    entry["missing"] = (
        f"{pin['chart']} {pin['version']} is not on file: `stacks charts` reports its releases as not templated"
        + (f"; the nearest on file is charts/{', charts/'.join(nearest)}" if nearest else "")
        + (f"; its values are checked against {', '.join(values)}" if values else "")
    )
    return entry


def _crd_pin(owner: str, pin: dict[str, str], present: set[str]) -> dict[str, Any]:
    source = crd_source(owner)
    entry: dict[str, Any] = dict(pin)
    if source.chart is not None:
        folder = f"charts/{source.chart.chart}-{source.chart.version}"
        on_file = any(p.startswith(folder + "/") for p in present)
        entry["folder"] = folder if on_file else None
        if not on_file:
            entry["missing"] = (
                f"{source.label} is templated at deploy time from {source.chart.repo}; the checks read the same "
                "CRDs from the schema directory"
            )
        return entry
    by_name: dict[str, list[str]] = {}
    for path in present:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    entry["files"] = {
        url: sorted(p for p in by_name.get(url.rsplit("/", 1)[-1], []) if p.startswith("schemas/")) or None
        for url in source.urls
    }
    return entry


def build_lock(roots: dict[str, Path]) -> dict[str, Any]:
    files = locked_files(roots)
    present = {str(f["path"]) for f in files}
    pins = {}
    for key, pin in required_pins().items():
        kind, name = key.split(" ", 1)
        pins[key] = _chart_pin(pin, roots, present) if kind == "chart" else _crd_pin(name, pin, present)
    return {
        "about": (
            "The upstream files the offline checks read (the schema and chart directories), by sha256, and the "
            "pins of stacks/versions.py they cover. Written by `python -m stacks.upstream --update-lock`; "
            "read by `make upstream` (fetch) and `make upstream-verify`. A file without `url` has no public "
            "URL: `origin` says how it was made."
        ),
        "pins": pins,
        "files": files,
    }


def write_lock(lock: dict[str, Any], path: Path = LOCK) -> None:
    path.write_text(json.dumps(lock, indent=1, sort_keys=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stacks.upstream", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("fetch", "verify"), default="verify")
    parser.add_argument("--update-lock", action="store_true", help="rewrite upstream.lock from the directories")
    args = parser.parse_args(argv)
    roots = folders()
    if args.update_lock:
        if not all(root.is_dir() for root in roots.values()):
            print(f"upstream: --update-lock reads both directories: {roots['schemas']}, {roots['charts']}")
            return 1
        write_lock(build_lock(roots))
        print(f"upstream: wrote {LOCK.name}")
        return 0
    lock = read_lock()
    problems = uncovered(lock)
    if args.mode == "fetch":
        for root in roots.values():
            root.mkdir(parents=True, exist_ok=True)
        problems += fetch(lock, roots)
    problems += verify(lock, roots)
    for line in problems:
        print(f"upstream: {line}", file=sys.stderr)
    files = len(lock["files"])
    print(
        f"upstream: {files - len(problems) if problems else files} of {files} locked files in place"
        + ("" if problems else ", every digest matches")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
