"""`models[].engineArgs` pass through after the flags the platform manages; they cannot take over
what the platform owns: where the server listens, which model it loads and the name it serves it
under, the parallelism sizes that follow from `acceleratorsPerReplica`, `--trust-remote-code`
(`trustRemoteCode`), a Dynamo worker's role and KV-routing wiring (KV transfer, KV events, the prefix
cache they come from, a worker set's router), the typed keys (`maxModelLen`,
`sglang.grammarBackend`, `tgi.quantize`), a config file that would set any of these out of sight, and
anything that looks like a credential.

Each engine's flag spellings come from its own parser at the pinned version:
- vLLM 0.29.0 (`vllm/engine/arg_utils.py`, `vllm/entrypoints/launchers/cli_args.py`, where 0.29 keeps
  what was `entrypoints/openai/cli_args.py`, and `vllm/utils/argparse_utils.py`): `vllm serve`'s
  subparser is a FlexibleArgumentParser built without `allow_abbrev=False` (no module of the 0.29.0
  wheel sets it), so argparse accepts any unambiguous prefix of a long flag (`--po` for `--port`);
  before parsing, `_` in a flag name becomes `-` (`--api_key`), and `--flag.key value` is a JSON
  field of `--flag`. Boolean fields get a `--no-` twin (BooleanOptionalAction). NIM 2.0 forwards
  vLLM flags after `nim-serve`, vllm-neuron runs vLLM 0.16's parser of the same design, and
  Dynamo's vLLM worker hands the flags its own parser (`allow_abbrev=False`) does not know to a
  vLLM FlexibleArgumentParser, which abbreviates.
- SGLang 0.5.19 (`sglang/srt/server_args.py` `prepare_server_args`): a plain
  `argparse.ArgumentParser`, so prefixes are accepted too; `--config` merges a YAML file.
- TGI 3.3.7 (`launcher/src/main.rs`): clap without `infer_long_args`, so only exact long flags,
  `--flag=value`, and short flags (`-p` is the port) alone, clustered (`-ep`) or with the value
  attached (`-p9000`).
- Ollama (`cmd/cmd.go`): `ollama serve` takes no arguments at all (`cobra.ExactArgs(0)`); it is
  configured by environment, which the platform sets.
- Ray Serve: the platform builds the LLM config; engineArgs would be dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from components.engines import ENGINES

from ..checks import rule
from ..config import ModelSection, StackConfig
from ..errors import Problem, key_path

ADDRESS = (
    "sets where the server listens, which the platform owns: the probes, the Service, the NetworkPolicy and the "
    "route reach it on 0.0.0.0 at port {port}; remove it"
)
MODEL = (
    "chooses what the server loads, which the platform owns: it serves the prepared copy of models[].model at "
    "models[].revision; change model or revision instead"
)
NAME = "sets the served model name, which is models[].name (clients and the route use it); rename the model instead"
PARALLEL = (
    "sets a parallelism size, which the platform derives from acceleratorsPerReplica, nodesPerReplica and "
    "parallelism (the pods request exactly those accelerators); change those keys instead"
)
GROUP = (
    "sets how the pods of a multi-node group find each other, which the platform wires from the LeaderWorkerSet "
    "(nodesPerReplica); remove it"
)
TRUST = (
    "would run code from the model repository around models[].trustRemoteCode; set trustRemoteCode: true on the "
    "model if it needs it"
)
MAXLEN = "sets the context length, which is models[].maxModelLen; set maxModelLen instead"
GRAMMAR = "sets the grammar backend, which is models[].sglang.grammarBackend; set that key instead"
QUANT = "sets the quantization, which is models[].tgi.quantize (checked against tgi.weightsFormat); set that instead"
CONFIG = (
    "reads options from a file, which could set any flag out of sight of these checks; list each flag in "
    "engineArgs instead"
)
DISAGG = "sets the Dynamo role wiring, which the platform derives from dynamo.mode; remove it"
KV_EVENTS = (
    "sets how the worker publishes its KV cache events, which the platform configures on every Dynamo worker "
    "(the Frontend's KV router routes by them); remove it"
)
KV_CACHE = (
    "turns off the prefix cache whose KV events the Frontend's KV router routes by, which the platform keeps on "
    "for every Dynamo worker; remove it"
)
ROUTER = (
    "sets the router this worker set advertises, which replaces the Frontend's KV routing for it (Dynamo's "
    "per-worker-set router override); remove it"
)
API_KEY = (
    "puts a credential into the container's arguments, readable by anyone who can read the pod spec; clients "
    "authenticate at the gateway (gateway.auth: apiKey with gateway.apiKeysSecret, or jwt), and the engine's "
    "port is closed to everything but the gateway"
)
HF_TOKEN = (
    "puts a credential into the container's arguments; set secrets.huggingFaceToken to an existing Secret "
    "instead (mounted as a file)"
)
TUNNEL = (
    "opens an ngrok tunnel from the server to the internet, around the gateway and its authentication; "
    "remove it (models are reached through the gateway)"
)
CREDENTIAL = (
    "looks like a credential, and a credential never goes into arguments: use the Secret mechanisms "
    "(secrets.huggingFaceToken, secrets.ngcApiKey, gateway.apiKeysSecret, addons.litellm "
    "externalProviders[].apiKeySecret), which mount files"
)

_VLLM: dict[str, str] = {
    "--host": ADDRESS,
    "--port": ADDRESS,
    "--uds": ADDRESS,
    "--model": MODEL,
    "--revision": MODEL,
    "--tokenizer": MODEL,
    "--tokenizer-revision": MODEL,
    "--code-revision": MODEL,
    "--served-model-name": NAME,
    "--config": CONFIG,
    "--tensor-parallel-size": PARALLEL,
    "-tp": PARALLEL,
    "--pipeline-parallel-size": PARALLEL,
    "-pp": PARALLEL,
    "--data-parallel-size": PARALLEL,
    "-dp": PARALLEL,
    "--data-parallel-size-local": PARALLEL,
    "-dpl": PARALLEL,
    "--nnodes": PARALLEL,
    "-n": PARALLEL,
    "--node-rank": PARALLEL,
    "-r": PARALLEL,
    "--master-addr": GROUP,
    "--master-port": GROUP,
    "--headless": GROUP,
    "--distributed-executor-backend": GROUP,
    "--trust-remote-code": TRUST,
    "--no-trust-remote-code": TRUST,
    "--max-model-len": MAXLEN,
    "--api-key": API_KEY,
    "--hf-token": HF_TOKEN,
}
# Exact vLLM flags that are prefixes of an owned one (so they are not abbreviations of it).
_VLLM_EXACT = frozenset({"--model", "--tokenizer", "--data-parallel-size", "-dp"})

_SGLANG: dict[str, str] = {
    "--host": ADDRESS,
    "--port": ADDRESS,
    "--model-path": MODEL,
    "--model": MODEL,
    "--tokenizer-path": MODEL,
    "--revision": MODEL,
    "--served-model-name": NAME,
    "--config": CONFIG,
    "--tp-size": PARALLEL,
    "--tensor-parallel-size": PARALLEL,
    "--pp-size": PARALLEL,
    "--pipeline-parallel-size": PARALLEL,
    "--dp-size": PARALLEL,
    "--data-parallel-size": PARALLEL,
    "--nnodes": PARALLEL,
    "--node-rank": PARALLEL,
    "--dist-init-addr": GROUP,
    "--nccl-init-addr": GROUP,
    "--trust-remote-code": TRUST,
    "--context-length": MAXLEN,
    "--grammar-backend": GRAMMAR,
    "--api-key": API_KEY,
    "--admin-api-key": API_KEY,
    "--ssl-keyfile-password": CREDENTIAL,
}
_SGLANG_EXACT = frozenset({"--model", "--ssl-keyfile"})
# SGLang flags whose names end like a credential's but are not one.
_SGLANG_NOT_SECRETS = frozenset({"--bucket-time-to-first-token", "--kt-max-deferred-experts-per-token"})

_TGI: dict[str, str] = {
    "--hostname": ADDRESS,
    "--port": ADDRESS,
    "-p": ADDRESS,
    "--model-id": MODEL,
    "--revision": MODEL,
    "--num-shard": PARALLEL,
    "--sharded": PARALLEL,
    "--trust-remote-code": TRUST,
    "--max-total-tokens": MAXLEN,
    "--max-input-tokens": MAXLEN,
    "--max-input-length": MAXLEN,
    "--quantize": QUANT,
    "--api-key": API_KEY,
    "--ngrok": TUNNEL,
    "--ngrok-authtoken": TUNNEL,
    "--ngrok-edge": TUNNEL,
}
# TGI 3.3.7's short flags: those taking no value, and those taking one (what follows is the value).
_TGI_SHORT_FLAGS = frozenset("ehV")
_TGI_SHORT_VALUES = {"p": "-p", "g": "-g"}

# What Dynamo's workers add for its graph roles (components/engines/dynamo.py _worker_args).
_DYNAMO = {
    "--disaggregation-mode": DISAGG,
    "--disaggregation-transfer-backend": DISAGG,
    "--kv-transfer-config": DISAGG,
    "--kv-events-config": KV_EVENTS,
    "--publish-kv-events": KV_EVENTS,
    "--no-publish-kv-events": KV_EVENTS,
    "--publish-events-and-metrics": KV_EVENTS,
    "--no-publish-events-and-metrics": KV_EVENTS,
    "--no-enable-prefix-caching": KV_CACHE,
    "--disable-radix-cache": KV_CACHE,
    "--router-mode": ROUTER,
    "--engine-config-json": CONFIG,
    "--model-path": MODEL,
    "--max-seq-len": MAXLEN,
    "--context-length": MAXLEN,
}

_NO_ARGS = {
    "ollama": "`ollama serve` takes no arguments (cobra.ExactArgs(0)) and is configured by environment, which the "
    "platform sets; remove engineArgs",
    "ray-serve": "Ray Serve takes no engineArgs: the platform builds its LLM config and would drop them; remove "
    "engineArgs",
}

_SECRET_NAME = re.compile(
    r"(^|-)(api-?key|token|auth-?token|access-?token|secret|secret-key|access-key|password|passwd)$", re.IGNORECASE
)
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-[A-Za-z0-9_-]{6,}|sk_(live|test)_[A-Za-z0-9]{6,}|hf_[A-Za-z0-9]{20,}|nvapi-[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|(AKIA|ASIA)[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}|Bearer\s+\S{8,})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)


@dataclass(frozen=True)
class Dialect:
    """How one engine's parser reads a flag: its owned spellings, the exact flags that are prefixes of
    owned ones, whether long flags abbreviate (argparse) and whether `_` reads as `-` (vLLM)."""

    engine: str
    owned: dict[str, str]
    exact: frozenset[str] = frozenset()
    abbreviates: bool = True
    underscores: bool = False
    clap_shorts: bool = False
    not_secrets: frozenset[str] = frozenset()


VLLM = Dialect("vLLM 0.29", _VLLM, _VLLM_EXACT, underscores=True)
DIALECTS: dict[str, Dialect] = {
    "vllm": VLLM,
    "neuron-vllm": Dialect("vLLM 0.16 (vllm-neuron)", _VLLM, _VLLM_EXACT, underscores=True),
    "nim": Dialect("NIM's vLLM", _VLLM, _VLLM_EXACT, underscores=True),
    "sglang": Dialect("SGLang 0.5.19", _SGLANG, _SGLANG_EXACT, not_secrets=_SGLANG_NOT_SECRETS),
    "tgi": Dialect("TGI 3.3.7 (clap)", _TGI, abbreviates=False, clap_shorts=True),
    "dynamo-vllm": Dialect("Dynamo's vLLM worker", _VLLM | _DYNAMO, _VLLM_EXACT, underscores=True),
    "dynamo-trtllm": Dialect("Dynamo's TensorRT-LLM worker", _VLLM | _DYNAMO, _VLLM_EXACT, underscores=True),
    "dynamo-sglang": Dialect(
        "Dynamo's SGLang worker", _SGLANG | _DYNAMO, _SGLANG_EXACT, not_secrets=_SGLANG_NOT_SECRETS
    ),
}


def dialect(model: ModelSection) -> Dialect | None:
    if model.engine == "dynamo":
        return DIALECTS[f"dynamo-{model.dynamo.backend if model.dynamo else 'vllm'}"]
    return DIALECTS.get(model.engine)


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _flag_name(token: str, d: Dialect) -> str:
    """The flag a token names, as the engine's parser reads it (`--api_key=x` -> `--api-key`)."""
    name = token.split("=", 1)[0]
    if name.startswith("--") and "." in name:
        name = name.split(".", 1)[0]  # vLLM's `--flag.key value` sets a JSON field of --flag
    if d.underscores and name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name


