"""No Secret is made by hand before the first `pulumi up`: every Secret a stack's pods and policies
reference is created by the program from the stack's Pulumi secrets, or declared external in a namespace
the stack does not create; a reference with no source is refused at its key before anything exists; the
Secret waits for its namespace and what mounts it waits for the Secret; its value is a Pulumi secret,
never a literal anywhere in the render."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stacks.errors import ConfigError
from stacks.load import OFFLINE_PLACEHOLDER, ROOT, pulumi_stack_config, sections_to_pulumi_config
from stacks.pipeline import stack_warnings
from stacks.render import SECRET, run_program
from stacks.resolve.secrets import KINDS
from tests.builders import resolved_stack
from tests.conftest import ALL_STACKS, DEV, EXAMPLES_DIR, rendered_stack, sections_of

SECRET_TYPE = "kubernetes:core/v1:Secret"
# A Secret the program creates empty and a Job of its own fills (a caller's LiteLLM virtual key).
FILLED_BY_THE_PROGRAM = {"litellm-key"}


def _refs_in(value: Any, namespace: str) -> Iterator[tuple[str, str, str]]:
    """(namespace, name, where) of every Secret an object names: volumes, pull secrets, env references,
    SecurityPolicy credentialRefs, a listener's certificateRefs, a PodMonitor's credentials, a NIMService's
    authSecret and pullSecrets."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "secret" and isinstance(item, dict) and "secretName" in item:
                yield namespace, item["secretName"], "volume"
            elif key in ("secretKeyRef", "secretRef") and isinstance(item, dict):
                yield namespace, item["name"], key
            elif key in ("imagePullSecrets", "pullSecrets") and isinstance(item, list):
                yield from ((namespace, i["name"] if isinstance(i, dict) else i, key) for i in item)
            elif key in ("credentialRefs", "certificateRefs") and isinstance(item, list):
                yield from ((i.get("namespace", namespace), i["name"], key) for i in item)
            elif key == "credentials" and isinstance(item, dict) and "name" in item:
                yield namespace, item["name"], "PodMonitor credentials"
            elif key == "authSecret" and isinstance(item, str):
                yield namespace, item, "authSecret"
            else:
                yield from _refs_in(item, namespace)
    elif isinstance(value, list):
        for item in value:
            yield from _refs_in(item, namespace)


def referenced_secrets(path: Path) -> set[tuple[str, str, str]]:
    rendered = rendered_stack(path)
    found = set()
    for obj in rendered.manifests():
        found |= set(_refs_in(obj, obj["metadata"].get("namespace", "")))
    for rel in rendered.releases():
        values = rel["values"]
        am = values.get("alertmanager", {}).get("alertmanagerSpec", {})
        if am.get("configSecret"):
            found.add((rel["namespace"], am["configSecret"], "Alertmanager configSecret"))
        admin = values.get("grafana", {}).get("admin", {})
        if admin.get("existingSecret"):
            found.add((rel["namespace"], admin["existingSecret"], "Grafana admin existingSecret"))
    return found


def created_secrets(path: Path) -> set[tuple[str, str]]:
    return {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in rendered_stack(path).resources
        if r.type == SECRET_TYPE and r.inputs["metadata"]["name"] not in FILLED_BY_THE_PROGRAM
    }


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_secret_a_shipped_stack_references_is_created_by_the_program_or_external_outside_its_namespaces(path):
    stack = resolved_stack(sections_of(path), rendered_stack(path) and _region(path))
    created = created_secrets(path)
    refs = referenced_secrets(path)
    assert refs, f"{path.name}: the walk finds the Secrets the stack's objects name"
    platform_made = set()
    if stack.team is not None:  # a team's key Secrets are its platform stack's
        platform_made = created_secrets(EXAMPLES_DIR / "Pulumi.platform.yaml")
    for namespace, name, where in sorted(refs):
        if (namespace, name) in created | platform_made or name in FILLED_BY_THE_PROGRAM:
            continue
        source = stack.config.secrets.get(f"{namespace}/{name}") or stack.config.secrets.get(name)
        declared = source is not None and source.external
        assert declared and namespace not in stack.created_namespaces, (
            f"{path.name}: {where} names Secret {namespace}/{name}, which the program does not create and the stack "
            f"does not declare external outside its namespaces: a first `pulumi up` would wait for a hand step"
        )
    sourced = {(s.namespace, s.name) for s in stack.managed_secrets}
    # Besides those, the keys the platform mints for acceptance Jobs (stacks/resolve/acceptance.py).
    minted = {
        (ns, m.acceptance.key_secret)
        for m in stack.models
        if m.acceptance is not None and m.acceptance.minted
        for ns in {m.namespace, m.acceptance.admitted_namespace}
    }
    assert created == sourced | minted, (
        "the program creates exactly the Secrets the stack sources from Pulumi secrets and the acceptance keys it mints"
    )


