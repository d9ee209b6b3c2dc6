"""A team's deploy identity, as pure builders: who may assume it, what it may do in the cluster, and the
kubeconfig its workloads stack reaches the cluster with.

- The IAM role's trust admits exactly the team's `deployers` (sts:AssumeRole, nothing else). The role
  has no permission policy: `aws eks get-token` signs an STS GetCallerIdentity request locally, which
  needs no permission (STS API reference: "No permissions are required to perform this operation"),
  and the Kubernetes provider only presents that token. A team member's `aws eks update-kubeconfig`
  calls DescribeCluster with their own credentials, not the role's.
- The EKS access entry maps the role to one Kubernetes group of the team (`team_group`: never a
  `system:` name), and in each of the team's namespaces a Role and RoleBinding grant that group the
  kinds below. Why RBAC, not EKS access policies: an access policy is a fixed rule set ("You can't
  modify the contents of an access policy. You can't create your own access policies", EKS User Guide,
  Review access policy permissions); the namespace-scoped AmazonEKSEditPolicy covers no custom resource
  a team stack renders (LeaderWorkerSet, DynamoGraphDeployment, HTTPRoute, ScaledObject, ...) and grants
  what a team needs not (pods/exec, serviceaccounts impersonate, DaemonSets, StatefulSets), so no access
  policy is associated with the entry.
- `TEAM_OBJECTS` is the one table of what a team's identity may write: the kinds a team stack renders
  (tests/test_team_access.py renders every team stack, and variants of the shipped stacks as team
  stacks, and fails on an object no Role allows), all namespaced. `TEAM_READS` is read-only: the team's
  quota and limits and its own grant (which the platform sets), and what Pulumi's await logic reads
  while it waits for a Deployment, Service or Job (pulumi-kubernetes provider/pkg/await: ReplicaSets,
  Pods, PersistentVolumeClaims, Endpoints). The one exception to "what a team stack renders": Secrets,
  which the team creates and rotates itself (its clients' API keys, its Hugging Face token, a
  benchmark's key) and in which Helm keeps a release's record.
- Roles and RoleBindings are written because a team stack renders them (the endpoint picker's chart binds
  its account to a Role reading pods). That is no way up: the API server admits a Role only if its
  author already holds every permission in it, and a binding only of such a Role, unless the author
  holds `escalate` / `bind`, which no team does (Kubernetes docs, "Privilege escalation prevention and
  bootstrapping"). So a team can delegate what it holds in its own namespaces, and nothing more: not a
  write on its quota or limits, not a namespace it has no grant in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.naming import PROJECT, labels

RBAC_API = "rbac.authorization.k8s.io"
WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")
READ = ("get", "list", "watch")


@dataclass(frozen=True)
class Grant:
    """Resources of one API group a team's identity is granted, the kinds they hold, and why."""

    api_group: str
    resources: tuple[str, ...]
    kinds: tuple[str, ...]
    why: str


TEAM_OBJECTS: tuple[Grant, ...] = (
    Grant("apps", ("deployments",), ("Deployment",), "a model's workload (engines/workload.py), its picker"),
    Grant("", ("services",), ("Service",), "a model's Service, its picker's"),
    Grant("policy", ("poddisruptionbudgets",), ("PodDisruptionBudget",), "a model's disruption budget"),
    Grant("autoscaling", ("horizontalpodautoscalers",), ("HorizontalPodAutoscaler",), "autoscaling.owner: hpa"),
    Grant(
        "batch",
        ("jobs", "cronjobs"),
        ("Job", "CronJob"),
        "a model's benchmark Job and its scheduled benchmark's CronJob (components/benchmark.py)",
    ),
    Grant("", ("configmaps",), ("ConfigMap",), "a model's scaling dashboard, the stack's record, the picker's"),
    Grant("", ("serviceaccounts",), ("ServiceAccount",), "the endpoint picker's account (its chart's)"),
    Grant("networking.k8s.io", ("networkpolicies",), ("NetworkPolicy",), "a model namespace's isolation"),
    Grant("leaderworkerset.x-k8s.io", ("leaderworkersets",), ("LeaderWorkerSet",), "a group across nodes"),
    Grant(
        "nvidia.com",
        ("dynamographdeployments", "dynamographdeploymentrequests"),
        ("DynamoGraphDeployment", "DynamoGraphDeploymentRequest"),
        "a Dynamo model and its profiling request",
    ),
    Grant("ray.io", ("rayservices",), ("RayService",), "a Ray Serve model"),
    Grant("apps.nvidia.com", ("nimservices",), ("NIMService",), "a NIM model under the NIM Operator"),
    Grant("keda.sh", ("scaledobjects",), ("ScaledObject",), "autoscaling.owner: keda"),
    Grant("http.keda.sh", ("interceptorroutes",), ("InterceptorRoute",), "a model that scales to zero"),
    # No ReferenceGrant: a team's route lives beside its Service, and the grants that let other
    # namespaces name a team's objects (its key Secret, the interceptor) are the platform's to make.
    Grant("gateway.networking.k8s.io", ("httproutes",), ("HTTPRoute",), "a model's route, beside its Service"),
    Grant(
        "gateway.envoyproxy.io",
        ("securitypolicies", "backendtrafficpolicies", "envoyextensionpolicies"),
        ("SecurityPolicy", "BackendTrafficPolicy", "EnvoyExtensionPolicy"),
        "a route's authentication, rate limit and endpoint picking",
    ),
    Grant(
        "monitoring.coreos.com",
        ("podmonitors", "prometheusrules"),
        ("PodMonitor", "PrometheusRule"),
        "a model's scraping, SLO and scaling alerts",
    ),
    Grant("model.aibrix.ai", ("modeladapters",), ("ModelAdapter",), "a model's LoRA adapters under AIBrix"),
    Grant("autoscaling.aibrix.ai", ("podautoscalers",), ("PodAutoscaler",), "autoscaling.owner: aibrix"),
    Grant("", ("secrets",), ("Secret",), "the one exception: the team's own key and token Secrets, Helm's records"),
    Grant(
        RBAC_API,
        ("roles", "rolebindings"),
        ("Role", "RoleBinding"),
        "the endpoint picker chart's own Role (pods: get, watch, list) and its binding to the picker's account; "
        "Kubernetes' escalation check admits only a Role granting what the team already holds, and a binding "
        "of such a Role (the team holds neither `escalate` nor `bind`)",
    ),
)

