"""LiteLLM virtual keys (issue #25 item 4): no client of the proxy holds its master key.

- resolution: one key per team with `teams[].litellm` (its models and budget, in its home namespace) and
  one for the platform's own clients (every model the proxy serves, beside the gateway's keys), only with
  the proxy's database; a team's access without the database is refused at its key;
- the objects: an empty Secret and a Role to get and patch exactly it in each caller's namespace, the job
  in the proxy's own pinned image with the master key as a mounted file and the plan it keeps;
- the job's program, run against a LiteLLM and a Kubernetes API that answer as LiteLLM 1.100.1's key API
  and the API server do: it creates a key and writes it to the caller's Secret, updates it in place on the
  next run, registers it again when the proxy's database lost it, and replaces a key whose Secret was
  emptied, never leaving a live key outside its Secret.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from components.serving import litellm_key_sync, litellm_keys
from stacks.resolved import LITELLM_KEY_SECRET, VirtualKey
from tests.builders import resolved_stack
from tests.conftest import EXAMPLES_DIR, rendered_stack, sections_of, stack_manifests
from tests.guard_support import has, problems

PLATFORM = EXAMPLES_DIR / "Pulumi.platform.yaml"
MASTER = "sk-master-of-the-proxy"


def test_the_platform_keeps_one_key_per_team_with_access_and_one_for_its_own_clients():
    keys = resolved_stack(sections_of(PLATFORM)).access.virtual_keys
    assert keys == (
        VirtualKey("platform", "inference-gateway", LITELLM_KEY_SECRET, ("gpt-4o-mini",)),
        VirtualKey(
            "chat",
            "chat",
            LITELLM_KEY_SECRET,
            ("gpt-4o-mini",),
            max_budget=50,
            budget_duration="30d",
            tpm_limit=100000,
            rpm_limit=300,
        ),
    ), "search has no litellm access: no key; chat's is scoped to its models, budget and rate limits"


def test_without_the_proxys_database_there_are_no_virtual_keys_and_a_teams_access_is_refused():
    platform = sections_of(PLATFORM)
    del platform["addons"]["litellm"]["databaseUrlSecret"]
    assert has(problems(platform), "addons.litellm.databaseUrlSecret", "virtual keys", "chat")
    del platform["teams"][1]["litellm"]
    assert resolved_stack(platform).access.virtual_keys == (), "nothing to keep them in"


def test_a_budget_is_litellms_shape_and_a_reset_needs_a_budget():
    platform = sections_of(PLATFORM)
    platform["teams"][1]["litellm"] = {"models": ["gpt-4o-mini"], "budgetDuration": "30d"}
    assert has(problems(platform), "teams[1].litellm", "maxBudget")
    platform["teams"][1]["litellm"] = {"models": ["gpt-4o-mini"], "maxBudget": 5, "budgetDuration": "monthly-ish"}
    assert has(problems(platform), "teams[1].litellm.budgetDuration")
    platform["teams"][1]["litellm"] = {"models": ["gpt-4o-mini"], "maxBudget": -1}
    assert has(problems(platform), "teams[1].litellm.maxBudget")


def test_each_callers_secret_is_the_jobs_to_get_and_patch_and_nothing_else():
    objs = [
        o
        for o in stack_manifests(PLATFORM)
        if o["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "litellm-keys"
    ]
    for namespace in ("chat", "inference-gateway"):
        mine = {o["kind"]: o for o in objs if o["metadata"].get("namespace") == namespace}
        assert set(mine) == {"Secret", "Role", "RoleBinding"}, namespace
        assert mine["Secret"]["metadata"]["name"] == LITELLM_KEY_SECRET
        assert "data" not in mine["Secret"] and "stringData" not in mine["Secret"], "no key material in the program"
        assert mine["Role"]["rules"] == [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": [LITELLM_KEY_SECRET],
                "verbs": ["get", "patch"],
            }
        ]
        assert mine["RoleBinding"]["subjects"] == [
            {"kind": "ServiceAccount", "name": "litellm-keys", "namespace": "litellm"}
        ]
    assert not [o for o in objs if o["metadata"].get("namespace") == "search"], "search has no access"
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")], "nothing cluster-wide"


def test_the_job_runs_the_proxys_pinned_image_with_the_master_key_as_a_file():
    objs = stack_manifests(PLATFORM)
    (job,) = [o for o in objs if o["kind"] == "Job" and o["metadata"]["namespace"] == "litellm"]
    (proxy,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "litellm"]
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == proxy["spec"]["template"]["spec"]["containers"][0]["image"], "the proxy's own pin"
    assert container["command"] == ["python3", "/etc/litellm-keys/sync.py"]
    assert all("valueFrom" not in e for e in container["env"]), "no secretKeyRef"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["MASTER_KEY_FILE"] == "/var/run/secrets/litellm/master/master-key"
    master = next(v for v in pod["volumes"] if v["name"] == "master-key")
    assert master["secret"]["secretName"] == "litellm-master-key"
    assert pod["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["readOnlyRootFilesystem"]
    (config,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "litellm-keys"]
    assert config["data"]["sync.py"] == Path(litellm_key_sync.__file__).read_text(), "the program, as tested below"
    plan = json.loads(config["data"]["keys.json"])
    assert [
        (
            e["caller"],
            e["namespace"],
            e["models"],
            e["max_budget"],
            e["budget_duration"],
            e["tpm_limit"],
            e["rpm_limit"],
        )
        for e in plan
    ] == [
        ("platform", "inference-gateway", ["gpt-4o-mini"], None, None, None, None),
        ("chat", "chat", ["gpt-4o-mini"], 50, "30d", 100000, 300),
    ]


def test_a_changed_plan_runs_a_new_job():
    key = VirtualKey("chat", "chat", LITELLM_KEY_SECRET, ("a",))
    image = resolved_stack(sections_of(PLATFORM)).images["litellm"]
    assert litellm_keys.job_name([key], image) != litellm_keys.job_name(
        [VirtualKey("chat", "chat", "litellm-key", ("b",))], image
    )


# ---- the program against LiteLLM's key API and the API server ------------------------------------------


class Fakes:
    """LiteLLM 1.100.1's key API (key_management_endpoints.py: update by key or alias, 404 when absent;
    generate refuses a duplicate alias and a key not starting sk-; delete by key or hashed token) and the
    API server's Secrets, each behind the bearer token it expects."""

    def __init__(self) -> None:
        self.keys: dict[str, dict[str, Any]] = {}  # raw key -> its settings
        self.secrets: dict[tuple[str, str], dict[str, str]] = {}
        self.calls: list[tuple[str, str]] = []

    @staticmethod
    def token(raw: str) -> str:
        return "hashed-" + raw

    def litellm(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.calls.append((method, path))
        if path == "/health/readiness":
            return 200, {"status": "healthy"}
        if path == "/key/update":
            return self._update(body)
        if path == "/key/generate":
            if any(k["key_alias"] == body.get("key_alias") for k in self.keys.values()):
                return 400, {"error": "Key with alias already exists"}
            assert body["key"].startswith("sk-") and body["key_type"] == "llm_api"
            self.keys[body["key"]] = {k: v for k, v in body.items() if k != "key"}
            return 200, {"key": body["key"]}
        if path == "/key/delete":
            gone = [raw for raw in self.keys if raw in body["keys"] or self.token(raw) in body["keys"]]
            for raw in gone:
                del self.keys[raw]
            return 200, {"deleted_keys": body["keys"]}
        return 404, {"error": path}

    def _update(self, body: dict[str, Any]) -> tuple[int, Any]:
        if "key" in body:
            if body["key"] not in self.keys:
                return 404, {"error": "Key not found."}
            self.keys[body["key"]].update({k: v for k, v in body.items() if k != "key"})
            return 200, {"key": body["key"]}
        found = [raw for raw, k in self.keys.items() if k["key_alias"] == body["key_alias"]]
        if not found:
            return 404, {"error": "Key not found. No key with key_alias"}
        return 200, {"key": self.token(found[0])}

    def kube(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        _, _, _, namespace, _, name = path.strip("/").split("/")
        secret = self.secrets.get((namespace, name))
        if secret is None:
            return 404, {"reason": "NotFound"}
        if method == "PATCH":
            secret.update(body["data"])
        return 200, {"data": dict(secret)}


def _serve(handle: Any, token: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            # LiteLLM's health probes take no key; everything else does.
            if self.path != "/health/readiness" and self.headers.get("Authorization") != f"Bearer {token}":
                status, answer = 401, {"error": "unauthenticated"}
            else:
                status, answer = handle(self.command, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _answer  # noqa: N815 (the names http.server calls)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    fakes = Fakes()
    proxy, api = _serve(fakes.litellm, MASTER), _serve(fakes.kube, "service-account-token")
    keys = resolved_stack(sections_of(PLATFORM)).access.virtual_keys
    (tmp_path / "plan.json").write_text(json.dumps(litellm_keys.plan(keys)))
    (tmp_path / "master-key").write_text(MASTER + "\n")
    (tmp_path / "token").write_text("service-account-token")
    for key in keys:
        fakes.secrets[(key.namespace, key.secret)] = {}
    env = {
        "KEYS_PLAN": str(tmp_path / "plan.json"),
        "MASTER_KEY_FILE": str(tmp_path / "master-key"),
        "LITELLM_URL": f"http://127.0.0.1:{proxy.server_port}",
        "KUBERNETES_API": f"http://127.0.0.1:{api.server_port}",
        "SERVICE_ACCOUNT_DIR": str(tmp_path),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield fakes
    proxy.shutdown()
    proxy.server_close()
    api.shutdown()
    api.server_close()


def stored(fakes: Fakes, namespace: str) -> str:
    return base64.b64decode(fakes.secrets[(namespace, LITELLM_KEY_SECRET)]["api-key"]).decode()


def test_the_first_run_creates_each_key_in_litellm_and_in_its_callers_secret(world):
    assert litellm_key_sync.main() == 0
    chat = stored(world, "chat")
    assert chat.startswith("sk-") and len(chat) > 40
    assert world.keys[chat] == {
        "key_alias": "inference-platform-chat",
        "models": ["gpt-4o-mini"],
        "metadata": {"caller": "chat", "managed-by": "inference-platform"},
        "max_budget": 50,
        "budget_duration": "30d",
        "tpm_limit": 100000,
        "rpm_limit": 300,
        "key_type": "llm_api",
    }, "scoped to chat's models, budget and tokens/requests a minute, the LLM routes only"
    platform = stored(world, "inference-gateway")
    assert platform != chat and world.keys[platform]["models"] == ["gpt-4o-mini"]
    assert MASTER not in (chat, platform), "no caller holds the master key"


def test_a_second_run_updates_the_same_keys_in_place(world):
    litellm_key_sync.main()
    before = {ns: stored(world, ns) for ns in ("chat", "inference-gateway")}
    litellm_key_sync.main()
    assert {ns: stored(world, ns) for ns in before} == before, "the callers' keys do not change"
    assert set(world.keys) == set(before.values()), "no second key"


def test_a_key_the_proxys_database_lost_is_registered_again_unchanged(world):
    litellm_key_sync.main()
    chat = stored(world, "chat")
    world.keys.clear()
    litellm_key_sync.main()
    assert stored(world, "chat") == chat and chat in world.keys


def test_an_emptied_secret_gets_a_new_key_and_the_old_one_is_deleted(world):
    litellm_key_sync.main()
    old = stored(world, "chat")
    world.secrets[("chat", LITELLM_KEY_SECRET)].clear()
    litellm_key_sync.main()
    new = stored(world, "chat")
    assert new != old and old not in world.keys and new in world.keys, "one live key per caller, in its Secret"


def test_with_a_wrong_master_key_the_run_fails_and_litellm_holds_no_key(world, tmp_path):
    (tmp_path / "master-key").write_text("sk-wrong")
    with pytest.raises(RuntimeError, match="401"):
        litellm_key_sync.main()
    assert not world.keys, "an unauthenticated caller creates no key"


def test_the_job_waits_for_the_proxy_and_gives_up_after_its_allowance():
    closed = litellm_key_sync.Http("http://127.0.0.1:9", "x")  # the discard port: nothing answers
    with pytest.raises(RuntimeError, match="did not become ready"):
        litellm_key_sync.wait_ready(closed, seconds=0, pause=0)


def test_a_teams_budget_travels_in_the_platforms_exports():
    from stacks.exports import read_teams
    from stacks.pipeline import exports_from_file

    exported = exports_from_file(PLATFORM)["teams"]
    chat = next(t for t in exported if t["name"] == "chat")
    assert chat["litellm"] == {
        "models": ["gpt-4o-mini"],
        "maxBudget": 50,
        "budgetDuration": "30d",
        "tpmLimit": 100000,
        "rpmLimit": 300,
    }
    (read,) = [t for t in read_teams({"teams": exported}) if t.name == "chat"]
    assert (read.litellm_max_budget, read.litellm_budget_duration) == (50, "30d")
    assert (read.litellm_tpm_limit, read.litellm_rpm_limit) == (100000, 300), "the rate limits travel too"


def test_a_teams_tpm_and_rpm_limits_must_be_positive_and_are_refused_naming_the_key():
    from tests.guard_support import problems_of

    for key in ("tpmLimit", "rpmLimit"):
        for bad in (0, -5):
            platform = sections_of(PLATFORM)
            chat = next(t for t in platform["teams"] if t["name"] == "chat")
            chat["litellm"][key] = bad
            found = problems_of(platform)
            assert any(f"teams[1].litellm.{key}" in p and "greater than 0" in p for p in found), (key, bad, found)


def test_a_proxy_without_a_database_warns_that_its_clients_hold_the_master_key():
    from stacks.pipeline import stack_warnings

    serving = resolved_stack(sections_of(EXAMPLES_DIR / "Pulumi.serving.yaml"))
    found = [str(w) for w in stack_warnings(serving)]
    assert any("addons.litellm.databaseUrlSecret" in w and "master key" in w for w in found), found
    assert not [str(w) for w in stack_warnings(resolved_stack(sections_of(PLATFORM))) if "databaseUrlSecret" in str(w)]


def test_the_job_runs_after_the_proxy_and_every_object_it_touches():
    mocks = rendered_stack(PLATFORM).mocks
    (job,) = mocks.of_type("kubernetes:batch/v1:Job")
    proxy = mocks.named("kubernetes:apps/v1:Deployment", "deployment-litellm-litellm")
    assert proxy.urn in job.depends_on, "the proxy answers the key API"
    for kind, name in [
        ("kubernetes:core/v1:Secret", "secret-chat-litellm-key"),
        ("kubernetes:core/v1:Secret", "secret-inference-gateway-litellm-key"),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "rolebinding-chat-litellm-keys-writer"),
        ("kubernetes:core/v1:ConfigMap", "configmap-litellm-litellm-keys"),
    ]:
        assert mocks.named(kind, name).urn in job.depends_on, name
    gateway_ns = mocks.named("kubernetes:core/v1:Namespace", "platform-front-door-ns")
    secret = mocks.named("kubernetes:core/v1:Secret", "secret-inference-gateway-litellm-key")
    assert gateway_ns.urn in secret.depends_on, "the Gateway's namespace exists before its Secret"
