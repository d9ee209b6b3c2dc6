"""LiteLLM's Bedrock provider with a Region and an IAM identity (issue 28 item 6): the router calls
`bedrock/<id>` with `aws_region_name`; without an API key the proxy's pods run as a Pod Identity role
that may invoke exactly the named models (a cross-Region profile: the profile and its foundation model
in the geography's Regions); a Bedrock provider without a Region, in an unknown Region, or with an id
that is not Bedrock's is refused at its key."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components import peers
from components.serving import litellm
from components.serving.litellm_iam import INVOKE, bedrock_policy
from stacks import bedrock
from stacks.config.addons import LiteLLM
from stacks.errors import ConfigError
from tests.conftest import rendered_stack, stack_manifests
from tests.iam_eval import allows
from tests.serving_support import SERVING, config_of, serving_sections

HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"
PROFILE = f"us.{HAIKU}"
ACCOUNT = "111122223333"


def _provider(sections: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in sections["addons"]["litellm"]["externalProviders"] if p["name"] == "bedrock")


def _addon(**provider: Any) -> LiteLLM:
    bedrock_provider = {"name": "bedrock", "region": "us-west-2", "models": [HAIKU, PROFILE]}
    bedrock_provider |= {"egressHosts": ["bedrock-runtime.us-west-2.amazonaws.com"], **provider}
    return LiteLLM.model_validate({"enabled": True, "externalProviders": [bedrock_provider]})


def _refused(sections: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        config_of(sections)
    return [str(p) for p in err.value.problems]


def test_the_router_calls_each_bedrock_model_in_its_region_without_a_key():
    config = litellm.router_config(_addon(), [], monitoring=False)
    params = {m["model_name"]: m["litellm_params"] for m in config["model_list"]}
    assert params[HAIKU] == {"model": f"bedrock/{HAIKU}", "aws_region_name": "us-west-2"}
    assert params[PROFILE] == {"model": f"bedrock/{PROFILE}", "aws_region_name": "us-west-2"}
    assert litellm.secret_files(_addon())[1:] == [], "no key file: boto3's default chain (Pod Identity) signs"


def test_a_bedrock_api_key_is_used_only_when_a_secret_holds_one():
    addon = _addon(apiKeySecret="bedrock-api-key")
    params = litellm.router_config(addon, [], monitoring=False)["model_list"][0]["litellm_params"]
    assert params == {
        "model": f"bedrock/{HAIKU}",
        "aws_region_name": "us-west-2",
        "api_key": "os.environ/BEDROCK_API_KEY",
    }
    assert [f.secret for f in litellm.secret_files(addon)] == ["litellm-master-key", "bedrock-api-key"]
    assert not litellm.uses_bedrock(addon), "with a key the proxy needs no IAM role"


def test_the_proxy_role_invokes_exactly_the_named_models_and_profiles():
    doc = bedrock_policy(_addon(), ACCOUNT)
    (statement,) = doc["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == INVOKE
    assert INVOKE == ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
    resources = statement["Resource"]
    assert resources[0] == f"arn:aws:bedrock:us-west-2::foundation-model/{HAIKU}", "a model in the provider's Region"
    assert f"arn:aws:bedrock:us-west-2:{ACCOUNT}:inference-profile/{PROFILE}" in resources, (
        "the profile, in the Region the call is made in, with the account"
    )
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        arn = f"arn:aws:bedrock:{region}::foundation-model/{HAIKU}"
        assert arn in resources, f"the profile may route to {region}: its foundation model there"
    assert not any(r.startswith("arn:aws:bedrock:eu-") for r in resources), "no Region outside the geography"
    assert not any("*" in r for r in resources), "no wildcard model or Region"
    assert allows(doc, "bedrock:InvokeModel", f"arn:aws:bedrock:us-east-1::foundation-model/{HAIKU}")
    assert not allows(doc, "bedrock:InvokeModel", "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-v2:1")
    assert not allows(doc, "bedrock:CreateModelCustomizationJob", resources[0])


def test_the_geographies_resolve_to_their_regions():
    assert bedrock.geography(PROFILE) == "us" and bedrock.geography(HAIKU) is None
    assert bedrock.foundation_model(f"eu.{HAIKU}") == HAIKU
    assert all(r.startswith("eu-") for r in bedrock.geography_regions("eu"))
    assert bedrock.geography_regions("jp") == ("ap-northeast-1", "ap-northeast-3")


def test_the_rendered_proxy_runs_as_the_role_through_pod_identity_and_reaches_the_agent():
    rec = rendered_stack(SERVING).mocks
    (association,) = [
        r
        for r in rec.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.inputs.get("namespace") == "litellm"
    ]
    assert association.inputs["serviceAccount"] == litellm.NAME, "the proxy Deployment's serviceAccountName"
    (policy,) = [r for r in rec.of_type("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-litellm-bedrock")]
    resources = json.loads(policy.inputs["policy"])["Statement"][0]["Resource"]
    assert any(r.endswith(f"inference-profile/{PROFILE}") for r in resources)
    objects = {f"{o['kind']}/{o['metadata'].get('name')}": o for o in stack_manifests(SERVING)}
    pod = objects["Deployment/litellm"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == litellm.NAME
    egress = objects["NetworkPolicy/litellm-egress"]["spec"]["egress"]
    assert peers.POD_IDENTITY_AGENT in egress, "the SDK fetches the role's credentials from the agent"
    router = yaml.safe_load(objects["ConfigMap/litellm-config"]["data"]["config.yaml"])
    names = {m["model_name"]: m["litellm_params"] for m in router["model_list"]}
    assert names[PROFILE]["aws_region_name"] == "us-west-2"


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"region": None}, "region", ["needs the Region", "aws_region_name"]),
        ({"region": "us-middle-1"}, "region", ["not an AWS Region"]),
        ({"models": ["claude-3-5-haiku"]}, "models[0]", ["not a Bedrock model id", "<provider>.<model>"]),
        ({"models": ["Anthropic.Claude"]}, "models[0]", ["not a Bedrock model id"]),
        ({"models": [f"eu.{HAIKU}"]}, "models[0]", ["eu. inference profile", "us-west-2"]),
        ({"models": [f"global.{HAIKU}"]}, "models[0]", ["global inference profile"]),
    ],
)
def test_a_bedrock_provider_that_cannot_be_called_is_refused_at_its_key(change, key, words):
    sections = serving_sections()
    provider = _provider(sections)
    provider.update(change)
    if provider["region"] is None:
        del provider["region"]
    sections["addons"]["litellm"]["fallbacks"].pop("qwen3-4b-ray")
    found = _refused(sections)
    where = f"inference-platform:addons.litellm.externalProviders[1].{key}: "
    assert any(p.startswith(where) and all(w in p for w in words) for p in found), found


def test_a_key_based_provider_needs_its_key_and_takes_no_region():
    sections = serving_sections()
    openai = sections["addons"]["litellm"]["externalProviders"][0]
    del openai["apiKeySecret"]
    openai["region"] = "us-east-1"
    found = _refused(sections)
    assert any(p.startswith("inference-platform:addons.litellm.externalProviders[0].apiKeySecret: ") for p in found)
    assert any(p.startswith("inference-platform:addons.litellm.externalProviders[0].region: ") for p in found)
