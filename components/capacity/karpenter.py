"""The Karpenter controller: its AWS side and its Helm release.

Creates the node IAM role (worker, CNI, ECR pull, SSM) with an EKS access entry of type EC2_LINUX so
nodes can join; the controller role, reached through EKS Pod Identity, with the cluster-scoped
policies of components/capacity/karpenter_iam.py; the SQS interruption queue (SSE, 5-minute retention,
TLS-only policy) and the EventBridge rules that feed it; the karpenter-crd chart (NodePool, EC2NodeClass, NodeClaim
CRDs, upgraded with each version) and the Karpenter chart on the system nodes in kube-system. Every
Karpenter custom resource depends on `release`, which itself waits for the CRDs.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.naming import INTERRUPTION_EVENTS, TOKEN, iam_role_name, physical, queue_name, rule_name
from stacks.resolved import KARPENTER_NAMESPACE
from stacks.versions import Chart

from .. import iam, podidentity
from ..k8s import release
from . import karpenter_iam
from .plugins import KARPENTER_SERVICE_ACCOUNT, karpenter_values


@dataclass(frozen=True, kw_only=True)
class KarpenterArgs:
    cluster_name: str  # as in the stack file: scopes every policy and names the queue and rules
    cluster: pulumi.Input[str]  # the same name as the Cluster component's output: waits for the cluster
    region: str
    chart: Chart
    crd_chart: Chart | None  # karpenter-crd (stacks/versions.py CRD_SOURCES), installed at `chart`'s version
    static_capacity: bool = False  # some pool is static: the staticCapacity feature gate on
    capacity_buffer: bool = False  # some pool keeps warm nodes: the capacityBuffer feature gate on
    node_overlay: bool = False  # some pool has a NodeOverlay (shared GPUs, g6f): the nodeOverlay gate on
    node_repair: bool = False  # the nodeRepair feature gate (PlatformView.node_repair)
    provider: k8s.Provider
    tags: dict[str, str]
    # The AWS Load Balancer Controller's release: the controller chart's Service waits for its webhook.
    service_webhook: pulumi.Resource | None = None


def _dump(key: str, documents: dict[str, dict[str, Any]]) -> str:
    return json.dumps(documents[key])


class Karpenter(pulumi.ComponentResource):
    """Karpenter v1 for one EKS cluster."""

    node_role_name: pulumi.Output[str]
    queue_name: pulumi.Output[str]
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Karpenter", name, None, opts)
        # The AWS side (what terraform-aws-eks's karpenter submodule holds), then what runs in the cluster.
        node_role, node_access = self._node_role(name, args)
        queue = self._interruption_queue(name, args)
        credentials = self._controller_identity(name, args, node_role, queue)
        self.release = self._controller(name, args, queue, [*node_access, *credentials])
        self.node_role_name = node_role.name
        self.queue_name = queue.name
        self.register_outputs({"nodeRoleName": self.node_role_name, "queueName": self.queue_name})

    def _node_role(self, name: str, args: KarpenterArgs) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
        """The role Karpenter's nodes run as, and what a node needs of it: the access entry that lets it
        join the cluster and the role's policy attachments. The release waits for all of them, so on
        destroy they outlive the EC2NodeClasses (which wait for their nodes to be gone): a draining node
        keeps its credentials and its place in the cluster until Karpenter has terminated it."""
        child = pulumi.ResourceOptions(parent=self)
        node_role = aws.iam.Role(
            f"{name}-node",
            name=iam_role_name(args.cluster_name, "karpenter-node"),
            assume_role_policy=json.dumps(iam.ec2_trust()),
            tags=args.tags,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-node-{i}", role=node_role.name, policy_arn=arn, opts=child)
            for i, arn in enumerate(karpenter_iam.NODE_POLICIES)
        ]
        access = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=args.cluster,
            principal_arn=node_role.arn,
            type="EC2_LINUX",
            tags=args.tags,
            opts=child,
        )
        return node_role, [access, *attachments]

    def _interruption_queue(self, name: str, args: KarpenterArgs) -> aws.sqs.Queue:
        """The SQS queue EventBridge feeds with spot interruptions, rebalances and health events."""
        child = pulumi.ResourceOptions(parent=self)
        queue = aws.sqs.Queue(
            f"{name}-interruption",
            name=queue_name(args.cluster_name),
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            tags=args.tags,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(karpenter_iam.queue_policy(arn))),
            opts=child,
        )
        for event, pattern in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{event}",
                name=rule_name(args.cluster_name, event),
                event_pattern=json.dumps(pattern),
                tags=args.tags,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{event}",
                rule=rule.name,
                arn=queue.arn,
                target_id="KarpenterInterruptionQueueTarget",
                opts=child,
            )
        return queue

    def _controller_identity(
        self, name: str, args: KarpenterArgs, node_role: aws.iam.Role, queue: aws.sqs.Queue
    ) -> list[pulumi.Resource]:
        """The controller's Pod Identity role with the cluster-scoped policies; returns what the
        controller must wait for (the policy attachments and the association)."""
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster_name
        controller_role = podidentity.role(
            f"{name}-controller", cluster=cluster, purpose="karpenter", tags=args.tags, parent=self
        )
        documents = pulumi.Output.all(podidentity.scope(cluster, self), node_role.arn, queue.arn).apply(
            lambda v: karpenter_iam.controller_policies(v[0], node_role_arn=v[1], queue_arn=v[2])
        )
        attachments: list[pulumi.Resource] = []
        for key in ("node-lifecycle", "iam-integration", "eks-integration", "interruption", "resource-discovery"):
            policy = aws.iam.Policy(
                f"{name}-{key}",
                name=physical("karpenter", key, cluster, limit=128),
                policy=documents.apply(functools.partial(_dump, key)),
                tags=args.tags,
                opts=child,
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(
                    f"{name}-{key}", role=controller_role.name, policy_arn=policy.arn, opts=child
                )
            )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-controller",
            cluster_name=args.cluster,
            namespace=KARPENTER_NAMESPACE,
            service_account=KARPENTER_SERVICE_ACCOUNT,
            role_arn=controller_role.arn,
            tags=args.tags,
            opts=child,
        )
        return [association, *attachments]

    def _controller(
        self, name: str, args: KarpenterArgs, queue: aws.sqs.Queue, aws_side: list[pulumi.Resource]
    ) -> k8s.helm.v3.Release:
        """What runs in the cluster: the CRD chart, then the controller on the system nodes."""
        # CRDs from their own chart at the controller's version: Helm never upgrades a chart's crds/
        # directory, so CRDs installed with the controller chart would stay at the first version.
        assert args.crd_chart is not None, "Karpenter's CRDs come from a chart"
        crds = release(
            f"{name}-crd",
            args.crd_chart.with_version(args.chart.version),
            release_name="karpenter-crd",
            namespace=KARPENTER_NAMESPACE,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        return release(
            f"{name}-release",
            args.chart,
            release_name="karpenter",
            namespace=KARPENTER_NAMESPACE,
            skip_crds=True,
            values=karpenter_values(
                cluster=args.cluster_name,
                queue=queue.name,
                static_capacity=args.static_capacity,
                capacity_buffer=args.capacity_buffer,
                node_overlay=args.node_overlay,
                node_repair=args.node_repair,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                # CRDs, credentials, the node access entry and the node role's policies first: a
                # controller without them crashes, launches nothing, or launches nodes that never join.
                depends_on=[crds, *aws_side],
            ),
            service_webhook=args.service_webhook,
        )
