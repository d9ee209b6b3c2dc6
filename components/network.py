"""Network: a VPC across availability zones with private and public subnets and NAT, or an
adopted VPC. Subnets are tagged for Karpenter discovery and for AWS load balancers."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from stacks.config.cluster import Vpc
from stacks.naming import TOKEN


def subnet_cidrs(block: str, zones: int) -> tuple[list[str], list[str]]:
    """Private subnets take 1/8 of the block each; public ones 1/64 each, carved from the last 1/8."""
    net = ipaddress.IPv4Network(block)
    eighths = list(net.subnets(prefixlen_diff=3))
    private = [str(s) for s in eighths[:zones]]
    public = [str(s) for s in list(eighths[-1].subnets(prefixlen_diff=3))[:zones]]
    return private, public


def subnet_tags(cluster: str, public: bool) -> dict[str, str]:
    """Load-balancer role tags, and the Karpenter discovery tag on the subnets nodes use."""
    if public:
        return {"kubernetes.io/role/elb": "1"}
    return {"kubernetes.io/role/internal-elb": "1", "karpenter.sh/discovery": cluster}


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    cluster_name: str
    vpc: Vpc
    nat_per_zone: bool
    tags: dict[str, str]


class Network(pulumi.ComponentResource):
    """Creates (or adopts) the VPC the cluster and its nodes live in."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    public_subnet_ids: pulumi.Output[list[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:Network", name, None, opts)
        if args.vpc.adopted:
            self._adopt(name, args)
        else:
            self._create(name, args)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _adopt(self, name: str, args: NetworkArgs) -> None:
        child = pulumi.ResourceOptions(parent=self)
        # Adopted subnets still need the discovery and load-balancer tags; ec2.Tag adds them without
        # taking ownership of the subnet.
        for kind, subnets in (("private", args.vpc.private_subnet_ids), ("public", args.vpc.public_subnet_ids)):
            for i, subnet in enumerate(subnets):
                for key, value in subnet_tags(args.cluster_name, public=kind == "public").items():
                    slug = key.replace("/", "-").replace(".", "-")
                    aws.ec2.Tag(f"{name}-{kind}-{i}-{slug}", resource_id=subnet, key=key, value=value, opts=child)
        self.vpc_id = pulumi.Output.from_input(args.vpc.id or "")
        self.private_subnet_ids = pulumi.Output.from_input(list(args.vpc.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input(list(args.vpc.public_subnet_ids))

    def _create(self, name: str, args: NetworkArgs) -> None:
        child = pulumi.ResourceOptions(parent=self)
        zones = aws.get_availability_zones_output(state="available").names
        zone_names = [zones[i] for i in range(args.vpc.availability_zones)]
        private_cidrs, public_cidrs = subnet_cidrs(args.vpc.block, args.vpc.availability_zones)
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.vpc.block,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": args.cluster_name},
            opts=child,
        )
        igw = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags={**args.tags, "Name": args.cluster_name}, opts=child
        )
        public, nats = self._create_public_subnets(name, args, child, vpc, igw, zone_names, public_cidrs)
        private = self._create_private_subnets(name, args, child, vpc, zone_names, private_cidrs, nats)
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private])
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in public])

    def _create_public_subnets(
        self,
        name: str,
        args: NetworkArgs,
        child: pulumi.ResourceOptions,
        vpc: aws.ec2.Vpc,
        igw: aws.ec2.InternetGateway,
        zone_names: list[pulumi.Output[str]],
        cidrs: list[str],
    ) -> tuple[list[aws.ec2.Subnet], list[aws.ec2.NatGateway]]:
        """One public subnet per zone routed to the internet gateway, and the NAT gateways in them
        (one per zone with `nat_per_zone`, else one in the first zone)."""
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={**args.tags, "Name": f"{args.cluster_name}-public"},
            opts=child,
        )
        public, nats = [], []
        for i, zone in enumerate(zone_names):
            pub = aws.ec2.Subnet(
                f"{name}-public-{i}",
                vpc_id=vpc.id,
                cidr_block=cidrs[i],
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**args.tags, **subnet_tags(args.cluster_name, True), "Name": f"{args.cluster_name}-public-{i}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{i}", subnet_id=pub.id, route_table_id=public_rt.id, opts=child
            )
            public.append(pub)
            if args.nat_per_zone or i == 0:
                eip = aws.ec2.Eip(
                    f"{name}-nat-{i}",
                    domain="vpc",
                    tags={**args.tags, "Name": f"{args.cluster_name}-nat-{i}"},
                    opts=child,
                )
                nats.append(
                    aws.ec2.NatGateway(
                        f"{name}-nat-{i}",
                        allocation_id=eip.allocation_id,
                        subnet_id=pub.id,
                        tags={**args.tags, "Name": f"{args.cluster_name}-nat-{i}"},
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
                    )
                )
        return public, nats

    def _create_private_subnets(
        self,
        name: str,
        args: NetworkArgs,
        child: pulumi.ResourceOptions,
        vpc: aws.ec2.Vpc,
        zone_names: list[pulumi.Output[str]],
        cidrs: list[str],
        nats: list[aws.ec2.NatGateway],
    ) -> list[aws.ec2.Subnet]:
        """One private subnet per zone, each with its own route table out through its zone's NAT
        gateway (or the one NAT gateway)."""
        private = []
        for i, zone in enumerate(zone_names):
            priv = aws.ec2.Subnet(
                f"{name}-private-{i}",
                vpc_id=vpc.id,
                cidr_block=cidrs[i],
                availability_zone=zone,
                tags={**args.tags, **subnet_tags(args.cluster_name, False), "Name": f"{args.cluster_name}-private-{i}"},
                opts=child,
            )
            nat = nats[i] if args.nat_per_zone else nats[0]
            rt = aws.ec2.RouteTable(
                f"{name}-private-{i}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags={**args.tags, "Name": f"{args.cluster_name}-private-{i}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(f"{name}-private-{i}", subnet_id=priv.id, route_table_id=rt.id, opts=child)
            private.append(priv)
        return private
