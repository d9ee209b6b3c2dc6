"""What would make the first `pulumi up` or a `pulumi destroy` of a stack fail or hang, read from its
render: each hazard is a sentence naming the resource and the fix. One function per detector, all
in `HAZARD_DETECTORS` (name -> function of the records and their graph)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import lifecycle_facts as facts
from .lifecycle import (
    CORE_GROUPS,
    HELM,
    Graph,
    _is_load_balancer,
    await_of,
    chart_of,
    group_of,
    helm_need,
    is_daemon_set,
    kind_of,
    node_pools,
    pools_of,
    startup,
)
from .mocks import Record


@dataclass(frozen=True)
class Hazard:
    detector: str
    urn: str
    message: str


def _label(record: Record) -> str:
    return f"{record.type.rsplit(':', 1)[-1]} {record.name}"


def _releases(records: list[Record], chart: str) -> list[Record]:
    return [r for r in records if r.type == HELM and chart_of(r) == chart]


def workload_timeout(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A workload whose await times out before its startup allowance (node launch + image pull on an
    accelerator pool, plus its startup probe's window) has run out."""
    pools = node_pools(records)
    for r in records:
        waits, start = await_of(r), startup(r, pools)
        if start is None or not waits.waits or waits.timeout is None or waits.timeout >= start.seconds:
            continue
        on = f" on accelerator pool {start.pool} (node launch and image pull {start.node} s)" if start.pool else ""
        yield Hazard(
            "workload-timeout",
            r.urn,
            f"{_label(r)} is awaited for {waits.timeout} s but may take {start.seconds} s to become ready{on} with "
            f"a startup probe window of {start.probe} s: set the annotation {facts.TIMEOUT_SECONDS}: "
            f'"{start.seconds}" (or customTimeouts) so `pulumi up` does not fail while the model is still starting',
        )


