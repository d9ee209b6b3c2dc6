"""The AWS Load Balancer Controller: what turns the front door's LoadBalancer Service into an NLB.

The gateway (components/gateway/) annotates the Envoy Service for this controller (an `external`
NLB with IP targets, optionally terminating TLS with an ACM certificate), and so does AIBrix's
gateway; without the controller that Service never gets a load balancer. This module creates:

- an IAM role reached through EKS Pod Identity (`aws.eks.PodIdentityAssociation` for
  kube-system/aws-load-balancer-controller) carrying the controller's documented policy,
  `controller_policy()`: the statements of kubernetes-sigs/aws-load-balancer-controller
  `docs/install/iam_policy.json` at the chart's appVersion (v3.5.0), with the upstream conditions
  that confine changes to resources tagged `elbv2.k8s.aws/cluster`, scoped further to this account,
  region and VPC (components/loadbalancer_iam.py says how);
- the `aws-load-balancer-controller` chart from https://aws.github.io/eks-charts on the system nodes,
  with `clusterName`, `region` and `vpcId` set (no instance metadata lookups) and two replicas under
  a PodDisruptionBudget: its Service webhook fails closed, so it must stay up.

Anything that creates a LoadBalancer Service waits for `release`, so the webhook and the controller
exist before the Service does, and the controller outlives it on destroy (its finalizer deletes the NLB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.naming import SYSTEM_NODE_LABEL, TOKEN, physical
from stacks.resolved import LOAD_BALANCER_NAMESPACE
from stacks.versions import Chart, CrdSource

from . import crds, podidentity
from .k8s import release
from .loadbalancer_iam import SERVICE_ACCOUNT, controller_policy

# ---- Helm values (aws-load-balancer-controller chart 3.5.0 values.yaml) ------------------------


def controller_values(
    *, cluster: pulumi.Input[str], region: str, vpc_id: pulumi.Input[str], tags: dict[str, str]
) -> dict[str, Any]:
    return {
        "clusterName": cluster,
        "region": region,
        "vpcId": vpc_id,
        "replicaCount": 2,
        # Only taken when replicaCount > 1: the Service webhook (failurePolicy Fail) keeps one pod.
        "podDisruptionBudget": {"maxUnavailable": 1},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": {"kubernetes.io/os": "linux", **SYSTEM_NODE_LABEL},
        # The stack's tags on every load balancer, target group and security group it creates.
        "defaultTags": dict(tags),
        # Hardened past the chart's defaults (it runs non-root with a read-only root already): no
        # capabilities (its webhook listens on 9443), the runtime's seccomp profile, the uid of
        # `nobody` its fsGroup already names, and bounded memory.
        "podSecurityContext": {"fsGroup": 65534, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
        "securityContext": {"capabilities": {"drop": ["ALL"]}},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
    }


@dataclass(frozen=True, kw_only=True)
class LoadBalancerControllerArgs:
    cluster_name: str  # as in the stack file: names the role and policy
    cluster: pulumi.Input[str]  # the Cluster component's name output (carries the dependency)
    region: str
    vpc_id: pulumi.Input[str]
    chart: Chart
    crds: CrdSource  # the chart's crds/ files at its tag (TargetGroupBinding, IngressClassParams, ...)
    provider: k8s.Provider
    tags: dict[str, str]


class LoadBalancerController(pulumi.ComponentResource):
    """The AWS Load Balancer Controller and its Pod Identity role."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: LoadBalancerControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:LoadBalancerController", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = podidentity.role(
            f"{name}-role",
            cluster=args.cluster_name,
            purpose="aws-load-balancer-controller",
            tags=args.tags,
            parent=self,
        )
        document = pulumi.Output.all(podidentity.scope(args.cluster_name, self), args.vpc_id).apply(
            lambda v: json.dumps(controller_policy(v[0], v[1]))
        )
        policy = aws.iam.Policy(
            f"{name}-policy",
            name=physical("aws-load-balancer-controller", args.cluster_name, limit=128),
            policy=document,
            tags=args.tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(f"{name}-policy", role=role.name, policy_arn=policy.arn, opts=child)
        association = aws.eks.PodIdentityAssociation(
            f"{name}-identity",
            cluster_name=args.cluster,
            namespace=LOAD_BALANCER_NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=role.arn,
            tags=args.tags,
            opts=child,
        )
        applied = crds.install(f"{name}-crds", args.crds, pulumi.ResourceOptions(parent=self, provider=args.provider))
        self.release = release(
            f"{name}-release",
            args.chart,
            release_name="aws-load-balancer-controller",
            namespace=LOAD_BALANCER_NAMESPACE,
            skip_crds=True,
            values=controller_values(cluster=args.cluster, region=args.region, vpc_id=args.vpc_id, tags=args.tags),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                # Credentials first: without them the controller starts but every AWS call fails. Its CRDs
                # first too: it watches TargetGroupBindings from its first start.
                depends_on=[applied, association, attachment],
            ),
        )
        self.register_outputs({"release": self.release.name})
