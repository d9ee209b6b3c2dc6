"""`pulumi destroy` leaves nothing behind, read from the resource graph of every shipped stack's render.

Pulumi deletes a resource before everything it depends on (its `dependsOn`, the resources its inputs
came from, its provider), and a Kubernetes object's deletion is awaited until the object is gone
(pulumi-kubernetes provider/pkg/await Deletion: a GET that 404s, 10 minutes by default, skipped only
with `pulumi.com/skipAwait`). So what a destroy waits for is exactly what the graph says:

- every load balancer maker (a Gateway, whose Envoy proxies and LoadBalancer Service Envoy Gateway puts
  in the Gateway's own namespace; a LoadBalancer Service; an Ingress; a chart whose values ask for a
  LoadBalancer Service) lives in a Namespace the program owns, which depends on the AWS Load Balancer
  Controller's release: the Namespace is deleted, and awaited with everything in it (the Service's
  finalizer, the NLB, its security groups and network interfaces), while the controller still runs;
- every NodePool and EC2NodeClass depends on Karpenter's release (an EC2NodeClass's finalizer waits for
  its NodeClaims' instances), Karpenter's release on the cluster, on the node role's access and policies,
  and the Kubernetes provider on the system nodes and every EKS add-on (CoreDNS resolves the AWS APIs
  the controllers call while they clean up);
- nothing retained or protected has a network interface in the VPC the stack deletes, or depends on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from components import peers
from components.gateway.routing import DEPLOY_MODE
from stacks.golden import stack_files
from stacks.mocks import Record
from stacks.resolved import GatewayParent

from .conftest import rendered_stack

STACKS = stack_files()
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
CLUSTER = "eks:index:Cluster"
# What holds a network interface in (or is) the VPC: a retained one would fail the VPC's deletion.
IN_THE_VPC = (
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:efs/mountTarget:MountTarget",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/internetGateway:InternetGateway",
)


def ids(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


class Graph:
    """A render's resources and what each waits for (and so outlives it on destroy): its dependencies,
    its provider, and, for a dependency on a component, the component's children."""

    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self.by_urn = {r.urn: r for r in records}
        self.children: dict[str, list[str]] = {}
        for r in records:
            if r.parent:
                self.children.setdefault(r.parent, []).append(r.urn)

    def _direct(self, urn: str) -> Iterator[str]:
        record = self.by_urn.get(urn)
        if record is None:
            return
        yield from record.depends_on
        if record.provider:
            yield record.provider.rsplit("::", 1)[0]
        if not record.custom:
            yield from self.children.get(urn, [])

    def after(self, record: Record) -> set[str]:
        """Every URN `record` transitively waits for."""
        seen: set[str] = set()
        todo = [record.urn]
        while todo:
            for dep in self._direct(todo.pop()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    def waits_for(self, record: Record, test: Callable[[Record], bool]) -> bool:
        return any(test(self.by_urn[u]) for u in self.after(record) if u in self.by_urn)

    def of_type(self, typ: str) -> list[Record]:
        return [r for r in self.records if r.type == typ]


def graph(path: Path) -> Graph:
    return Graph(rendered_stack(path).resources)


def kind(record: Record) -> str:
    return record.type.rsplit(":", 1)[-1] if record.type.startswith("kubernetes:") else ""


def namespace_of(record: Record) -> str | None:
    if record.type == RELEASE:
        return record.inputs.get("namespace")
    return (record.inputs.get("metadata") or {}).get("namespace")


def asks_for_load_balancer(values: Any) -> bool:
    """Whether Helm values anywhere ask for a Service of type LoadBalancer (AIBrix's EnvoyProxy Service)."""
    if isinstance(values, dict):
        return values.get("type") == "LoadBalancer" or any(asks_for_load_balancer(v) for v in values.values())
    if isinstance(values, list):
        return any(asks_for_load_balancer(v) for v in values)
    return False


def load_balancer_makers(g: Graph) -> list[Record]:
    """What makes an AWS load balancer: a Gateway (Envoy Gateway gives each one a LoadBalancer
    Service), a LoadBalancer Service, an Ingress, a Helm release whose values ask for a LoadBalancer."""

    def makes(r: Record) -> bool:
        if r.type.startswith("kubernetes:gateway.networking.k8s.io/") and kind(r) == "Gateway":
            return True
        if kind(r) == "Service" and (r.inputs.get("spec") or {}).get("type") == "LoadBalancer":
            return True
        return kind(r) == "Ingress" or (r.type == RELEASE and asks_for_load_balancer(r.inputs.get("values")))

    return [r for r in g.records if makes(r)]


def controller_release(g: Graph) -> Record | None:
    found = [r for r in g.of_type(RELEASE) if r.inputs.get("name") == "aws-load-balancer-controller"]
    return found[0] if found else None


def is_release(name: str) -> Callable[[Record], bool]:
    return lambda r: r.type == RELEASE and r.inputs.get("name") == name


def test_the_shipped_stacks_make_load_balancers_through_a_gateway_and_through_aibrix_chart():
    made = {ids(p): sorted(kind(r) or r.type for r in load_balancer_makers(graph(p))) for p in STACKS}
    assert made["dev"] == ["Gateway"], made["dev"]
    assert "Release" in made["serving"], "AIBrix's chart asks for a LoadBalancer Service"
    assert made["team-chat"] == [] and made["team-search"] == [], "a team's stack makes no load balancer"


@pytest.mark.parametrize("path", STACKS, ids=ids)
def test_every_load_balancer_lives_in_a_namespace_deleted_and_awaited_while_its_controller_runs(path):
    g = graph(path)
    makers = load_balancer_makers(g)
    if not makers:
        return
    controller = controller_release(g)
    assert controller is not None, f"{ids(path)} makes load balancers but installs no load balancer controller"
    namespaces = {r.inputs["metadata"]["name"]: r for r in g.of_type(NAMESPACE)}
    for maker in makers:
        ns = namespace_of(maker)
        owned = namespaces.get(ns or "")
        assert owned is not None, f"{maker.name}: its namespace {ns} is not one the program creates and deletes"
        assert owned.urn in g.after(maker), f"{maker.name} is deleted before its namespace {ns}"
        assert controller.urn in g.after(owned), (
            f"namespace {ns} (holding {maker.name}'s LoadBalancer Service) must be deleted, and awaited, before "
            "the load balancer controller is uninstalled, or the Service's finalizer and its NLB stay"
        )
        annotations = owned.inputs["metadata"].get("annotations") or {}
        assert annotations.get("pulumi.com/skipAwait") != "true", f"namespace {ns}: its deletion must be awaited"


@pytest.mark.parametrize("path", STACKS, ids=ids)
def test_every_gateway_data_plane_runs_in_the_gateway_s_own_program_owned_namespace(path):
    g = graph(path)
    envoy_gateway = [r for r in g.of_type(RELEASE) if r.inputs.get("name") == "envoy-gateway"]
    for release in envoy_gateway:
        deploy = release.inputs["values"]["config"]["envoyGateway"]["provider"]["kubernetes"]["deploy"]
        assert deploy == {"type": DEPLOY_MODE} == {"type": "GatewayNamespace"}, (
            "each Gateway's proxies and LoadBalancer Service in its own namespace, not envoy-gateway-system "
            "(which the Helm release creates and never deletes)"
        )
    gateways = [r for r in load_balancer_makers(g) if kind(r) == "Gateway"]
    owned = {r.inputs["metadata"]["name"] for r in g.of_type(NAMESPACE)}
    for gw in gateways:
        assert namespace_of(gw) in owned, f"{gw.name}: its data plane's namespace is the program's"


def test_the_proxies_network_policies_admit_are_found_in_the_gateway_s_namespace():
    for parent in (
        GatewayParent(namespace="inference-gateway", name="inference", listener="https", hostname=None, own=True),
        GatewayParent(namespace="aibrix-system", name="aibrix-eg", listener="http", hostname=None, own=False),
    ):
        proxies = peers.proxies(parent)
        assert proxies.namespace == parent.namespace, "GatewayNamespace mode: the proxies run beside their Gateway"


@pytest.mark.parametrize("path", STACKS, ids=ids)
def test_every_node_pool_and_node_class_goes_while_karpenter_runs_and_karpenter_before_the_cluster(path):
    g = graph(path)
    custom = [r for r in g.records if kind(r) in ("NodePool", "EC2NodeClass")]
    if not custom:
        return
    karpenter = [r for r in g.of_type(RELEASE) if r.inputs.get("name") == "karpenter"]
    assert len(karpenter) == 1, "one Karpenter release"
    (release,) = karpenter
    for r in custom:
        assert release.urn in r.depends_on, f"{r.name}: deleted (its instances terminated) while Karpenter runs"
    assert g.waits_for(release, lambda r: r.type == CLUSTER), "Karpenter is uninstalled before the cluster goes"
    node_access = [
        r
        for r in g.records
        if r.type in ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:eks/accessEntry:AccessEntry")
        and "-karpenter-node" in r.name
    ]
    assert len(node_access) >= 2, "the node role's access entry and policy attachments"
    efa = [r for r in g.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-efa")]
    for node_class in (r for r in custom if kind(r) == "EC2NodeClass"):
        after = g.after(node_class)
        missing = [a.name for a in node_access if a.urn not in after]
        assert not missing, f"{node_class.name}: draining nodes keep their credentials and access: {missing}"
        assert g.waits_for(node_class, lambda r: r.type == "aws:iam/role:Role" and "karpenter-node" in r.name)
        for group in efa:
            assert group.urn in after, f"{node_class.name}: the EFA security group outlives the nodes carrying it"


@pytest.mark.parametrize("path", STACKS, ids=ids)
def test_the_kubernetes_provider_outlives_no_system_node_and_no_eks_add_on(path):
    g = graph(path)
    providers = g.of_type("pulumi:providers:kubernetes")
    clusters = {r.urn for r in g.records if r.type.endswith(":components:Cluster")}
    # The cluster's own add-ons; a CSI driver's (the storage concern's) is awaited by the objects using it.
    addons = [r for r in g.of_type("aws:eks/addon:Addon") if r.parent in clusters]
    if not clusters:
        return  # a team's stack: the cluster is the platform's
    assert {"coredns", "vpc-cni", "eks-pod-identity-agent"} <= {r.inputs["addonName"] for r in addons}
    system = g.of_type("aws:eks/nodeGroup:NodeGroup")
    for provider in providers:
        missing = [r.name for r in [*addons, *system] if r.urn not in provider.depends_on]
        assert not missing, (
            "every Kubernetes object is deleted while the system nodes and add-ons still run (CoreDNS resolves "
            f"the AWS APIs the controllers call to delete instances and load balancers): {missing}"
        )


@pytest.mark.parametrize("path", STACKS, ids=ids)
def test_nothing_kept_after_destroy_has_an_interface_in_the_vpc_or_holds_it(path):
    g = graph(path)
    kept = [r for r in g.records if r.retain_on_delete or r.protect]
    for r in kept:
        assert r.type not in IN_THE_VPC, f"{r.name} ({r.type}) is kept, and its network interfaces keep the VPC"
        held = sorted(g.by_urn[u].name for u in g.after(r) if u in g.by_urn and g.by_urn[u].type in IN_THE_VPC)
        assert not held, f"{r.name} is kept and depends on {held}: `--exclude-protected` would keep them too"


def test_the_fsx_cache_goes_with_the_stack_and_the_bucket_is_the_retained_copy():
    g = graph(Path("stacks/examples/Pulumi.storage-fsx.yaml").resolve())
    (fs,) = g.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert not fs.protect and not fs.retain_on_delete, "a cache of the bucket, deleted before its subnet and VPC"
    efs = graph(Path("stacks/examples/Pulumi.storage-efs.yaml").resolve())
    (bucket,) = efs.of_type("aws:s3/bucket:Bucket")
    assert bucket.protect and bucket.retain_on_delete, "the weights' one retained copy, outside the VPC"
    settings = [r for r in efs.records if r.parent == bucket.parent and r.urn != bucket.urn and r.custom]
    assert {r.type.rsplit(":", 1)[-1] for r in settings} >= {
        "BucketPolicy",
        "BucketPublicAccessBlock",
        "BucketVersioning",
        "BucketServerSideEncryptionConfiguration",
    }
    for r in settings:
        assert r.retain_on_delete, f"{r.name}: a retained bucket keeps its settings (versioning, TLS-only policy)"
    (file_system,) = efs.of_type("aws:efs/fileSystem:FileSystem")
    assert file_system.protect and file_system.retain_on_delete
    for target in efs.of_type("aws:efs/mountTarget:MountTarget"):
        assert not target.protect and not target.retain_on_delete, "mount targets go with the VPC"


def test_the_operator_guide_says_how_a_stack_is_destroyed_and_what_it_keeps():
    guide = (Path(__file__).parent.parent / "docs" / "operator-guide.md").read_text()
    assert "\n## Destroying a stack\n" in guide, "the operator guide has a Destroying a stack section"
    section = guide.split("\n## Destroying a stack\n", 1)[1].split("\n## ", 1)[0]
    for words in (
        "inference-gateway",
        "aibrix-system",
        "EC2NodeClass",
        "CoreDNS",
        "--exclude-protected",
        "delete-file-system",
        "delete-bucket",
        "FSx",
        "deletion protection",
    ):
        assert words in section, f"the section says {words!r}: the order, what each step waits for, what is kept"
