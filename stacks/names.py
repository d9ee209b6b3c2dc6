"""What the stack file's names become, so each is checked by the rule of what it becomes.

A model's name becomes its Service, workload, route and label values, and the names the platform
and the operators derive from it (`<name>-from-gateway`, `<name>-serve-svc`, ...); the cluster's
name becomes IAM role, SQS queue, EventBridge rule names and the model bucket's name prefix; a team
becomes a namespace, and with the cluster's name its reader and deploy roles' names. The derivations
are the components' own functions where they exist (`stacks/naming.py`,
`components/capacity/karpenter.py`, each engine's `service()`), and the
suffix tables below where a name is spelled inline in a builder or chosen by an operator;
tests/test_guard_names.py renders every shipped stack and fails when a builder derives a name from a
model that these tables do not list.

Upstream limits (each checked by `stacks/rules/names.py`):
- Kubernetes (k8s.io/apimachinery validation): a Service name is a DNS-1035 label (63, starts with a
  letter); Namespace names and label values at most 63; other object names DNS-1123 subdomains (253).
- KubeRay v1.7.0 (ray-operator/controllers/ray/utils/constant.go, validation.go): a RayService name
  is a DNS-1035 label of at most MaxRayServiceNameLength = MaxRayClusterNameLength (53, so
  `<cluster>-serve-svc` fits 63) - 6 (the suffix GenerateRayClusterName appends) = 47.
- IAM role names: at most 64 of letters, digits and `+=,.@_-`; SQS queue names: at most 80 of
  letters, digits, `-` and `_`; EventBridge rule names: at most 64 of letters, digits, `.`, `-`, `_`.
- S3: the general purpose bucket naming rules (stacks/config/base.py `bucket_name_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .naming import (
    INTERRUPTION_EVENTS,
    deploy_role_purpose,
    iam_role_name,
    physical,
    queue_name,
    reader_role_purpose,
    rule_name,
)
from .resolve.models import routing_strategy
from .resolved import (
    AIBRIX_GATEWAY,
    CANARY_SUFFIX,
    CONTROLLER_NAMESPACES,
    DEFAULT_NAMESPACE,
    EG_NAMESPACE,
    GATEWAY_NAMESPACE,
    KARPENTER_NAMESPACE,
    KEDA_NAMESPACE,
    LITELLM_NAMESPACE,
    LOAD_BALANCER_NAMESPACE,
    LWS_NAMESPACE,
    MONITORING_NAMESPACE,
    TRACING_NAMESPACE,
    ModelEntry,
)

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
HELM_RELEASE_MAX = 53  # helm's release-name limit
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# Namespaces Kubernetes owns: the kube- prefix is reserved for them, and `default` is every
# unqualified object's home.
KUBERNETES_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
RESERVED_PREFIX = "kube-"


def platform_namespaces() -> dict[str, str]:
    """Every namespace the platform itself creates or installs into -> what lives there."""
    out = {
        GATEWAY_NAMESPACE: "the platform's Gateway",
        EG_NAMESPACE: "Envoy Gateway",
        MONITORING_NAMESPACE: "monitoring (Prometheus, Grafana, exporters)",
        LITELLM_NAMESPACE: "the LiteLLM proxy",
        AIBRIX_GATEWAY[0]: "AIBrix and its gateway",
        LOAD_BALANCER_NAMESPACE: "the AWS Load Balancer Controller",
        KARPENTER_NAMESPACE: "Karpenter",
        LWS_NAMESPACE: "the LeaderWorkerSet controller",
        KEDA_NAMESPACE: "KEDA and its HTTP add-on",
        TRACING_NAMESPACE: "the trace collector (addons.tracing)",
    }
    for controller, namespace in CONTROLLER_NAMESPACES.items():
        out.setdefault(namespace, f"the {controller} operator")
    return out


def reserved_namespace(namespace: str, *, team: bool = False) -> str | None:
    """Why models or a team may not use `namespace` (None when they may). A team's namespace also
    may not be the platform's own model namespace, whose objects it would share."""
    if namespace in KUBERNETES_NAMESPACES or namespace.startswith(RESERVED_PREFIX):
        return f"{namespace} is a Kubernetes system namespace (the {RESERVED_PREFIX} prefix and default are reserved)"
    owner = platform_namespaces().get(namespace)
    if owner is not None:
        return f"{namespace} is the platform's namespace for {owner}"
    if team and namespace == DEFAULT_NAMESPACE:
        return f"{namespace} is the platform's own model namespace"
    return None


@dataclass(frozen=True)
class Derived:
    """A name the platform (or an operator it installs) derives, and the rule it must satisfy."""

    name: str
    what: str  # e.g. "ReferenceGrant (<name>-from-gateway)"
    limit: int
    dns_1035: bool = False


