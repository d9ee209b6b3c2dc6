"""What the platform creates for each team it declares (components/tenancy.py), read from the platform
example's render: the team's namespaces, labelled with it; on each, the team's quota and limits, its
cache claim and its `model-reader` bound to the team's own reader role; the team's deploy role, trusted
by the team's deployers only and holding no permission; its access entry, mapping that role to the
team's Kubernetes group; and in each namespace a Role and RoleBinding for that group."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.team_access import READ, TEAM_READS, team_group
from stacks.mocks import Record
from stacks.resolved import TEAM_LABEL
from tests.conftest import EXAMPLES_DIR, rendered_stack, sections_of
from tests.iam_eval import allows

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
TEAMS = {"search": ("search",), "chat": ("chat", "chat-staging")}


def records(typ: str) -> list[Record]:
    return rendered_stack(PLATFORM).mocks.of_type(typ)


def objects(kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
    return [
        o
        for o in rendered_stack(PLATFORM).manifests()
        if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]


def test_the_teams_the_example_declares_are_the_ones_checked_here():
    declared = {t["name"]: tuple(t.get("namespaces") or [t["name"]]) for t in sections_of(PLATFORM)["teams"]}
    assert declared == TEAMS


@pytest.mark.parametrize(("team", "namespaces"), TEAMS.items())
def test_the_platform_creates_each_teams_namespaces_labelled_with_the_team(team, namespaces):
    made = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects("Namespace")}
    for ns in namespaces:
        assert ns in made, f"the platform creates {ns}"
        assert made[ns][TEAM_LABEL] == team, "other objects select a team's namespaces by this label"
    labelled = {name for name, labels in made.items() if labels.get(TEAM_LABEL) == team}
    assert labelled == set(namespaces), "no other namespace carries the team's label"


@pytest.mark.parametrize(("team", "namespaces"), TEAMS.items())
def test_each_team_namespace_carries_the_teams_quota_limits_and_cache_claim(team, namespaces):
    declared = next(t for t in sections_of(PLATFORM)["teams"] if t["name"] == team)["quota"]
    for ns in namespaces:
        (quota,) = objects("ResourceQuota", ns)
        assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == str(declared["gpus"])
        assert quota["spec"]["hard"]["requests.cpu"] == declared["cpu"]
        assert quota["spec"]["hard"]["requests.memory"] == declared["memory"]
        (limits,) = objects("LimitRange", ns)
        assert limits["spec"]["limits"][0]["type"] == "Container"
        (claim,) = objects("PersistentVolumeClaim", ns)
        assert claim["metadata"]["name"] == "model-cache" and claim["spec"]["storageClassName"] == "efs-models"
    claims = [
        r
        for r in records("kubernetes:core/v1:PersistentVolumeClaim")
        if r.inputs["metadata"]["namespace"] == namespaces[0]
    ]
    classes = records("kubernetes:storage.k8s.io/v1:StorageClass")
    efs = next(c for c in classes if c.inputs["metadata"]["name"] == "efs-models")
    assert efs.urn in claims[0].depends_on, "the claim waits for the StorageClass it binds through"


@pytest.mark.parametrize(("team", "namespaces"), TEAMS.items())
def test_each_team_namespace_binds_model_reader_to_the_teams_own_reader_role(team, namespaces):
    role = rendered_stack(PLATFORM).mocks.named("aws:iam/role:Role", f"platform-team-{team}-readers-role")
    assert role.inputs["name"].endswith(f"-model-reader-{team}")
    associations = {
        r.inputs["namespace"]: r.inputs
        for r in records("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.inputs["roleArn"] == role.outputs["arn"]
    }
    assert set(associations) == set(namespaces), "bound in the team's namespaces and nowhere else"
    assert all(a["serviceAccount"] == "model-reader" for a in associations.values())
    accounts = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects("ServiceAccount")}
    assert {(ns, "model-reader") for ns in namespaces} <= accounts


def test_each_teams_reader_reads_its_own_prefix_and_no_other_owners():
    docs = {
        team: json.loads(
            rendered_stack(PLATFORM)
            .mocks.named("aws:iam/rolePolicy:RolePolicy", f"platform-team-{team}-readers-read")
            .inputs["policy"]
        )
        for team in TEAMS
    }
    bucket = next(r for st in docs["search"]["Statement"] for r in st["Resource"] if "/" not in r)
    for team, doc in docs.items():
        own = f"{bucket}/teams/{team}/qwen3-8b/abc/model.safetensors"
        assert allows(doc, "s3:GetObject", own) and allows(doc, "s3:ListBucket", bucket, s3__prefix=f"teams/{team}/")
        for other in (o for o in TEAMS if o != team):
            assert not allows(doc, "s3:GetObject", f"{bucket}/teams/{other}/qwen3-8b/abc/model.safetensors")
            assert not allows(doc, "s3:ListBucket", bucket, s3__prefix=f"teams/{other}/")
        assert not allows(doc, "s3:GetObject", f"{bucket}/platform/qwen3-8b/abc/model.safetensors")
        assert not allows(doc, "s3:PutObject", own), "a team's weights are not writable by its pods"


@pytest.mark.parametrize("team", TEAMS)
def test_the_deploy_role_trusts_exactly_the_teams_deployers_and_holds_no_permission(team):
    mocks = rendered_stack(PLATFORM).mocks
    role = mocks.named("aws:iam/role:Role", f"platform-team-{team}-deploy")
    declared = next(t for t in sections_of(PLATFORM)["teams"] if t["name"] == team)["deployers"]
    (st,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert st == {
        "Sid": "TeamDeployers",
        "Effect": "Allow",
        "Principal": {"AWS": sorted(declared)},
        "Action": "sts:AssumeRole",
    }
    assert role.inputs["name"] == f"inference-platform-deploy-{team}"
    attached = [
        r.name
        for typ in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        for r in mocks.of_type(typ)
        if r.inputs.get("role") == role.outputs["name"]
    ]
    assert not attached, "aws eks get-token needs no permission (STS GetCallerIdentity), and nothing else is used"
    assert not role.inputs.get("managedPolicyArns") and not role.inputs.get("inlinePolicies")


@pytest.mark.parametrize(("team", "namespaces"), TEAMS.items())
def test_the_access_entry_maps_the_deploy_role_to_the_teams_group_bound_in_its_namespaces_only(team, namespaces):
    mocks = rendered_stack(PLATFORM).mocks
    role = mocks.named("aws:iam/role:Role", f"platform-team-{team}-deploy")
    entry = mocks.named("aws:eks/accessEntry:AccessEntry", f"platform-team-{team}-access").inputs
    group = team_group(team)
    assert entry["principalArn"] == role.outputs["arn"] and entry["type"] == "STANDARD"
    assert entry["kubernetesGroups"] == [group]
    assert not group.startswith(("system:", "eks:", "aws:", "amazon:", "iam:")), "never a reserved Kubernetes name"
    assert not mocks.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation"), "RBAC decides, no policy"
    bound = {
        o["metadata"]["namespace"]
        for o in objects("RoleBinding")
        if any(s["kind"] == "Group" and s["name"] == group for s in o["subjects"])
    }
    assert bound == set(namespaces), "the group is granted something in its team's namespaces and nowhere else"
    for ns in namespaces:
        (binding,) = [o for o in objects("RoleBinding", ns) if o["subjects"][0]["name"] == group]
        assert binding["roleRef"] == {
            "kind": "Role",
            "name": f"{team}-deployers",
            "apiGroup": "rbac.authorization.k8s.io",
        }
        others = [o for o in objects("Role", ns) if o["metadata"]["name"] != f"{team}-deployers"]
        for other in others:  # the platform's LiteLLM key Job's grant on the team's one key Secret
            (binding,) = [b for b in objects("RoleBinding", ns) if b["roleRef"]["name"] == other["metadata"]["name"]]
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "litellm-keys", "namespace": "litellm"}]
            assert all(r["resourceNames"] == ["litellm-key"] for r in other["rules"]), other["rules"]
    assert not objects("ClusterRoleBinding") and not objects("ClusterRole"), "nothing cluster-wide for any team"


def test_a_team_reads_its_quota_and_limits_and_changes_neither():
    read_only = {(g.api_group, r) for g in TEAM_READS for r in g.resources}
    assert {("", "resourcequotas"), ("", "limitranges")} <= read_only
    (role,) = [r for r in objects("Role", "search") if r["metadata"]["name"] == "search-deployers"]
    for rule in role["rules"]:
        touches = {(group, r) for group in rule["apiGroups"] for r in rule["resources"]}
        if touches & {("", "resourcequotas"), ("", "limitranges")}:
            assert tuple(rule["verbs"]) == READ, rule
        assert not {"escalate", "bind"} & set(rule["verbs"]), "RBAC it writes holds only what it holds"


def test_the_platform_exports_each_teams_deploy_role():
    out = rendered_stack(PLATFORM).outputs
    mocks = rendered_stack(PLATFORM).mocks
    assert out["teamDeployRoleArns"] == {
        t: mocks.named("aws:iam/role:Role", f"platform-team-{t}-deploy").outputs["arn"] for t in TEAMS
    }
