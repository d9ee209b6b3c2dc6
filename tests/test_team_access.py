"""A team's stack deploys as its team, and its deploy identity may do exactly what that takes.

Walked for every team stack: the shipped ones (team-search, team-chat, against the platform example)
and the shipped all-in-one stacks' models turned into a team's stack against that stack's own exports
(`VARIANTS`: every engine, add-on and kind a team stack can render: HPAs, benchmark Jobs, KEDA and its
interceptor, LeaderWorkerSets, Dynamo graphs and profiling requests, RayServices, NIMServices, AIBrix
adapters and autoscalers). Each render is held to:
- nothing cluster-scoped, no AWS resource, and every object in one of the team's namespaces, exactly
  where its resolved view says it writes (ResolvedStack.written_namespaces, which the tenancy rule
  refuses outside the team's namespaces at `stacks validate`);
- one Kubernetes provider, reaching the cluster as the team's deploy role (never the cluster creator's
  kubeconfig);
- every object allowed by the Role the platform binds to the team's group in that namespace
  (components/team_access.py), evaluated rule by rule, and the Role granting nothing cluster-scoped
  and nothing beyond read on quotas, limits and RBAC.

A team's routes and the policies attached to them live beside its models, in its own namespaces; the
walk finds nothing of a team's in the platform's Gateway namespace.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components.team_access import RBAC_API, READ, TEAM_OBJECTS, TEAM_READS, team_group, team_role
from stacks.exports import export_platform
from stacks.pipeline import check_sections
from stacks.render import Rendered
from stacks.resolve import own_platform
from tests.builders import resolved_stack, sourced
from tests.conftest import DEV, EXAMPLES_DIR, PLATFORM_REF, render_sections, rendered_stack, sections_of

SHIPPED = {"team-search": EXAMPLES_DIR / "Pulumi.team-search.yaml", "team-chat": EXAMPLES_DIR / "Pulumi.team-chat.yaml"}
PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"

# All-in-one stacks whose models become a team's (the kinds each adds), and add-ons turned on in their
# exports: the NIM Operator makes the engines example's NIM model a NIMService.
VARIANTS: dict[str, tuple[Path, dict[str, bool]]] = {
    "dev": (DEV, {}),  # HPA, PrometheusRules, dashboards
    "engines": (EXAMPLES_DIR / "Pulumi.engines.yaml", {"nimOperator": True}),  # benchmark Job, KEDA, NIMService
    "frontdoor": (EXAMPLES_DIR / "Pulumi.frontdoor.yaml", {}),  # scale to zero: InterceptorRoute
    "multinode": (EXAMPLES_DIR / "Pulumi.multinode.yaml", {}),  # LeaderWorkerSet, DynamoGraphDeployment
    "serving": (EXAMPLES_DIR / "Pulumi.serving.yaml", {}),  # Dynamo request, RayService, AIBrix objects
}
VARIANT_TEAM = "variant"
VARIANT_NAMESPACES = ("variant", "variant-b")
ROOMY = {"gpus": 512, "neuronDevices": 512, "cpu": "100000", "memory": "100000Gi", "pods": 10000}

# Built-in resources (Kubernetes API reference): the namespaced ones a Role may name, and the
# cluster-scoped ones no team grant may name.
NAMESPACED_BUILTINS = {
    "": {
        "services", "configmaps", "serviceaccounts", "secrets", "resourcequotas", "limitranges", "pods",
        "pods/log", "events", "endpoints", "persistentvolumeclaims",
    },
    "apps": {"deployments", "replicasets"},
    "policy": {"poddisruptionbudgets"},
    "autoscaling": {"horizontalpodautoscalers"},
    "batch": {"jobs", "cronjobs"},
    "networking.k8s.io": {"networkpolicies"},
    "discovery.k8s.io": {"endpointslices"},
    RBAC_API: {"roles", "rolebindings"},
}  # fmt: skip
CLUSTER_SCOPED_BUILTINS = {
    ("", "namespaces"), ("", "nodes"), ("", "persistentvolumes"), (RBAC_API, "clusterroles"),
    (RBAC_API, "clusterrolebindings"), ("storage.k8s.io", "storageclasses"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
}  # fmt: skip
WRITES = ("get", "create", "update", "patch", "delete")


@dataclass(frozen=True)
class TeamRender:
    """What the walk reads of one team stack's render (taken at once: the mocks are shared)."""

    team: str
    namespaces: tuple[str, ...]
    gateway_namespace: str | None
    written: frozenset[str]
    manifests: tuple[dict[str, Any], ...]
    releases: tuple[dict[str, Any], ...]
    types: frozenset[str]
    providers: tuple[dict[str, Any], ...]
    answer: dict[str, Any]  # the platform's outputs, as the StackReference answered


