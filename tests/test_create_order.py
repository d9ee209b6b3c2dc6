"""What each object of a first `pulumi up` is created after, read from the rendered dependency graph of
every shipped stack: every Service (and every release whose chart creates one) after the AWS Load
Balancer Controller, whose Service webhook fails closed; everything a fail-closed webhook admits after
the release serving it; every custom resource after its CRD and operator; every model's objects after
its pool's NodePool."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from stacks.charts import charts_dir
from stacks.golden import stack_files
from stacks.mocks import Record
from stacks.pipeline import check_file
from stacks.versions import CHARTS, CRD_SOURCES, CRDS_ONLY, RELEASE_WAITS
from tests.conftest import rendered_stack

SHIPPED = stack_files()
# The stacks that own the cluster (a team's stack runs on its platform's pools, which exist before it).
OWNERS = [p for p in SHIPPED if check_file(p).stack.cluster is not None]
ids = {"ids": lambda p: p.stem.removeprefix("Pulumi.")}
RELEASE = "kubernetes:helm.sh/v3:Release"
LB = "aws-load-balancer-controller"

# The catalog charts whose admission webhooks fail closed (failurePolicy Fail, in the chart or in the
# values the program gives it), and the API groups of what they admit: an object of such a group
# created while the release's pods are not serving is refused. The LB controller's Service webhook is
# checked on its own (it admits every Service); it also validates TargetGroupBindings, Ingresses and
# IngressClassParams, which the program creates none of.
FAIL_CLOSED: dict[str, tuple[str, ...]] = {
    LB: ("",),
    "lws": ("leaderworkerset.x-k8s.io",),
    "dynamo": ("nvidia.com",),
    # Ignore while its certificate patch Job is on (the chart's default), Fail otherwise: ordered anyway.
    "kube-prometheus-stack": ("monitoring.coreos.com",),
}
# What installs each custom resource's CRD (and runs its operator), by API group.
CRD_INSTALLERS: dict[str, tuple[str, ...]] = {
    "karpenter.sh": ("karpenter-crd", "karpenter"),
    "karpenter.k8s.aws": ("karpenter-crd", "karpenter"),
    "leaderworkerset.x-k8s.io": ("lws",),
    "nvidia.com": ("dynamo",),
    "apps.nvidia.com": ("nim-operator",),
    "ray.io": ("kuberay",),
    "keda.sh": ("keda",),
    "http.keda.sh": ("keda-http",),
    "gateway.networking.k8s.io": ("envoy-gateway",),
    "gateway.envoyproxy.io": ("envoy-gateway",),
    "monitoring.coreos.com": ("kube-prometheus-stack",),
    "model.aibrix.ai": ("aibrix",),
    "autoscaling.aibrix.ai": ("aibrix",),
    "orchestration.aibrix.ai": ("aibrix",),
}


class Graph:
    """A render's resources by URN, with what each waits for, transitively."""

    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self.by_urn = {r.urn: r for r in records}
        self._memo: dict[str, frozenset[str]] = {}

    def after(self, urn: str) -> frozenset[str]:
        if urn not in self._memo:
            self._memo[urn] = frozenset()
            found = set()
            for dep in self.by_urn[urn].depends_on if urn in self.by_urn else []:
                found |= {dep, *self.after(dep)}
            self._memo[urn] = frozenset(found)
        return self._memo[urn]

    def releases(self) -> dict[str, Record]:
        """This stack's releases by catalog key."""
        keys = {c.chart: key for key, c in CHARTS.items()}
        # CRD charts (CRD_SOURCES: prometheus-operator-crds) by their owner's key and "-crds".
        keys |= {r.chart.chart: f"{owner}-crds" for owner, r in CRD_SOURCES.items() if r.chart is not None}
        return {keys[r.inputs["chart"].rsplit("/", 1)[-1]]: r for r in self.records if r.type == RELEASE}


@cache
def graph(path: Path) -> Graph:
    return Graph(rendered_stack(path).resources)


def group_of(record: Record) -> str | None:
    api_version = record.inputs.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else None


def is_service(record: Record) -> bool:
    return record.type == "kubernetes:core/v1:Service"


# --- the AWS Load Balancer Controller's Service webhook --------------------------------------------


def service_problems(g: Graph) -> list[str]:
    lb = g.releases().get(LB)
    if lb is None:
        return []
    creates = {r.urn for key, r in g.releases().items() if RELEASE_WAITS.get(key, CRDS_ONLY).services and key != LB}
    return [
        f"{r.name} is created without waiting for the load balancer controller"
        for r in g.records
        if (is_service(r) or r.urn in creates) and lb.urn not in g.after(r.urn)
    ]


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_service_and_every_release_creating_services_waits_for_the_load_balancer_controller(path):
    problems = service_problems(graph(path))
    assert not problems, "its Service webhook fails closed for every Service:\n" + "\n".join(problems)


def test_a_stack_with_a_gateway_runs_the_controller_and_its_services_wait_for_it():
    g = graph(next(p for p in SHIPPED if p.name == "Pulumi.platform.yaml"))
    lb = g.releases()[LB]
    services = [r for r in g.records if is_service(r)]
    karpenter = g.releases()["karpenter"]
    assert services and all(lb.urn in g.after(s.urn) for s in services)
    assert lb.urn in g.after(karpenter.urn), "Karpenter's chart creates a Service too"
    assert karpenter.urn not in g.after(lb.urn), "the controller runs on the system nodes, not Karpenter's"


