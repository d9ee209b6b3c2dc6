"""Production invariants and the network references the front door needs.

- Every internet-facing listener serves TLS: AIBrix's gateway (one plain-HTTP listener on 80) gets
  TLS only from an ACM certificate on its load balancer (`gateway.tls.certificateArn`), so in prod an
  internet-facing AIBrix gateway without one is refused (dev and staging warn). The platform's own
  gateway is covered by stacks/rules/gateway.py.
- The EKS public endpoint is off or limited to named CIDR blocks in prod: never open to every
  address (no CIDRs, 0.0.0.0/0, ::/0 or blocks that together cover everything); dev and staging warn.
- The JWT issuer and JWKS URIs: `https` in prod (dev and staging warn), never at a link-local address
  (169.254.0.0/16 and fe80::/10, the instance metadata service among them) or loopback, in any
  environment; in prod not at a private address either.
- An internet-facing load balancer on an adopted VPC needs the VPC's public subnets
  (`cluster.vpc.publicSubnetIds`): the AWS Load Balancer Controller places it only on subnets tagged
  for internet-facing load balancers, which the program tags from that list.
- Prod names exact image tags (a tag like `latest` says nothing about what runs; Ollama's pulls are its
  module's rule).
- Prod without `addons.monitoring.alertmanagerConfigSecret` is warned: its alerts reach no one.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..checks import rule, warning
from ..config import StackConfig
from ..errors import Problem, key_path
from ..resolved import ResolvedStack

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# The instance metadata service: its IPv4 (link-local) and IPv6 (Nitro) addresses and the names that
# resolve to it.
METADATA_HOSTS = frozenset({"instance-data", "instance-data.ec2.internal", "metadata.google.internal"})
METADATA_IPV6 = ipaddress.ip_network("fd00:ec2::/64")
MOVING_TAGS = frozenset({"latest", "main", "master", "nightly", "stable", "edge", "dev"})


def _internet_facing_aibrix(config: StackConfig) -> bool:
    return (
        config.stack.role != "workloads"
        and config.addons.aibrix.enabled
        and config.gateway.scheme == "internet-facing"
        and not (config.gateway.tls and config.gateway.tls.certificate_arn)
    )


def _aibrix_without_tls(config: StackConfig) -> Iterable[Problem]:
    if _internet_facing_aibrix(config):
        yield Problem(
            key_path(["gateway", "tls", "certificateArn"] if config.gateway.tls else ["gateway", "tls"]),
            "AIBrix's gateway has one plain-HTTP listener, and gateway.scheme is internet-facing: without an ACM "
            "certificate on its load balancer, API keys and prompts cross the internet in clear text. Set "
            "gateway.tls.certificateArn, or gateway.scheme: internal",
        )


@rule
def prod_aibrix_gateway_serves_tls(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.stack.prod:
        yield from _aibrix_without_tls(config)


@warning
def dev_aibrix_gateway_tls(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if not config.stack.prod:
        yield from _aibrix_without_tls(config)


def _open_endpoint(config: StackConfig) -> Iterable[Problem]:
    cluster = config.cluster
    if cluster is None or not cluster.endpoint.public_access:
        return
    cidrs = cluster.endpoint.public_access_cidrs
    base: list[str | int] = ["cluster", "endpoint", "publicAccessCidrs"]
    fix = "list the office or VPN blocks that may reach it, or set publicAccess: false (private access stays on)"
    if not cidrs:
        yield Problem(key_path(base), f"the public API endpoint is open to every address (no CIDRs); {fix}")
        return
    for k, cidr in enumerate(cidrs):
        if ipaddress.ip_network(cidr).prefixlen == 0:
            yield Problem(key_path([*base, k]), f"{cidr} opens the public API endpoint to every address; {fix}")
            return
    v4 = [n for n in map(ipaddress.ip_network, cidrs) if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in map(ipaddress.ip_network, cidrs) if isinstance(n, ipaddress.IPv6Network)]
    covered = [
        version
        for version, total, count in (
            (4, 2**32, sum(n.num_addresses for n in ipaddress.collapse_addresses(v4))),
            (6, 2**128, sum(n.num_addresses for n in ipaddress.collapse_addresses(v6))),
        )
        if count == total
    ]
    for version in covered:
        yield Problem(key_path(base), f"together these blocks cover every IPv{version} address; {fix}")


@rule
def prod_endpoint_is_cidr_limited(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if config.stack.prod:
        yield from _open_endpoint(config)


@warning
def dev_endpoint_is_open(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if not config.stack.prod:
        yield from _open_endpoint(config)


def host_address(host: str) -> IPAddress | None:
    """The IP address a URL host names, in any spelling a resolver accepts (`2852039166`, `0xA9FEA9FE`,
    `169.254.43518` are 169.254.169.254 to inet_aton)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def url_problems(url: str, prod: bool) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for a URL the gateway trusts or fetches."""
    refuse: list[str] = []
    warn: list[str] = []
    try:
        parts = urlsplit(url)
        # A C resolver stops at a NUL: `169.254.169.254\x00.example.com` is the metadata address.
        host = (parts.hostname or "").split("\x00", 1)[0].rstrip(".").lower()
    except ValueError:
        return [f"{url[:40]!r} is not a URL the gateway can fetch; give the identity provider's https URL"], []
    if parts.scheme != "https":
        (refuse if prod else warn).append(
            f"{parts.scheme or 'no'} scheme: the keys that sign every token would travel unauthenticated; use https"
        )
    address = host_address(host)
    if host in METADATA_HOSTS or (address is not None and (address.is_link_local or address in METADATA_IPV6)):
        refuse.append(
            f"{host} is a link-local address (the instance metadata service lives there): the gateway would fetch "
            f"keys from the node it runs on; use the identity provider's public https URL"
        )
    elif host == "localhost" or host.endswith(".localhost") or (address is not None and address.is_loopback):
        refuse.append(f"{host} is loopback: the gateway would ask itself for the keys; use the identity provider's URL")
    elif address is not None and (address.is_private or address.is_unspecified or address.is_reserved):
        (refuse if prod else warn).append(
            f"{host} is a private or reserved address; in prod the gateway fetches keys only from the identity "
            f"provider's public https URL"
        )
    return refuse, warn


def _jwt(config: StackConfig, refusals: bool) -> Iterable[Problem]:
    jwt = config.gateway.jwt
    if config.stack.role == "workloads" or jwt is None:
        return
    for key, value in (("issuer", jwt.issuer), ("jwksUri", jwt.jwks_uri)):
        refuse, warn = url_problems(str(value), config.stack.prod)
        for message in refuse if refusals else warn:
            yield Problem(key_path(["gateway", "jwt", key]), message)


@rule
def jwt_uris_are_public_https(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    yield from _jwt(config, refusals=True)


@warning
def jwt_uris_outside_prod(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    yield from _jwt(config, refusals=False)


@rule
def internet_facing_needs_public_subnets(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    cluster = config.cluster
    if cluster is None or not cluster.vpc.adopted or cluster.vpc.public_subnet_ids:
        return
    if config.gateway.scheme != "internet-facing" or not (config.gateway.enabled or config.addons.aibrix.enabled):
        return
    which = "AIBrix's gateway" if config.addons.aibrix.enabled else "the gateway"
    yield Problem(
        key_path(["cluster", "vpc", "publicSubnetIds"]),
        f"{which} is internet-facing (gateway.scheme) on an adopted VPC with no public subnets listed, so its "
        f"load balancer has nowhere to go; list the VPC's public subnets in publicSubnetIds, or set "
        f"gateway.scheme: internal",
    )


@rule
def prod_image_tags_name_a_version(stack: ResolvedStack) -> Iterable[Problem]:
    config = stack.config
    if not config.stack.prod:
        return
    for i, model in enumerate(config.models):
        tag = model.image.tag
        if tag is not None and tag.lower() in MOVING_TAGS:
            yield Problem(
                key_path(["models", i, "image", "tag"]),
                f"{tag!r} names no version (it moves as the registry is pushed to); in prod name the version the "
                f"image.digest is of, e.g. v0.29.0",
            )


@warning
def prod_alerts_have_somewhere_to_go(stack: ResolvedStack) -> Iterable[Problem]:
    """The chart's default Alertmanager configuration routes every alert to a receiver that sends
    nothing: in prod the SLO alerts would fire unseen."""
    config = stack.config
    mon = config.addons.monitoring
    if not config.stack.prod or config.stack.role == "workloads" or not mon.enabled or mon.existing_prometheus:
        return
    if mon.alertmanager_config_secret is None:
        yield Problem(
            key_path(["addons", "monitoring", "alertmanagerConfigSecret"]),
            "is unset: Alertmanager routes every alert to a receiver that sends nothing, so no one hears of an SLO "
            "breach; name a Secret in `monitoring` whose key alertmanager.yaml sets receivers and routes",
        )
