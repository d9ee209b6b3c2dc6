"""Every ingress rule of every NetworkPolicy of every shipped stack (the two team stacks against the
platform example included), read as the network reads it (tests/netpol.py): pods, never whole
namespaces; each model's serving port only from the callers the table of components/gateway/
isolation.py names; its metrics only from Prometheus's pods; a Ray head's dashboard only from the
KubeRay operator; the picker, the interceptor and LiteLLM each only from their own callers; the
monitoring namespace's pods each only from what kube-prometheus-stack needs (issue #25, item 4).

The expected callers are written here from the upstream facts (components/peers.py), one reason
each, not read back from the builders: a caller the builders add, drop or widen fails a test by name.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components import peers
from components.acceptance import acceptance_pods
from components.gateway import picker
from components.peers import Pods
from components.serving import litellm, litellm_keys
from stacks.resolved import LITELLM_NAMESPACE, MONITORING_NAMESPACE, ResolvedModel, ResolvedStack
from tests.builders import resolved_stack
from tests.conftest import ALL_STACKS, EXAMPLES, rendered_stack, sections_of
from tests.netpol import Peer, admitted, covers, ingress_rules, peer_of, policies, selects

TEAMS = [p for p in EXAMPLES if p.name in ("Pulumi.team-search.yaml", "Pulumi.team-chat.yaml")]
# The ports the API server calls in the monitoring namespace (an ipBlock is no pod: these alone).
API_SERVER_CALLS = {peers.OPERATOR_PORT, peers.ADAPTER_PORT}


def _id(path: Path) -> str:
    return path.name


@cache
def _stack(path: Path) -> ResolvedStack:
    return resolved_stack(sections_of(path))


def _objects(path: Path) -> list[dict[str, Any]]:
    return rendered_stack(path).manifests()


def test_the_team_stacks_are_among_the_stacks_walked():
    assert len(TEAMS) == 2 and set(TEAMS) <= set(ALL_STACKS)
    assert all(_stack(p).team is not None for p in TEAMS), "rendered against the platform example's exports"


# ---- 1. pods, never a namespace, never everything ------------------------------------------------


def _peer_problems(policy: dict[str, Any]) -> list[str]:
    where = f"{policy['metadata']['namespace']}/{policy['metadata']['name']}"
    found = []
    for rule, raw in ingress_rules(policy):
        for peer in raw:
            if "ipBlock" in peer:
                ports = {p.get("port") for p in rule.get("ports") or [{}]}
                if policy["metadata"]["namespace"] != MONITORING_NAMESPACE or not ports <= API_SERVER_CALLS:
                    found.append(f"{where}: ipBlock {peer['ipBlock']} on {ports}: only the API server's calls")
                if peer["ipBlock"]["cidr"] in ("0.0.0.0/0", "::/0"):
                    found.append(f"{where}: an ipBlock admitting every address")
                continue
            pods = (peer.get("podSelector") or {}).get("matchLabels")
            if not pods or set(peer) - {"podSelector", "namespaceSelector"}:
                found.append(f"{where}: peer {peer or '(none: every source)'} admits more than pods")
            namespaces = (peer.get("namespaceSelector") or {}).get("matchLabels")
            if "namespaceSelector" in peer and set(namespaces or {}) != {peers.NS_LABEL}:
                found.append(f"{where}: peer {peer} does not name one namespace")
    return found


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_no_ingress_peer_admits_a_whole_namespace_or_everything(path):
    found = [p for policy in policies(_objects(path)) for p in _peer_problems(policy)]
    assert not found, "\n".join(found)


def test_every_stack_that_serves_a_model_isolates_it():
    for path in ALL_STACKS:
        if _stack(path).models:
            assert policies(_objects(path)), path.name
    assert sum(bool(_stack(p).models) for p in ALL_STACKS) >= 10, "the walk sees the shipped models"


def test_the_walk_sees_a_whole_namespace_and_an_open_rule():
    wide = {
        "metadata": {"namespace": "search", "name": "x"},
        "spec": {"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {peers.NS_LABEL: "monitoring"}}}]}]},
    }
    open_rule = {"metadata": {"namespace": "search", "name": "y"}, "spec": {"ingress": [{"ports": [{"port": 80}]}]}}
    assert "admits more than pods" in _peer_problems(wide)[0]
    assert "every source" in _peer_problems(open_rule)[0]


# ---- 2. a model's ports ------------------------------------------------------------------------


def _scraper(stack: ResolvedStack) -> Pods | None:
    mon = stack.platform.addons.monitoring
    return peers.prometheus(mon.existing_prometheus) if mon.enabled else None


def _litellm_routes_to(stack: ResolvedStack, served: ResolvedModel) -> bool:
    """LiteLLM runs in the stack that owns the platform and calls its exposed models at their Services
    (to-zero models through the interceptor, picked models through their picker's proxy)."""
    addon = stack.platform.addons.litellm
    return stack.owns_platform and addon.enabled and served.expose and served.wake is None


def _litellm_picks(stack: ResolvedStack, served: ResolvedModel) -> bool:
    """LiteLLM calls a picked model through the Envoy beside its picker, which then calls the pod."""
    picked = served.routing is not None and served.routing.picker
    # Beside a canary the proxy would bypass its weight: LiteLLM keeps the stable Service.
    return _litellm_routes_to(stack, served) and picked and served.config.canary is None


def _aibrix_labelled(stack: ResolvedStack, served: ResolvedModel) -> bool:
    return stack.platform.addons.aibrix.enabled and served.facts.platform_workload


def _controllers_on(stack: ResolvedStack, served: ResolvedModel, port: int) -> dict[Peer, str]:
    """The serving platforms' controllers that call the model's pods on this port, with why."""
    out: dict[Peer, str] = {}
    controllers = stack.controller_namespaces.get(served.engine, ())
    if peers.NIM_OPERATOR.namespace in controllers and port == served.port:
        out[Peer.of(peers.NIM_OPERATOR)] = "lists a NIMService's models at /v1/models"
    if _aibrix_labelled(stack, served):
        if port == peers.AIBRIX_ENGINE_PORT:
            out[Peer.of(peers.AIBRIX_GATEWAY_PLUGIN)] = "reads pod metrics on 8000 (no metric-port label)"
        if port == peers.AIBRIX_ENGINE_PORT and served.adapter_loader == "aibrix":
            out[Peer.of(peers.AIBRIX_CONTROLLER)] = "loads LoRA adapters at :8000"
        if port == peers.AIBRIX_RUNTIME_PORT and served.adapter_loader == "aibrix":
            out[Peer.of(peers.AIBRIX_CONTROLLER)] = "hands each adapter's artifact to the runtime sidecar at :8080"
        if served.scaler == "aibrix" and port == (served.metrics_port or served.port):
            out[Peer.of(peers.AIBRIX_CONTROLLER)] = "its PodAutoscaler reads the pods' metrics"
    return out


def expected_on(stack: ResolvedStack, served: ResolvedModel, port: int) -> dict[Peer, str]:
    """Who may reach the model's (non-head) pods on this port, and why."""
    out = {Peer.own(served.namespace, served.selector): "its own pods (a graph's or a cluster's peers)"}
    if port == served.port:
        if served.expose:
            out[Peer.of(peers.proxies(stack.route_parent))] = "the route's Envoy proxies"
        if _litellm_picks(stack, served):
            out[Peer.own(served.namespace, picker.pod_labels(served))] = "LiteLLM's requests, through its picker"
        elif _litellm_routes_to(stack, served):
            out[Peer.own(LITELLM_NAMESPACE, {peers.NAME: litellm.NAME})] = "the LiteLLM proxy's upstream call"
        if served.wake is not None:
            out[Peer.of(peers.INTERCEPTOR)] = "a to-zero model's requests come through the interceptor"
    if port == served.metrics_port:
        if served.expose and served.routing is not None and served.routing.picker:
            out[Peer.own(served.namespace, picker.pod_labels(served))] = "its picker scrapes each pod"
        if (scraper := _scraper(stack)) is not None:
            out[Peer.of(scraper)] = "Prometheus's pods scrape the metrics port (the serving port for most engines)"
    return {**out, **_controllers_on(stack, served, port)}


def _models(path: Path) -> list[ResolvedModel]:
    return list(_stack(path).models)


def _diff(got: set[Peer], want: dict[Peer, str]) -> str:
    extra = "\n".join(f"  admitted, not expected: {p}" for p in got - set(want))
    missing = "\n".join(f"  expected ({want[p]}), not admitted: {p}" for p in set(want) - got)
    return f"\n{extra}\n{missing}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_each_models_serving_and_metrics_ports_admit_exactly_their_callers(path):
    stack, objects = _stack(path), _objects(path)
    for served in _models(path):
        for port in {served.port, *([served.metrics_port] if served.metrics_port else [])}:
            got = admitted(objects, served.namespace, served.serving_selector, port)
            want = expected_on(stack, served, port)
            assert got == set(want), f"{path.name}: {served.name} on {port}:{_diff(got, want)}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_a_dynamo_graphs_workers_admit_only_the_graphs_own_pods_even_on_the_frontends_port(path):
    """The prefill, decode and aggregated workers carry the model's label but serve nobody: the gateway's
    proxies, LiteLLM and Prometheus reach the Frontend (its role label) and never a worker."""
    objects = _objects(path)
    for served in _models(path):
        if served.serving_selector == served.selector:
            continue
        for role in (s.role for s in served.pods if s.role != served.facts.serving_role):
            labels = {**served.selector, "app.kubernetes.io/component": role}
            got = admitted(objects, served.namespace, labels, served.port)
            want = {Peer.own(served.namespace, served.selector): "the graph's own pods"}
            assert got == set(want), f"{path.name}: {served.name} {role} on {served.port}:{_diff(got, want)}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_a_models_other_ports_admit_only_its_own_pods_and_the_controllers_upstream_names(path):
    """A port neither serving nor metrics (Ray's GCS 6379, a Dynamo worker's system port 9090 ...)."""
    stack, objects = _stack(path), _objects(path)
    for served in _models(path):
        port = 6379
        got = admitted(objects, served.namespace, served.selector, port)
        want = expected_on(stack, served, port)
        assert got == set(want), f"{path.name}: {served.name} on {port}:{_diff(got, want)}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_the_aibrix_runtime_sidecars_port_admits_the_adapter_controller_only_where_it_loads_adapters(path):
    """The controller lists and loads a model's adapters through the `aibrix-runtime` sidecar on 8080."""
    stack, objects = _stack(path), _objects(path)
    for served in _models(path):
        port = peers.AIBRIX_RUNTIME_PORT
        if served.port == port or served.metrics_port == port:
            continue
        got = admitted(objects, served.namespace, served.selector, port)
        want = expected_on(stack, served, port)
        assert got == set(want), f"{path.name}: {served.name} on {port}:{_diff(got, want)}"


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_a_ray_heads_dashboard_admits_only_the_kuberay_operator(path):
    stack, objects = _stack(path), _objects(path)
    for served in _models(path):
        if peers.KUBERAY_OPERATOR.namespace not in stack.controller_namespaces.get(served.engine, ()):
            continue
        head = {**served.selector, **peers.RAY_HEAD_LABELS}
        dashboard = admitted(objects, served.namespace, head, peers.RAY_DASHBOARD_PORT)
        assert dashboard == {Peer.of(peers.KUBERAY_OPERATOR)}, f"{served.name}: {sorted(map(str, dashboard))}"
        worker = admitted(objects, served.namespace, served.selector, peers.RAY_DASHBOARD_PORT)
        assert worker == set(), f"{served.name}: a worker's 8265 (nothing listens) stays closed too"
        serve = admitted(objects, served.namespace, head, served.port)
        want = {**expected_on(stack, served, served.port), Peer.of(peers.KUBERAY_OPERATOR): "the proxy's health"}
        assert serve == set(want), f"{served.name}:{_diff(serve, want)}"


# ---- 3. the picker, the interceptor, LiteLLM ----------------------------------------------------


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_a_picker_answers_only_the_proxies_on_ext_proc_and_prometheus_on_its_metrics(path):
    stack, objects = _stack(path), _objects(path)
    for served in _models(path):
        if not (served.expose and served.routing is not None and served.routing.picker):
            continue
        labels = picker.pod_labels(served)
        front = {Peer.of(peers.proxies(stack.route_parent))}
        assert admitted(objects, served.namespace, labels, picker.EXT_PROC_PORT) == front
        scraper = _scraper(stack)
        assert admitted(objects, served.namespace, labels, picker.METRICS_PORT) == (
            {Peer.of(scraper)} if scraper else set()
        )
        assert admitted(objects, served.namespace, labels, 9003) == set(), "its health port: the kubelet's"


# ---- 4. traces: every exporting hop reaches the collector, which admits exactly them ---------------

TRACED = [p for p in ALL_STACKS if _stack(p).owns_platform and _stack(p).platform.addons.tracing.enabled]
OTLP = (4317, 4318)  # the collector's OTLP/gRPC and OTLP/HTTP receivers


def _reaches(objects: list[dict[str, Any]], pods: Pods, target: Pods, port: int) -> bool:
    """Whether some egress policy selecting these pods lets them call the target's pods on the port."""
    for policy in policies(objects):
        spec, home = policy["spec"], policy["metadata"]["namespace"]
        wanted = spec.get("podSelector", {}).get("matchLabels") or {}
        if (
            home != pods.namespace
            or "Egress" not in spec.get("policyTypes", [])
            or not wanted.items() <= pods.labels.items()
        ):
            continue
        for rule in spec.get("egress") or []:
            if covers(rule.get("ports"), port) and any(
                peer_of(t, home) == Peer.of(target) for t in rule.get("to") or []
            ):
                return True
    return False


def trace_exporters(stack: ResolvedStack) -> dict[Pods, str]:
    """Who sends spans, written from the feature: the Gateway's Envoy proxies (its EnvoyProxy tracer), each
    picker (it traces whatever its model's engine does), each engine whose tracing resolved on."""
    found = {peers.proxies(stack.route_parent): "the gateway's EnvoyProxy tracer"}
    for served in stack.models:
        if served.tracing is not None:
            found[Pods(served.namespace, dict(served.selector))] = f"{served.name}'s engine exports OTLP"
        if served.expose and served.routing is not None and served.routing.picker:
            found[Pods(served.namespace, picker.pod_labels(served))] = f"{served.name}'s picker traces"
    return found


def test_a_shipped_stack_traces_the_gateway_a_picker_vllm_and_tgi_so_the_trace_tests_are_not_vacuous():
    stacks = [_stack(p) for p in TRACED]
    assert stacks, "some shipped stack turns addons.tracing on"
    engines = {m.engine for s in stacks for m in s.models if m.tracing is not None}
    assert {"vllm", "tgi"} <= engines
    assert any(m.routing is not None and m.routing.picker for s in stacks for m in s.models)


@pytest.mark.parametrize("path", TRACED, ids=_id)
def test_every_exporting_hop_reaches_the_collector_and_the_collector_admits_exactly_them(path):
    stack, objects = _stack(path), _objects(path)
    exporters = trace_exporters(stack)
    for port in OTLP:
        got = admitted(objects, peers.COLLECTOR.namespace, peers.COLLECTOR.labels, port)
        assert got == {Peer.of(p) for p in exporters}, _diff(got, {Peer.of(p): why for p, why in exporters.items()})
        for pods, why in exporters.items():
            if pods.namespace != stack.route_parent.namespace:  # the gateway's namespace restricts no egress
                assert _reaches(objects, pods, peers.COLLECTOR, port), f"{why}, but its pods cannot reach {port}"
    quiet = [m for m in stack.models if m.tracing is None]
    for served in quiet:
        pods = Pods(served.namespace, dict(served.selector))
        assert not _reaches(objects, pods, peers.COLLECTOR, 4317), f"{served.name} exports nothing, so no way out"
    assert not [p for p in policies(objects) if p["metadata"]["namespace"] == stack.route_parent.namespace], (
        "the proxies' egress is open only while their namespace has no NetworkPolicy; a new one needs the collector"
    )


@pytest.mark.parametrize("path", TRACED, ids=_id)
def test_the_collector_denies_by_default_and_reaches_only_dns_and_the_backend(path):
    objects = [o for o in policies(_objects(path)) if o["metadata"]["namespace"] == peers.COLLECTOR.namespace]
    assert {o["metadata"]["name"] for o in objects} == {"default-deny", "otel-collector"}
    deny = next(o for o in objects if o["metadata"]["name"] == "default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    egress = next(o for o in objects if o["metadata"]["name"] == "otel-collector")["spec"]["egress"]
    host = _stack(path).platform.addons.tracing.endpoint or ""
    assert egress[0] == peers.DNS and len(egress) == 2, egress
    assert egress[1]["ports"] == [{"protocol": "TCP", "port": int(host.rsplit(":", 1)[1].split("/")[0])}], host


def _runs_litellm(path: Path) -> bool:
    return _stack(path).owns_platform and _stack(path).platform.addons.litellm.enabled


@pytest.mark.parametrize("path", [p for p in ALL_STACKS if _runs_litellm(p)], ids=_id)
def test_litellm_is_reached_only_by_the_proxies_prometheus_and_the_key_job_on_its_port(path):
    stack, objects = _stack(path), _objects(path)
    pods = {peers.NAME: litellm.NAME, peers.INSTANCE: litellm.NAME}
    want = {Peer.of(peers.proxies(stack.route_parent))}
    if (scraper := _scraper(stack)) is not None:
        want.add(Peer.of(scraper))
    if stack.access.virtual_keys:
        want.add(Peer.own(LITELLM_NAMESPACE, litellm_keys.PODS.labels))
    assert admitted(objects, LITELLM_NAMESPACE, pods, litellm.PORT) == want
    assert admitted(objects, LITELLM_NAMESPACE, pods, 8080) == set(), "no other port"


def test_litellm_runs_in_a_shipped_stack_so_its_test_is_not_vacuous():
    assert any(_runs_litellm(p) for p in ALL_STACKS)


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_the_interceptor_is_reached_only_by_the_proxies_litellm_and_its_scaler(path):
    stack, objects = _stack(path), _objects(path)
    interceptor = [p for p in policies(objects) if p["metadata"]["name"] == "interceptor-ingress"]
    if not interceptor:
        assert not stack.platform.addons.keda_http.enabled or not stack.owns_platform
        return
    labels = dict(peers.INTERCEPTOR.labels)
    want = {Peer.of(peers.proxies(stack.route_parent))}
    if stack.platform.addons.litellm.enabled:
        want.add(Peer.own(LITELLM_NAMESPACE, {peers.NAME: litellm.NAME}))
    assert admitted(objects, peers.INTERCEPTOR.namespace, labels, 8080) == want
    assert admitted(objects, peers.INTERCEPTOR.namespace, labels, 9090) == {Peer.of(peers.HTTP_SCALER)}


# ---- 4. the monitoring namespace ----------------------------------------------------------------


def monitoring_table(stack: ResolvedStack) -> dict[tuple[Pods, int], set[Peer]]:
    """(pods, port) -> who may call them there, for a stack running kube-prometheus-stack."""
    addons, blocks = stack.platform.addons, stack.cluster.vpc.address_blocks if stack.cluster else ()
    mon = addons.monitoring
    prom, grafana = Peer.of(peers.PROMETHEUS), Peer.of(peers.GRAFANA)
    queriers = {prom, *([grafana] if mon.grafana else [])}
    if stack.prometheus_adapter is not None:
        queriers.add(Peer.of(peers.PROMETHEUS_ADAPTER))
    if addons.keda.enabled:
        queriers.add(Peer.of(peers.KEDA_OPERATOR))
    # The acceptance Jobs' metrics step (components/acceptance.py), from the namespaces of checked models.
    checked = {m.namespace for m in stack.models if m.acceptance is not None}
    queriers |= {Peer.of(acceptance_pods(ns)) for ns in checked}
    api = {Peer(cidr=c) for c in blocks}
    table = {
        (peers.PROMETHEUS, 9090): queriers,
        (peers.PROMETHEUS, 8080): {prom},
        (peers.ALERTMANAGER, 9093): {prom, *([grafana] if mon.grafana else [])},
        (peers.ALERTMANAGER, 8080): {prom},
        (peers.ALERTMANAGER, 9094): set(),
        (peers.PROMETHEUS_OPERATOR, 10250): {prom, *api},
        (peers.ADMISSION_JOBS, 443): set(),
        (peers.KUBE_STATE_METRICS, 8080): {prom},
        (peers.KUBE_STATE_METRICS, 8081): set(),
    }
    if mon.grafana:
        table |= {(peers.GRAFANA, 3000): {prom}, (peers.GRAFANA, 9094): set()}
    if stack.prometheus_adapter is not None:
        table[(peers.PROMETHEUS_ADAPTER, 6443)] = api
    if "nvidia" in stack.platform.accelerators:
        dynamo = [Peer.of(peers.DYNAMO_OPERATOR)] if addons.dynamo.enabled else []
        table[(peers.DCGM_EXPORTER, 9400)] = {prom, *dynamo}
    return table


OWN_MONITORING = [p for p in ALL_STACKS if _stack(p).owns_platform and _stack(p).platform.addons.monitoring.enabled]


@pytest.mark.parametrize("path", OWN_MONITORING, ids=_id)
def test_the_monitoring_namespace_denies_by_default_and_admits_only_what_kube_prometheus_stack_needs(path):
    stack, objects = _stack(path), _objects(path)
    mine = [p for p in policies(objects) if p["metadata"]["namespace"] == MONITORING_NAMESPACE]
    if stack.platform.addons.monitoring.existing_prometheus:
        assert {p["metadata"]["name"] for p in mine} <= {"neuron-monitor"}, "an existing Prometheus's namespace"
        return
    deny = next(p for p in mine if p["metadata"]["name"] == "default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    for (pods, port), want in monitoring_table(stack).items():
        got = admitted(objects, MONITORING_NAMESPACE, pods.labels, port)
        assert got == want, f"{path.name}: {dict(pods.labels)} on {port}: {sorted(map(str, got ^ want))}"


def test_a_stack_with_an_existing_prometheus_is_walked_too():
    assert any(_stack(p).platform.addons.monitoring.existing_prometheus for p in OWN_MONITORING)
    assert any(not _stack(p).platform.addons.monitoring.existing_prometheus for p in OWN_MONITORING)


# ---- every permitted call is admitted where it lands ------------------------------------------------


def unanswered_calls(objects: list[dict[str, Any]]) -> list[str]:
    """Egress rules to pods whose own policies admit no such caller on that port: a call each side's
    policy allows on its own but the pair refuses (the LiteLLM key Job and the proxy, before they were
    read together). The caller is the egress policy's pods (its podSelector's labels)."""
    found = []
    for policy in policies(objects):
        spec, home = policy["spec"], policy["metadata"]["namespace"]
        if "Egress" not in spec.get("policyTypes", []):
            continue
        caller = Peer.own(home, spec.get("podSelector", {}).get("matchLabels") or {})
        for rule in spec.get("egress") or []:
            for to in rule.get("to") or []:
                target = peer_of(to, home)
                if target.cidr is not None or target.labels is None or target.namespace is None:
                    continue  # an address block, a whole namespace or every namespace: no pod to ask
                labels = dict(target.labels)
                guarding = [p for p in policies(objects) if selects(p, target.namespace, labels)]
                if not guarding:
                    continue  # nothing restricts the target's ingress
                for port in [p["port"] for p in rule.get("ports") or [] if p.get("protocol", "TCP") == "TCP"]:
                    if not any(_admits(peer, caller) for peer in admitted(objects, target.namespace, labels, port)):
                        found.append(f"{home}/{policy['metadata']['name']} -> {target} on {port}")
    return found


def _admits(peer: Peer, caller: Peer) -> bool:
    if peer.cidr is not None:
        return False
    if peer.namespace is not None and peer.namespace != caller.namespace:
        return False
    return peer.labels is None or peer.labels <= (caller.labels or frozenset())


@pytest.mark.parametrize("path", ALL_STACKS, ids=_id)
def test_every_call_an_egress_rule_permits_is_admitted_by_the_target_pods_policies(path):
    assert unanswered_calls(_objects(path)) == []


def test_the_pairing_check_sees_a_call_its_target_refuses():
    caller = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "jobs", "namespace": "a"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "job"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "api"}}}], "ports": [{"port": 4000}]}],
        },
    }
    target = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "api", "namespace": "a"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "api"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "proxy"}}}], "ports": [{"port": 4000}]}],
        },
    }
    assert unanswered_calls([caller, target]) == ["a/jobs -> a/{'app': 'api'} on 4000"]
    target["spec"]["ingress"][0]["from"].append({"podSelector": {"matchLabels": {"app": "job"}}})
    assert unanswered_calls([caller, target]) == []
