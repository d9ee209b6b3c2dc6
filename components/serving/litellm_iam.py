"""The LiteLLM proxy's IAM policy, as a pure function: invoke, and only invoke, the Bedrock models its
stack file names (`addons.litellm.externalProviders[]` named `bedrock`), in the Region it calls each
from. The role is assumed through EKS Pod Identity by the proxy's ServiceAccount
(components/serving/platforms.py), so a Bedrock fallback needs no access key at all."""

from __future__ import annotations

from typing import Any

from stacks import bedrock
from stacks.config.addons import LiteLLM

# Converse and InvokeModel are authorized as bedrock:InvokeModel, ConverseStream and the streaming
# InvokeModel as bedrock:InvokeModelWithResponseStream (the Bedrock API reference, each operation's
# required permission); LiteLLM's `bedrock/` route calls Converse, or InvokeModel for the `invoke/` one.
INVOKE = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]


def bedrock_resources(addon: LiteLLM, account: str, partition: str = "aws") -> list[str]:
    """Every ARN the proxy may invoke: each named model in its provider's Region (a profile's, with the
    foundation model in each Region of its geography: stacks/bedrock.py), each once, in order."""
    found: list[str] = []
    for provider in addon.external_providers:
        if provider.name != bedrock.PROVIDER or provider.api_key_secret is not None or provider.region is None:
            continue
        for model in provider.models:
            for arn in bedrock.invoke_resources(model, provider.region, account, partition):
                if arn not in found:
                    found.append(arn)
    return found


def bedrock_policy(addon: LiteLLM, account: str, partition: str = "aws") -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "InvokeNamedBedrockModels",
                "Effect": "Allow",
                "Action": list(INVOKE),
                "Resource": bedrock_resources(addon, account, partition),
            }
        ],
    }
