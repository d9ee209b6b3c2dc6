"""Production invariants (issue 13 item 8) and the front door's subnets on an adopted VPC (item 9)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from stacks.pipeline import check_sections

from .guard_support import has, problems, warnings_of


def prod(dev: dict[str, Any]) -> dict[str, Any]:
    dev["stack"]["environment"] = "prod"
    return dev


def test_prod_aibrix_gateway_without_a_certificate_is_refused(dev):
    dev["addons"]["aibrix"] = {"enabled": True}
    dev["gateway"].pop("tls")
    found = problems(prod(dev))
    assert has(found, "gateway.tls", "AIBrix", "certificateArn"), found


def test_dev_aibrix_gateway_without_a_certificate_warns(dev):
    dev["addons"]["aibrix"] = {"enabled": True}
    dev["gateway"].pop("tls")
    assert has(warnings_of(dev), "gateway.tls", "AIBrix")


def test_prod_public_endpoint_open_to_everyone_is_refused(dev):
    prod(dev)
    dev["cluster"]["endpoint"] = {"publicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    assert has(problems(dev), "cluster.endpoint.publicAccessCidrs[0]", "every address")
    dev["cluster"]["endpoint"] = {"publicAccess": True}
    assert has(problems(dev), "cluster.endpoint.publicAccessCidrs", "every address")
    dev["cluster"]["endpoint"] = {"publicAccess": True, "publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}
    assert has(problems(dev), "cluster.endpoint.publicAccessCidrs", "every IPv4")


def jwt(dev: dict[str, Any], issuer: str, jwks: str) -> dict[str, Any]:
    dev["gateway"] |= {"auth": "jwt", "jwt": {"issuer": issuer, "jwksUri": jwks}}
    return dev


def test_prod_jwt_over_http_is_refused(dev):
    found = problems(prod(jwt(dev, "http://idp.example.com/", "http://idp.example.com/jwks")))
    assert has(found, "gateway.jwt.issuer", "https") and has(found, "gateway.jwt.jwksUri", "https"), found


def test_a_jwks_uri_at_the_metadata_address_is_refused_in_every_environment(dev):
    for host in ("169.254.169.254", "2852039166", "[fd00:ec2::254]", "localhost"):
        found = problems(jwt(copy.deepcopy(dev), "https://idp.example.com/", f"https://{host}/jwks"))
        assert has(found, "gateway.jwt.jwksUri"), (host, found)


def test_prod_jwks_at_a_private_address_is_refused(dev):
    found = problems(prod(jwt(dev, "https://idp.example.com/", "https://10.0.0.5/jwks")))
    assert has(found, "gateway.jwt.jwksUri", "private"), found


def test_every_chart_version_key_is_exact(dev):
    dev["addons"]["monitoring"] |= {"adapterVersion": "latest", "dcgmExporterVersion": ">=4.0"}
    found = problems(dev)
    assert has(found, "addons.monitoring.adapterVersion", "exact"), found
    assert has(found, "addons.monitoring.dcgmExporterVersion", "exact"), found


def test_prod_image_tag_latest_is_refused(dev):
    prod(dev)
    dev["models"][0]["image"] = {"tag": "latest", "digest": "sha256:" + "a" * 64}
    assert has(problems(dev), "models[0].image.tag", "version")


def test_internet_facing_gateway_on_an_adopted_vpc_needs_public_subnets(dev):
    dev["cluster"]["vpc"] = {"id": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}
    assert has(problems(dev), "cluster.vpc.publicSubnetIds", "internet-facing")
    dev["gateway"]["scheme"] = "internal"
    check_sections(dev, "us-west-2")


def test_an_ollama_model_without_a_tag_is_refused_in_prod_and_warned_elsewhere():
    from components.engines import ollama
    from stacks.pipeline import check_sections, stack_warnings
    from tests.conftest import EXAMPLES, sections_of

    engines = sections_of(next(p for p in EXAMPLES if p.name == "Pulumi.engines.yaml"))
    i = next(i for i, m in enumerate(engines["models"]) if m["engine"] == "ollama")
    engines["models"][i]["ollama"] = {"pull": ["qwen3:8b", "qwen3", "llama3.1:latest"]}
    dev = check_sections(engines, "us-west-2")
    warned = [p.path for p in stack_warnings(dev) if ".ollama." in p.path]
    assert warned == [
        f"inference-platform:models[{i}].ollama.pull[1]",
        f"inference-platform:models[{i}].ollama.pull[2]",
    ]
    prod = dataclasses.replace(dev, environment="prod")
    assert prod.prod
    entry = prod.entries[i]
    refused = list(ollama.checks(entry, prod))
    assert [p.path for p in refused] == warned and "in prod name a tag" in refused[0].message
    assert not list(ollama.warnings(entry, prod)), "prod refuses instead of warning"
