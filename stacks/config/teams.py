"""The `teams` section: the app teams a platform (or all-in-one) stack declares, each with its
namespaces, the IAM principals that deploy for it, its quota, the Secret its clients' keys live in and
what of the platform's it may call.

Tenancy is the platform's to declare: a team's workloads stack names its team (`stack.team`) and reads
this declaration from the platform's exports; it cannot widen it.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, StringConstraints, model_validator

from .addons import ServedModelName
from .base import DnsLabel, IamArn, SecretName, Strict
from .stack import Quota

# The platform team's own clients: a consumer name meaning "the platform's clients" (its key Secret
# is `gateway.apiKeysSecret`; with JWT, this value of the team claim). No team may take it.
PLATFORM_CLIENTS = "platform"


# LiteLLM 1.100.1's durations (litellm_core_utils/duration_parser.py duration_in_seconds): a whole number
# and a unit: seconds, minutes, hours, days, weeks or months.
BudgetDuration = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,5}(s|m|h|d|w|mo)$")]


class TeamLiteLLM(Strict):
    """What a team may call through the LiteLLM proxy with its own virtual key."""

    models: list[ServedModelName] = Field(
        min_length=1,
        description="LiteLLM model names the team's virtual key may call: models of `addons.litellm."
        "externalProviders` or the platform's exposed models. The team's clients reach the proxy's route "
        "with their gateway key, and the proxy with the team's virtual key, scoped to these models, which the "
        "platform keeps in the Secret `litellm-key` (entry `api-key`) in the team's home namespace (needs "
        "`addons.litellm.databaseUrlSecret`).",
    )
    max_budget: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="The most the team's virtual key may spend (LiteLLM's `max_budget`, in the proxy's cost units, "
        "USD); the proxy refuses its requests beyond it until the budget resets. Unset: no budget.",
    )
    budget_duration: BudgetDuration | None = Field(
        default=None,
        description="How often the spend resets (LiteLLM's `budget_duration`: a number and s, m, h, d, w or mo, "
        "e.g. `30d`, `1mo`); needs `maxBudget`. Unset: never.",
    )
    # LiteLLM's /key/generate and /key/update take both as whole numbers (litellm/proxy/_types.py
    # GenerateRequestBase tpm_limit / rpm_limit); the proxy answers 429 to a key over either.
    tpm_limit: int | None = Field(
        default=None,
        gt=0,
        description="The most tokens a minute the team's virtual key may use (LiteLLM's `tpm_limit`, prompt and "
        "completion tokens); the proxy answers 429 to requests beyond it. Unset: no limit.",
    )
    rpm_limit: int | None = Field(
        default=None,
        gt=0,
        description="The most requests a minute the team's virtual key may make (LiteLLM's `rpm_limit`); the proxy "
        "answers 429 to requests beyond it. Unset: no limit.",
    )

    @model_validator(mode="after")
    def _duration_needs_a_budget(self) -> Self:
        if self.budget_duration is not None and self.max_budget is None:
            raise ValueError("budgetDuration resets a budget: set maxBudget too, or remove budgetDuration")
        return self


class TeamSection(Strict):
    """One app team of the platform: where it deploys, who deploys for it, its share of the platform and
    the Secret its clients' gateway keys live in."""

    name: DnsLabel = Field(
        description="The team: its workloads stack names it in `stack.team`; its first namespace defaults to it."
    )
    namespaces: list[DnsLabel] = Field(
        default_factory=list,
        max_length=16,
        description="Namespaces the platform creates for the team, the only ones its deploy identity may write; "
        "the first is its home (its keys Secret lives there). Empty: one namespace named after the team.",
    )
    deployers: list[IamArn] = Field(
        min_length=1,
        description="IAM role or user ARNs that may assume the team's deploy role, the one identity its "
        "workloads stack deploys as (EKS access scoped to the team's namespaces, nothing cluster-wide).",
    )
    quota: Quota = Field(
        description="The team's share of the platform: a ResourceQuota and LimitRange the platform puts on each "
        "of its namespaces (the team's identity can read them, not change them)."
    )
    api_keys_secret: SecretName = Field(
        default="inference-api-keys",
        description="Existing Opaque Secret in the team's home namespace with one entry per client of the team "
        "(key: client name, value: its API key), with `gateway.auth: apiKey`; created and rotated by the team. "
        "A route admits the keys of its model's team and of the teams the model names as consumers.",
    )
    litellm: TeamLiteLLM | None = Field(
        default=None,
        description="Access to the LiteLLM proxy (`addons.litellm`) with a virtual key of the team's own, scoped "
        "to these models; unset: the team's clients cannot call the proxy.",
    )

    @model_validator(mode="after")
    def _not_the_platform(self) -> Self:
        if self.name == PLATFORM_CLIENTS:
            raise ValueError(
                f"{PLATFORM_CLIENTS!r} names the platform team's own clients (gateway.apiKeysSecret); "
                f"choose another team name"
            )
        if len(set(self.namespaces)) != len(self.namespaces):
            raise ValueError("namespaces lists a namespace twice; list each once")
        return self

    @property
    def home(self) -> str:
        """The team's first namespace: its keys Secret and LiteLLM key live there."""
        return self.namespaces[0] if self.namespaces else self.name

    @property
    def all_namespaces(self) -> tuple[str, ...]:
        return tuple(self.namespaces) or (self.name,)
