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

from ..checks import rule
from ..engine_facts import Dialect
from ..errors import Problem
from ..flags import CREDENTIAL
from ..resolved import ModelEntry, ResolvedStack

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
    if d.short_values:
        if name.startswith("--"):
            return None
        for char in token[1:]:
            if char in d.short_flags:
                continue
            flag = d.short_values.get(char)
            return (flag, d.owned[flag], "short") if flag is not None and flag in d.owned else None
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


def engine_arg_problems(entry: ModelEntry) -> Iterable[Problem]:
    args = entry.config.engine_args
    if not args:
        return
    d = entry.made.dialect
    if d.refused is not None:
        yield Problem(entry.key("engineArgs"), d.refused)
        return
    port = entry.made.port
    for j, token in enumerate(args):
        where = entry.key("engineArgs", j)
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
def engine_args_leave_the_platform_its_flags(stack: ResolvedStack) -> Iterable[Problem]:
    for entry in stack.entries:
        yield from engine_arg_problems(entry)
