"""Every Kubernetes Secret a stack references, in one list, and the Secrets the program creates.

A reference is a key of the stack file that names a Secret (`models[0].secrets.huggingFaceToken`), the
namespace the Secret must be in (where its reader is), the entries its reader takes and who that is.
The rules (stacks/rules/secrets.py) refuse a reference with no source; the components create every
`fromConfig` Secret in each namespace that references it (components/secrets.py), before what mounts
it; docs/operator-guide.md's Secrets table is this list (tests/test_secrets_sources.py holds them
together). Secrets the program makes itself with no value (LiteLLM's per-caller `litellm-key`, kept by
its key job) and the charts' own are not references.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..config import StackConfig
from ..config.addons import AddonsSection
from ..config.secrets import source_for
from ..errors import key_path
from ..resolved import (
    AIBRIX_GATEWAY,
    DEFAULT_TLS_SECRET,
    GATEWAY_NAMESPACE,
    LITELLM_NAMESPACE,
    MONITORING_NAMESPACE,
    GatewayParent,
    ManagedSecret,
    ModelEntry,
    PlatformView,
    SecretRef,
)

OPAQUE = "Opaque"
TLS = "kubernetes.io/tls"
DOCKER_CONFIG = "kubernetes.io/dockerconfigjson"

# What each kind of reference is, for the operator guide's table: (key pattern, namespace, entries, type,
# reader, rotation). The references below are built from these rows, so the table cannot miss one.
KINDS: dict[str, tuple[str, tuple[str, ...], str, str, str]] = {
    "gateway.apiKeysSecret": (
        "the Gateway's (inference-gateway, or AIBrix's aibrix-system)",
        (),
        OPAQUE,
        "Envoy Gateway (the listener's and routes' SecurityPolicy apiKeyAuth): one entry per platform client",
        "edit the entry; Envoy Gateway reloads it, no restart",
    ),
    "gateway.tls.secretName": (
        "inference-gateway",
        ("tls.crt", "tls.key"),
        TLS,
        "Envoy Gateway (the HTTPS listener's certificateRefs; `inference-tls` when `gateway.tls` is unset)",
        "replace both entries; Envoy reloads the certificate",
    ),
    "teams[].apiKeysSecret": (
        "the team's home namespace",
        (),
        OPAQUE,
        "Envoy Gateway (SecurityPolicies of routes that admit the team): one entry per client of the team",
        "edit the entry; Envoy Gateway reloads it",
    ),
    "addons.litellm.masterKeySecret": (
        LITELLM_NAMESPACE,
        ("master-key",),
        OPAQUE,
        "the LiteLLM proxy (file), its key job, Prometheus's scrape of the proxy",
        "change the value; the proxy's pods restart with `pulumi up` (kubectl rollout restart otherwise)",
    ),
    "addons.litellm.externalProviders[].apiKeySecret": (
        LITELLM_NAMESPACE,
        ("api-key",),
        OPAQUE,
        "the LiteLLM proxy (file, exported as `<NAME>_API_KEY` at start)",
        "change the value, then restart the proxy's pods",
    ),
    "addons.litellm.databaseUrlSecret": (
        LITELLM_NAMESPACE,
        ("database-url",),
        OPAQUE,
        "the LiteLLM proxy (file, exported as DATABASE_URL at start)",
        "change the value, then restart the proxy's pods",
    ),
    "addons.monitoring.alertmanagerConfigSecret": (
        MONITORING_NAMESPACE,
        ("alertmanager.yaml",),
        OPAQUE,
        "Alertmanager (kube-prometheus-stack `configSecret`)",
        "change the value; the config reloader applies it",
    ),
    "addons.monitoring.grafanaAdminSecret": (
        MONITORING_NAMESPACE,
        ("admin-user", "admin-password"),
        OPAQUE,
        "Grafana (kube-prometheus-stack `grafana.admin.existingSecret`)",
        "change the values, then restart Grafana's pod",
    ),
    "models[].secrets.huggingFaceToken": (
        "the model's namespace",
        ("token",),
        OPAQUE,
        "the model's preparation step and engine pods, its benchmark Job (file)",
        "change the value; pods read it when they start",
    ),
    "models[].secrets.ngcApiKey": (
        "the model's namespace",
        ("NGC_API_KEY",),
        OPAQUE,
        "the NIM Operator (a NIMService's `authSecret`)",
        "change the value; the operator's pods read it when they start",
    ),
    "models[].nim.imagePullSecret": (
        "the model's namespace",
        (".dockerconfigjson",),
        DOCKER_CONFIG,
        "the kubelet pulling the NIM image from nvcr.io",
        "change the value; used at the next image pull",
    ),
    "models[].benchmark.apiKeySecret": (
        "the model's namespace",
        ("api-key",),
        OPAQUE,
        "the model's benchmark Job (file), and the model's route, which admits it",
        "change the value; the next benchmark run uses it",
    ),
    "models[].acceptance.apiKeySecret": (
        "the model's namespace",
        ("api-key",),
        OPAQUE,
        "the model's acceptance Job (file), and the model's route, which admits it",
        "change the value; the next acceptance Job (a new one after any change to the model) uses it",
    ),
}


def _ref(kind: str, path: list[str | int], name: str, namespace: str, mounted: bool) -> SecretRef:
    _, entries, typ, reader, _ = KINDS[kind]
    return SecretRef(
        key=key_path(path), name=name, namespace=namespace, entries=entries, type=typ, reader=reader, mounted=mounted
    )


def _gateway_refs(config: StackConfig, parent: GatewayParent) -> Iterator[SecretRef]:
    gw = config.gateway
    if not (gw.enabled or config.addons.aibrix.enabled):
        return
    if gw.auth == "apiKey":
        yield _ref("gateway.apiKeysSecret", ["gateway", "apiKeysSecret"], gw.api_keys_secret, parent.namespace, False)
        for i, team in enumerate(config.teams):
            home = team.home
            yield _ref("teams[].apiKeysSecret", ["teams", i, "apiKeysSecret"], team.api_keys_secret, home, False)
    if parent.own and gw.tls is not None and gw.tls.secret_name is not None:
        name = gw.tls.secret_name
        yield _ref("gateway.tls.secretName", ["gateway", "tls", "secretName"], name, GATEWAY_NAMESPACE, False)
    elif parent.own and gw.tls is None:
        # Unset, the HTTPS listener still terminates TLS, with the default Secret (components/gateway/routing.py
        # tls_secret_name): a reference like any other, at the key that would change it.
        yield _ref("gateway.tls.secretName", ["gateway", "tls"], DEFAULT_TLS_SECRET, GATEWAY_NAMESPACE, False)


def _addon_refs(addons: AddonsSection) -> Iterator[SecretRef]:
    llm = addons.litellm
    if llm.enabled:
        kind = "addons.litellm.masterKeySecret"
        yield _ref(kind, ["addons", "litellm", "masterKeySecret"], llm.master_key_secret, LITELLM_NAMESPACE, True)
        for i, p in enumerate(llm.external_providers):
            if p.api_key_secret is None:
                continue  # Bedrock without an API key: the proxy's IAM role (stacks/rules/serving.py)
            path: list[str | int] = ["addons", "litellm", "externalProviders", i, "apiKeySecret"]
            yield _ref(
                "addons.litellm.externalProviders[].apiKeySecret", path, p.api_key_secret, LITELLM_NAMESPACE, True
            )
        if llm.database_url_secret:
            path = ["addons", "litellm", "databaseUrlSecret"]
            yield _ref("addons.litellm.databaseUrlSecret", path, llm.database_url_secret, LITELLM_NAMESPACE, True)
    mon = addons.monitoring
    if mon.enabled and not mon.existing_prometheus:
        if mon.alertmanager_config_secret:
            path = ["addons", "monitoring", "alertmanagerConfigSecret"]
            kind = "addons.monitoring.alertmanagerConfigSecret"
            yield _ref(kind, path, mon.alertmanager_config_secret, MONITORING_NAMESPACE, True)
        if mon.grafana and mon.grafana_admin_secret:
            path = ["addons", "monitoring", "grafanaAdminSecret"]
            kind = "addons.monitoring.grafanaAdminSecret"
            yield _ref(kind, path, mon.grafana_admin_secret, MONITORING_NAMESPACE, True)


def _model_refs(entry: ModelEntry, addons: AddonsSection) -> Iterator[SecretRef]:
    m, ns, i = entry.config, entry.namespace, entry.index
    if m.secrets.hugging_face_token:
        path: list[str | int] = ["models", i, "secrets", "huggingFaceToken"]
        yield _ref("models[].secrets.huggingFaceToken", path, m.secrets.hugging_face_token, ns, True)
    if m.secrets.ngc_api_key and addons.nim_operator.enabled:
        yield _ref("models[].secrets.ngcApiKey", ["models", i, "secrets", "ngcApiKey"], m.secrets.ngc_api_key, ns, True)
    if m.nim is not None:
        path = ["models", i, "nim", "imagePullSecret"]
        yield _ref("models[].nim.imagePullSecret", path, m.nim.image_pull_secret, ns, True)
    if m.benchmark is not None:
        path = ["models", i, "benchmark", "apiKeySecret"]
        yield _ref("models[].benchmark.apiKeySecret", path, m.benchmark.api_key_secret, ns, True)
    if m.acceptance is not None and m.acceptance.enabled and m.acceptance.api_key_secret is not None:
        path = ["models", i, "acceptance", "apiKeySecret"]
        yield _ref("models[].acceptance.apiKeySecret", path, m.acceptance.api_key_secret, ns, True)


def secret_refs(
    config: StackConfig, view: PlatformView, entries: tuple[ModelEntry, ...], parent: GatewayParent, owns: bool
) -> tuple[SecretRef, ...]:
    """Every Secret the stack references, in the order of its keys. A team's stack references only its
    models' (its key Secret, `teams[].apiKeysSecret`, is its platform's to provide)."""
    found: list[SecretRef] = []
    if owns:
        found += _gateway_refs(config, parent)
        found += _addon_refs(view.addons)
    for entry in entries:
        found += _model_refs(entry, view.addons)
    return tuple(found)


def created_namespaces(
    config: StackConfig, view: PlatformView, models_ns: set[str], parent: GatewayParent
) -> frozenset[str]:
    """The namespaces this stack creates (none for a team's stack: its namespaces are its platform's)."""
    if config.stack.role == "workloads":
        return frozenset()
    found = set(models_ns) | {n for t in view.teams for n in t.namespaces}
    if parent.own:
        found.add(GATEWAY_NAMESPACE)
    addons = view.addons
    if addons.aibrix.enabled:
        found.add(AIBRIX_GATEWAY[0])
    if addons.litellm.enabled:
        found.add(LITELLM_NAMESPACE)
    if addons.monitoring.enabled:
        found.add(MONITORING_NAMESPACE)
    return frozenset(found)


def managed_secrets(config: StackConfig, refs: tuple[SecretRef, ...]) -> tuple[ManagedSecret, ...]:
    """One Secret per (namespace, name) that some reference needs and `secrets.<name>.fromConfig` sources,
    with its entries as the stack file lists them."""
    found: dict[tuple[str, str], ManagedSecret] = {}
    for ref in refs:
        _, source = source_for(config.secrets, ref.namespace, ref.name)
        if source is None or source.from_config is None or (ref.namespace, ref.name) in found:
            continue
        found[(ref.namespace, ref.name)] = ManagedSecret(
            name=ref.name, namespace=ref.namespace, type=ref.type, entries=tuple(source.from_config.items())
        )
    return tuple(found.values())


def secrets_table() -> str:
    """The operator guide's table of every kind of Secret reference (docs/operator-guide.md, Secrets)."""
    rows = [
        "| key | namespace | entries | type | who reads it | rotate |",
        "|---|---|---|---|---|---|",
    ]
    for key, (namespace, entries, typ, reader, rotate) in KINDS.items():
        shown = ", ".join(f"`{e}`" for e in entries) or "one per client"
        rows.append(f"| `{key}` | {namespace} | {shown} | {typ} | {reader} | {rotate} |")
    return "\n".join(rows)