HOW = {
    "abbreviation": "argparse accepts a flag's unambiguous prefix",
    "attached": "argparse reads a one-letter option's value attached to it",
    "short": "clap reads clustered short options and an attached value",
    "underscore": "vLLM reads `_` in a flag name as `-`",
}


def owned_flag(token: str, d: Dialect) -> tuple[str, str, str] | None:
    """(the owned flag this token sets, why it is owned, how the spelling reaches it), or None."""
    if not token.startswith("-") or token in ("-", "--"):
        return None
    name = _flag_name(token, d)
    if name in d.owned:
        raw = token.split("=", 1)[0].split(".", 1)[0]
        return name, d.owned[name], "" if raw == name else "underscore"
    if d.clap_shorts:
        if name.startswith("--"):
            return None
        for char in token[1:]:
            if char in _TGI_SHORT_FLAGS:
                continue
            flag = _TGI_SHORT_VALUES.get(char)
            return (flag, d.owned[flag], "short") if flag in d.owned else None
        return None
    if not d.abbreviates or name in d.exact:
        return None
    if name.startswith("--"):
        full = sorted(o for o in d.owned if o.startswith("--") and o.startswith(name)) if len(name) > 2 else []
        return (full[0], d.owned[full[0]], "abbreviation") if full else None
    # Single dash: a prefix of an owned short option (`-t` for `-tp`), or a one-letter owned option with its
    # value attached (`-n2` is `-n 2` to argparse).
    full = sorted(o for o in d.owned if not o.startswith("--") and o.startswith(name) and o != name)
    if full:
        return full[0], d.owned[full[0]], "abbreviation"
    if len(name) > 2 and name[:2] in d.owned:
        return name[:2], d.owned[name[:2]], "attached"
    return None


