"""Issue 13, item 1's quantities: one parser (stacks/quantity.py) with Kubernetes quantity semantics
for every cpu, memory and storage figure, so a quantity the stack file gives is refused cleanly or
read exactly as Kubernetes reads it, never a traceback."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from stacks import quantity
from stacks.fit import container_resources
from stacks.pipeline import check_sections
from stacks.sizing import replica_requests
from tests.conftest import DEV, EXAMPLES, sections_of
from tests.guard_support import cli, problems_of, refused

P = "inference-platform:"
TEAM = next(p for p in EXAMPLES if p.name == "Pulumi.team-search.yaml")
PLATFORM = next(p for p in EXAMPLES if p.name == "Pulumi.platform.yaml")
CAPACITY = next(p for p in EXAMPLES if p.name == "Pulumi.capacity.yaml")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", 2),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("1.", 1),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1E", 10**18),
        ("1k", 1000),
        ("1Ki", 1024),
        ("1.5Gi", 3 * 2**29),
        ("100n", Fraction(1, 10**7)),
        ("5u", Fraction(5, 10**6)),
        ("+1", 1),
        ("1e-3", Fraction(1, 1000)),
    ],
)
def test_the_parser_reads_every_kubernetes_quantity_form_exactly(text, value):
    assert quantity.parse(text) == value


@pytest.mark.parametrize(
    "text", ["", "1.5.2", "1Kb", "1 Gi", "Gi", "1e", "1e1.5", "0x10", "1ki", "1e99", "9Ei", "\u0661"]
)
def test_strings_that_are_not_kubernetes_quantities_are_refused_with_a_reason(text):
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


def test_the_issues_1_5m_cpu_is_refused_naming_the_millicores_to_write_not_a_traceback():
    s = sections_of(DEV)
    s["models"][0]["resources"] = {"cpu": "1.5m"}
    refused(s, "models[0].resources.cpu", "1.5 millicores", "finer than 1m", "write 2m")


def test_the_cli_refuses_1_5m_cpu_cleanly(tmp_path: Path):
    """`stacks validate` in this process (the interpreter entry point itself is tests/test_guard_properties.py's)."""
    doc = yaml.safe_load(DEV.read_text())
    doc["config"]["inference-platform:models"][0]["resources"] = {"cpu": "1.5m"}
    path = tmp_path / "Pulumi.q.yaml"
    path.write_text(yaml.safe_dump(doc))
    ran = cli("validate", str(path))
    assert ran.returncode == 1 and "Traceback" not in ran.stderr + ran.stdout
    assert "models[0].resources.cpu" in ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("cpu", "memory", "cpu_m", "memory_mib"),
    [
        ("1.5", "1.5Gi", 1500, 1536),
        ("2500m", "1073741824", 2500, 1024),
        (4, "8192Mi", 4000, 8192),
        ("1e1", "64Gi", 10000, 65536),
    ],
)
def test_explicit_resources_in_any_kubernetes_form_size_the_replica_exactly(cpu, memory, cpu_m, memory_mib):
    s = sections_of(DEV)
    s["models"][0]["resources"] = {"cpu": cpu, "memory": memory}
    config = check_sections(s, "us-west-2").config
    model = config.models[0]
    pool = config.pool(model.pool)
    assert pool is not None
    requests = replica_requests(model, pool, config.storage)
    assert (requests.cpu_m, requests.memory_mib) == (cpu_m, memory_mib)
    rendered = container_resources(requests)["requests"]
    assert quantity.millicores(rendered["cpu"]) == cpu_m and quantity.mebibytes(rendered["memory"]) == memory_mib


def test_memory_in_milli_units_is_refused_with_the_mebibyte_hint():
    s = sections_of(DEV)
    s["models"][0]["resources"] = {"memory": "500m"}
    refused(s, "models[0].resources.memory", "not a whole number of bytes", "500Mi")


def test_memory_that_is_not_a_whole_mebibyte_is_refused_naming_the_nearest():
    s = sections_of(DEV)
    s["models"][0]["resources"] = {"memory": "1G"}
    refused(s, "models[0].resources.memory", "write 954Mi")


@pytest.mark.parametrize(
    ("value", "word"), [("-2", "negative"), ("0", "no CPU at all"), ("1e99", "exponent"), ("x" * 5000, "at most 64")]
)
def test_a_replica_cpu_that_cannot_be_a_request_is_refused(value, word):
    s = sections_of(DEV)
    s["models"][0]["resources"] = {"cpu": value}
    refused(s, "models[0].resources.cpu", word)


def test_team_quota_and_container_defaults_go_through_the_same_parser():
    s = sections_of(PLATFORM)
    quota = s["teams"][0]["quota"]
    quota["cpu"] = "0.0005"
    quota["memory"] = "384G"
    quota["containerDefaults"] = {"cpu": "250m", "memory": "0.5Gi"}
    refused(s, "teams[0].quota.cpu", "write 1m")
    refused(s, "teams[0].quota.memory", "Mi")
    assert not any("containerDefaults" in p for p in problems_of(s)), "0.5Gi is 512Mi"


def test_pool_limits_take_kubernetes_quantities_and_render_a_given_memory_limit_exactly():
    from stacks.fit import pool_limits

    s = sections_of(CAPACITY)
    i = next(i for i, p in enumerate(s["nodePools"]) if (p.get("limits") or {}).get("memory"))
    s["nodePools"][i]["limits"] = {"cpu": "2.56e2", "memory": "1.5Ti"}
    config = check_sections(s, "us-west-2").config
    limits = pool_limits(config.node_pools[i])
    assert limits.cpu_m == 256_000 and limits.manifest("none")["memory"] == "1536Gi"
    s["nodePools"][i]["limits"] = {"cpu": "256", "memory": "1048577Mi"}
    config = check_sections(s, "us-west-2").config
    assert pool_limits(config.node_pools[i]).manifest("none")["memory"] == "1048577Mi", "never rounded up to Gi"
    s["nodePools"][i]["limits"] = {"cpu": "256", "memory": "1500m"}
    refused(s, f"nodePools[{i}].limits.memory", "not a whole number of bytes")


def test_the_policy_pack_reads_rendered_quantities_as_kubernetes_does():
    from policypack.validators import container_requests

    got = container_requests({"resources": {"requests": {"cpu": "1500u", "memory": "1G", "ephemeral-storage": "10Gi"}}})
    assert (got.cpu_m, got.memory_mib, got.ephemeral_mib) == (2, 954, 10240), "rounded up, as MilliValue/Value do"
    assert container_requests({"resources": {"requests": {"cpu": "not-a-quantity"}}}).cpu_m == 0
