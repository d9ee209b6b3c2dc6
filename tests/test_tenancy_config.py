"""Teams as the platform declares them, and a team's stack within its declaration: every refusal names
its key before anything is registered, and the resolved models carry who may call them.

- the platform: each team once, a namespace of one team only and of none the platform or Kubernetes
  owns, no team named `platform`; a platform model neither in a team's namespace nor named like one;
  a team's LiteLLM access only to models the proxy serves;
- a team's stack: a team its platform declares, no quota of its own, only the team's namespaces, and
  consumers that are declared teams;
- resolution: a team's model is routed at `/<namespace>/<name>`, a platform model at `/<name>`; the
  route admits the owner's key Secret, its consumers' and its benchmark's, nobody else's.
"""

from __future__ import annotations

from typing import Any

import pytest

from stacks.config.teams import PLATFORM_CLIENTS
from stacks.resolved import ACCEPTANCE_CALLER, BENCHMARK_CALLER, GATEWAY_NAMESPACE, KeySecret
from tests.builders import resolved_stack, sourced
from tests.conftest import EXAMPLES_DIR, sections_of
from tests.guard_support import has, problems

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
SEARCH = EXAMPLES_DIR / "Pulumi.team-search.yaml"
CHAT = EXAMPLES_DIR / "Pulumi.team-chat.yaml"


@pytest.fixture
def platform() -> dict[str, Any]:
    return sections_of(PLATFORM)


@pytest.fixture
def search() -> dict[str, Any]:
    return sections_of(SEARCH)


# ---- the platform's declaration -----------------------------------------------------------------------


def test_a_team_declared_twice_is_refused_at_the_second(platform):
    platform["teams"].append({**platform["teams"][0], "namespaces": ["search-2"]})
    assert has(problems(platform), "teams[2].name", "already listed at"), problems(platform)


def test_a_namespace_of_two_teams_is_refused(platform):
    platform["teams"][1]["namespaces"] = ["chat", "search"]
    assert has(problems(platform), "teams[1].namespaces[1]", "already team search's namespace")


@pytest.mark.parametrize(("namespace", "why"), [("kube-system", "Kubernetes system"), ("keda", "platform's")])
def test_a_team_namespace_the_platform_or_kubernetes_owns_is_refused(platform, namespace, why):
    platform["teams"][1]["namespaces"] = [namespace]
    assert has(problems(platform), "teams[1].namespaces[0]", why), problems(platform)


def test_a_team_named_for_the_platforms_own_clients_is_refused(platform):
    platform["teams"][0]["name"] = PLATFORM_CLIENTS
    assert has(problems(platform), "teams[0]", "platform team's own clients"), problems(platform)


def test_a_team_needs_someone_to_deploy_for_it(platform):
    platform["teams"][0]["deployers"] = []
    assert has(problems(platform), "teams[0].deployers"), problems(platform)


def test_a_workloads_stack_may_not_declare_teams(search):
    search["teams"] = sections_of(PLATFORM)["teams"]
    assert has(problems(search), "teams", "cannot change platform resources"), problems(search)


def _all_in_one() -> dict[str, Any]:
    dev = sections_of(EXAMPLES_DIR.parent.parent / "Pulumi.dev.yaml")
    dev["teams"] = [
        {
            "name": "search",
            "deployers": ["arn:aws:iam::111122223333:role/search-deployers"],
            "quota": {"gpus": 2, "cpu": "32", "memory": "128Gi"},
        }
    ]
    return dev


def test_a_platform_model_in_a_teams_namespace_is_refused():
    dev = _all_in_one()
    dev["models"][0]["namespace"] = "search"
    assert has(problems(dev), "models[0].namespace", "team search's namespace"), problems(dev)


def test_a_platform_model_named_like_a_team_namespace_is_refused():
    dev = _all_in_one()
    dev["models"][0]["name"] = "search"
    assert has(problems(dev), "models[0].name", "/search/<model>/v1"), problems(dev)