TEAM_READS: tuple[Grant, ...] = (
    Grant("", ("resourcequotas", "limitranges"), ("ResourceQuota", "LimitRange"), "the team's share, the platform's"),
    Grant(
        "",
        ("pods", "events", "endpoints", "persistentvolumeclaims"),
        ("Pod", "Event", "Endpoints", "PersistentVolumeClaim"),
        "what Pulumi's await logic and a team's debugging read",
    ),
    Grant("", ("pods/log",), ("Pod",), "a model's logs (the Pod's log subresource)"),
    Grant("apps", ("replicasets",), ("ReplicaSet",), "a Deployment's rollout, as Pulumi awaits it"),
    Grant("discovery.k8s.io", ("endpointslices",), ("EndpointSlice",), "a Service's endpoints"),
)


def team_group(team: str) -> str:
    """The Kubernetes group a team's deploy role is mapped to (its access entry's `kubernetesGroups`)."""
    return f"{PROJECT}:team:{team}"


def _name(team: str) -> str:
    return f"{team}-deployers"


def team_role(team: str, namespace: str) -> dict[str, Any]:
    """The Role of a team's identity in one of its namespaces: TEAM_OBJECTS written, TEAM_READS read."""
    rules = [
        {"apiGroups": [g.api_group], "resources": list(g.resources), "verbs": list(verbs)}
        for grants, verbs in ((TEAM_OBJECTS, WRITE), (TEAM_READS, READ))
        for g in grants
    ]
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": {"name": _name(team), "namespace": namespace, "labels": labels("team-access", team)},
        "rules": rules,
    }


def team_role_binding(team: str, namespace: str) -> dict[str, Any]:
    """Binds the team's Role, in this namespace only, to the team's group."""
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": _name(team), "namespace": namespace, "labels": labels("team-access", team)},
        "subjects": [{"kind": "Group", "name": team_group(team), "apiGroup": RBAC_API}],
        "roleRef": {"kind": "Role", "name": _name(team), "apiGroup": RBAC_API},
    }


def access_objects(team: str, namespace: str) -> list[dict[str, Any]]:
    return [team_role(team, namespace), team_role_binding(team, namespace)]


def deployers_trust(deployers: tuple[str, ...]) -> dict[str, Any]:
    """Trust for the team's deploy role: exactly the IAM principals the platform lists as its deployers."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TeamDeployers",
                "Effect": "Allow",
                "Principal": {"AWS": sorted(deployers)},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def token_args(cluster: str, region: str, role_arn: str) -> list[str]:
    """`aws eks get-token` as the team's deploy role (AWS CLI: `--role-arn` assumes the role for the
    credentials that sign the token)."""
    return [
        "eks",
        "get-token",
        "--cluster-name",
        cluster,
        "--region",
        region,
        "--role-arn",
        role_arn,
        "--output",
        "json",
    ]


def team_kubeconfig(
    *, cluster: str, endpoint: str, certificate_authority: str, region: str, role_arn: str
) -> dict[str, Any]:
    """The kubeconfig a team's stack reaches the cluster with: the platform's endpoint and CA, and a
    token `aws eks get-token` signs as the team's deploy role (the deployer's own credentials assume it)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "current-context": cluster,
        "users": [
            {
                "name": cluster,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": token_args(cluster, region, role_arn),
                    }
                },
            }
        ],
    }