def test_the_service_check_reports_a_service_that_does_not_wait():
    g = graph(next(p for p in SHIPPED if p.name == "Pulumi.platform.yaml"))
    service = next(r for r in g.records if is_service(r))
    loose = Record(**{**service.__dict__, "depends_on": []})
    assert service_problems(Graph([*[r for r in g.records if r.urn != service.urn], loose])) == [
        f"{service.name} is created without waiting for the load balancer controller"
    ]


# --- fail-closed webhooks and CRDs -------------------------------------------------------------------


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_object_a_fail_closed_webhook_admits_waits_for_the_release_serving_it(path):
    g = graph(path)
    releases = g.releases()
    problems = [
        f"{r.name} ({group_of(r)}) does not wait for {key}"
        for key, groups in FAIL_CLOSED.items()
        if key in releases and key != LB
        for r in g.records
        if r.custom and group_of(r) in groups and releases[key].urn not in g.after(r.urn)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", SHIPPED, **ids)
def test_every_custom_resource_waits_for_its_crd_and_operator_when_the_stack_installs_them(path):
    g = graph(path)
    releases = g.releases()
    problems = []
    for r in g.records:
        group = group_of(r)
        if not r.custom or r.type == RELEASE or group not in CRD_INSTALLERS:
            continue
        missing = [k for k in CRD_INSTALLERS[group] if k in releases and releases[k].urn not in g.after(r.urn)]
        problems += [f"{r.name} ({group}) does not wait for {k}" for k in missing]
    assert not problems, "\n".join(problems)


def test_every_custom_resource_group_the_shipped_stacks_render_has_a_known_installer():
    groups = {
        group_of(r)
        for path in SHIPPED
        for r in graph(path).records
        if r.custom and r.type.startswith("kubernetes:") and "." in (group_of(r) or "")
    }
    core = {g for g in groups if g and g.endswith(".k8s.io") and g not in CRD_INSTALLERS}
    assert groups - core - set(CRD_INSTALLERS) == set(), "a custom resource whose CRD installer is not known"


CHARTS_DIR = charts_dir()  # $INFERENCE_PLATFORM_CHARTS, else ../shared/charts; None when absent


def fails_closed(directory: Path) -> bool:
    """Whether a chart on file has an admission webhook with failurePolicy Fail, written in a template
    or as the default of the values a template reads it from."""
    webhook = re.compile(r"^kind:\s*(Mutating|Validating)WebhookConfiguration\b", re.MULTILINE)
    texts = [p.read_text() for p in directory.rglob("templates/**/*.yaml")]
    # A ValidatingAdmissionPolicy's failurePolicy is the API server's own (no pods to wait for).
    templates = "".join(t for t in texts if webhook.search(t))
    values = "".join(p.read_text() for p in directory.rglob("values.yaml"))
    literal = re.search(r"failurePolicy:\s*Fail\b", templates)
    from_values = "failurePolicy: {{" in templates and re.search(r"failurePolicy:\s*Fail\b", values)
    return bool(literal or from_values)


@pytest.mark.charts
def test_the_charts_on_file_whose_webhooks_fail_closed_are_those_the_order_covers():
    assert CHARTS_DIR, "the pinned charts are on file (the charts marker leaves this test out otherwise)"
    found = set()
    for key, pinned in CHARTS.items():
        dirs = [
            p.parent
            for p in Path(CHARTS_DIR).glob(f"{pinned.chart}-*/Chart.yaml")
            if re.fullmatch(rf"{re.escape(pinned.chart)}-v?\d[\w.]*", p.parent.name)
        ]
        if dirs and fails_closed(sorted(dirs)[-1]):
            found.add(key)
    # KEDA's and AIBrix's webhooks default to Ignore, Envoy Gateway's topology injector is Ignore (its
    # Gateway API upgrade guard is a ValidatingAdmissionPolicy); KubeRay and Karpenter 1.x have none.
    # Dynamo's chart defaults to Fail and the program keeps it.
    assert found == set(FAIL_CLOSED), f"fail-closed webhooks on file: {sorted(found)}"


# --- models after their pools ------------------------------------------------------------------------


@pytest.mark.parametrize("path", OWNERS, **ids)
def test_every_model_workload_waits_for_its_pools_nodepool_and_its_ec2nodeclass(path):
    g = graph(path)
    pools = {r.name.rsplit("-nodepool-", 1)[1]: r for r in g.records if r.type == "kubernetes:karpenter.sh/v1:NodePool"}
    classes = {
        r.name.rsplit("-nodeclass-", 1)[1]: r
        for r in g.records
        if r.type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
    }
    assert pools, "a stack that owns the cluster makes its NodePools"
    stack = check_file(path).stack
    workloads = {
        (w.namespace, w.workload[1], w.workload[2]): w.pool.name
        for m in stack.models
        for w in (m, m.canary)
        if w is not None
    }
    checked = 0
    for r in g.records:
        meta = r.inputs.get("metadata") or {}
        pool = workloads.get((meta.get("namespace"), r.inputs.get("kind"), meta.get("name")))
        if pool is None:
            continue
        checked += 1
        after = g.after(r.urn)
        assert pools[pool].urn in after and classes[pool].urn in after, f"{r.name} runs before pool {pool} exists"
    assert checked == len(workloads), "every model's workload was found in the render"
