"""The lifecycle model of one render (stacks/lifecycle.py, stacks/lifecycle_hazards.py), as text for a
reader and as JSON (`waves`, `criticalPath`, `resources`, `destroy`, `hazards`, `durations`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import lifecycle_facts as facts
from .lifecycle import (
    Await,
    CriticalPath,
    Graph,
    Step,
    await_of,
    build_graph,
    critical_path,
    deletion_waits_for,
    destroy_order,
    duration,
    node_pools,
    waves,
)
from .lifecycle_hazards import Hazard, hazards
from .mocks import Record


@dataclass(frozen=True)
class Lifecycle:
    graph: Graph
    waves: list[list[str]]
    steps: dict[str, Step]
    awaits: dict[str, Await]
    path: CriticalPath
    destroy: list[str]
    hazards: list[Hazard]


def lifecycle(records: list[Record]) -> Lifecycle:
    graph = build_graph(records)
    order = waves(graph)
    pools = node_pools(records)
    steps = {u: duration(r, pools) for u, r in graph.nodes.items()}
    return Lifecycle(
        graph=graph,
        waves=order,
        steps=steps,
        awaits={u: await_of(r) for u, r in graph.nodes.items()},
        path=critical_path(graph, order, steps),
        destroy=destroy_order(order),
        hazards=hazards(records, graph),
    )


def as_json(model: Lifecycle) -> dict[str, Any]:
    nodes = model.graph.nodes
    wave_of = {u: i for i, wave in enumerate(model.waves) for u in wave}
    return {
        "waves": model.waves,
        "criticalPath": {
            "resources": model.path.resources,
            "seconds": model.path.seconds,
            "steps": [{"urn": u, **_step(s)} for u, s in zip(model.path.resources, model.path.steps, strict=True)],
        },
        "resources": [
            {
                "urn": u,
                "type": r.type,
                "name": r.name,
                "wave": wave_of[u],
                "await": {"waits": a.waits, "timeout": a.timeout, "what": a.what, "source": a.source},
                **_step(model.steps[u]),
            }
            for (u, r), a in ((item, model.awaits[item[0]]) for item in nodes.items())
        ],
        "destroy": [{"urn": u, "waitsFor": deletion_waits_for(nodes[u])} for u in model.destroy],
        "hazards": [{"detector": h.detector, "urn": h.urn, "message": h.message} for h in model.hazards],
        "durations": durations_table(),
    }


def _step(step: Step) -> dict[str, Any]:
    return {"seconds": step.seconds, "basis": step.basis, "source": step.source}


def durations_table() -> list[dict[str, Any]]:
    """Every per-type duration the estimate uses, with its source."""
    rows = [
        {"type": t, **{"seconds": d.seconds, "what": d.what, "source": d.source}} for t, d in facts.DURATIONS.items()
    ]
    for name, d in (
        ("accelerator node", facts.ACCELERATOR_NODE),
        ("helm release", facts.HELM_READY),
        ("load balancer", facts.NLB),
        ("other", facts.API_CALL),
    ):
        rows.append({"type": name, "seconds": d.seconds, "what": d.what, "source": d.source})
    return rows


def _short(model: Lifecycle, urn: str) -> str:
    r = model.graph.nodes[urn]
    return f"{r.type.rsplit(':', 1)[-1]} {r.name}"


def as_text(model: Lifecycle, stack: str) -> str:
    lines = [f"{stack}: {len(model.graph.nodes)} resources in {len(model.waves)} create waves", "", "Create waves:"]
    for i, wave in enumerate(model.waves):
        lines.append(f"  {i:>3}: " + ", ".join(_short(model, u) for u in wave))
    lines += [
        "",
        f"Critical path: about {model.path.seconds} s ({model.path.seconds / 60:.0f} min) for the first pulumi up",
    ]
    for urn, step in zip(model.path.resources, model.path.steps, strict=True):
        lines.append(f"  {step.seconds:>6} s  {_short(model, urn)}: {step.basis}  [{step.source}]")
    lines += ["", "Awaits (Pulumi Kubernetes provider and Helm):"]
    for urn, a in model.awaits.items():
        if a.source:
            timeout = f"timeout {a.timeout} s" if a.timeout is not None else "no timeout"
            lines.append(f"  {_short(model, urn)}: {'waits' if a.waits else 'no wait'}, {timeout}: {a.what}")
    lines += ["", "Destroy order (and what each deletion waits for):"]
    lines += [f"  {_short(model, u)}: {deletion_waits_for(model.graph.nodes[u])}" for u in model.destroy]
    lines += ["", "Durations used, with their sources:"]
    lines += [f"  {row['type']}: {row['seconds']} s, {row['what']} [{row['source']}]" for row in durations_table()]
    lines += ["", f"Hazards: {len(model.hazards)}"]
    lines += [f"  [{h.detector}] {h.message}" for h in model.hazards]
    return "\n".join(lines) + "\n"