def _secret_named(token: str, d: Dialect) -> bool:
    if not token.startswith("--"):
        return False
    name = _flag_name(token, d)
    return name not in d.not_secrets and bool(_SECRET_NAME.search(name[2:]))


def engine_arg_problems(i: int, model: ModelSection) -> Iterable[Problem]:
    args = model.engine_args
    if not args:
        return
    if model.engine in _NO_ARGS:
        yield Problem(key_path(["models", i, "engineArgs"]), _NO_ARGS[model.engine])
        return
    d = dialect(model)
    if d is None:
        return
    port = ENGINES[model.engine].FACTS.port
    for j, token in enumerate(args):
        where = key_path(["models", i, "engineArgs", j])
        if _SECRET_VALUE.search(token):
            flag = token.split("=", 1)[0] if token.startswith("-") and "=" in token else None
            shown = f"{_short(flag)}=..." if flag else "this value"
            yield Problem(where, f"{shown} {CREDENTIAL}")
            continue
        if token.startswith("-") and re.search(r"\s", token.split("=", 1)[0]):
            first = owned_flag(token.split()[0], d)
            if first is not None:
                yield Problem(where, f"{_short(token)!r} sets {first[0]}, which {first[1].format(port=port)}")
                continue
            yield Problem(
                where,
                f"{_short(token)!r}: a flag and its value are two items of engineArgs (no shell splits them); write "
                f'["--flag", "value"] or "--flag=value"',
            )
            continue
        found = owned_flag(token, d)
        if found is not None:
            flag, why, how = found
            spelled = f"{_short(token.split('=', 1)[0])!r} sets {flag} ({HOW[how]}), which" if how else flag
            yield Problem(where, f"{spelled} {why.format(port=port)}")
            continue
        if _secret_named(token, d):
            yield Problem(where, f"{_short(_flag_name(token, d))} {CREDENTIAL}")


@rule
def engine_args_leave_the_platform_its_flags(config: StackConfig) -> Iterable[Problem]:
    for i, model in enumerate(config.models):
        yield from engine_arg_problems(i, model)
