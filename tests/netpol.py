"""Reading rendered NetworkPolicies as the network reads them: which policies select a pod, and which
peers their ingress rules admit to it on a port. tests/test_network_policies.py holds every shipped
stack to its invariants with these.

A peer is normalised to `Peer`: the namespace it selects (a policy's own when it names none), the pod
labels it requires (None: every pod there) or an ipBlock. `Peer.of(Pods)` is a caller of
components/peers.py as a policy admits it, so expected callers compare with admitted ones directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from components.peers import NS_LABEL, Pods

Labels = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Peer:
    namespace: str | None = None  # None with `labels` None and no `cidr`: every namespace
    labels: Labels | None = None  # None: every pod of the namespace(s)
    cidr: str | None = None

    @staticmethod
    def of(pods: Pods) -> Peer:
        return Peer(pods.namespace, frozenset(pods.labels.items()))

    @staticmethod
    def own(namespace: str, labels: Mapping[str, str]) -> Peer:
        return Peer(namespace, frozenset(labels.items()))

    def __str__(self) -> str:
        if self.cidr is not None:
            return f"ipBlock {self.cidr}"
        return f"{self.namespace or '<any namespace>'}/{dict(self.labels) if self.labels is not None else '<any pod>'}"


def policies(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == "NetworkPolicy"]


def _namespace(peer: dict[str, Any], own: str) -> str | None:
    if "namespaceSelector" not in peer:
        return own
    labels = peer["namespaceSelector"].get("matchLabels") or {}
    return labels.get(NS_LABEL)


def peer_of(peer: dict[str, Any], own: str) -> Peer:
    """A rendered peer, normalised (`own`: the policy's namespace)."""
    if "ipBlock" in peer:
        return Peer(cidr=peer["ipBlock"]["cidr"])
    selector = peer.get("podSelector")
    labels = frozenset((selector.get("matchLabels") or {}).items()) if selector else None
    if selector is not None and selector.get("matchExpressions"):
        labels = None  # not used by the platform; read as the wider selector it may be
    return Peer(_namespace(peer, own), labels or None)


def ingress_rules(policy: dict[str, Any]) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(rule, its raw peers) of every ingress rule; a rule without `from` admits every source."""
    for rule in policy["spec"].get("ingress") or []:
        yield rule, rule.get("from") or [{}]


def selects(policy: dict[str, Any], namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether the policy applies to a pod of this namespace with these labels (for ingress)."""
    spec = policy["spec"]
    if policy["metadata"]["namespace"] != namespace or "Ingress" not in spec.get("policyTypes", ["Ingress"]):
        return False
    wanted = spec.get("podSelector", {}).get("matchLabels") or {}
    return wanted.items() <= dict(labels).items()


def covers(ports: list[dict[str, Any]] | None, port: int, protocol: str = "TCP") -> bool:
    """Whether a rule's ports admit this one (no ports: every port)."""
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP") != protocol or "port" not in p:
            continue
        if p["port"] <= port <= p.get("endPort", p["port"]):
            return True
    return False


def admitted(objects: Iterable[dict[str, Any]], namespace: str, labels: Mapping[str, str], port: int) -> set[Peer]:
    """Every peer the policies admit to a pod with these labels on this TCP port."""
    out: set[Peer] = set()
    for policy in policies(objects):
        if not selects(policy, namespace, labels):
            continue
        for rule, peers in ingress_rules(policy):
            if covers(rule.get("ports"), port):
                out |= {peer_of(p, namespace) for p in peers}
    return out


def ports_admitted(objects: Iterable[dict[str, Any]], namespace: str, labels: Mapping[str, str], peer: Peer) -> list:
    """The port entries of every rule that admits this peer to such a pod (a rule without ports: None)."""
    found: list = []
    for policy in policies(objects):
        if selects(policy, namespace, labels):
            for rule, peers in ingress_rules(policy):
                if peer in {peer_of(p, namespace) for p in peers}:
                    found.append(rule.get("ports"))
    return found
