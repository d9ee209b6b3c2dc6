"""Secret rules: every Secret the stack references has a source, before any resource exists.

A pod that mounts a Secret nobody made waits for it (ContainerCreating) until `pulumi up` gives up on
its workload, and a SecurityPolicy naming one admits nobody; so a first `pulumi up` that relies on a
Secret made by hand in a namespace it creates cannot succeed in one run. Each reference
(stacks/resolve/secrets.py) therefore needs `secrets.<name>`: `fromConfig` (the program creates it from
Pulumi secrets of the stack, each set with `pulumi config set --secret`), or `external: true` where the
Secret lives in a namespace this stack does not create.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..config.secrets import source_for
from ..errors import Problem, key_path
from ..resolve.secrets import TLS
from ..resolved import ResolvedStack, SecretRef


def _fix(ref: SecretRef) -> str:
    entries = ", ".join(f"{e}: <configKey>" for e in ref.entries) or "<client>: <configKey>, ..."
    fix = (
        f"add `secrets.{ref.name}.fromConfig: {{{entries}}}` (or `secrets.{ref.namespace}/{ref.name}` for this "
        f"namespace alone) and set each key with `pulumi config set --secret`"
    )
    if ref.type == TLS:
        # A certificate need not be a Secret at all: the NLB can terminate TLS with an ACM certificate.
        fix += "; or set `gateway.tls.certificateArn` (an ACM certificate: the load balancer terminates TLS)"
    return fix


def _unset(ref: SecretRef) -> str:
    """What a reference the stack makes by default (no key written) falls back to."""
    if ref.key == key_path(["gateway", "tls"]):
        return f"is unset, so the HTTPS listener terminates TLS with the kubernetes.io/tls Secret {ref.name}: it "
    return ""


@rule
def every_referenced_secret_has_a_source(stack: ResolvedStack) -> Iterable[Problem]:
    """A reference with no `secrets` entry, or an `external` one in a namespace the stack creates."""
    for ref in stack.secret_refs:
        key, source = source_for(stack.config.secrets, ref.namespace, ref.name)
        created = ref.namespace in stack.created_namespaces
        if source is None and created:
            yield Problem(
                ref.key,
                f"{_unset(ref)}names the Secret {ref.name} in namespace {ref.namespace}, which this stack creates, "
                f"and nothing makes it: a first `pulumi up` would wait for a Secret made by hand. {_fix(ref)}",
            )
        elif source is None:
            yield Problem(
                ref.key,
                f"{_unset(ref)}names the Secret {ref.name} in namespace {ref.namespace} and does not say where it "
                f"comes from: {_fix(ref)}, or, when it is made outside this stack, set "
                f"`secrets.{ref.name}.external: true`",
            )
        elif source.external and created:
            yield Problem(
                key_path(["secrets", key, "external"]),
                f"the Secret {ref.name} ({ref.key}) lives in namespace {ref.namespace}, which this stack creates: "
                f"nothing outside the stack can make it before the first `pulumi up` needs it; use fromConfig",
            )


@rule
def a_created_secret_has_every_entry_its_readers_take(stack: ResolvedStack) -> Iterable[Problem]:
    """`fromConfig` lists every entry each reader of the Secret takes (`token`, `master-key`, ...)."""
    for ref in stack.secret_refs:
        key, source = source_for(stack.config.secrets, ref.namespace, ref.name)
        if source is None or source.from_config is None:
            continue
        missing = [e for e in ref.entries if e not in source.from_config]
        if missing:
            yield Problem(
                key_path(["secrets", key, "fromConfig"]),
                f"lacks {', '.join(missing)}: {ref.key} names this Secret and its reader ({ref.reader}) takes "
                f"{', '.join(ref.entries)}; add `{missing[0]}: <configKey>`",
            )


@rule
def a_secret_is_one_type(stack: ResolvedStack) -> Iterable[Problem]:
    """One Secret name is read as one type (a TLS pair, a registry login, or opaque entries)."""
    first: dict[str, SecretRef] = {}
    for ref in stack.secret_refs:
        seen = first.setdefault(ref.name, ref)
        if seen.type != ref.type:
            yield Problem(
                ref.key,
                f"names {ref.name}, which {seen.key} reads as a {seen.type} Secret and this key as a {ref.type} "
                f"one; give each its own Secret",
            )


@rule
def every_config_key_a_secret_names_is_a_pulumi_secret(stack: ResolvedStack) -> Iterable[Problem]:
    """Each `fromConfig` value names a config key set with `pulumi config set --secret`."""
    have = set(stack.config.secret_config)
    for name, source in stack.config.secrets.items():
        for entry, key in (source.from_config or {}).items():
            if key not in have:
                yield Problem(
                    key_path(["secrets", name, "fromConfig", entry]),
                    f"names the Pulumi secret {key}, which is not set: run `pulumi config set --secret {key} "
                    f"<value>` (inference-platform:{key}) before `pulumi up`",
                )


@warning
def every_listed_secret_is_referenced(stack: ResolvedStack) -> Iterable[Problem]:
    """A `secrets` entry names a Secret some key of this stack references (a team's key Secret is its
    platform stack's to provide). A warning, not a refusal: turning off what reads a Secret (an add-on,
    the gateway's keys) leaves its source and its Pulumi secrets in place for when it is back; the program
    creates nothing from it meanwhile."""
    used = {source_for(stack.config.secrets, ref.namespace, ref.name)[0] for ref in stack.secret_refs}
    for name in stack.config.secrets:
        if name not in used:
            yield Problem(
                key_path(["secrets", name]),
                f"no key of this stack references the Secret {name} (there), so the program does not create it; "
                f"remove it, or name it where it is used (a team's teams[].apiKeysSecret is provided by its "
                f"platform stack)",
            )