def _region(path: Path) -> str:
    from stacks.load import read_stack

    return read_stack(path).region


def test_every_kind_of_reference_the_inventory_knows_is_one_a_shipped_stack_makes():
    seen = {
        _kind(ref.key) for path in ALL_STACKS for ref in resolved_stack(sections_of(path), _region(path)).secret_refs
    }
    unseen = set(KINDS) - seen - {"models[].secrets.ngcApiKey"}  # the NIM Operator is off in every shipped stack
    assert not unseen, f"kinds of Secret reference no shipped stack exercises: {unseen}"


def _kind(key: str) -> str:
    import re

    return re.sub(r"\[[0-9]+\]", "[]", key.removeprefix("inference-platform:"))


def test_a_reference_with_no_source_in_a_namespace_the_stack_creates_is_refused_naming_the_key_and_the_fix(dev):
    del dev["secrets"]["hf-token"]
    del dev["hfToken"]
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    found = {p.path: p.message for p in exc.value.problems}
    message = found["inference-platform:models[0].secrets.huggingFaceToken"]
    assert "namespace inference, which this stack creates" in message
    assert "secrets.hf-token.fromConfig: {token: <configKey>}" in message and "pulumi config set --secret" in message


def test_an_external_secret_in_a_namespace_the_stack_creates_is_refused(dev):
    dev["secrets"]["hf-token"] = {"external": True}
    del dev["hfToken"]
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    assert "inference-platform:secrets.hf-token.external" in [p.path for p in exc.value.problems]


def test_a_teams_stack_may_declare_its_token_external_in_the_namespace_its_platform_created():
    team = sections_of(EXAMPLES_DIR / "Pulumi.team-search.yaml")
    team["secrets"]["hf-token"] = {"external": True}
    del team["hfToken"]
    stack = resolved_stack(team)
    assert not stack.managed_secrets and not stack.created_namespaces, "the team's stack creates no namespace"


def test_a_pulumi_secret_the_stack_names_but_never_set_is_refused_with_the_command_that_sets_it(dev):
    del dev["hfToken"]
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    problem = exc.value.problems[0]
    assert problem.path == "inference-platform:secrets.hf-token.fromConfig.token"
    assert "pulumi config set --secret hfToken <value>" in problem.message


def test_a_value_set_without_secret_is_refused_and_never_shown(dev):
    dev["hfToken"] = "hf_plaintext_token_value"
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    assert [p.path for p in exc.value.problems] == ["inference-platform:hfToken"]
    assert "pulumi config set --secret hfToken" in str(exc.value) and "hf_plaintext" not in str(exc.value)


def test_a_missing_entry_a_reader_takes_is_refused(dev):
    dev["secrets"]["hf-token"] = {"fromConfig": {"hf-token": "hfToken"}}
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    assert any(
        p.path == "inference-platform:secrets.hf-token.fromConfig" and "token" in p.message for p in exc.value.problems
    )


def test_a_source_nothing_references_is_warned_and_creates_nothing(dev):
    """Turning off what reads a Secret keeps its source for when it is back: a warning, not silence."""
    dev["secrets"]["stale"] = {"fromConfig": {"token": "hfToken"}}
    stack = resolved_stack(dev)
    assert "inference-platform:secrets.stale" in [w.path for w in stack_warnings(stack)]
    assert "stale" not in {s.name for s in stack.managed_secrets}


def test_an_unset_gateway_tls_needs_its_default_certificate_secret_sourced_naming_the_fixes(dev):
    """With gateway.tls unset Envoy terminates with inference-tls in inference-gateway, which the stack
    creates: the first `pulumi up` cannot rely on one made by hand."""
    del dev["gateway"]["tls"]
    with pytest.raises(ConfigError) as exc:
        resolved_stack(dev)
    found = {p.path: p.message for p in exc.value.problems}
    message = found["inference-platform:gateway.tls"]
    assert "inference-tls" in message and "inference-gateway, which this stack creates" in message
    assert "secrets.inference-tls.fromConfig: {tls.crt: <configKey>, tls.key: <configKey>}" in message
    assert "gateway.tls.certificateArn" in message, "or terminate TLS at the load balancer with ACM"
    dev["secrets"]["inference-tls"] = {"fromConfig": {"tls.crt": "tlsCertificate", "tls.key": "tlsPrivateKey"}}
    dev["tlsCertificate"] = dev["tlsPrivateKey"] = {"secure": "v1:placeholder"}
    (tls,) = [s for s in resolved_stack(dev).managed_secrets if s.name == "inference-tls"]
    assert (tls.namespace, tls.type) == ("inference-gateway", "kubernetes.io/tls")


