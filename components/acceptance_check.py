"""The acceptance Job's check, shipped as this file's source into the Job's Python container.

Standard library only: it runs under the guidellm image's own Python (components/acceptance.py). It
calls the model's gateway route the way a client does and records one result per check:
- `no-key-refused`: a chat request without a key gets 401;
- `unknown-key-refused`: one with a key no route admits (made up here) gets 401;
- `foreign-route-refuses-key`: the Job's own key on a route none of the model's callers may call (another
  owner's model) is refused: 401 with API keys (Envoy Gateway's per-route credential set does not hold
  it), 403 with JWT (the route's authorization denies the team claim); skipped when the stack has no
  such route;
- `chat-shape`: a system and a user message come back as an assistant message, with a finish_reason and
  token usage, and no chat-template markers in the text (the engine applied the model's template);
- `streaming`: `stream: true` delivers `data:` events with deltas and ends with `data: [DONE]`;
- `structured-output`: the engine's JSON request form returns a JSON object with the asked key (skipped
  where the engine has none the platform established);
- `metrics-scraped`: Prometheus has an `up` series of the model's pods at 1 (skipped without one to ask).
Before the checks it waits (ACC_READY_SECONDS) for the route to answer the Job's own key, since Envoy
Gateway programs a new route asynchronously. It writes `verdict.json` beside the results and a
`passed` marker only when no check failed; the uploader exits non-zero without the marker.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

CHAT = "/v1/chat/completions"
# What a raw completion without the chat template tends to leak: the templates' own control tokens.
TEMPLATE_MARKERS = ("<|im_start|>", "<|im_end|>", "[INST]", "<|start_header_id|>", "<|eot_id|>", "<|user|>")
SYSTEM = "You are a terse assistant. Answer in one short sentence."
USER = "Name the capital of France."
TIMEOUT = 120.0


def call(url: str, body: dict[str, Any] | None, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST `body` (GET without one); the status and body, an HTTP error's included, never raised."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **headers})
    context = ssl.create_default_context()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
        return 0, str(err).encode()


def auth(header: str, key: str) -> dict[str, str]:
    """The key as a client sends it: `Authorization: Bearer <key>`, or the key in the gateway's header."""
    return {header: f"Bearer {key}" if header.lower() == "authorization" else key}


def result(name: str, passed: bool | None, detail: str) -> dict[str, Any]:
    """One check's outcome; passed None: skipped (never a failure)."""
    return {
        "check": name,
        "status": "skipped" if passed is None else "passed" if passed else "failed",
        "detail": detail,
    }


