"""Amazon Bedrock as a LiteLLM provider (`addons.litellm.externalProviders[]` named `bedrock`): the
shape of a Bedrock model id, the cross-Region inference profiles, and the ARNs a caller must be allowed
to invoke for each id. One place, read by the stack file's validation and by the proxy's IAM policy.

- A model id is `<provider>.<model>[:<version>...]` (`anthropic.claude-3-5-haiku-20241022-v1:0`,
  `meta.llama3-1-70b-instruct-v1:0`, `amazon.nova-pro-v1:0`); a cross-Region inference profile id puts
  a geography before it (`us.`, `eu.`, `apac.`, `jp.`, `au.`, `ca.`). LiteLLM calls both as
  `bedrock/<id>` with `aws_region_name` in its `litellm_params`.
- InvokeModel (Converse) and InvokeModelWithResponseStream (ConverseStream) on a foundation model are
  authorized on `arn:<partition>:bedrock:<region>::foundation-model/<id>` (no account). Through an
  inference profile, IAM checks the profile, `arn:<partition>:bedrock:<region>:<account>:inference-profile/<id>`
  in the Region the call is made in, and the foundation model in every Region the profile may route the
  request to (the Bedrock user guide, "Prerequisites for inference profiles"). Those Regions are the
  geography's, taken here from the Region table (stacks/data/regions.json): a profile routes to a subset,
  so the grant may name a Region the profile never uses, for the same model only.
- `global.` profiles (any commercial Region) are refused: their foundation-model grant is not one this
  program has verified.
"""

from __future__ import annotations

import re

from .regions import regions

PROVIDER = "bedrock"

# Regions of each geography's inference profiles, by Region-code prefix or by name.
GEOGRAPHIES: dict[str, tuple[str, ...]] = {
    "us": ("us-",),
    "eu": ("eu-",),
    "apac": ("ap-",),
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "au": ("ap-southeast-2", "ap-southeast-4"),
    "ca": ("ca-",),
}
_ID = re.compile(
    r"^(?:(?P<geo>[a-z]+)\.)?(?P<provider>[a-z][a-z0-9-]*)\.(?P<model>[a-z0-9][a-z0-9._-]*)(?P<version>(:[a-z0-9]+)*)$"
)
EXAMPLE = "anthropic.claude-3-5-haiku-20241022-v1:0, or us.anthropic.claude-3-5-haiku-20241022-v1:0 for a profile"


def _parts(model_id: str) -> tuple[str | None, str] | None:
    """(geography, foundation model id) of a Bedrock id, or None when it has not the shape. A first
    segment that is a geography makes the id an inference profile's."""
    found = _ID.match(model_id)
    if found is None:
        return None
    geo = found["geo"]
    if geo is not None and geo not in GEOGRAPHIES and geo != "global":
        # `provider.model.more` read as geo.provider.model: not a geography, so the id is a model's.
        return None, model_id
    return geo, model_id if geo is None else model_id[len(geo) + 1 :]


def model_id_problem(model_id: str) -> str | None:
    parts = _parts(model_id)
    if parts is None:
        return (
            f"{model_id!r} is not a Bedrock model id: <provider>.<model>[:<version>] in lower case, e.g. {EXAMPLE} "
            f"(the Bedrock console's model catalog lists them)"
        )
    if parts[0] == "global":
        return (
            f"{model_id!r} is a global inference profile, whose foundation-model grant this program has not "
            f"verified; use the geographic profile (us., eu., apac., ...) or the model id in one Region"
        )
    return None


def geography(model_id: str) -> str | None:
    """The inference profile's geography (`us`, `eu`, ...), or None for a foundation model's id."""
    parts = _parts(model_id)
    return parts[0] if parts is not None else None


def foundation_model(model_id: str) -> str:
    """The foundation model an id invokes (the id without a profile's geography)."""
    parts = _parts(model_id)
    return parts[1] if parts is not None else model_id


def geography_regions(geo: str) -> tuple[str, ...]:
    """The commercial Regions of a geography, in the Region table's order."""
    wanted = GEOGRAPHIES[geo]
    return tuple(
        code for code in regions() if any(code == w or (w.endswith("-") and code.startswith(w)) for w in wanted)
    )


def region_problem(model_id: str, region: str) -> str | None:
    """Why a profile cannot be called from `region`: its source Regions are its geography's."""
    geo = geography(model_id)
    if geo is None or geo not in GEOGRAPHIES or region in geography_regions(geo):
        return None
    return f"{model_id!r} is a {geo}. inference profile, called only from a Region of that geography, not {region}"


def invoke_resources(model_id: str, region: str, account: str, partition: str = "aws") -> list[str]:
    """The ARNs an InvokeModel of `model_id` from `region` is authorized on (module docstring)."""
    base = foundation_model(model_id)
    geo = geography(model_id)
    if geo is None:
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{base}"]
    profile = f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}"
    return [profile, *(f"arn:{partition}:bedrock:{r}::foundation-model/{base}" for r in geography_regions(geo))]