def test_every_shipped_gateway_without_tls_on_its_load_balancer_has_its_certificate_secret_created():
    for path in ALL_STACKS:
        stack = resolved_stack(sections_of(path), _region(path))
        gw = stack.config.gateway
        if not (stack.route_parent.own and gw.enabled) or (gw.tls is not None and gw.tls.certificate_arn):
            continue
        name = gw.tls.secret_name if gw.tls is not None and gw.tls.secret_name else "inference-tls"
        assert ("inference-gateway", name) in created_secrets(path), f"{path.name}: the listener's certificate"


def _record(path: Path, typ: str, name: str) -> Any:
    found = [r for r in rendered_stack(path).resources if r.type == typ and r.name == name]
    assert len(found) == 1, f"one {typ} {name} in {path.name}"
    return found[0]


def test_the_created_secret_waits_for_its_namespace_and_the_pods_mounting_it_wait_for_the_secret():
    secret = _record(DEV, SECRET_TYPE, "platform-secret-inference-hf-token")
    namespace = _record(DEV, "kubernetes:core/v1:Namespace", "platform-ns-inference")
    assert namespace.urn in secret.depends_on, "a Secret in a namespace that does not exist yet is refused"
    deployment = _record(DEV, "kubernetes:apps/v1:Deployment", "platform-models-deployment-qwen3-8b")
    assert secret.urn in deployment.depends_on, "the model's pods mount the token: they start after it exists"


def test_the_litellm_proxy_and_kube_prometheus_stack_wait_for_the_secrets_they_mount():
    platform = EXAMPLES_DIR / "Pulumi.platform.yaml"
    master = _record(platform, SECRET_TYPE, "platform-serving-secret-litellm-litellm-master-key")
    proxy = _record(platform, "kubernetes:apps/v1:Deployment", "deployment-litellm-litellm")
    assert master.urn in proxy.depends_on
    alerts = _record(platform, SECRET_TYPE, "platform-monitoring-secret-monitoring-alertmanager-config")
    release = _record(platform, "kubernetes:helm.sh/v3:Release", "platform-monitoring-kube-prometheus-stack")
    assert alerts.urn in release.depends_on, "Alertmanager reads its configuration from the Secret at start"


def test_each_teams_client_keys_are_its_own_secret_in_its_home_namespace_from_the_platforms_pulumi_secrets():
    platform = EXAMPLES_DIR / "Pulumi.platform.yaml"
    keys = {
        r.inputs["metadata"]["namespace"]: r
        for r in rendered_stack(platform).resources
        if r.type == SECRET_TYPE and r.inputs["metadata"]["name"] == "inference-api-keys"
    }
    assert set(keys) == {"inference-gateway", "search", "chat"}, "the platform's clients' and each team's"
    search_ns = _record(platform, "kubernetes:core/v1:Namespace", "platform-team-search-ns-search")
    assert search_ns.urn in keys["search"].depends_on


def test_the_value_is_a_pulumi_secret_in_the_render_and_never_a_literal():
    secrets = [
        r
        for path in ALL_STACKS
        for r in rendered_stack(path).resources
        if r.type == SECRET_TYPE and r.inputs["metadata"]["name"] not in FILLED_BY_THE_PROGRAM
    ]
    assert secrets
    for record in secrets:
        data = record.inputs["stringData"]
        assert isinstance(data, dict) and data.get("4dabf18193072939515e22adb298388d"), (
            f"{record.name}: stringData is a Pulumi secret (kept encrypted in the state, shown as {SECRET})"
        )
    manifest = next(m for m in rendered_stack(DEV).manifests() if m["kind"] == "Secret")
    assert set(manifest["stringData"].values()) == {SECRET}, "a written manifest shows no value"


def test_a_decrypted_value_reaches_only_its_secret_and_the_checks_never_see_it(monkeypatch):
    token = "hf_ThisIsTheRealTokenValue0123456789"
    config = sections_to_pulumi_config(sections_of(DEV), "us-west-2")
    secret_keys = [k for k, v in config.items() if v.startswith(OFFLINE_PLACEHOLDER)]
    config = {k: (token if v.startswith(OFFLINE_PLACEHOLDER) else v) for k, v in config.items()}
    # As `pulumi up` hands them over: decrypted, the keys listed as secret.
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(secret_keys))
    rendered = run_program(config)
    for record in rendered.resources:
        text = json.dumps(_without_secrets(record.inputs))
        assert token not in text, f"{record.name} holds the token outside a Pulumi secret"
    assert any(token in json.dumps(r.inputs) for r in rendered.resources if r.type == SECRET_TYPE)
    import pulumi

    pulumi.runtime.set_all_config(config)
    found = pulumi_stack_config()
    assert token not in json.dumps(found.sections), "the checks hold only that a key is a secret"


def _without_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if "4dabf18193072939515e22adb298388d" in value:
            return SECRET
        return {k: _without_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def test_the_operator_guide_lists_every_kind_of_secret_reference_from_the_inventory():
    from stacks.resolve.secrets import secrets_table

    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    assert secrets_table() in guide, "docs/operator-guide.md's Secrets table is stacks/resolve/secrets.py KINDS"
