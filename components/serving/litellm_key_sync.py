"""The LiteLLM key job's program: keep one virtual key per caller in LiteLLM and in the caller's Secret.

It runs in the platform's key Job (components/serving/litellm_keys.py), in the proxy's own pinned image,
with the Python standard library alone; the builder mounts this file from a ConfigMap. What it reads:
the plan (`KEYS_PLAN`, a JSON list of the keys to keep: caller, namespace, Secret, alias, models, budget),
the master key from its mounted Secret file (`MASTER_KEY_FILE`, never an environment value), the proxy's
URL (`LITELLM_URL`) and the Kubernetes API with the pod's own service account, whose Roles allow `get`
and `patch` of exactly the plan's Secrets.

Per key, against LiteLLM 1.100.1's key API (litellm/proxy/management_endpoints/key_management_endpoints.py):
- the caller's Secret holds a key (entry `api-key`): `/key/update` with that key sets its alias, models and
  budget; a 404 (the proxy's database lost it) registers the same key again with `/key/generate`;
- the Secret is empty: a new key `sk-<random>` is written to the Secret first, then any key that still
  holds the alias (found by `/key/update` with the alias alone, which answers its hashed token) is
  deleted (`/key/delete`, aliases are unique) and the new one generated (`key_type: llm_api`: it calls
  the LLM routes only, no management route).
A key is never live without being in its Secret, and a run after any failure converges.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

KEY_ENTRY = "api-key"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
READY_PATH = "/health/readiness"


class Http:
    """JSON over HTTP with one bearer token; answers (status, body) and raises only on transport errors."""

    def __init__(self, base: str, token: str, context: ssl.SSLContext | None = None) -> None:
        self.base, self.token, self.context = base.rstrip("/"), token, context

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30, context=self.context) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as err:
            return err.code, _json(err.read())


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return raw.decode(errors="replace")


class Kube:
    """The caller Secrets, through the pod's service account."""

    def __init__(self, http: Http) -> None:
        self.http = http

    def read_key(self, namespace: str, name: str) -> str | None:
        status, body = self.http.call("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
        if status != 200:
            raise RuntimeError(f"cannot read Secret {namespace}/{name}: {status} {body}")
        value = (body.get("data") or {}).get(KEY_ENTRY)
        return base64.b64decode(value).decode() if value else None

    def write_key(self, namespace: str, name: str, key: str) -> None:
        patch = {"data": {KEY_ENTRY: base64.b64encode(key.encode()).decode()}}
        path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
        status, body = self.http.call("PATCH", path, patch, "application/merge-patch+json")
        if status != 200:
            raise RuntimeError(f"cannot write Secret {namespace}/{name}: {status} {body}")


def settings(entry: dict[str, Any]) -> dict[str, Any]:
    """What the key may do: its alias, models, budget and rate limits, and whose it is."""
    out: dict[str, Any] = {
        "key_alias": entry["alias"],
        "models": list(entry["models"]),
        "metadata": {"caller": entry["caller"], "managed-by": "inference-platform"},
    }
    for field in ("max_budget", "budget_duration", "tpm_limit", "rpm_limit"):
        if entry.get(field) is not None:
            out[field] = entry[field]
    return out


def _expect(status: int, body: Any, what: str) -> None:
    if status != 200:
        raise RuntimeError(f"{what}: {status} {body}")


def free_alias(proxy: Http, alias: str) -> None:
    """Delete the key that holds `alias`, if one does (an earlier key whose Secret was emptied)."""
    status, body = proxy.call("POST", "/key/update", {"key_alias": alias})
    if status == 404:
        return
    _expect(status, body, f"looking up the key of alias {alias}")
    status, body = proxy.call("POST", "/key/delete", {"keys": [body["key"]]})
    _expect(status, body, f"deleting the earlier key of alias {alias}")


def sync(entry: dict[str, Any], proxy: Http, kube: Kube) -> str:
    """Keep one caller's key; answers what was done."""
    namespace, name, wanted = entry["namespace"], entry["secret"], settings(entry)
    key = kube.read_key(namespace, name)
    if key is not None:
        status, body = proxy.call("POST", "/key/update", {"key": key, **wanted})
        if status == 200:
            return "updated"
        if status != 404:
            raise RuntimeError(f"updating the key of {entry['caller']}: {status} {body}")
        free_alias(proxy, entry["alias"])
        status, body = proxy.call("POST", "/key/generate", {"key": key, "key_type": "llm_api", **wanted})
        _expect(status, body, f"registering the key of {entry['caller']} again")
        return "registered again"
    key = "sk-" + secrets.token_urlsafe(32)
    kube.write_key(namespace, name, key)
    free_alias(proxy, entry["alias"])
    status, body = proxy.call("POST", "/key/generate", {"key": key, "key_type": "llm_api", **wanted})
    _expect(status, body, f"generating the key of {entry['caller']}")
    return "created"


def wait_ready(proxy: Http, seconds: float, pause: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, _ = proxy.call("GET", READY_PATH)
        except OSError:
            status = 0
        if status == 200:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the proxy did not become ready in {seconds:.0f}s")
        time.sleep(pause)


def kubernetes() -> Kube:
    """The API server the pod's environment names, with its service account's token and CA."""
    base = os.environ.get("KUBERNETES_API") or (
        f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
    )
    account = os.environ.get("SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT)
    with open(f"{account}/token") as f:
        token = f.read().strip()
    context = None if base.startswith("http://") else ssl.create_default_context(cafile=f"{account}/ca.crt")
    return Kube(Http(base, token, context))


def main() -> int:
    with open(os.environ["KEYS_PLAN"]) as f:
        plan = json.load(f)
    with open(os.environ["MASTER_KEY_FILE"]) as f:
        proxy = Http(os.environ["LITELLM_URL"], f.read().strip())
    wait_ready(proxy, float(os.environ.get("READY_SECONDS", "600")))
    kube = kubernetes()
    for entry in plan:
        print(f"{entry['caller']}: {sync(entry, proxy, kube)} ({entry['namespace']}/{entry['secret']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
