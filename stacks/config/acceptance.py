"""`models[].acceptance`: a post-deploy acceptance check of an exposed model through the front door.

After `pulumi up`, one Job per model with `acceptance` calls the model's gateway route the way a
client does and writes a verdict (components/acceptance.py, components/acceptance_check.py): the
refusals (no key, a key this route does not admit), a chat completion's shape, streaming, structured
output where the engine supports it, and that Prometheus scrapes the model.

On by default for every exposed model (unset means `{}`; `false` or `{enabled: false}` opts out): a call
through the authenticated route needs a key the route admits, and with `gateway.auth: apiKey` the
platform mints one per model (stacks/resolve/acceptance.py) unless the stack gives its own
(`apiKeySecret`, else the benchmark's). With `gateway.auth: jwt` the platform cannot mint a token: no Job
unless the stack gives one, and a warning says so.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from .base import SecretName, Strict
from .benchmark import Benchmark


class Acceptance(Strict):
    """What a model's acceptance Job needs: its key (or the benchmark's) and whether it gates `pulumi up`."""

    enabled: bool = Field(
        default=True,
        description="`false`: no acceptance Job for this model (as `acceptance: false`). Every exposed model gets one "
        "by default.",
    )

    gate: bool = Field(
        default=False,
        description="`true`: `pulumi up` waits for the acceptance Job and fails when a check fails; `false`: the "
        "Job runs without blocking the update and its verdict goes to the bucket (and the failed-Job alert).",
    )
    api_key_secret: SecretName | None = Field(
        default=None,
        description="Existing Secret in the model's namespace whose entry `api-key` is the acceptance check's own "
        "key (with `auth: jwt`, a token of one of the model's callers): the model's route admits it and no other "
        "route does. Unset: the model's `benchmark.apiKeySecret`, else (with `auth: apiKey`) a key the platform "
        "generates for this model, kept in the Secret `<model>-acceptance-key`; with `auth: jwt` one of the two is "
        "needed (the platform cannot mint a token).",
    )
    structured_output: bool = Field(
        default=True,
        description="Check that a request asking for JSON (the engine's own form: `response_format` json_schema "
        "for vLLM, SGLang and Ollama, TGI's `json` grammar) returns valid JSON. Engines the platform has not "
        "established support for at their pinned version (NIM, neuron-vllm, Dynamo, Ray Serve) are reported as "
        "skipped, never failed. `false`: skip it for every engine (a model without a JSON-capable decoder).",
    )

    def key_secret(self, benchmark: Benchmark | None) -> str | None:
        """The Secret whose `api-key` the check calls with: its own, else the model's benchmark's; None
        with neither (refused by stacks/rules/acceptance.py)."""
        if self.api_key_secret is not None:
            return self.api_key_secret
        return benchmark.api_key_secret if benchmark is not None else None


def _from_bool(value: Any) -> Any:
    """`acceptance: true` is `{}`, `acceptance: false` is `{enabled: false}`."""
    if isinstance(value, bool):
        return {"enabled": value}
    return value


# What `models[].acceptance` takes: the settings, or a bool (true: the defaults; false: opt out).
AcceptanceField = Annotated[
    Acceptance | None, BeforeValidator(_from_bool, json_schema_input_type=Acceptance | bool | None)
]
