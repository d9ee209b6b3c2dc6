"""The `cluster` section: the EKS control plane, its network and its system nodes."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from .base import Cidr, IamArn, Strict

SubnetId = Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]{8,17}$")]
VpcId = Annotated[str, StringConstraints(pattern=r"^vpc-[0-9a-f]{8,17}$")]
ClusterName = Annotated[str, StringConstraints(pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]*$", min_length=1, max_length=82)]

# EKS versions in standard support when this catalog was written (see stacks/versions.py).
SUPPORTED_KUBERNETES = ("1.32", "1.33", "1.34", "1.35")
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
EKS_ADDON_NAMES = (
    "vpc-cni",
    "kube-proxy",
    "eks-pod-identity-agent",
    "coredns",
    "aws-ebs-csi-driver",
    "eks-node-monitoring-agent",
)


def _ipv4(cidr: str) -> str:
    # The cluster is IPv4: EKS takes no IPv6 block for an IPv4 cluster's public endpoint (EKS API,
    # VpcConfigRequest.publicAccessCidrs).
    if ":" in cidr:
        raise ValueError(
            f"{cidr} is an IPv6 block; the cluster is IPv4 and EKS accepts only IPv4 blocks for its public endpoint"
        )
    return cidr


Ipv4Cidr = Annotated[Cidr, AfterValidator(_ipv4)]
AddonVersion = Annotated[str, StringConstraints(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")]


class Vpc(Strict):
    """Create a VPC (cidr, availabilityZones) or adopt one (id, privateSubnetIds, publicSubnetIds)."""

    cidr: Cidr | None = Field(
        default=None,
        description="IPv4 block of a VPC to create, /16 to /20 with host bits zero; unset creates "
        "`10.0.0.0/16`. Each zone gets a private subnet of 1/8 of the block and a small public one.",
    )
    availability_zones: int = Field(
        default=3,
        ge=2,
        le=6,
        description="Availability zones a created VPC spans, each with a private and a public subnet.",
    )
    id: VpcId | None = Field(
        default=None,
        description="Adopt this existing VPC (`vpc-...`) instead of creating one; needs `privateSubnetIds` "
        "and excludes `cidr`.",
    )
    private_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description="With `id`: at least two private subnets in different zones for the cluster and nodes; "
        "they get the Karpenter discovery and internal load-balancer tags.",
    )
    public_subnet_ids: list[SubnetId] = Field(
        default_factory=list,
        description="With `id`: public subnets for internet-facing load balancers; they get the public "
        "load-balancer tag.",
    )
    # One NAT gateway per zone survives a zone outage; one in total is cheaper.
    nat_gateways: Literal["single", "perZone"] | None = Field(
        default=None,
        description="NAT gateways of a created VPC: `perZone` survives a zone outage, `single` is cheaper; "
        "unset means `perZone` in `environment: prod` and `single` elsewhere.",
    )

    @model_validator(mode="after")
    def _create_or_adopt(self) -> Self:
        if self.id is not None:
            if self.cidr is not None:
                raise ValueError("give either cidr (create a VPC) or id (adopt one), not both; remove cidr")
            if len(self.private_subnet_ids) < 2:
                raise ValueError(
                    "adopting a VPC needs privateSubnetIds: at least two private subnets in "
                    "different availability zones (EKS requires two)"
                )
        else:
            if self.private_subnet_ids or self.public_subnet_ids:
                raise ValueError(
                    "privateSubnetIds/publicSubnetIds adopt existing subnets and need the VPC's "
                    "id; add id: vpc-... or remove the subnet lists to create a VPC"
                )
            net = ipaddress.ip_network(self.cidr or "10.0.0.0/16")
            if net.version != 4 or not 16 <= net.prefixlen <= 20:
                raise ValueError(
                    f"cidr {net} is too small or too large: give an IPv4 block from /16 to /20 so "
                    f"every availability zone gets a private and a public subnet"
                )
        return self

    @property
    def adopted(self) -> bool:
        return self.id is not None

    @property
    def block(self) -> str:
        return self.cidr or "10.0.0.0/16"

    @property
    def address_blocks(self) -> tuple[str, ...]:
        """The IPv4 blocks the cluster's nodes, pods and control-plane interfaces take addresses from:
        a created VPC's block; an adopted VPC's block is not in the stack file, so the private ranges
        (RFC 1918) stand for it."""
        if self.adopted:
            return ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
        return (self.block,)


class ClusterEndpoint(Strict):
    """API server endpoint access. Private access is always on so nodes never leave the VPC."""

    public_access: bool = Field(
        default=True,
        description="Whether the API server has a public endpoint; private access is always on.",
    )
    public_access_cidrs: list[Ipv4Cidr] = Field(
        default_factory=list,
        description="IPv4 CIDR blocks allowed to reach the public endpoint, each listed once; empty allows any "
        "address. Only with `publicAccess: true`.",
    )

    @model_validator(mode="after")
    def _cidrs_need_public(self) -> Self:
        if self.public_access_cidrs and not self.public_access:
            raise ValueError(
                "publicAccessCidrs only applies with publicAccess: true; remove it or enable public access"
            )
        return self


class SystemNodes(Strict):
    """The managed node group (AL2023) that runs controllers: Karpenter, CoreDNS, operators."""

    instance_types: list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")]] = Field(
        default_factory=lambda: ["m7i.large"],
        min_length=1,
        description="EC2 instance types of the on-demand system node group (x86_64 AL2023).",
    )
    min: int = Field(default=2, ge=1, le=50, description="Fewest system nodes; at most `max`.")
    max: int = Field(default=4, ge=1, le=100, description="Most system nodes.")
    desired: int | None = Field(
        default=None,
        ge=1,
        description="Node count at creation, between `min` and `max`; unset starts at `min`. Later changes "
        "to the live count are left alone.",
    )
    disk_size_gib: int = Field(default=50, ge=20, le=1000, description="Root disk of each system node, in GiB.")

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.desired is not None and not self.min <= self.desired <= self.max:
            raise ValueError(f"desired ({self.desired}) must lie between min and max")
        return self


class ClusterSection(Strict):
    """`inference-platform:cluster`: the EKS control plane, its network and its system nodes. Required
    for `platform` and `all-in-one` stacks; a `workloads` stack may not set it."""

    name: ClusterName = Field(
        description="EKS cluster name (letters, digits, `-` and `_`, at most 82 characters); also the value of "
        "the `karpenter.sh/discovery` tag on its subnets and security group."
    )
    kubernetes_version: Literal[SUPPORTED_KUBERNETES] = Field(  # type: ignore[valid-type]
        default="1.34",
        description='Kubernetes minor version of the control plane, one in EKS standard support; quote it (`"1.34"`).',
    )
    vpc: Vpc = Field(default_factory=Vpc, description="The network: a VPC to create, or one to adopt.")
    endpoint: ClusterEndpoint = Field(
        default_factory=ClusterEndpoint, description="Who may reach the Kubernetes API server."
    )
    admins: list[IamArn] = Field(
        default_factory=list,
        description="IAM role or user ARNs given cluster-admin through EKS access entries: the identities the "
        "`kubeconfig` stack output lets in.",
    )
    system_nodes: SystemNodes = Field(
        default_factory=SystemNodes,
        description="The managed node group that runs controllers (Karpenter, CoreDNS, operators).",
    )
    log_types: list[Literal[LOG_TYPES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(LOG_TYPES),
        description="Control-plane log types sent to CloudWatch Logs; all five by default.",
    )
    addon_versions: dict[Literal[EKS_ADDON_NAMES], AddonVersion] = Field(  # type: ignore[valid-type]
        default_factory=dict,
        description="Exact EKS managed add-on versions, e.g. `vpc-cni: v1.20.4-eksbuild.1`; an unset add-on "
        "uses the catalog pin for the Kubernetes minor, else EKS's default. The stack output "
        "`eksAddonVersions` shows what was used, ready to copy here.",
    )