# Objects the platform's builders name `<model><suffix>` (components/gateway/routing.py,
# gateway/isolation.py, monitoring/collection.py and scaling.py, serving/aibrix.py, engines/dynamo.py),
# all DNS-1123 subdomains. (A model's scaling dashboard is the ConfigMap `dashboard-scaling-<model>`: a
# prefix of 18 characters, far inside the subdomain limit for any model name.)
PLATFORM_SUFFIXES = {
    "-from-gateway": "ReferenceGrant",
    "-ratelimit": "BackendTrafficPolicy",
    "-auth": "SecurityPolicy",
    "-ingress": "NetworkPolicy",
    "-slo": "PrometheusRule",
    "-scaling": "PrometheusRule",
    "-fairness": "PrometheusRule",
    "-kpa": "PodAutoscaler",
    "-hpa": "PodAutoscaler",
    "-apa": "PodAutoscaler",
    "-profile": "DynamoGraphDeploymentRequest",
    "-traffic": "BackendTrafficPolicy",
    "-picker": "EnvoyExtensionPolicy",
    "-picker-from-gateway": "ReferenceGrant",
    "-picker-ingress": "NetworkPolicy",
    # gateway/isolation.py trace_egress: an engine's and a picker's way to the trace collector.
    "-traces": "NetworkPolicy",
    "-picker-traces": "NetworkPolicy",
    # gateway/isolation.py ray_head_ingress: a RayService head's own policy.
    "-ray-head": "NetworkPolicy",
    # gateway/isolation.py serving_ingress: the callers' policy of a Dynamo graph's Frontend.
    "-frontend-ingress": "NetworkPolicy",
    # components/storage/cache.py fill_job_name: a streamed model's (`loadFormat`) bucket fill.
    "-to-bucket": "Job",
    # components/engines/neuron_vllm.py compile_job_name: a Neuron model's ahead-of-time compile
    # (`neuron.compile: ahead`), cut to 63 with a hash like the fill Job (its name is a label value).
    "-neuron-compile": "Job",
    # stacks/resolve/acceptance.py minted_key_secret: the key the platform mints for a model's acceptance Job.
    "-acceptance-key": "Secret",
    # components/storage/kvtier.py cron_job_name: the pruner of a model's KV-cache file tier
    # (`kvCacheOffload.shared`), cut to the API server's 52 for a CronJob with a hash.
    "-kv-prune": "CronJob",
}


def model_names(entry: ModelEntry) -> list[Derived]:
    """Every name derived from a model's name, with its limit."""
    model, made = entry.config, entry.made
    name = model.name
    service = made.service
    out = [
        Derived(name, "label value (app.kubernetes.io/instance)", LABEL_MAX),
        Derived(service, "Service", LABEL_MAX, dns_1035=True),
        Derived(name, "workload and HTTPRoute", SUBDOMAIN_MAX),
    ]
    out += [
        Derived(f"{name}{suffix}", f"{kind} ({suffix})", SUBDOMAIN_MAX) for suffix, kind in PLATFORM_SUFFIXES.items()
    ]
    # What the engine's operator derives (KubeRay's Services and its RayService limit, Dynamo's Services).
    out += [Derived(n.name, n.what, n.limit, n.dns_1035) for n in made.names]
    if model.canary is not None:
        # The canary's Deployment, Service and PDB (stacks/resolve/models.py canary_of); also a label value.
        out.append(Derived(f"{name}{CANARY_SUFFIX}", f"canary Service ({CANARY_SUFFIX})", LABEL_MAX, dns_1035=True))
    # Routed or not: the name is checked wherever a picker could run.
    if routing_strategy(model, entry.facts, routed=True) not in (None, "round-robin"):
        # components/gateway/picker.py: the release `<model>-picker`; the chart cuts it to 40 for its
        # `-epp` objects, whose name is also its pods' label value.
        out.append(Derived(f"{name}-picker", "Helm release of the endpoint picker", HELM_RELEASE_MAX))
    return out


def name_problem(derived: Derived) -> str | None:
    if len(derived.name) > derived.limit:
        return (
            f"becomes the {derived.what} {derived.name[:70]!r}, {len(derived.name)} characters; at most "
            f"{derived.limit} are allowed"
        )
    if derived.dns_1035 and not DNS_1035.match(derived.name):
        return f"becomes the {derived.what} {derived.name[:70]!r}, which must start with a letter (a DNS-1035 label)"
    return None


# ---- AWS names derived from the cluster's --------------------------------------------------------

IAM_ROLE = re.compile(r"^[A-Za-z0-9+=,.@_-]{1,64}$", re.ASCII)
SQS_QUEUE = re.compile(r"^[A-Za-z0-9_-]{1,80}$", re.ASCII)
EVENTBRIDGE_RULE = re.compile(r"^[A-Za-z0-9._-]{1,64}$", re.ASCII)
# Pod Identity and node roles the platform creates (components/cluster.py, podidentity.py callers).
ROLE_PURPOSES = (
    "system-node",
    "karpenter-node",
    "karpenter",
    "ebs-csi",
    "aws-efs-csi-driver",
    "aws-fsx-csi-driver",
    "model-reader",
    "model-writer",
    "aws-load-balancer-controller",
)
# The Terraform-style unique suffix S3's bucket_prefix gets (26 digits): the prefix is at most 37.
BUCKET_SUFFIX = "0" * 26


def bucket_prefix(cluster: str) -> str:
    """The generated model bucket's name prefix (components/storage/bucket.py)."""
    return f"{physical(cluster, 'models', limit=36)}-"


def team_role_purposes(team: str) -> tuple[str, ...]:
    """The roles the platform creates for a team it declares (components/tenancy.py): its bucket reader
    and its deploy role."""
    return (reader_role_purpose(team), deploy_role_purpose(team))


def aws_names(cluster: str, teams: Sequence[str] = ()) -> list[tuple[str, str, re.Pattern[str]]]:
    """(name, what, rule) for every IAM role, SQS queue and EventBridge rule named after the cluster (and,
    for the teams the platform declares, the roles named after the cluster and the team)."""
    purposes = [*ROLE_PURPOSES, *(p for t in teams for p in team_role_purposes(t))]
    out = [(iam_role_name(cluster, p), f"IAM role ({p})", IAM_ROLE) for p in purposes]
    out.append((queue_name(cluster), "SQS queue (Karpenter interruptions)", SQS_QUEUE))
    out += [(rule_name(cluster, e), f"EventBridge rule ({e})", EVENTBRIDGE_RULE) for e in INTERRUPTION_EVENTS]
    return out