def variant(path: Path, addons: dict[str, bool]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An all-in-one stack's models as team `variant`'s stack, and that stack's exports declaring the
    team (two namespaces; a model given a namespace goes to the second). What a workloads stack may not
    have is dropped: streaming (its fill runs as the platform's writer) and consumers (teams it does not
    know); a platform model's adapter moves to the team's prefix of the bucket; a Lustre cache becomes
    EFS, as a team's stack needs, and so does a node-local one under a model that scales to zero (which,
    unstreamed, wakes within its budget only from a shared cache)."""
    sections = sections_of(path)
    exports = export_platform(own_platform(check_sections(sections, "us-west-2").config))
    exports["teams"] = [
        {"name": VARIANT_TEAM, "namespaces": list(VARIANT_NAMESPACES), "quota": ROOMY, "apiKeysSecret": "keys"}
    ]
    exports["addons"].update(addons)
    if exports["storage"].get("modelCache") == "fsx":
        exports["storage"]["modelCache"] = "efs"
        exports["storageClasses"] = {"modelCache": "efs-models"}
    models = []
    for model in copy.deepcopy(sections["models"]):
        model.pop("loadFormat", None)
        model.pop("consumers", None)
        if model.get("namespace"):
            model["namespace"] = VARIANT_NAMESPACES[1]
        if not (exports.get("gatewayParent") or {}).get("shared"):
            model["expose"] = False  # AIBrix's Gateway admits no team's routes (refused at models[].expose)
        if model["engine"] == "nim" and addons.get("nimOperator"):
            model.setdefault("secrets", {})["ngcApiKey"] = "ngc-api-key"
        for adapter in model.get("adapters", []):
            # A team's pods read only the team's prefix of the bucket (stacks/rules/adapters.py).
            url = adapter["artifactURL"]
            adapter["artifactURL"] = url.replace("/platform/", f"/teams/{VARIANT_TEAM}/", 1)
        models.append(model)
    # Without streaming, a model that scales to zero wakes within its budget only from a shared cache
    # (a node-local one is refilled from the Hub on every new node: refused at autoscaling.minReplicas).
    asleep = any((m.get("autoscaling") or {}).get("minReplicas") == 0 for m in models)
    if asleep and exports["storage"].get("modelCache") not in ("efs", "fsx"):
        exports["storage"]["modelCache"] = "efs"
        exports["storageClasses"] = {"modelCache": "efs-models"}
    stack = {"role": "workloads", "environment": sections["stack"]["environment"], "platformStack": PLATFORM_REF}
    # The team's stack makes the Secrets its models read (tokens, pull and benchmark keys) in its namespaces.
    return sourced({"stack": {**stack, "team": VARIANT_TEAM}, "models": models}, exports=exports), exports


def snapshot(rendered: Rendered, sections: dict[str, Any], exports: dict[str, Any] | None) -> TeamRender:
    resolved = resolved_stack(sections, exports=exports)
    assert resolved.team is not None
    # What the StackReference answered: the platform's stack file's exports, or the variant's given ones.
    answer = rendered.mocks._stack_reference_outputs(PLATFORM_REF)["outputs"]
    providers = [r.inputs for r in rendered.resources if r.type == "pulumi:providers:kubernetes"]
    return TeamRender(
        team=resolved.team.name,
        namespaces=resolved.team.namespaces,
        gateway_namespace=resolved.route_parent.namespace,
        written=frozenset(ns for ns, _ in resolved.written_namespaces()),
        manifests=tuple(rendered.manifests()),
        releases=tuple(rendered.releases()),
        types=frozenset(r.type for r in rendered.resources),
        providers=tuple(providers),
        answer=answer,
    )


@cache
def team_render(label: str) -> TeamRender:
    if label in SHIPPED:
        return snapshot(rendered_stack(SHIPPED[label]), sections_of(SHIPPED[label]), None)
    sections, exports = variant(*VARIANTS[label])
    return snapshot(render_sections(sections, platform_exports=exports), sections, exports)


LABELS = [*SHIPPED, *VARIANTS]


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


# Core kinds registered under a resource the guess below does not give (the Kubernetes API reference).
IRREGULAR = {"Endpoints": "endpoints"}


def guessed_resource(kind: str) -> str:
    """The resource of a kind, as Kubernetes derives it (apimachinery meta.UnsafeGuessKindToResource:
    lower case, `y` -> `ies`, `s` -> `ses`, else `s`): the plural RBAC rules name."""
    if kind in IRREGULAR:
        return IRREGULAR[kind]
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith("s") else "s")


def rbac_allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    """Kubernetes RBAC: some rule names the group, the resource and the verb (no rule here names
    resourceNames, so none narrows a rule to named objects)."""
    return any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        and (verb in r["verbs"] or "*" in r["verbs"])
        for r in rules
    )


def escalations(role: dict[str, Any], held: list[dict[str, Any]]) -> list[str]:
    """What a Role grants that the team's own rules do not: what the API server's escalation check
    refuses to let the team write (rbac/validation: every rule of the new Role must be covered)."""
    return [
        f"{g}/{r}:{v}"
        for rule in role.get("rules") or []
        for g in rule.get("apiGroups", [""])
        for r in rule.get("resources", [])
        for v in rule.get("verbs", [])
        if not rbac_allows(held, g, r, v)
    ]


def test_the_escalation_check_sees_a_role_granting_more_than_the_team_holds():
    held = team_role("search", "search")["rules"]
    assert escalations({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}, held) == []
    wider = {"rules": [{"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["update"]}]}
    assert escalations(wider, held) == ["/resourcequotas:update"], "a team cannot write itself a bigger quota"


# ---- where a team stack writes ----------------------------------------------------------------------


@pytest.mark.parametrize("label", LABELS)
def test_every_object_of_a_team_stack_is_namespaced_and_in_its_teams_namespaces(label):
    render = team_render(label)
    assert render.manifests, "the walk sees the stack's objects"
    for obj in render.manifests:
        where = obj["metadata"].get("namespace")
        assert where, f"{obj['kind']} {obj['metadata']['name']}: a team stack creates nothing cluster-scoped"
        assert where in render.namespaces, (
            f"{obj['kind']} {obj['metadata']['name']} in {where}, outside team {render.team}'s {render.namespaces}"
        )
    for release in render.releases:
        assert release["namespace"] in render.namespaces, f"release {release['name']} in {release['namespace']}"
        assert not release.get("createNamespace"), "a team's release never creates a namespace"


@pytest.mark.parametrize("label", LABELS)
def test_a_team_stack_writes_exactly_where_its_resolved_view_says_and_the_rule_checks(label):
    render = team_render(label)
    rendered = {o["metadata"]["namespace"] for o in render.manifests}
    rendered |= {r["namespace"] for r in render.releases}
    assert rendered == set(render.written), (
        "a component writes where ResolvedStack.written_namespaces does not say (so the tenancy rule "
        f"cannot check it): {rendered ^ set(render.written)}"
    )
    assert render.written <= set(render.namespaces)


def test_a_teams_routes_and_their_policies_are_in_its_own_namespaces_not_the_gateways():
    routed = [label for label in LABELS if any(o["kind"] == "HTTPRoute" for o in team_render(label).manifests)]
    assert {"team-search", "team-chat"} <= set(routed), "the walk sees team routes"
    for label in LABELS:
        render = team_render(label)
        there = [o["kind"] for o in render.manifests if o["metadata"].get("namespace") == render.gateway_namespace]
        assert not there, f"{label}: {there} in the platform's Gateway namespace {render.gateway_namespace}"


@pytest.mark.parametrize("label", LABELS)
def test_a_team_stack_creates_no_aws_resource_and_no_namespace(label):
    render = team_render(label)
    # random: resources (the acceptance keys' RandomPasswords) live in the stack's state alone, not in AWS.
    local = ("kubernetes:", "inference-platform:", "pulumi:", "random:")
    foreign = sorted(t for t in render.types if not t.startswith(local))
    assert not foreign, f"a team stack creates no AWS resource: {foreign}"
    assert render.types & {"pulumi:pulumi:StackReference"}, "it reads its platform through a StackReference"
    kinds = {o["kind"] for o in render.manifests}
    assert not kinds & {"Namespace", "ResourceQuota", "LimitRange", "Role", "RoleBinding", "ServiceAccount"}, kinds


def test_a_model_namespace_outside_the_team_is_refused_naming_its_key_and_a_home_model_names_stack_team():
    from stacks.errors import ConfigError

    sections = sections_of(SHIPPED["team-chat"])
    stack = resolved_stack(sections)
    assert list(stack.written_namespaces()) == [
        ("chat", "inference-platform:stack.team"),  # the stack's record, in the team's home
        ("chat", "inference-platform:stack.team"),  # models[0], no namespace of its own: the home
        ("chat-staging", "inference-platform:models[1].namespace"),
    ]
    sections["models"][0]["namespace"] = "search"
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    found = [str(p) for p in info.value.problems]
    assert any(
        p.startswith("inference-platform:models[0].namespace:") and "not a namespace of team chat" in p for p in found
    )


# ---- how it reaches the cluster ---------------------------------------------------------------------


@pytest.mark.parametrize("label", LABELS)
def test_a_team_stack_reaches_the_cluster_as_its_teams_deploy_role(label):
    render = team_render(label)
    (provider,) = render.providers
    config = json.loads(provider["kubeconfig"])
    answer = render.answer
    role = answer["teamDeployRoleArns"][render.team]
    assert role.endswith(f"-deploy-{render.team}")
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": answer["clusterEndpoint"],
        "certificate-authority-data": answer["clusterCertificateAuthority"],
    }
    (user,) = config["users"]
    args = user["user"]["exec"]["args"]
    assert user["user"]["exec"]["command"] == "aws" and args[:2] == ["eks", "get-token"]
    assert args[args.index("--cluster-name") + 1] == answer["clusterName"]
    assert args[args.index("--region") + 1] == answer["region"]
    assert args[args.index("--role-arn") + 1] == role, "signed as the team's deploy role"
    assert provider["kubeconfig"] != answer["kubeconfig"], "never the cluster creator's kubeconfig"


# ---- what its identity may do -----------------------------------------------------------------------


def resource_of(kind: str) -> tuple[str, str] | None:
    """(API group, resource) the table grants a kind under, or None."""
    for grant in TEAM_OBJECTS:
        for k, resource in zip(grant.kinds, grant.resources, strict=True):
            if k == kind:
                return grant.api_group, resource
    return None


@pytest.mark.parametrize("label", LABELS)
def test_every_object_a_team_stack_renders_is_allowed_by_its_role_in_its_namespace(label):
    render = team_render(label)
    for obj in render.manifests:
        kind, where = obj["kind"], obj["metadata"]["namespace"]
        granted = resource_of(kind)
        assert granted is not None, f"no Role of team {render.team} allows {kind}: add it to TEAM_OBJECTS"
        group, resource = granted
        assert group == group_of(obj["apiVersion"]), (kind, obj["apiVersion"])
        assert resource == guessed_resource(kind), (kind, resource)
        rules = team_role(render.team, where)["rules"]
        for verb in WRITES:
            assert rbac_allows(rules, group, resource, verb), f"{kind} in {where}: {verb} is not allowed"
    for release in render.releases:  # Helm keeps a release's record in a Secret of its namespace
        rules = team_role(render.team, release["namespace"])["rules"]
        assert all(rbac_allows(rules, "", "secrets", verb) for verb in WRITES)


def test_the_platform_binds_exactly_the_tables_role_to_each_teams_group():
    made = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in rendered_stack(PLATFORM).manifests()
        if o["kind"] in ("Role", "RoleBinding")
    }
    for label in SHIPPED:
        render = team_render(label)
        for ns in render.namespaces:
            role = made[("Role", ns, f"{render.team}-deployers")]
            assert role["rules"] == team_role(render.team, ns)["rules"]
            binding = made[("RoleBinding", ns, f"{render.team}-deployers")]
            assert binding["subjects"] == [{"kind": "Group", "name": team_group(render.team), "apiGroup": RBAC_API}]
            assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_each_grant_of_the_table_names_one_kind_per_resource():
    for grant in (*TEAM_OBJECTS, *TEAM_READS):
        assert len(grant.kinds) == len(grant.resources) and grant.why, grant
        for kind, resource in zip(grant.kinds, grant.resources, strict=True):
            assert resource.split("/")[0] == guessed_resource(kind), (kind, resource)


def test_the_role_grants_nothing_cluster_scoped_only_reads_quotas_and_limits_and_cannot_escalate():
    rules = team_role("search", "search")["rules"]
    read_only = {("", "resourcequotas"), ("", "limitranges")}
    for rule in rules:
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule, rule
        assert not set(rule["verbs"]) & {"escalate", "bind", "impersonate", "deletecollection"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert (group, resource) not in CLUSTER_SCOPED_BUILTINS, (group, resource)
                if group in NAMESPACED_BUILTINS:
                    assert resource in NAMESPACED_BUILTINS[group], f"{group}/{resource}: not a namespaced built-in"
                if (group, resource) in read_only:
                    assert tuple(rule["verbs"]) == READ, rule
    assert all(rbac_allows(rules, g, r, "get") and not rbac_allows(rules, g, r, "update") for g, r in read_only)
    # A Role it writes can hold only what it holds: Kubernetes' escalation check, which `escalate` and
    # `bind` (asserted absent above) would lift.
    assert rbac_allows(rules, RBAC_API, "roles", "create") and rbac_allows(rules, RBAC_API, "rolebindings", "create")


def test_every_kind_the_role_writes_is_one_a_team_stack_renders():
    """No grant for what no team stack renders; the exceptions are the endpoint picker's chart objects (its
    ServiceAccount, Role and RoleBinding), which the chart test below finds in the releases. Secrets are
    rendered: a team's stack makes its models' token, pull and benchmark key Secrets from its Pulumi secrets."""
    rendered = {o["kind"] for label in LABELS for o in team_render(label).manifests}
    granted = {k for g in TEAM_OBJECTS for k in g.kinds}
    assert "Secret" in rendered, "a team's stack makes the Secrets its models read"
    assert granted - rendered == {"ServiceAccount", "Role", "RoleBinding"}, granted - rendered
    assert rendered <= granted, rendered - granted


@pytest.mark.schemas
def test_every_custom_kind_the_team_is_granted_is_namespaced_upstream_under_the_plural_granted():
    from stacks.conformance import crd_documents, crd_files_of, schema_dir

    root = schema_dir()
    assert root is not None
    for grant in (*TEAM_OBJECTS, *TEAM_READS):
        if grant.api_group in NAMESPACED_BUILTINS:
            continue
        for kind, resource in zip(grant.kinds, grant.resources, strict=True):
            crds = [
                d
                for f in crd_files_of(root, grant.api_group, kind)
                for d in crd_documents(f)
                if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
            ]
            assert crds, f"{grant.api_group} {kind}: no CRD on file"
            for crd in crds:
                assert crd["spec"]["scope"] == "Namespaced", f"{kind} is cluster-scoped upstream"
                assert crd["spec"]["names"]["plural"] == resource, (kind, crd["spec"]["names"]["plural"])


# The endpoint picker's chart (llm-d-router-standalone v0.10.0, charts/router/templates/_rbac.yaml)
# renders its own Role and RoleBinding (pods: get, watch, list) unconditionally; the team writes them, and
# the API server admits the Role only because the team holds every permission in it (checked below).
CHART_GAPS: set[tuple[str, str]] = set()


@pytest.mark.charts
def test_every_object_of_a_team_stacks_helm_releases_is_allowed_and_no_role_it_renders_escalates():
    from stacks import charts

    root, binary = charts.charts_dir(), charts.helm()
    assert root is not None
    gaps: set[tuple[str, str]] = set()
    seen: set[str] = set()
    for label in LABELS:
        render = team_render(label)
        apis = charts.BASE_API_VERSIONS | {o["apiVersion"] for o in render.manifests}
        for release in render.releases:
            done = charts.template(release, root, "1.34", apis, binary)
            assert done.objects and not done.problems, (release["name"], done.skipped, done.problems)
            for obj in done.objects:
                seen.add(obj["kind"])
                group, resource = group_of(obj["apiVersion"]), guessed_resource(obj["kind"])
                rules = team_role(render.team, obj["metadata"].get("namespace", ""))["rules"]
                if obj["kind"] == "Role":
                    assert not escalations(obj, rules), (release["name"], escalations(obj, rules))
                assert obj["metadata"].get("namespace") == release["namespace"], obj["metadata"]
                if not all(rbac_allows(rules, group, resource, verb) for verb in WRITES):
                    gaps.add((done.chart.split("-v")[0], obj["kind"]))
    assert gaps == CHART_GAPS, (
        f"release objects a team's Role does not allow: {gaps - CHART_GAPS}; closed: {CHART_GAPS - gaps}"
    )
    assert {"Role", "RoleBinding"} <= seen, "the picker's chart renders its RBAC in a team stack"
    assert "ServiceAccount" in seen, "the picker's account is what the table's ServiceAccount grant is for"