def chat_body(model: str, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    return {"model": model, "messages": messages, "max_tokens": 64, "temperature": 0, **extra}


def refused(name: str, status: int, expected: tuple[int, ...]) -> dict[str, Any]:
    ok = status in expected
    return result(name, ok, f"HTTP {status}, expected {' or '.join(map(str, expected))}")


def chat_shape(status: int, raw: bytes) -> dict[str, Any]:
    """An assistant message with text, a finish_reason and usage; no template markers in the text."""
    name = "chat-shape"
    if status != 200:
        return result(name, False, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
    try:
        reply = json.loads(raw)
        choice = reply["choices"][0]
        message, usage = choice.get("message") or {}, reply.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError) as err:
        return result(name, False, f"not a chat completion: {err!r}")
    problems = []
    if message.get("role") != "assistant":
        problems.append(f"message role {message.get('role')!r}, not 'assistant'")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        problems.append("no text in the assistant message")
    elif any(m in content for m in TEMPLATE_MARKERS) or content.lstrip().startswith(SYSTEM):
        problems.append("the text carries chat-template markers or echoes the prompt: no chat template applied")
    if not choice.get("finish_reason"):
        problems.append("no finish_reason")
    if not (isinstance(usage.get("prompt_tokens"), int) and isinstance(usage.get("completion_tokens"), int)):
        problems.append("no usage.prompt_tokens and usage.completion_tokens")
    detail = "; ".join(problems) or f"finish_reason {choice.get('finish_reason')}, usage {usage}"
    return result(name, not problems, detail)


def streaming(status: int, raw: bytes) -> dict[str, Any]:
    """Server-sent events: every `data:` line but the last is a JSON chunk with choices, the last `[DONE]`."""
    name = "streaming"
    if status != 200:
        return result(name, False, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
    events = [line[5:].strip() for line in raw.decode(errors="replace").splitlines() if line.startswith("data:")]
    if not events or events[-1] != "[DONE]":
        return result(name, False, f"{len(events)} data events, the last not `[DONE]`: {events[-1:]}")
    chunks = events[:-1]
    try:
        parsed = [json.loads(e) for e in chunks]
    except ValueError as err:
        return result(name, False, f"an event is not JSON: {err}")
    deltas = [c for c in parsed if c.get("choices") and "delta" in c["choices"][0]]
    finished = [c for c in deltas if c["choices"][0].get("finish_reason")]
    if not deltas or not finished:
        return result(name, False, f"{len(deltas)} delta events, {len(finished)} with a finish_reason")
    return result(name, True, f"{len(deltas)} delta events, ended with [DONE]")


def structured(status: int, raw: bytes, key: str) -> dict[str, Any]:
    """The assistant's text is a JSON object holding `key`."""
    name = "structured-output"
    if status != 200:
        return result(name, False, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
        value = json.loads(content)
    except (ValueError, KeyError, IndexError, TypeError) as err:
        return result(name, False, f"the text is not JSON: {err!r}")
    ok = isinstance(value, dict) and key in value
    return result(name, ok, f"JSON object with {sorted(value) if isinstance(value, dict) else type(value).__name__}")


def metrics(prometheus: str, query: str, why: str) -> dict[str, Any]:
    """Prometheus answers `query` (the model's `up` series) with at least one series at 1."""
    name = "metrics-scraped"
    if not prometheus:
        return result(name, None, why or "no Prometheus to query")
    url = f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    request = urllib.request.Request(url)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, ValueError) as err:
        return result(name, False, f"Prometheus at {prometheus} did not answer: {err}")
    series = answer.get("data", {}).get("result", []) if answer.get("status") == "success" else []
    up = [s for s in series if s.get("value", [None, "0"])[1] == "1"]
    return result(name, bool(up), f"{len(up)} of {len(series)} `up` series at 1 for {query}")


def wait_ready(url: str, body: dict[str, Any], headers: dict[str, str], seconds: float) -> None:
    """Poll the route with the Job's own key until it answers other than 404/503/000 (route programmed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, _ = call(url, body, headers)
        if status not in (0, 404, 502, 503):
            return
        time.sleep(10)


def refusals(env: dict[str, str], url: str, model: str, mine: dict[str, str]) -> list[dict[str, Any]]:
    """No key, a made-up key, and the Job's own key on a route its model's callers may not call."""
    header = env["ACC_HEADER"]
    made_up = auth(header, secrets.token_urlsafe(32))
    found = [
        refused("no-key-refused", call(url, chat_body(model), {})[0], (401,)),
        refused("unknown-key-refused", call(url, chat_body(model), made_up)[0], (401,)),
    ]
    foreign = env.get("ACC_FOREIGN", "")
    name = "foreign-route-refuses-key"
    if not foreign:
        found.append(result(name, None, "no route in this stack that the model's callers may not call"))
        return found
    expected = (403,) if env.get("ACC_AUTH") == "jwt" else (401,)
    found.append(refused(name, call(foreign + CHAT, chat_body(model), mine)[0], expected))
    return found


def run(env: dict[str, str]) -> dict[str, Any]:
    """Every check against the route in `env` (ACC_*); the verdict."""
    base, model, header, key = env["ACC_BASE"], env["ACC_MODEL"], env["ACC_HEADER"], env["ACC_API_KEY"]
    mine = auth(header, key)
    url = base + CHAT
    wait_ready(url, chat_body(model, max_tokens=1), mine, float(env.get("ACC_READY_SECONDS", "600")))
    checks = refusals(env, url, model, mine)
    checks.append(chat_shape(*call(url, chat_body(model), mine)))
    checks.append(streaming(*call(url, chat_body(model, stream=True), mine)))
    form = json.loads(env.get("ACC_STRUCTURED") or "null")
    if form is None:
        checks.append(result("structured-output", None, env.get("ACC_STRUCTURED_WHY", "not requested")))
    else:
        # Room for the whole object even where the grammar lets the model pad it with whitespace.
        asked = chat_body(model, **form) | {"max_tokens": 128}
        asked["messages"][-1] = {
            "role": "user",
            "content": 'Reply with a JSON object {"city": <the capital of France>}.',
        }
        checks.append(structured(*call(url, asked, mine), "city"))
    checks.append(
        metrics(env.get("ACC_PROMETHEUS", ""), env.get("ACC_METRICS_QUERY", ""), env.get("ACC_METRICS_WHY", ""))
    )
    failed = [c["check"] for c in checks if c["status"] == "failed"]
    return {"passed": not failed, "failed": failed, "route": base, "model": model, "checks": checks}


def main() -> int:
    decided = run(dict(os.environ))
    out = Path(os.environ["ACC_RESULTS"])
    (out / "verdict.json").write_text(json.dumps(decided, indent=2))
    print(json.dumps(decided))
    if decided["passed"]:
        (out / "passed").write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
