"""The upstream facts `python -m stacks lifecycle` models a `pulumi up` and a `pulumi destroy` with,
each with its source: how long the cloud takes to create what the program registers, how the Pulumi
Kubernetes provider and Helm wait, which chart's webhooks admit what with `failurePolicy: Fail`,
which charts install the CustomResourceDefinitions and run the operators of which API groups, and
which charts ship CRDs in a `crds/` directory (which Helm installs once and never upgrades).

Durations are what a first `pulumi up` typically waits, not worst cases; the timeouts are the
provider's own. The node-launch and image-pull allowances are read from stacks/coldstart.py (the
same figures the startup probes and the scale-from-zero budget use), never copied here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .awaits import IMAGE_PULL_SECONDS, NODE_LAUNCH_SECONDS
from .coldstart_facts import GPU_NODE_READY, SAFETY_FACTOR

# The Pulumi Kubernetes provider's await logic (pulumi/pulumi-kubernetes, provider/pkg/await and
# provider/pkg/metadata; read at commit 94977969d of its main branch, the newest the project could
# read; the lock pins the SDK at 4.34.2, whose plugin is that provider's release of the same number).
PROVIDER_AWAIT_SOURCE = (
    "https://github.com/pulumi/pulumi-kubernetes/tree/94977969d64112b04e19945818a7d5d5f38f631d/provider/pkg/await"
)
# await.go Creation/Update/Deletion: `timeout := 10 * time.Minute` unless customTimeouts or the
# `pulumi.com/timeoutSeconds` annotation (metadata.TimeoutDuration) say otherwise.
PROVIDER_DEFAULT_TIMEOUT_SECONDS = 600
SKIP_AWAIT = "pulumi.com/skipAwait"
TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"
WAIT_FOR = "pulumi.com/waitFor"

# Kinds with a built-in create await (awaiters.go `awaiters`), with what it waits for and the cap
# the awaiter itself sets, if any (a PVC's watch stops at 5 minutes whatever the timeout says).
BUILT_IN_AWAITS: dict[str, tuple[str, int | None]] = {
    "apps/Deployment": ("its new ReplicaSet's pods available (deployment.go)", None),
    "apps/StatefulSet": ("every replica ready and at the update revision (statefulset.go)", None),
    "apps/DaemonSet": ("every scheduled pod updated and ready (daemonset.go)", None),
    "batch/Job": ("the Job succeeded (job.go)", None),
    "core/Pod": ("the pod ready (pod.go)", None),
    "core/Service": (
        "no selected pod unready, and for type LoadBalancer an ingress address (service.go)",
        None,
    ),
    "networking.k8s.io/Ingress": ("a load balancer address on the Ingress (ingress.go)", None),
    "core/PersistentVolumeClaim": ("Bound, or Pending under WaitForFirstConsumer (awaiters.go)", 300),
    "core/PersistentVolume": ("Available or Bound (awaiters.go)", 300),
    "core/ServiceAccount": ("its default token secret, on clusters that create one (awaiters.go)", 300),
    "core/ResourceQuota": ("its status filled in (awaiters.go)", 60),
    "core/ReplicationController": ("its replicas available (awaiters.go)", None),
}
# overrides.go allowsSkipAwaitWithDelete: kinds whose deletion skipAwait also stops waiting for.
SKIP_AWAIT_ON_DELETE = {"core/Namespace", "core/Pod", "core/ReplicationController", "apps/DaemonSet"}
SKIP_AWAIT_ON_DELETE |= {"apps/Deployment", "apps/StatefulSet", "batch/Job"}

# helm_release.go: `defaultTimeoutSeconds = 300`; `client.Wait = !SkipAwait`; an uninstall waits
# (with the same timeout) unless skipAwait is set and atomic is not.
HELM_RELEASE_SOURCE = "https://github.com/pulumi/pulumi-kubernetes/blob/94977969d64112b04e19945818a7d5d5f38f631d/provider/pkg/provider/helm_release.go"
HELM_DEFAULT_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class Duration:
    """How long creating one kind of resource takes on a first `pulumi up`, and where that is said."""

    seconds: int
    what: str
    source: str


COLDSTART = "stacks/awaits.py (NODE_LAUNCH_SECONDS, IMAGE_PULL_SECONDS)"
DURATIONS: dict[str, Duration] = {
    "eks:index:Cluster": Duration(
        900,
        "EKS control plane (the pulumi-eks component: the cluster and its OIDC provider)",
        "https://github.com/aws/containers-roadmap/issues/1227 (control-plane provisioning averages 15 minutes)",
    ),
    "aws:eks/cluster:Cluster": Duration(
        900,
        "EKS control plane",
        "https://github.com/aws/containers-roadmap/issues/1227 (control-plane provisioning averages 15 minutes)",
    ),
    "aws:eks/nodeGroup:NodeGroup": Duration(
        NODE_LAUNCH_SECONDS,
        "managed node group: its instances launched, booted and joined",
        f"{COLDSTART}: one node launch, boot and join",
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": Duration(
        600,
        "FSx for Lustre file system (CREATING to AVAILABLE)",
        "https://aws.amazon.com/fsx/lustre/faqs/ ('within minutes'; 10 minutes allowed, no figure is published)",
    ),
    "aws:efs/fileSystem:FileSystem": Duration(
        30,
        "EFS file system (CreateFileSystem returns in CREATING; available in seconds)",
        "https://docs.aws.amazon.com/efs/latest/ug/API_CreateFileSystem.html",
    ),
    "aws:efs/mountTarget:MountTarget": Duration(
        120,
        "EFS mount target: its network interface created and available",
        "https://alchemy.run/providers/aws/efs/mounttarget (available typically after 1 to 2 minutes)",
    ),
    "aws:ec2/natGateway:NatGateway": Duration(
        180,
        "NAT gateway (pending to available)",
        "https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-working-with.html "
        "(a few minutes; 3 allowed, no figure is published)",
    ),
    "aws:eks/addon:Addon": Duration(
        60,
        "EKS add-on (ACTIVE once its pods run on the system nodes)",
        "https://docs.aws.amazon.com/eks/latest/userguide/creating-an-add-on.html",
    ),
}
# An API call that returns once the object is stored: IAM, S3, security groups, routes, a
# Kubernetes object with no await.
API_CALL = Duration(5, "one API call, nothing awaited", "no await (see the provider await table)")
# What a Helm release that waits takes when nothing it installs needs a new node: its images pulled
# on running system nodes and its pods ready.
HELM_READY = Duration(
    120,
    "Helm release: its controller images pulled on running system nodes and its pods ready",
    f"{HELM_RELEASE_SOURCE} (Wait); 2 minutes allowed for images of a few hundred MB",
)
ACCELERATOR_NODE = Duration(
    NODE_LAUNCH_SECONDS + IMAGE_PULL_SECONDS,
    "a Karpenter accelerator node launched for the pod, and the engine image pulled on it",
    COLDSTART,
)
# A model's image pull is its own estimate's (stacks/coldstart.py), which a rendered record does not carry:
# the node is the part every model on an accelerator pool waits for at least: the measured launch, times the
# safety factor (an unmeasured family's bound is larger, and so is its allowance).
MODEL_NODE = Duration(
    math.ceil(GPU_NODE_READY.value * SAFETY_FACTOR),
    "a Karpenter accelerator node launched for the pod (its engine image's pull is the model's own estimate)",
    f"stacks/coldstart_facts.py: {GPU_NODE_READY.source}, times the safety factor {SAFETY_FACTOR}",
)
NLB = Duration(
    180,
    "a Network Load Balancer provisioned by the AWS Load Balancer Controller (address assigned)",
    "https://docs.aws.amazon.com/elasticloadbalancing/latest/network/create-network-load-balancer.html "
    "(provisioning takes a few minutes; 3 allowed)",
)


# ---- webhooks: which chart's webhooks admit which kinds with failurePolicy Fail -----------------------
# (chart name, as the release's chart path ends) -> {(API group, kind)}. Objects of these kinds
# created before the release's webhook Service has endpoints are refused ("failed calling webhook"),
# so they must depend on the release. Checked against the real charts in tests/test_lifecycle.py.
FAIL_CLOSED_WEBHOOKS: dict[str, frozenset[tuple[str, str]]] = {
    "aws-load-balancer-controller": frozenset(
        {
            ("", "Service"),  # mservice.elbv2.k8s.aws: every Service but the controller's own
            ("networking.k8s.io", "Ingress"),
            ("elbv2.k8s.aws", "TargetGroupBinding"),
            ("elbv2.k8s.aws", "IngressClassParams"),
        }
    ),
    "lws": frozenset({("leaderworkerset.x-k8s.io", "LeaderWorkerSet")}),
    "dynamo-platform": frozenset(
        {
            ("nvidia.com", "DynamoGraphDeployment"),
            ("nvidia.com", "DynamoComponentDeployment"),
            ("nvidia.com", "DynamoCheckpoint"),
        }
    ),
}
# Webhooks that fail closed only on pods (created by controllers, never by `pulumi up` itself).
POD_ONLY_WEBHOOKS = {"aws-load-balancer-controller", "lws"}


# ---- CRDs and operators: which chart installs the CRDs of, and runs the controller for, an API group ----
CRD_GROUPS: dict[str, frozenset[str]] = {
    "karpenter-crd": frozenset({"karpenter.sh", "karpenter.k8s.aws"}),
    "karpenter": frozenset({"karpenter.sh", "karpenter.k8s.aws"}),
    "gateway-helm": frozenset({"gateway.networking.k8s.io", "gateway.envoyproxy.io"}),
    "kube-prometheus-stack": frozenset({"monitoring.coreos.com"}),
    "kuberay-operator": frozenset({"ray.io"}),
    "lws": frozenset({"leaderworkerset.x-k8s.io"}),
    "aibrix": frozenset({"autoscaling.aibrix.ai", "model.aibrix.ai", "orchestration.aibrix.ai"}),
    "keda": frozenset({"keda.sh", "eventing.keda.sh"}),
    "keda-add-ons-http": frozenset({"http.keda.sh"}),
    "dynamo-platform": frozenset({"nvidia.com"}),
    "aws-load-balancer-controller": frozenset({"elbv2.k8s.aws"}),
}
# Every chart above runs the controller of the groups it installs, but karpenter-crd (CRDs only).
OPERATOR_GROUPS: dict[str, frozenset[str]] = {k: v for k, v in CRD_GROUPS.items() if k != "karpenter-crd"}

# Charts that ship CRDs in a `crds/` directory, their own or a subchart's (Helm installs these on the
# first install only and never upgrades or deletes them). Checked against the charts on file.
CHARTS_WITH_CRDS_DIR = frozenset(
    {
        "aibrix",
        "aws-load-balancer-controller",
        "gateway-helm",
        "karpenter",
        "kube-prometheus-stack",
        "kuberay-operator",
        "lws",
    }
)

# ---- destroy: what a deletion waits for -------------------------------------------------------------
LBC_CHART = "aws-load-balancer-controller"
FINALIZERS: dict[str, str] = {
    "core/Service LoadBalancer": "the service.k8s.aws/resources finalizer, which the AWS Load Balancer "
    "Controller removes after deleting the NLB: the controller must still run",
    "core/Namespace": "every object in the namespace deleted (each with its own finalizers)",
    "karpenter.k8s.aws/EC2NodeClass": "the karpenter.k8s.aws/termination finalizer: Karpenter removes it once "
    "no NodeClaim uses the class (their instances terminated)",
    "karpenter.sh/NodePool": "Karpenter deleting the pool's NodeClaims: nodes drained, instances terminated",
    "core/PersistentVolumeClaim": "the kubernetes.io/pvc-protection finalizer: no pod using the claim",
    "core/PersistentVolume": "the kubernetes.io/pv-protection finalizer: no claim bound (then the reclaim policy)",
    "gateway.networking.k8s.io/Gateway": "the gateway controller deleting its proxy Service (and so its NLB)",
    "networking.k8s.io/Ingress": "the ingress.k8s.aws/resources finalizer, removed by the AWS Load Balancer "
    "Controller after deleting the ALB",
}
CLOUD_DELETES: dict[str, str] = {
    "aws:ec2/vpc:Vpc": "no network interface, subnet or gateway left in the VPC",
    "aws:ec2/subnet:Subnet": "no network interface left in the subnet (NLB, EFS mount target, FSx, nodes)",
    "aws:ec2/securityGroup:SecurityGroup": "no network interface using the group",
    "eks:index:Cluster": "the control plane deleted (node groups and Fargate profiles first)",
    "aws:eks/nodeGroup:NodeGroup": "its instances drained and terminated",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "the file system deleted (minutes)",
    "aws:efs/mountTarget:MountTarget": "its network interface released",
    "aws:ec2/natGateway:NatGateway": "the NAT gateway deleted and its network interface released",
}
# Kinds whose deletion leaves network interfaces behind when they are retained.
ENI_MAKERS = {"aws:fsx/lustreFileSystem:LustreFileSystem", "aws:efs/mountTarget:MountTarget"}
