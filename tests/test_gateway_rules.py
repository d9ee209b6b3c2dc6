"""Front-door refusals: each bad stack file is stopped before any resource, naming the key and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.pipeline import check_sections, stack_warnings
from tests.builders import sourced


def problems(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    return [str(p) for p in info.value.problems]


def ollama(**extra: Any) -> dict[str, Any]:
    return {"name": "local-llama", "engine": "ollama", "model": "llama3.1:8b", "pool": "gpu", **extra}


def test_auth_none_needs_an_explicit_acceptance(dev):
    dev["gateway"]["auth"] = "none"
    assert any(p.startswith("inference-platform:gateway") and "allowUnauthenticated" in p for p in problems(dev))


def test_auth_none_is_refused_in_prod_even_when_accepted(dev):
    dev["stack"]["environment"] = "prod"
    dev["gateway"] |= {"auth": "none", "allowUnauthenticated": True}
    found = problems(dev)
    assert any(
        p.startswith("inference-platform:gateway.auth: auth: none is refused in environment: prod") for p in found
    ), found


def test_ollama_cannot_be_exposed_without_gateway_authentication(dev):
    dev["gateway"] |= {"auth": "none", "allowUnauthenticated": True}
    dev["models"].append(ollama())
    found = problems(dev)
    assert any(
        p.startswith("inference-platform:models[2].expose: engine ollama has no authentication") for p in found
    ), found


def test_an_internal_ollama_is_fine_without_gateway_authentication(dev):
    dev["gateway"] |= {"auth": "none", "allowUnauthenticated": True}
    dev["models"].append(ollama(expose=False))
    check_sections(dev, "us-west-2")


def test_an_exposed_model_without_any_gateway_is_refused(dev):
    dev["gateway"]["enabled"] = False
    found = problems(dev)
    assert "inference-platform:models[0].expose" in " ".join(found) and "gateway.enabled: true" in " ".join(found)


def test_jwt_needs_its_issuer_and_jwks(dev):
    dev["gateway"]["auth"] = "jwt"
    assert any("jwt: {issuer, jwksUri}" in p for p in problems(dev))


def test_aibrix_gateway_cannot_use_a_certificate_secret(dev):
    dev["addons"]["aibrix"] = {"enabled": True}
    dev["gateway"]["tls"] = {"secretName": "inference-tls"}
    assert any(p.startswith("inference-platform:gateway.tls.secretName") for p in problems(dev))


def test_a_gateway_on_a_disabled_envoy_gateway_is_refused(dev):
    dev["addons"]["envoyGateway"] = {"enabled": False}
    assert any(p.startswith("inference-platform:addons.envoyGateway.enabled") for p in problems(dev))


def test_prod_must_name_its_tls_while_dev_is_warned(dev):
    del dev["gateway"]["tls"]
    dev = sourced(dev)  # the default certificate Secret, inference-tls, from Pulumi secrets
    config = check_sections(dev, "us-west-2")
    assert any(w.path == "inference-platform:gateway.tls" for w in stack_warnings(config)), "dev warns"
    dev["stack"]["environment"] = "prod"
    assert any(p.startswith("inference-platform:gateway.tls: no TLS configured") for p in problems(dev))


def test_an_api_key_header_must_be_a_header_name(dev):
    dev["gateway"]["apiKeyHeader"] = "x api key"
    assert any(p.startswith("inference-platform:gateway.apiKeyHeader") for p in problems(dev))


# ---- secret headers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["authorization", "x-api-key", "cookie"])
def test_a_rate_limit_keyed_on_the_credential_header_is_refused_naming_clientheader(header):
    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections

    sections = {
        "cluster": {"name": "x"},
        "gateway": {
            "auth": "none",
            "allowUnauthenticated": True,
            "rateLimit": {"requestsPerMinute": 60, "clientHeader": header},
        },
    }
    with pytest.raises(ConfigError) as exc:
        check_sections(sections, "us-west-2")
    text = "\n".join(map(str, exc.value.problems))
    assert "inference-platform:gateway.rateLimit.clientHeader:" in text and "by its secret" in text, text


@pytest.mark.parametrize("header", ["Connection", "Host", "x-envoy-original-path"])
def test_an_api_key_header_envoy_strips_or_sets_is_refused_naming_apikeyheader(header):
    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections

    sections = {
        "cluster": {"name": "x"},
        "gateway": {"auth": "none", "allowUnauthenticated": True, "apiKeyHeader": header},
    }
    with pytest.raises(ConfigError) as exc:
        check_sections(sections, "us-west-2")
    text = "\n".join(map(str, exc.value.problems))
    assert "inference-platform:gateway.apiKeyHeader:" in text and "Envoy removes or sets itself" in text, text
