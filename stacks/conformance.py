"""Schema conformance of rendered output against upstream schemas.

- Custom resources: the upstream CRD's `openAPIV3Schema` for the object's group, version and kind,
  read strictly: an object schema that lists `properties` admits no other keys unless it says
  `x-kubernetes-preserve-unknown-fields` or gives `additionalProperties`. (The API server would
  prune an unknown field silently; here it is an error, which is how a guessed field name is caught.)
  CEL rules (`x-kubernetes-validations`) are not evaluated; the rules that matter are unit-tested.
- Core objects: the `kubernetes-validate` package, strict, for the stack's Kubernetes version.
- Helm values: every key path must exist in the pinned chart's values.yaml or sit under a map the
  chart leaves open; a chart's values.schema.json, where it ships one, must pass too.

The schema directory is read from INFERENCE_PLATFORM_SCHEMAS (CI: ../shared/schemas).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from . import versions
from .paths import ROOT, charts_dir

ENV = "INFERENCE_PLATFORM_SCHEMAS"

# API groups served by Kubernetes itself (validated with kubernetes-validate).
CORE_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "apiregistration.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
}

# Helm chart name -> (values.yaml files merged in order, values.schema.json or None), relative to
# the schema directory. Subchart values are mounted under their alias.
CHART_VALUES: dict[str, tuple[list[tuple[str, str]], str | None]] = {
    "karpenter": ([("", "karpenter/v1.14.1/chart/values.main-1d927085.yaml")], None),
    "nvidia-device-plugin": ([("", "nvidia-device-plugin/v0.20.0/values.yaml")], None),
    "neuron-helm-chart": ([("", "neuron-helm-chart/1.9.0/values.yaml")], None),
    "aws-efa-k8s-device-plugin": ([("", "aws-efa-k8s-device-plugin/v0.5.30/chart/values.yaml")], None),
    "aibrix": ([("", "aibrix/v0.7.0/chart/values.yaml")], "aibrix/v0.7.0/chart/values.schema.json"),
    "dynamo-platform": (
        [
            ("", "dynamo/main-e147ceea/chart/values.yaml"),
            ("dynamo-operator", "dynamo/main-e147ceea/operator-chart/values.yaml"),
        ],
        None,
    ),
    "kuberay-operator": ([("", "kuberay/v1.7.0/chart/values.yaml")], None),
    "gateway-helm": ([("", "envoy-gateway/v1.9.0/chart/values.tmpl.yaml")], None),
    "k8s-nim-operator": ([("", "nim-operator/v3.1.2/chart/values.yaml")], None),
    "aws-efs-csi-driver": ([("", "aws-efs-csi-driver/v3.4.1/values.yaml")], None),
    "aws-fsx-csi-driver": ([("", "aws-fsx-csi-driver/v1.9.0/values.yaml")], None),
    "lws": ([("", "lws/v0.10.0/chart/values.yaml")], None),
    "keda": ([("", "keda/v2.20.2/chart/values.yaml")], None),
    "keda-add-ons-http": ([("", "keda-http-add-on/v0.15.0/chart/values.yaml")], None),
    "llm-d-router-standalone": (
        [
            ("", "llm-d-router/v0.10.0/chart/llm-d-router-standalone/values.yaml"),
            ("router", "llm-d-router/v0.10.0/chart/routerlib/values.yaml"),
        ],
        None,
    ),
    # Not in the schema directory (VALUES_NOT_ON_FILE says where each comes from): checked once fetched.
    "kube-prometheus-stack": (
        [
            ("", "kube-prometheus-stack/81.6.2/chart/values.yaml"),
            ("grafana", "grafana/11.1.1/chart/values.yaml"),
        ],
        None,
    ),
    "dcgm-exporter": ([("", "dcgm-exporter/4.8.2/chart/values.yaml")], None),
    "prometheus-adapter": ([("", "prometheus-adapter/5.3.0/chart/values.yaml")], None),
    "aws-load-balancer-controller": ([("", "aws-load-balancer-controller/v3.5.0/chart/values.yaml")], None),
}

# Charts installed with their defaults: a release of one must pass no values at all.
VALUELESS_CHARTS = {"karpenter-crd", "prometheus-operator-crds"}

# values files of CHART_VALUES that the shared schema directory does not carry -> where upstream keeps
# them. A release of such a chart is reported as skipped, by name, until the file is fetched (README,
# "Schemas"); then its keys are checked like every other chart's.
VALUES_NOT_ON_FILE: dict[str, str] = {
    "kube-prometheus-stack/81.6.2/chart/values.yaml": (
        "prometheus-community/helm-charts tag kube-prometheus-stack-81.6.2 charts/kube-prometheus-stack/values.yaml"
    ),
    "grafana/11.1.1/chart/values.yaml": "grafana-community/helm-charts tag grafana-11.1.1 charts/grafana/values.yaml",
    "dcgm-exporter/4.8.2/chart/values.yaml": "NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 deployment/values.yaml",
    "prometheus-adapter/5.3.0/chart/values.yaml": (
        "prometheus-community/helm-charts tag prometheus-adapter-5.3.0 charts/prometheus-adapter/values.yaml"
    ),
    "aws-load-balancer-controller/v3.5.0/chart/values.yaml": (
        "aws/eks-charts commit 5239609 (aws-load-balancer-controller: v3.5.0) "
        "stable/aws-load-balancer-controller/values.yaml"
    ),
}

# Values keys that are Kubernetes label/annotation maps wherever they appear: any key is valid under
# them, even when the chart's default map is not empty (karpenter's nodeSelector has kubernetes.io/os).
OPEN_MAP_KEYS = {"nodeSelector", "podLabels", "podAnnotations", "additionalLabels", "additionalAnnotations"}

# Keys a chart reads in its templates but leaves commented out in values.yaml: (chart, dotted path) -> why.
COMMENTED_KEYS: dict[tuple[str, str], str] = {
    **{
        ("keda-add-ons-http", f"{key}.{component}"): (
            f"commented out in values.yaml (`# {component}:` under {key}); templates/{component}/deployment.yaml "
            f"renders .Values.{key}.{component} whole (toYaml) when set, else .Values.{key}"
        )
        for key in ("podSecurityContext", "securityContext")
        for component in ("interceptor", "scaler", "operator")
    },
    ("kube-prometheus-stack", "kube-state-metrics.metricLabelsAllowlist"): (
        "a value of the kube-state-metrics subchart (7.1.0), which the kept chart does not carry: its values.yaml "
        "declares `metricLabelsAllowlist: []` (prometheus-community/helm-charts charts/kube-state-metrics), rendered "
        "as the container's --metric-labels-allowlist"
    ),
    ("aws-efa-k8s-device-plugin", "securityContext.readOnlyRootFilesystem"): (
        "templates/daemonset.yaml renders the container's .Values.securityContext whole (toYaml)"
    ),
    ("aws-efa-k8s-device-plugin", "resources.limits"): (
        "commented out in values.yaml (`# limits:`) and rendered whole by templates/daemonset.yaml (toYaml)"
    ),
    ("llm-d-router-standalone", "router.modelServers.matchLabels"): (
        "commented out in both values files (`# matchLabels: # REQUIRED`); routerlib templates/_deployment.yaml "
        "renders it as --endpoint-selector and templates/_validations.tpl requires it with inferencePool.create false"
    ),
    **{
        ("llm-d-router-standalone", f"router.proxy.{key}"): (
            "not a top-level key of llm-d-router-standalone's values.yaml but of its preset "
            f"(`router.proxy.presets.envoy.{key}`), which the values file says is overridden by `router.proxy.*` "
            "('Optional explicit proxy overrides applied on top of the selected preset. For example, set "
            "proxy.image to replace the preset image.'): routerlib templates/_helpers.tpl `llm-d-router.proxy` "
            "merges `$proxy` over the preset (mergeOverwrite) and _deployment.yaml renders the merged "
            f"`$proxy.{key}`"
        )
        for key in ("image", "configMap", "volumes")
    },
    **{
        ("llm-d-router-standalone", f"router.proxy.{key}"): (
            "set by neither values file nor the envoy preset; routerlib templates/_deployment.yaml renders the "
            f"merged proxy's `{key}` on the proxy container (`with $proxy.{key}`), as it does its resources"
        )
        for key in ("securityContext", "livenessProbe")
    },
    ("llm-d-router-standalone", "router.epp.flags"): (
        "commented out in routerlib values.yaml (`# flags:`); templates/_deployment.yaml renders each entry as "
        "--<key>=<value>"
    ),
    **{
        ("keda", f"podSecurityContext.{pod}.{key}"): (
            f"commented out in values.yaml (`# {key}: 1000`); templates/{template}/deployment.yaml renders "
            f".Values.podSecurityContext.{pod} whole (toYaml)"
        )
        for pod, template in (("operator", "manager"), ("metricServer", "metrics-server"), ("webhooks", "webhooks"))
        for key in ("runAsUser", "runAsGroup")
    },
    ("lws", "podSecurityContext.runAsUser"): (
        "templates/manager/deployment.yaml renders .Values.podSecurityContext whole (toYaml)"
    ),
    ("lws", "podSecurityContext.seccompProfile"): (
        "templates/manager/deployment.yaml renders .Values.podSecurityContext whole (toYaml)"
    ),
    ("lws", "resources.limits"): "templates/manager/deployment.yaml renders .Values.resources whole (toYaml)",
    ("kube-prometheus-stack", "alertmanager.alertmanagerSpec.configSecret"): (
        "commented out in values.yaml (`# configSecret:`) and rendered as the Alertmanager's spec.configSecret by "
        "templates/alertmanager/alertmanager.yaml when set"
    ),
    ("aibrix", "gateway.envoyProxy.service"): (
        "absent from values.yaml but defined by values.schema.json ($defs.kubernetesServiceSpec, still "
        "checked below) and rendered as the EnvoyProxy's envoyService by dist/chart/templates/"
        "gateway-instance/gateway.yaml"
    ),
    ("gateway-helm", "config.envoyGateway.provider.kubernetes"): (
        "values.tmpl.yaml sets only provider.type; templates/envoy-gateway-config.yaml merges the whole "
        "config.envoyGateway map into the EnvoyGateway configuration (api/v1alpha1/envoygateway_types.go "
        "EnvoyGatewayKubernetesProvider.deploy.type), and templates/infra-manager-rbac.yaml grants the "
        "cluster-wide infra role when provider.kubernetes.deploy.type is GatewayNamespace"
    ),
    # Keys of maps the chart renders whole (`toYaml`), set for the chart scan (stacks/chart_waivers.py).
    ("aws-load-balancer-controller", "securityContext.capabilities"): (
        "commented out in values.yaml (`# capabilities: drop: [ALL]`); templates/deployment.yaml renders "
        "the whole securityContext map as the controller container's"
    ),
    ("aws-load-balancer-controller", "podSecurityContext.runAsUser"): (
        "absent from values.yaml; templates/deployment.yaml renders the whole podSecurityContext map as the pod's"
    ),
    ("aws-load-balancer-controller", "podSecurityContext.seccompProfile"): (
        "absent from values.yaml; templates/deployment.yaml renders the whole podSecurityContext map as the pod's"
    ),
    ("aibrix", "metadata.redis.container.resources.limits"): (
        "values.yaml sets only requests; templates/metadata-service/redis.yaml renders the whole resources "
        "map as the Redis container's"
    ),
}

# (group, kind) of custom resources the platform renders whose upstream CRD is NOT in the schema
# directory, with where to fetch it. Objects of these kinds cannot be schema-checked: the conformance
# test reports them as skipped, by name, and unit tests check their structure instead. Once the CRD
# is fetched into the schema directory (README, "Schemas"), `crd_on_file` finds it and the objects are
# validated like every other custom resource.
CRDS_NOT_ON_FILE: dict[tuple[str, str], str] = {
    ("monitoring.coreos.com", "PodMonitor"): (
        "prometheus-operator/prometheus-operator example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml"
    ),
    ("monitoring.coreos.com", "ServiceMonitor"): (
        "prometheus-operator/prometheus-operator example/prometheus-operator-crd/"
        "monitoring.coreos.com_servicemonitors.yaml"
    ),
    ("monitoring.coreos.com", "PrometheusRule"): (
        "prometheus-operator/prometheus-operator example/prometheus-operator-crd/"
        "monitoring.coreos.com_prometheusrules.yaml"
    ),
}


def schema_dir() -> Path | None:
    """$INFERENCE_PLATFORM_SCHEMAS, else ../shared/schemas beside the checkout; None when not there."""
    raw = os.environ.get(ENV)
    path = Path(raw) if raw else ROOT.parent / "shared" / "schemas"
    return path if path.is_dir() else None


def api_group(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def is_core(obj: dict[str, Any]) -> bool:
    return api_group(obj.get("apiVersion", ""))[0] in CORE_GROUPS


# ---- custom resources ------------------------------------------------------------------------------


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_GROUP = re.compile(r"^  group: ['\"]?([\w.-]+)", re.M)
_KIND = re.compile(r"^    kind: ['\"]?(\w+)", re.M)


@cache
def crd_files(root: Path) -> dict[tuple[str, str], list[Path]]:
    """(group, kind) -> CRD files, from a cheap text scan (parsing 14 MB of YAML takes a while)."""
    index: dict[tuple[str, str], list[Path]] = {}
    for path in sorted(root.rglob("*.yaml")):
        if "/samples/" in str(path) or "/chart/" in str(path):
            continue
        text = path.read_text()
        if "kind: CustomResourceDefinition" not in text:
            continue
        group, kind = _GROUP.search(text), _KIND.search(text)
        if group and kind:
            index.setdefault((group.group(1), kind.group(1)), []).append(path)
    return index


# (group, kind) -> the chart (its key in stacks/versions.py CHARTS) whose pinned release ships the CRD
# the schema directory lacks. The kept schemas hold Envoy Gateway's policy CRDs but not EnvoyProxy; the
# gateway-helm chart the platform installs carries it (charts/crds/crds/generated/), so an EnvoyProxy is
# held to that release's CRD. Without the chart directory such an object is reported unvalidated.
CRDS_IN_CHARTS: dict[tuple[str, str], str] = {
    ("gateway.envoyproxy.io", "EnvoyProxy"): "envoy-gateway",
}


def pinned_chart_dirs() -> list[Path]:
    """The directories, in the chart directory ($INFERENCE_PLATFORM_CHARTS), of the charts at the
    versions stacks/versions.py pins (`<chart>-<version>`); none without the chart directory."""
    root = charts_dir()
    if root is None:
        return []
    found = (root / f"{c.chart}-{c.version}" for c in versions.CHARTS.values())
    return sorted({d for d in found if d.is_dir()})


@cache
def chart_crd_files() -> dict[tuple[str, str], list[Path]]:
    """(group, kind) -> the CRD files the pinned charts in the chart directory ship."""
    index: dict[tuple[str, str], list[Path]] = {}
    for chart in pinned_chart_dirs():
        for key, paths in crd_files(chart).items():
            index.setdefault(key, []).extend(paths)
    return index


# Parsed CRDs kept as JSON, shared by the processes of one machine (the test workers, a second run):
# parsing a megabyte-sized CRD as YAML takes a quarter of a second, reading it back as JSON a
# hundredth. A file's key is its path, size and modification time, so an edited CRD is parsed anew.
CRD_CACHE = Path(__file__).resolve().parent.parent / "build" / "crd-json"


def crd_documents(path: Path) -> list[Any]:
    """The YAML documents of one CRD file, through the JSON cache."""
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    cached = CRD_CACHE / f"{key}.json"
    try:
        return json.loads(cached.read_text())
    except (OSError, ValueError):
        pass
    docs = list(yaml.load_all(path.read_text(), Loader=_LOADER))
    with contextlib.suppress(OSError):  # a read-only checkout still validates, only slower
        CRD_CACHE.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(docs))
        tmp.replace(cached)
    return docs


# API group -> the directory (under the schema directory) of the CRDs the pinned operator installs,
# where the schema directory holds several releases of them: an object is held to that release's schema,
# not passed because an older one would take it. Dynamo: dynamo-platform 1.4.2 runs the 1.4.0 cut.
PINNED_CRDS: dict[str, str] = {
    "nvidia.com": "dynamo/main-e147ceea",
    # What the charts install (their CRDs are templates): the chart's ScaledObject bounds
    # stabilizationWindowSeconds to 0-3600, kedacore/keda's config/crd/bases at v2.20.2 do not.
    "keda.sh": "keda/v2.20.2/crds-chart-rendered",
    "http.keda.sh": "keda-http-add-on/v0.15.0/crds-chart-rendered",
}


def _pinned(root: Path, group: str, paths: list[Path]) -> list[Path]:
    """The CRD files of the release PINNED_CRDS names for this group, when it has them; else all."""
    where = PINNED_CRDS.get(group)
    chosen = [p for p in paths if where is not None and p.is_relative_to(root / where)]
    return chosen or paths


def crd_files_of(root: Path, group: str, kind: str) -> list[Path]:
    """The CRD files an object of this group and kind is validated against: the schema directory's,
    else (for a kind it lacks) those the pinned charts in the chart directory ship."""
    on_file = crd_files(root).get((group, kind))
    if on_file:
        return _pinned(root, group, on_file)
    return chart_crd_files().get((group, kind), [])


@cache
def crd_schemas(root: Path, group: str, version: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """[(source file, strict openAPIV3Schema)] of every CRD under root serving group/version kind
    (of the pinned release only, for a group in PINNED_CRDS)."""
    found = []
    for path in crd_files_of(root, group, kind):
        for doc in crd_documents(path):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            for ver in doc["spec"].get("versions", []):
                schema = (ver.get("schema") or {}).get("openAPIV3Schema")
                if schema and ver["name"] == version and ver.get("served", True):
                    found.append((_source(root, path), strict_schema(schema)))
    return found


def _source(root: Path, path: Path) -> str:
    """A CRD file named for an error: under the schema directory, else the chart's `<chart>-<version>/...`."""
    if path.is_relative_to(root):
        return str(path.relative_to(root))
    chart = next(d for d in pinned_chart_dirs() if path.is_relative_to(d))
    return str(path.relative_to(chart.parent))


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Close every object schema that lists properties (see the module docstring), in place: the
    caller hands over a schema it has just parsed (copying a megabyte-sized CRD schema costs more
    than parsing it)."""

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    # metadata is validated by the API server, not the CRD (kept as an open object: the root is closed).
    if "properties" in schema:
        schema["properties"]["metadata"] = {"type": "object"}
    return schema


def crd_on_file(root: Path, group: str, kind: str) -> bool:
    return bool(crd_files_of(root, group, kind))


def unvalidated(obj: dict[str, Any], root: Path) -> bool:
    """True for an object of a kind listed in CRDS_NOT_ON_FILE or CRDS_IN_CHARTS whose CRD is missing
    (for the latter: no chart directory, or it lacks the pinned chart)."""
    group, _ = api_group(obj.get("apiVersion", ""))
    kind = obj.get("kind", "")
    listed = (group, kind) in CRDS_NOT_ON_FILE or (group, kind) in CRDS_IN_CHARTS
    return listed and not crd_on_file(root, group, kind)


def validate_custom(obj: dict[str, Any], root: Path) -> list[str]:
    import jsonschema

    group, version = api_group(obj.get("apiVersion", ""))
    kind = obj.get("kind", "")
    schemas = crd_schemas(root, group, version, kind)
    if not schemas:
        return [f"no CRD for {group}/{version} {kind} under {root}"]
    errors: list[str] = []
    for source, schema in schemas:
        found = sorted(jsonschema.Draft7Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
        if not found:
            return []
        errors = [f"{source}: {'.'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in found[:10]]
    return errors


# ---- core objects -----------------------------------------------------------------------------------


@cache
def _core_validator(api_version: str, kind: str, kubernetes_version: str) -> Any:
    """kubernetes-validate's strict schema for one kind at the stack's Kubernetes version, built once
    per process: the package re-reads and re-parses its multi-megabyte definitions file on every
    call. The same schema selection as kubernetes_validate.validate (the newest schema version not
    newer than the one asked for)."""
    import jsonschema
    from kubernetes_validate.utils import (
        SchemaNotFoundError,
        all_versions,
        major_minor,
        schema_contents,
    )
    from referencing import Registry, Resource

    wanted = major_minor(f"{kubernetes_version}.0")
    version = [v for v in all_versions() if major_minor(v) <= wanted][-1]
    schema_dir = f"v{version}-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group}.json", wanted)
    except FileNotFoundError:
        raise SchemaNotFoundError(version=wanted, kind=kind, api_version=api_version) from None
    definitions = _core_definitions(schema_dir, wanted)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@cache
def _core_definitions(schema_dir: str, version: str) -> Any:
    from kubernetes_validate.utils import schema_contents

    return schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", version)


def validate_core(obj: dict[str, Any], kubernetes_version: str) -> list[str]:
    import jsonschema
    from kubernetes_validate.utils import SchemaNotFoundError

    try:
        validator = _core_validator(obj.get("apiVersion", ""), obj.get("kind", ""), kubernetes_version)
    except SchemaNotFoundError as exc:
        which = f"{obj.get('apiVersion')} {obj.get('kind')}"
        return [f"no Kubernetes schema for {which} at Kubernetes {kubernetes_version} ({exc})"]
    try:
        validator.validate(obj)
    except jsonschema.ValidationError as exc:
        return [f"{'.'.join(map(str, exc.path)) or '<root>'}: {exc.message}"]
    return []


def validate_object(obj: dict[str, Any], root: Path, kubernetes_version: str) -> list[str]:
    return validate_core(obj, kubernetes_version) if is_core(obj) else validate_custom(obj, root)


# ---- helm values ---------------------------------------------------------------------------------------


def values_missing(root: Path, chart: str) -> list[str]:
    """The chart's values files (relative to root) that are not on file; [] when all are."""
    return [rel for _, rel in CHART_VALUES.get(chart, ([], None))[0] if not (root / rel).is_file()]


