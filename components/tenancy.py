"""TeamTenancy: everything a team the platform declares (`teams[]`) gets from the platform stack, so
that the team's own stack creates nothing cluster-scoped and nothing outside its namespaces.

Per team, in the platform's (or all-in-one) stack, from the builders of components/team.py and
components/team_access.py:
- each of its namespaces, labelled with the team, with the team's ResourceQuota and LimitRange and,
  on an EFS cache, its `model-cache` claim;
- its bucket reader (components/storage/bucket.py ModelReaders, owner = the team): a role that reads
  only the team's `teams/<team>/` prefix, and the `model-reader` ServiceAccount with its Pod Identity
  association in each namespace;
- its deploy identity: an IAM role only the team's `deployers` may assume, with no permissions of its
  own; an EKS access entry mapping it to the team's Kubernetes group; and in each namespace a Role and
  RoleBinding granting that group exactly the kinds a team stack renders. Its ARN is exported
  (`teamDeployRoleArns`), and the team's stack builds its kubeconfig from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.storage import StorageSection
from stacks.naming import TOKEN, deploy_role_purpose, iam_role_name
from stacks.resolved import Team

from .k8s import register
from .storage.bucket import ModelReaders, ModelReadersArgs
from .team import cache_claims, guardrails, team_namespace
from .team_access import access_objects, deployers_trust, team_group


@dataclass(frozen=True, kw_only=True)
class TeamTenancyArgs:
    team: Team
    environment: str
    cluster: str  # the stack's cluster name, for physical names
    cluster_name: pulumi.Input[str]
    storage: StorageSection
    bucket_arn: pulumi.Input[str]
    # The EFS StorageClass the team's claims bind through (`modelCache: efs`), else None.
    claim_class: pulumi.Resource | None
    provider: k8s.Provider
    tags: dict[str, str]
    # What must be in force before the team's deploy identity is bound in its namespaces: the admission
    # policies on teams' HTTPRoutes and InterceptorRoutes (components/gateway/admission.py,
    # interceptor_admission.py), so no route of the team is ever written unchecked.
    bound_after: list[pulumi.Resource] = field(default_factory=list)


class TeamTenancy(pulumi.ComponentResource):
    """One team's namespaces, guardrails, cache claims, bucket reader and deploy identity."""

    deploy_role_arn: pulumi.Output[str]
    namespaces: dict[str, pulumi.Resource]

    def __init__(self, name: str, args: TeamTenancyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:TeamTenancy", name, None, opts)
        team = args.team
        assert team.quota is not None, "a platform resolves its own teams with their quotas"
        self.namespaces = {}
        for ns in team.namespaces:
            namespace = register(
                team_namespace(team.name, ns, args.environment),
                pulumi.ResourceOptions(parent=self, provider=args.provider),
                name=f"{name}-ns-{ns}",
            )
            self.namespaces[ns] = namespace
            inside = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace])
            for obj in guardrails(team.name, ns, team.quota, args.environment):
                register(obj, inside)
            bound = pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[namespace, *args.bound_after]
            )
            for obj in access_objects(team.name, ns):
                register(obj, bound)
            claim_deps = [namespace, *([args.claim_class] if args.claim_class is not None else [])]
            for obj in cache_claims(ns, args.storage):
                register(obj, pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=claim_deps))
        ModelReaders(
            f"{name}-readers",
            ModelReadersArgs(
                cluster_name=args.cluster_name,
                cluster=args.cluster,
                bucket_arn=args.bucket_arn,
                owner=team.name,
                namespaces=self.namespaces,
                provider=args.provider,
                tags=args.tags,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        self.deploy_role_arn = self._deploy_identity(name, args)
        self.register_outputs({"deployRoleArn": self.deploy_role_arn, "namespaces": list(team.namespaces)})

    def _deploy_identity(self, name: str, args: TeamTenancyArgs) -> pulumi.Output[str]:
        """The role the team's deployers assume (no permissions of its own) and its access entry: the
        team's Kubernetes group, bound in each of its namespaces only."""
        child = pulumi.ResourceOptions(parent=self)
        team = args.team
        role = aws.iam.Role(
            f"{name}-deploy",
            name=iam_role_name(args.cluster, deploy_role_purpose(team.name)),
            assume_role_policy=json.dumps(deployers_trust(team.deployers)),
            tags=args.tags,
            opts=child,
        )
        aws.eks.AccessEntry(
            f"{name}-access",
            cluster_name=args.cluster_name,
            principal_arn=role.arn,
            kubernetes_groups=[team_group(team.name)],
            type="STANDARD",
            tags=args.tags,
            opts=child,
        )
        return role.arn
