"""Issue 14, item 1: every IAM policy and trust the program renders, in every shipped stack, is held
to the same rules, so a new role cannot regress them.

- no Action `*` or `service:*`, no NotAction or NotResource;
- a statement on `Resource: "*"` (or an ARN that leaves the account or region open) is one of
  components/iam.py WILDCARD_STATEMENTS, named by its Sid, and the README lists it with its reason;
- every Pod Identity trust names this account (aws:SourceAccount) and this cluster's associations
  (aws:SourceArn); every EC2 trust is for ec2.amazonaws.com only; a team's deploy role trusts exactly
  the principals the platform lists as the team's deployers;
- AWS managed policies are only those the EKS user guide names for nodes and CSI drivers (no
  FullAccess policy anywhere).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.iam import WILDCARD_STATEMENTS, Scope, pod_identity_trust
from stacks.mocks import ACCOUNT
from stacks.naming import deploy_role_purpose, iam_role_name
from stacks.pipeline import check_sections
from tests.conftest import ALL_STACKS, ROOT, rendered_stack, sections_of

POLICY_TYPES = {"aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy"}
MANAGED = {
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
    "service-role/AmazonEBSCSIDriverPolicy",
    "service-role/AmazonEFSCSIDriverPolicy",
}


def documents(path: Path) -> list[tuple[str, dict[str, Any]]]:
    rec = rendered_stack(path).mocks
    return [(r.name, json.loads(r.inputs["policy"])) for t in POLICY_TYPES for r in rec.of_type(t)]


def listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def open_arn(arn: str) -> bool:
    """`*`, or an ARN whose region or account is a wildcard (an `iam::` or `s3:::` ARN has neither)."""
    if arn == "*":
        return True
    parts = arn.split(":")
    return len(parts) >= 5 and ("*" in parts[3] or "*" in parts[4])


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_rendered_policy_grants_named_actions_on_scoped_resources(path):
    found = documents(path)
    assert found or path.name.startswith("Pulumi.team-"), "the walk sees the stack's policies (a team stack has none)"
    for name, doc in found:
        for st in doc["Statement"]:
            assert "NotAction" not in st and "NotResource" not in st, (name, st)
            for action in listed(st["Action"]):
                assert action != "*" and not action.endswith(":*"), (name, action)
            if st["Effect"] == "Deny":
                continue
            if any(open_arn(r) for r in listed(st["Resource"])):
                assert st.get("Sid") in WILDCARD_STATEMENTS, f"{name}: {st.get('Sid')} leaves resources open: {st}"


def test_the_wildcard_register_is_the_readmes_table_and_every_entry_is_used():
    readme = (ROOT / "README.md").read_text()
    for sid, why in WILDCARD_STATEMENTS.items():
        assert re.search(rf"\| `{sid}` \|[^\n]*\|", readme), f"README: no row for {sid}"
        assert why in readme, f"README: the reason for {sid} differs from components/iam.py"
    used = {st.get("Sid") for p in ALL_STACKS for _, doc in documents(p) for st in doc["Statement"]}
    assert set(WILDCARD_STATEMENTS) <= used, set(WILDCARD_STATEMENTS) - used


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_trust_is_for_one_service_and_pod_identity_is_held_to_this_account_and_cluster(path):
    rec = rendered_stack(path).mocks
    roles = rec.of_type("aws:iam/role:Role")
    assert roles or path.name.startswith("Pulumi.team-")
    cluster = next((r.inputs["name"] for r in rec.of_type("eks:index:Cluster")), None)
    config = check_sections(sections_of(path), "us-west-2").config
    deployers = {
        iam_role_name(config.cluster.name, deploy_role_purpose(t.name)): sorted(t.deployers)
        for t in config.teams
        if config.cluster is not None
    }
    for role in roles:
        (st,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        if "AWS" in st["Principal"]:
            assert role.inputs["name"] in deployers, f"{role.name}: only a team's deploy role trusts IAM principals"
            assert st["Principal"]["AWS"] == deployers[role.inputs["name"]], role.name
            assert st["Action"] == "sts:AssumeRole" and "Condition" not in st, role.name
            continue
        service = st["Principal"]["Service"]
        if service == "ec2.amazonaws.com":
            assert st["Action"] == "sts:AssumeRole" and "Condition" not in st, role.name
            continue
        assert service == "pods.eks.amazonaws.com", (role.name, service)
        condition = st["Condition"]
        assert condition["StringEquals"] == {"aws:SourceAccount": ACCOUNT}, role.name
        arn = condition["ArnLike"]["aws:SourceArn"]
        assert re.fullmatch(rf"arn:aws:eks:[a-z0-9-]+:{ACCOUNT}:podidentityassociation/[^/*]+/\*", arn), arn
        if cluster:
            assert f"/{cluster}/" in arn, (role.name, arn, cluster)


def test_the_pod_identity_trust_is_the_user_guides_with_the_confused_deputy_conditions():
    scope = Scope(cluster="c1", region="eu-west-1", account="111122223333", partition="aws")
    (st,) = pod_identity_trust(scope)["Statement"]
    assert st["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert st["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "111122223333"},
        "ArnLike": {"aws:SourceArn": "arn:aws:eks:eu-west-1:111122223333:podidentityassociation/c1/*"},
    }


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_only_the_managed_policies_the_eks_user_guide_names_are_attached(path):
    rec = rendered_stack(path).mocks
    for att in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        arn = att.inputs["policyArn"]
        if arn.startswith("arn:aws:iam::aws:policy/"):
            assert arn.removeprefix("arn:aws:iam::aws:policy/") in MANAGED, (att.name, arn)
        else:
            assert arn.startswith(f"arn:aws:iam::{ACCOUNT}:policy/"), (att.name, arn)