def test_litellm_access_needs_the_proxy_and_a_model_it_serves():
    dev = _all_in_one()
    dev["teams"][0]["litellm"] = {"models": ["gpt-4o-mini"]}
    assert has(problems(dev), "teams[0].litellm", "LiteLLM proxy is off")
    dev["addons"]["litellm"] = {"enabled": True}
    assert has(problems(dev), "teams[0].litellm.models[0]", "no model the proxy serves")
    dev["teams"][0]["litellm"] = {"models": [dev["models"][0]["name"]]}
    assert not any("litellm.models" in p for p in problems_or_none(dev)), "an exposed platform model is one"


def problems_or_none(sections: dict[str, Any]) -> list[str]:
    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections

    try:
        check_sections(sections, "us-west-2")
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


# ---- a team's stack -----------------------------------------------------------------------------------


def test_a_team_the_platform_does_not_declare_is_refused_naming_the_declared_ones(search):
    search["stack"]["team"] = "ads"
    assert has(problems(search), "stack.team", "ads is not a team", "search, chat"), problems(search)


def test_a_team_stack_may_not_set_its_own_quota(search):
    search["stack"]["quota"] = {"gpus": 64, "cpu": "512", "memory": "4Ti"}
    assert has(problems(search), "stack.quota", "teams[].quota"), problems(search)


def test_a_model_in_another_teams_namespace_is_refused(search):
    search["models"][0]["namespace"] = "chat"
    assert has(problems(search), "models[0].namespace", "not a namespace of team search"), problems(search)


def test_a_model_in_any_of_the_teams_namespaces_is_accepted():
    chat = sections_of(CHAT)
    assert {m.namespace for m in resolved_stack(chat).models} == {"chat", "chat-staging"}


def test_a_consumer_that_is_no_team_is_refused(search):
    search["models"][0]["consumers"] = ["chat", "ads"]
    assert has(problems(search), "models[0].consumers[1]", "ads is no team", "search, chat"), problems(search)


def test_a_consumer_listed_twice_is_refused(search):
    search["models"][0]["consumers"] = ["chat", "chat"]
    assert has(problems(search), "models[0].consumers[1]", "already listed"), problems(search)


def test_a_model_name_used_twice_in_a_stack_is_refused(search):
    search["models"][1]["name"] = search["models"][0]["name"]
    assert has(problems(search), "models[1].name", "already listed"), problems(search)


# ---- what resolution makes of it ------------------------------------------------------------------------


def test_a_teams_model_is_routed_under_its_namespace_and_a_platform_model_under_its_name(search):
    team_model = resolved_stack(search).models[0]
    assert (team_model.owner, team_model.path_prefix) == ("search", "/search/qwen3-8b")
    chat_model = resolved_stack(sections_of(CHAT)).models[0]
    assert chat_model.path_prefix == "/chat/qwen3-8b", "one name in two teams: two paths"
    dev_model = resolved_stack(sections_of(EXAMPLES_DIR.parent.parent / "Pulumi.dev.yaml")).models[0]
    assert (dev_model.owner, dev_model.path_prefix) == (PLATFORM_CLIENTS, f"/{dev_model.name}")


def test_a_route_admits_its_teams_keys_its_consumers_and_its_benchmarks_and_no_others(search):
    search["models"][0]["benchmark"] = {"apiKeySecret": "qwen-bench-key", "concurrency": [1]}
    stack = resolved_stack(sourced(search))
    model = stack.models[0]
    assert model.callers == ("search", "chat")
    assert model.key_secrets == (
        KeySecret("search", "search", "inference-api-keys"),
        KeySecret("chat", "chat", "inference-api-keys"),
        KeySecret(BENCHMARK_CALLER, "search", "qwen-bench-key"),
    )
    other = stack.models[1]
    assert other.key_secrets == (
        KeySecret("search", "search", "inference-api-keys"),
        KeySecret(ACCEPTANCE_CALLER, "search", f"{other.name}-acceptance-key"),
    ), "no consumers: its team's, and its own acceptance check's minted key"


def test_a_platform_model_admits_the_platform_clients_and_its_consumers():
    dev = _all_in_one()
    dev["models"][0]["consumers"] = ["search"]
    model = resolved_stack(dev).models[0]
    assert model.key_secrets == (
        KeySecret(PLATFORM_CLIENTS, GATEWAY_NAMESPACE, "inference-api-keys"),
        KeySecret("search", "search", "inference-api-keys"),
        KeySecret(ACCEPTANCE_CALLER, model.namespace, f"{model.name}-acceptance-key"),
    )
