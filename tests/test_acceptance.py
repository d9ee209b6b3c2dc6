"""Acceptance checks (`models[].acceptance`): the check script run against a small fake OpenAI server
behind a fake front door, and the Job, its key, its refusals' foreign route, its structured-output form
per engine, its results path, its gate and its way to Prometheus, built from a resolved stack."""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components import acceptance_check
from components.acceptance import (
    KEY_ENV,
    KEY_LENGTH,
    AcceptanceChecksArgs,
    acceptance_egress,
    check_env,
    foreign_route,
    job,
    key_secret,
    structured_form,
)
from components.monitoring.policies import prometheus
from stacks.engine_facts import ACCEPTANCE_SCHEMA, OPENAI_JSON_SCHEMA
from stacks.resolved import ACCEPTANCE_CALLER, KeySecret, ResolvedModel, ResolvedStack
from tests.builders import resolved_model
from tests.conftest import rendered_stack
from tests.engines_helpers import example, stack_of
from tests.guard_support import ROOT, has, problems, sections, warnings_of

HOST = "llm.example.com"
KEY = "the-acceptance-key"
FOREIGN_KEY = "a-key-of-another-route"


# ---- a fake front door with a fake engine behind it ---------------------------------------------


class Behaviour:
    """What the fake server gets wrong (nothing, by default)."""

    def __init__(self, **wrong: bool) -> None:
        self.admits_anyone = wrong.get("admits_anyone", False)
        self.raw_completion = wrong.get("raw_completion", False)
        self.no_done = wrong.get("no_done", False)
        self.not_json = wrong.get("not_json", False)
        self.down = wrong.get("down", False)


def _reply(body: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
    if "response_format" in body:
        content = "The capital is Paris." if behaviour.not_json else json.dumps({"city": "Paris"})
    elif behaviour.raw_completion:
        content = "<|im_start|>system\nYou are a terse assistant.<|im_end|>"
    else:
        content = "Paris is the capital of France."
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 8, "total_tokens": 39},
    }


def _stream(behaviour: Behaviour) -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}]},
    ]
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ([] if behaviour.no_done else ["data: [DONE]\n\n"])
    return "".join(events).encode()