@cache
def chart_defaults(root: Path, chart: str) -> dict[str, Any] | None:
    entry = CHART_VALUES.get(chart)
    if entry is None or values_missing(root, chart):
        return None
    merged: dict[str, Any] = {}
    for mount, rel in entry[0]:
        values = yaml.load((root / rel).read_text(), Loader=_LOADER) or {}
        if mount:
            # As Helm coalesces them: the parent's values under the subchart's key, deep, over the
            # subchart's own (llm-d-router-standalone sets `router.proxy.*` over routerlib's `proxy`).
            merged[mount] = deep_merge(values, merged.get(mount) or {})
        else:
            merged.update(values)
    return merged


def unknown_keys(values: Any, defaults: Any, prefix: str = "") -> Iterator[str]:
    """Dotted key paths in `values` that the chart's defaults do not have."""
    if not isinstance(values, dict) or not isinstance(defaults, dict):
        return
    if not defaults:
        return  # an open map: the chart takes any keys here
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in defaults:
            yield path
        elif key in OPEN_MAP_KEYS:
            continue
        elif isinstance(defaults[key], dict):
            yield from unknown_keys(value, defaults[key], path)


def validate_values(chart: str, values: dict[str, Any], root: Path) -> list[str] | None:
    """Problems with a release's values; None when the chart's values files are not on file."""
    defaults = chart_defaults(root, chart)
    if defaults is None:
        return None
    problems = [
        f"unknown values key {p!r} (not in the chart's values.yaml)"
        for p in unknown_keys(values, defaults)
        if (chart, p) not in COMMENTED_KEYS
    ]
    schema_rel = CHART_VALUES[chart][1]
    if schema_rel:
        import jsonschema

        schema = json.loads((root / schema_rel).read_text())
        merged = deep_merge(defaults, values)
        for err in jsonschema.Draft7Validator(schema).iter_errors(merged):
            problems.append(f"values.schema.json: {'.'.join(map(str, err.path)) or '<root>'}: {err.message}")
    return problems


def deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = deep_merge(base.get(key), value)
        return out
    return over