def helm_timeout(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A Helm release that waits for longer than its timeout allows."""
    pools = node_pools(records)
    for r in records:
        if r.type != HELM:
            continue
        waits, need = await_of(r), helm_need(r, pools)
        if waits.waits and waits.timeout is not None and waits.timeout < need.seconds:
            yield Hazard(
                "helm-timeout",
                r.urn,
                f"Helm release {r.name} ({chart_of(r)}) waits at most {waits.timeout} s but {need.basis} takes about "
                f"{need.seconds} s: set its timeout to at least {need.seconds}",
            )


def webhook_order(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """An object a fail-closed webhook admits, created without waiting for the release serving it."""
    for chart, kinds in facts.FAIL_CLOSED_WEBHOOKS.items():
        for release in _releases(records, chart):
            for r in records:
                group, _, kind = kind_of(r).rpartition("/")
                if (("" if group == "core" else group), kind) not in kinds or r.urn == release.urn:
                    continue
                if release.urn in graph.upstream(r.urn) or r.urn in graph.upstream(release.urn):
                    continue
                yield Hazard(
                    "webhook-order",
                    r.urn,
                    f"{_label(r)} is admitted by a webhook of Helm release {release.name} ({chart}) that fails "
                    f"closed, but is created without waiting for it: add depends_on=[that release] so the API "
                    f"server can reach the webhook when the object is applied",
                )


def _providers(records: list[Record], table: dict[str, frozenset[str]], group: str) -> list[Record]:
    return [r for r in records if r.type == HELM and group in table.get(chart_of(r), frozenset())]


def custom_resource_order(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A custom resource not waiting for what installs its CRD and for what runs its operator."""
    crds = {
        str(((r.inputs.get("spec") or {}).get("group")) or ""): r
        for r in records
        if kind_of(r) == "apiextensions.k8s.io/CustomResourceDefinition"
    }
    for r in records:
        group = group_of(r)
        if not group or group in CORE_GROUPS:
            continue
        upstream = graph.upstream(r.urn)
        installers = _providers(records, facts.CRD_GROUPS, group) + ([crds[group]] if group in crds else [])
        if not installers:
            continue  # a workloads stack: its platform stack, deployed first, installs the CRD
        operators = _providers(records, facts.OPERATOR_GROUPS, group)
        missing = []
        if not any(i.urn in upstream for i in installers):
            missing.append("what installs its CRD")
        if operators and not any(o.urn in upstream for o in operators):
            missing.append(f"the operator ({', '.join(o.name for o in operators)})")
        if missing:
            named = ", ".join(i.name for i in installers)
            yield Hazard(
                "custom-resource-order",
                r.urn,
                f"{_label(r)} ({group}) does not wait for {' and '.join(missing)}: add depends_on on the "
                f"resources that install the CRD and run the operator ({named})",
            )


def unowned_pool(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A workload scheduled on a NodePool it does not wait for."""
    pools = node_pools(records)
    for r in records:
        if is_daemon_set(r):
            continue  # its pods exist only on nodes that exist: nothing is Pending for want of the pool
        for pool in pools_of(r, pools):
            if pool.urn not in graph.upstream(r.urn):
                yield Hazard(
                    "workload-before-nodepool",
                    r.urn,
                    f"{_label(r)} runs only on NodePool {pool.name} but is created without waiting for it: its "
                    f"pods stay Pending until the pool exists; add depends_on=[the NodePool]",
                )


def helm_crds_directory(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A release installing CRDs from its chart's crds/ directory, which Helm never upgrades."""
    for r in records:
        if r.type == HELM and chart_of(r) in facts.CHARTS_WITH_CRDS_DIR and not r.inputs.get("skipCrds"):
            yield Hazard(
                "helm-crds-directory",
                r.urn,
                f"Helm release {r.name} ({chart_of(r)}) installs CRDs from its chart's crds/ directory, which Helm "
                f"installs once and never upgrades: set skip_crds=True and apply the pinned CRDs from the program",
            )


def _load_balancer_makers(records: list[Record]) -> Iterator[Record]:
    for r in records:
        if _is_load_balancer(r) or kind_of(r) == "gateway.networking.k8s.io/Gateway":
            yield r


def load_balancer_destroy(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """A load-balancer maker whose deletion is not awaited before the AWS Load Balancer Controller goes."""
    controllers = _releases(records, facts.LBC_CHART)
    namespaces = {
        str((r.inputs.get("metadata") or {}).get("name")): r for r in records if kind_of(r) == "core/Namespace"
    }
    for controller in controllers:
        for r in _load_balancer_makers(records):
            home = namespaces.get(str((r.inputs.get("metadata") or {}).get("namespace")))
            if controller.urn in graph.upstream(r.urn) or (home and controller.urn in graph.upstream(home.urn)):
                continue
            yield Hazard(
                "load-balancer-destroy",
                r.urn,
                f"{_label(r)} makes an AWS load balancer, but neither it nor its namespace depends on Helm release "
                f"{controller.name}: `pulumi destroy` may delete the controller first and leave the NLB (and its "
                f"network interfaces, which block the VPC's deletion); add depends_on=[{controller.name}]",
            )


def retained_storage(records: list[Record], graph: Graph) -> Iterator[Hazard]:
    """Retained storage whose network interfaces sit in subnets of a VPC the stack deletes."""
    for r in records:
        if not r.retain_on_delete or r.type not in facts.ENI_MAKERS:
            continue
        subnets = [d for d in graph.upstream(r.urn) if graph.nodes[d].type == "aws:ec2/subnet:Subnet"]
        doomed = [s for s in subnets if not graph.nodes[s].retain_on_delete]
        if doomed:
            yield Hazard(
                "retained-storage-in-deleted-vpc",
                r.urn,
                f"{_label(r)} is retained on delete but its network interfaces sit in subnets the stack deletes "
                f"({', '.join(sorted(graph.nodes[s].name for s in doomed))}): `pulumi destroy` fails deleting "
                f"them and the VPC; retain the VPC and its subnets too, or keep the storage in a stack of its own",
            )


HAZARD_DETECTORS: dict[str, Callable[[list[Record], Graph], Iterator[Hazard]]] = {
    "workload-timeout": workload_timeout,
    "helm-timeout": helm_timeout,
    "webhook-order": webhook_order,
    "custom-resource-order": custom_resource_order,
    "workload-before-nodepool": unowned_pool,
    "helm-crds-directory": helm_crds_directory,
    "load-balancer-destroy": load_balancer_destroy,
    "retained-storage-in-deleted-vpc": retained_storage,
}


def hazards(records: list[Record], graph: Graph) -> list[Hazard]:
    return [h for detect in HAZARD_DETECTORS.values() for h in detect(records, graph)]