def serve(behaviour: Behaviour) -> tuple[ThreadingHTTPServer, str]:
    """Routes `/model` (admits KEY) and `/other` (admits FOREIGN_KEY), Envoy Gateway's 401 for a key a
    route does not hold; and a Prometheus query API at `/prom`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            series = [] if behaviour.down else [{"metric": {"job": "x"}, "value": [0, "1"]}]
            self._send(200, json.dumps({"status": "success", "data": {"result": series}}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            admitted = KEY if self.path.startswith("/model/") else FOREIGN_KEY
            if not behaviour.admits_anyone and self.headers.get("Authorization") != f"Bearer {admitted}":
                self._send(401, b"Unauthorized")
            elif body.get("stream"):
                self._send(200, _stream(behaviour), "text/event-stream")
            else:
                self._send(200, json.dumps(_reply(body, behaviour)).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def run_check(behaviour: Behaviour, **env: str) -> dict[str, Any]:
    server, base = serve(behaviour)
    try:
        settings = {
            "ACC_BASE": f"{base}/model",
            "ACC_MODEL": "qwen3-8b",
            "ACC_HEADER": "Authorization",
            "ACC_AUTH": "apiKey",
            "ACC_API_KEY": KEY,
            "ACC_FOREIGN": f"{base}/other",
            "ACC_STRUCTURED": json.dumps(OPENAI_JSON_SCHEMA),
            "ACC_PROMETHEUS": f"{base}/prom",
            "ACC_METRICS_QUERY": 'up{namespace="inference"}',
            "ACC_READY_SECONDS": "5",
        }
        return acceptance_check.run(settings | env)
    finally:
        server.shutdown()


def statuses(verdict: dict[str, Any]) -> dict[str, str]:
    return {c["check"]: c["status"] for c in verdict["checks"]}


def test_a_well_behaved_route_passes_every_check_of_the_acceptance_script():
    verdict = run_check(Behaviour())
    assert verdict["passed"], verdict
    assert statuses(verdict) == {
        "no-key-refused": "passed",
        "unknown-key-refused": "passed",
        "foreign-route-refuses-key": "passed",
        "chat-shape": "passed",
        "streaming": "passed",
        "structured-output": "passed",
        "metrics-scraped": "passed",
    }, "each check a user relies on runs and passes"


def test_a_route_that_admits_requests_without_a_key_fails_the_refusals():
    verdict = run_check(Behaviour(admits_anyone=True))
    assert not verdict["passed"]
    assert {"no-key-refused", "unknown-key-refused", "foreign-route-refuses-key"} <= set(verdict["failed"]), verdict


def test_a_raw_completion_without_the_chat_template_fails_the_chat_shape():
    verdict = run_check(Behaviour(raw_completion=True))
    assert verdict["failed"] == ["chat-shape"], "template markers in the text mean no chat template was applied"


def test_a_stream_that_never_sends_done_fails_the_streaming_check():
    verdict = run_check(Behaviour(no_done=True))
    assert verdict["failed"] == ["streaming"], "a stream must end with `data: [DONE]`"


def test_text_that_is_not_json_fails_structured_output():
    assert run_check(Behaviour(not_json=True))["failed"] == ["structured-output"]


def test_a_model_prometheus_does_not_see_up_fails_the_metrics_check():
    assert run_check(Behaviour(down=True))["failed"] == ["metrics-scraped"]


def test_steps_without_what_they_need_are_skipped_never_failed():
    verdict = run_check(Behaviour(), ACC_FOREIGN="", ACC_STRUCTURED="null", ACC_PROMETHEUS="")
    assert verdict["passed"], verdict
    found = statuses(verdict)
    assert found["foreign-route-refuses-key"] == found["structured-output"] == found["metrics-scraped"] == "skipped"


def test_with_jwt_a_foreign_route_must_answer_403():
    verdict = run_check(Behaviour(), ACC_AUTH="jwt")
    assert verdict["failed"] == ["foreign-route-refuses-key"], "JWT authorization denies with 403, not 401"


# ---- the Job ------------------------------------------------------------------------------------


def with_acceptance(name: str = "qwen3-8b", **accept: Any) -> dict[str, Any]:
    sections = copy.deepcopy(example())
    model = next(m for m in sections["models"] if m["name"] == name)
    model["acceptance"] = accept
    return sections


def args_of(stack: ResolvedStack) -> AcceptanceChecksArgs:
    return AcceptanceChecksArgs(
        models=stack.models,
        gateway=stack.platform.gateway,
        hostname=HOST,
        bucket="models-bucket",
        images=stack.images,
        provider=None,  # type: ignore[arg-type]  (pure builders never read it)
        prometheus=stack.acceptance_prometheus,
    )


@pytest.fixture(scope="module")
def shipped() -> tuple[ResolvedStack, ResolvedModel, dict[str, Any]]:
    stack = stack_of(example())
    model = resolved_model(stack, "qwen3-8b")
    return stack, model, job(model, args_of(stack))


def env_of(obj: dict[str, Any]) -> dict[str, str]:
    spec = obj["spec"]["template"]["spec"]
    check = next(c for c in spec["initContainers"] if c["name"] == "check")
    return {e["name"]: e["value"] for e in check["env"]}


def test_the_shipped_example_checks_qwen3_8b_through_its_route_and_gates_pulumi_up(shipped):
    obj = shipped[2]
    env = env_of(obj)
    assert env["ACC_BASE"] == f"https://{HOST}/qwen3-8b", "the model's own route on the front door"
    assert env["ACC_SCRIPT"] == Path(acceptance_check.__file__).read_text(), "the tested script is the one shipped"
    annotations = obj["metadata"]["annotations"]
    assert "pulumi.com/skipAwait" not in annotations, "gate: true makes pulumi up wait for the Job"
    assert obj["spec"]["backoffLimit"] == 0, "a failed check fails the Job, not a retry"
    ready = int(env["ACC_READY_SECONDS"])
    assert ready >= 600, "it waits for Envoy Gateway to program the route before judging it"
    assert obj["spec"]["activeDeadlineSeconds"] > ready, "the Job outlives the wait, so the checks run"


def test_the_key_comes_from_a_file_and_never_sits_in_the_pod_spec(shipped):
    _, model, obj = shipped
    spec = obj["spec"]["template"]["spec"]
    accept = model.config.acceptance
    assert accept is not None and accept.key_secret(model.config.benchmark) == "bench-key", (
        "without its own key it uses the benchmark's"
    )
    secrets = [v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v]
    assert secrets == ["bench-key"], "the one Secret it mounts is its own model's key, never another team's"
    assert KEY_ENV not in env_of(obj), "the key is exported at exec time from its file, not set in env"


def test_results_go_under_the_models_benchmark_prefix_the_reader_may_write(shipped):
    _, model, obj = shipped
    upload = obj["spec"]["template"]["spec"]["containers"][0]
    prefix = next(e["value"] for e in upload["env"] if e["name"] == "BENCH_PREFIX")
    assert prefix == f"platform/_benchmarks/qwen3-8b/{model.config.revision}"
    assert "$BENCH_PREFIX/acceptance/$stamp/" in upload["command"][-1]
    assert obj["spec"]["template"]["spec"]["serviceAccountName"] == "model-reader"


def test_an_ungated_check_does_not_hold_up_pulumi_up():
    stack = stack_of(example())
    obj = job(resolved_model(stack, "qwen-awq-tgi"), args_of(stack))
    assert obj["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


def test_the_tgi_models_own_acceptance_key_is_admitted_by_its_route_alone():
    stack = stack_of(example())
    tgi = resolved_model(stack, "qwen-awq-tgi")
    assert "tgi-accept-key" in [k.name for k in tgi.key_secrets], "its route admits the check's key"
    others = [m for m in stack.models if m.name != "qwen-awq-tgi"]
    assert all("tgi-accept-key" not in [k.name for k in m.key_secrets] for m in others), "and no other does"


def test_each_engine_is_asked_for_json_in_its_own_form_or_skipped():
    stack = stack_of(example())
    tgi_form, _ = structured_form(resolved_model(stack, "qwen-awq-tgi"))
    vllm_form, _ = structured_form(resolved_model(stack, "qwen3-8b"))
    nim_form, why = structured_form(resolved_model(stack, "llama-nim"))
    assert tgi_form == {"response_format": {"type": "json", "value": ACCEPTANCE_SCHEMA}}, "TGI's grammar form"
    assert vllm_form is not None and vllm_form["response_format"]["type"] == "json_schema"
    assert nim_form is None and "NIM" in why, "an engine without an established form is skipped, with the reason"


def test_structured_output_false_skips_the_json_step():
    stack = stack_of(with_acceptance(gate=True, structuredOutput=False))
    form, why = structured_form(resolved_model(stack, "qwen3-8b"))
    assert form is None and "structuredOutput: false" in why


def test_the_foreign_route_is_one_none_of_the_models_callers_may_call():
    stack = stack_of(example())
    model = resolved_model(stack, "qwen3-8b")
    assert foreign_route(model, stack.models, HOST) is None, "every model here admits the platform's clients"
    other = copy.copy(resolved_model(stack, "qwen-awq-tgi"))
    object.__setattr__(other, "callers", ("search",))
    assert foreign_route(model, [model, other], HOST) == f"https://{HOST}{other.path_prefix}"


def test_the_check_queries_the_stacks_prometheus_for_the_models_up_series(shipped):
    stack, model, obj = shipped
    env = env_of(obj)
    assert env["ACC_PROMETHEUS"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    assert env["ACC_METRICS_QUERY"] == 'up{namespace="inference",inference_platform_io_model="qwen3-8b"}'
    egress = acceptance_egress("inference")["spec"]["egress"][0]
    assert egress["ports"] == [{"protocol": "TCP", "port": 9090}], "its pods may reach Prometheus's web port"
    policy = prometheus(stack.platform.addons, adapter=False, blocks=["10.0.0.0/16"], accepted_in=["inference"])
    peers_ = [p for r in policy["spec"]["ingress"] for p in r["from"]]
    assert any(p["podSelector"]["matchLabels"].get("app.kubernetes.io/name") == "acceptance" for p in peers_), (
        "and Prometheus admits them"
    )
    assert check_env(model, args_of(stack))[0]["value"] == env["ACC_BASE"]


# ---- the rules ----------------------------------------------------------------------------------


JWT = {"auth": "jwt", "jwt": {"issuer": "https://login.example.com/", "jwksUri": "https://login.example.com/jwks"}}


def with_jwt(sections: dict[str, Any]) -> dict[str, Any]:
    sections["gateway"] = {**sections.get("gateway", {}), **JWT}
    return sections


def test_acceptance_without_a_key_under_jwt_is_refused_at_its_key():
    sections = with_jwt(with_acceptance("qwen3-8b-sglang", gate=True))
    assert has(problems(sections), "models[1].acceptance.apiKeySecret", "api-key", "apiKeySecret", "jwt")


def test_acceptance_on_an_unexposed_model_is_refused():
    sections = with_acceptance("qwen3-ollama", apiKeySecret="bench-key")
    assert has(problems(sections), "models[4].acceptance", "expose: true")


def test_acceptance_without_a_front_door_hostname_is_refused():
    sections = with_acceptance(gate=True)
    sections["gateway"] = {**sections.get("gateway", {}), "enabled": False}
    assert has(problems(sections), "models[0].acceptance", "gateway.enabled: true with gateway.hostname")


def test_a_teams_stack_is_warned_that_the_metrics_step_is_skipped():
    team = sections("stacks/examples/Pulumi.team-chat.yaml")
    team["models"][0]["acceptance"] = {}
    assert has(warnings_of(team), "models[0].acceptance", "metrics step", "skipped")


# ---- on by default: the platform's own key per model -----------------------------------------------


def minted(stack: ResolvedStack, name: str) -> ResolvedModel:
    model = resolved_model(stack, name)
    assert model.acceptance is not None and model.acceptance.minted, f"{name} gets a Job with a minted key"
    return model


def test_every_exposed_model_gets_an_acceptance_job_by_default_with_api_key_auth():
    stack = stack_of(example())
    exposed = [m for m in stack.models if m.expose]
    assert exposed and all(m.acceptance is not None for m in exposed), "unset acceptance means {}"
    assert all(m.acceptance is None for m in stack.models if not m.expose), "nothing to call without a route"
    sglang = minted(stack, "qwen3-8b-sglang")
    assert sglang.acceptance is not None and sglang.acceptance.key_secret == "qwen3-8b-sglang-acceptance-key"
    assert not sglang.acceptance.gate, "a default check does not hold up pulumi up"


def test_a_key_the_stack_gives_still_wins_over_the_minted_one():
    stack = stack_of(example())
    given = resolved_model(stack, "qwen-awq-tgi").acceptance
    assert given is not None and given.key_secret == "tgi-accept-key" and not given.minted
    bench = resolved_model(stack, "qwen3-8b").acceptance
    assert bench is not None and bench.key_secret == "bench-key" and not bench.minted, "the benchmark's key"


@pytest.mark.parametrize("opt_out", [False, {"enabled": False}])
def test_acceptance_false_or_enabled_false_opts_a_model_out(opt_out):
    sections = copy.deepcopy(example())
    model = next(m for m in sections["models"] if m["name"] == "qwen3-8b-sglang")
    model["acceptance"] = opt_out
    stack = stack_of(sections)
    sglang = resolved_model(stack, "qwen3-8b-sglang")
    assert sglang.acceptance is None, "no Job"
    assert ACCEPTANCE_CALLER not in [k.caller for k in sglang.key_secrets], "and no key its route admits"


def test_the_minted_key_is_admitted_on_its_models_route_alone():
    stack = stack_of(example())
    sglang = minted(stack, "qwen3-8b-sglang")
    own = KeySecret(ACCEPTANCE_CALLER, sglang.namespace, "qwen3-8b-sglang-acceptance-key")
    assert own in sglang.key_secrets, "the model's route admits its check's key"
    others = [m for m in stack.models if m.name != "qwen3-8b-sglang"]
    assert all(own not in m.key_secrets for m in others), "no other route does"


def test_the_minted_keys_secret_holds_api_key_in_the_models_namespace_and_the_job_mounts_it():
    stack = stack_of(example())
    sglang = minted(stack, "qwen3-8b-sglang")
    secret = key_secret(sglang, "k" * KEY_LENGTH)
    assert (secret["metadata"]["namespace"], secret["metadata"]["name"]) == (
        sglang.namespace,
        "qwen3-8b-sglang-acceptance-key",
    )
    assert secret["stringData"] == {"api-key": "k" * KEY_LENGTH}, "the entry the Job reads and the route admits"
    spec = job(sglang, args_of(stack))["spec"]["template"]["spec"]
    mounted = [v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v]
    assert mounted == ["qwen3-8b-sglang-acceptance-key"]
    assert KEY_LENGTH == 48


def test_the_acceptance_job_runs_on_the_system_nodes_not_on_a_node_launched_for_it():
    stack = stack_of(example())
    spec = job(minted(stack, "qwen3-8b-sglang"), args_of(stack))["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"inference-platform.io/node-role": "system"}


def test_under_jwt_a_model_without_a_token_gets_no_job_and_a_warning_naming_the_key():
    sections = with_jwt(copy.deepcopy(example()))
    stack = stack_of(sections)
    assert resolved_model(stack, "qwen3-8b-sglang").acceptance is None, "the platform cannot mint a token"
    assert resolved_model(stack, "qwen3-8b").acceptance is not None, "a given token (the benchmark's) still runs"
    assert has(warnings_of(sections), "models[1].acceptance", "models[].acceptance.apiKeySecret", "acceptance: false")


def test_a_teams_models_get_minted_keys_in_the_teams_namespace_admitted_on_its_route_only():
    file = sections("stacks/examples/Pulumi.team-chat.yaml")
    for entry in file["models"]:
        entry.pop("benchmark", None)  # no key of the team's own: the platform mints the check's
    team = stack_of(file)
    exposed = [m for m in team.models if m.expose]
    assert exposed, "the team example exposes a model"
    for model in exposed:
        accept = model.acceptance
        assert accept is not None and accept.minted
        assert model.namespace in (team.team.namespaces if team.team else ())
        own = KeySecret(ACCEPTANCE_CALLER, model.namespace, accept.key_secret)
        assert own in model.key_secrets and all(own not in m.key_secrets for m in team.models if m is not model)


def test_the_shipped_jwt_front_door_opts_its_ollama_model_out_and_warns_for_the_others():
    file = sections("stacks/examples/Pulumi.frontdoor.yaml")
    found = warnings_of(file)
    ollama = next(i for i, m in enumerate(file["models"]) if m["name"] == "llama-ollama")
    assert not has(found, f"models[{ollama}].acceptance", "jwt"), "acceptance: false silences it"
    others = [i for i, m in enumerate(file["models"]) if i != ollama and m.get("expose", True)]
    assert others and all(has(found, f"models[{i}].acceptance", "jwt", "apiKeySecret") for i in others)


RANDOM_PASSWORD = "random:index/randomPassword:RandomPassword"


def test_the_rendered_stack_mints_one_48_character_key_per_model_without_one_and_mounts_it():
    render = rendered_stack(ROOT / "stacks/examples/Pulumi.engines.yaml")
    passwords = {r.name: r for r in render.resources if r.type == RANDOM_PASSWORD}
    stack = stack_of(example())
    keyless = [m for m in stack.models if m.acceptance is not None and m.acceptance.minted]
    assert sorted(passwords) == sorted(f"platform-acceptance-{m.namespace}-{m.name}-key" for m in keyless)
    for record in passwords.values():
        assert record.inputs["length"] == 48 and record.inputs["special"] is False, "letters and digits only"
        result = record.outputs["result"]
        assert len(result) == 48 and result.isalnum(), "the mocks answer a deterministic offline key"
    secrets = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in render.manifests() if o["kind"] == "Secret"}
    assert all((m.namespace, f"{m.name}-acceptance-key") in secrets for m in keyless), "kept where the Job mounts it"


def test_the_mocks_answer_the_same_key_for_the_same_password_every_run():
    from stacks.mocks import RecordingMocks

    args = pulumi.runtime.MockResourceArgs(
        typ=RANDOM_PASSWORD, name="k", inputs={"length": 48, "special": False}, provider="", resource_id=""
    )
    first, second = RecordingMocks().new_resource(args), RecordingMocks().new_resource(args)
    assert first == second and len(first[1]["result"]) == 48


def test_a_renamed_model_gets_a_new_key_and_the_job_waits_for_its_secret():
    render = rendered_stack(ROOT / "stacks/examples/Pulumi.engines.yaml")
    secret = next(
        r
        for r in render.resources
        if r.type == "kubernetes:core/v1:Secret" and r.name == "platform-acceptance-inference-qwen3-8b-sglang-key"
    )
    job_ = next(r for r in render.resources if r.name.startswith("platform-acceptance-accept-qwen3-8b-sglang-"))
    assert secret.urn in job_.depends_on, "the Job's pod mounts the Secret, so it is created first"
    renamed = copy.deepcopy(example())
    next(m for m in renamed["models"] if m["name"] == "qwen3-8b-sglang")["name"] = "sglang-qwen"
    model = resolved_model(stack_of(renamed), "sglang-qwen")
    assert model.acceptance is not None and model.acceptance.key_secret == "sglang-qwen-acceptance-key", (
        "a new Secret, and (the password's logical name carries the model) a new RandomPassword: a new key"
    )


def test_on_aibrixs_gateway_the_minted_key_is_also_kept_beside_the_route_so_no_grant_is_needed():
    path = ROOT / "stacks/examples/Pulumi.serving.yaml"
    stack = stack_of(sections("stacks/examples/Pulumi.serving.yaml"))
    keyless = [m for m in stack.models if m.acceptance is not None and m.acceptance.minted]
    assert keyless, "the serving example has models without a key of their own"
    objs = rendered_stack(path).manifests()
    secrets = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Secret"}
    for model in keyless:
        accept = model.acceptance
        assert accept is not None and accept.admitted_namespace == "aibrix-system", "AIBrix's routes live there"
        assert KeySecret(ACCEPTANCE_CALLER, "aibrix-system", accept.key_secret) in model.key_secrets
        assert {(model.namespace, accept.key_secret), ("aibrix-system", accept.key_secret)} <= secrets, (
            "the Job's copy beside the model, the route's beside the route"
        )
