"""Each model's acceptance Job, resolved (`models[].acceptance`, components/acceptance.py).

Every exposed model gets one by default: unset means `{}`, `false` or `{enabled: false}` opts out. Its
key is the stack's when it gives one (`acceptance.apiKeySecret`, else the benchmark's); otherwise, with
`gateway.auth: apiKey`, the platform mints one per model (a RandomPassword kept in the Secret
`<model>-acceptance-key` in the model's namespace, which the model's route alone admits). With
`gateway.auth: jwt` (the platform cannot mint a token), or for a team's model whose route lives in the
platform's AIBrix Gateway namespace (where a team's stack keeps no Secret), there is no default Job
without a given key, and stacks/rules/acceptance.py warns (`unminted`); with `auth: none` none either.
Nor is there one where no route or no front door hostname exists to call, or offline for a team whose
platform is unknown.
"""

from __future__ import annotations

from dataclasses import replace

from ..config.acceptance import Acceptance
from ..config.teams import PLATFORM_CLIENTS
from ..resolved import AcceptancePlan, GatewayParent, ModelEntry, PlatformView


def minted_key_secret(model: str) -> str:
    """The Secret (in the model's namespace) holding the key the platform mints for the model's Job."""
    return f"{model}-acceptance-key"


def asked(entry: ModelEntry) -> Acceptance | None:
    """The model's acceptance settings when it gets a Job unless something is missing: the defaults for an
    exposed model that says nothing, None when it opted out or (unset) is not exposed."""
    accept = entry.config.acceptance
    if accept is None:
        return Acceptance() if entry.config.expose else None
    return accept if accept.enabled else None


def unminted(entry: ModelEntry, view: PlatformView, parent: GatewayParent) -> str | None:
    """Why the platform cannot mint the model's acceptance key (a warning's reason); None when it can, or
    when no key is wanted (`auth: none`)."""
    if view.gateway.auth == "jwt":
        return "with gateway.auth: jwt the platform cannot mint the token the check calls with"
    admitted = parent.route_namespace(entry.namespace)
    if view.gateway.auth == "apiKey" and admitted != entry.namespace and entry.owner != PLATFORM_CLIENTS:
        return (
            f"the model's route lives in the platform's Gateway namespace {admitted} (AIBrix's), where a team's "
            "stack keeps no Secret for the route to admit"
        )
    return None


def acceptance_plan(
    entry: ModelEntry, view: PlatformView, parent: GatewayParent, routed: bool
) -> AcceptancePlan | None:
    """The model's acceptance Job: its key Secret and whether the platform mints it; None without one."""
    accept = asked(entry)
    if accept is None or not entry.config.expose or not routed or not view.known or parent.hostname is None:
        return None
    given = accept.key_secret(entry.config.benchmark)
    if given is None and (view.gateway.auth != "apiKey" or unminted(entry, view, parent) is not None):
        return None
    return AcceptancePlan(
        key_secret=given or minted_key_secret(entry.name),
        minted=given is None,
        admitted_namespace=entry.namespace if given else parent.route_namespace(entry.namespace),
        gate=accept.gate,
        structured_output=accept.structured_output,
    )


def with_acceptance(entry: ModelEntry, view: PlatformView, parent: GatewayParent, routed: bool) -> ModelEntry:
    """The entry with its acceptance Job resolved."""
    return replace(entry, acceptance=acceptance_plan(entry, view, parent, routed))
