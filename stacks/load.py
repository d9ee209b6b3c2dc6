"""Reading a stack file: its keys as Pulumi reads them, and its values validated into a StackConfig.

Both entry points (the CLI reading a Pulumi.<stack>.yaml, and `__main__.py` reading Pulumi config
under `pulumi up` or the mocks) funnel into `sort_config` (keys read as Pulumi reads them) and
`parse_sections` (values: the config models and what the Region bounds), so they accept and refuse
exactly the same stack files; stacks/pipeline.py then resolves and checks the result.

Keys are read as the Pulumi CLI reads them (pulumi/pulumi sdk/go/common/workspace/loaders.go
`stackConfigNamespacedWithProject` and resource/config/key.go `ParseKey`): a key without a colon
belongs to the project (`gateway:` is `inference-platform:gateway`), `<ns>:config:<name>` is the old
spelling of `<ns>:<name>`, and any other key with two or more colons is not a config key at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .config import PROJECT, SECTIONS, StackConfig
from .errors import ConfigError, Problem, did_you_mean, key_path, member, problems_from, short
from .paths import ROOT
from .regions import region as aws_region
from .regions import regions as aws_regions
from .yamlread import MAX_DEPTH, MAX_NODES, YamlProblem, YamlReadError
from .yamlread import read as read_yaml

__all__ = ["ROOT", "StackFile", "parse_sections", "read_stack", "stack_path"]


# The top-level keys of a Pulumi.<stack>.yaml (pulumi/pulumi sdk/go/common/workspace/project.go
# `ProjectStack`); Pulumi ignores any other, so a misplaced or misspelt one would be dropped silently.
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")

# The AWS provider's config keys (pulumi_aws 7.51.1, pulumi_aws/config/vars.py); tests/test_guard_load.py
# checks this list against the installed provider.
AWS_PROVIDER_KEYS = frozenset(
    {
        "accessKey",
        "allowedAccountIds",
        "assumeRoleWithWebIdentity",
        "assumeRoles",
        "customCaBundle",
        "defaultTags",
        "ec2MetadataServiceEndpoint",
        "ec2MetadataServiceEndpointMode",
        "endpoints",
        "forbiddenAccountIds",
        "httpProxy",
        "httpsProxy",
        "ignoreTags",
        "insecure",
        "maxRetries",
        "noProxy",
        "profile",
        "region",
        "retryMode",
        "s3UsEast1RegionalEndpoint",
        "s3UsePathStyle",
        "secretKey",
        "sharedConfigFiles",
        "sharedCredentialsFiles",
        "skipCredentialsValidation",
        "skipMetadataApiCheck",
        "skipRegionValidation",
        "skipRequestingAccountId",
        "stsRegion",
        "tagPolicyCompliance",
        "token",
        "tokenBucketRateLimiterCapacity",
        "useDualstackEndpoint",
        "useFipsEndpoint",
        "userAgents",
    }
)
# Namespaces whose keys this program leaves to Pulumi without a warning.
QUIET_NAMESPACES = ("pulumi",)

_INTERPOLATION = re.compile(r"\$\{[^}]*\}")


# ---- keys, as Pulumi reads them ----------------------------------------------------------------------


def config_key(raw: str) -> tuple[str, str] | None:
    """A stack file's config key -> (namespace, name) as Pulumi reads it; None if Pulumi cannot."""
    colons = raw.count(":")
    if not raw or raw.endswith(":"):
        return None  # no name
    if colons == 0:
        return PROJECT, raw
    if colons == 1:
        ns, name = raw.split(":")
        return ns, name
    if colons == 2:
        ns, module, name = raw.split(":")
        if module == "config" and ns and name:
            return ns, name
    return None


def _rel(parts: list[str | int]) -> str:
    return "".join(member(part) for part in parts).removeprefix(".")


def _doc_path(path: tuple[str | int, ...]) -> str:
    """A path in the stack file's YAML document -> the key path a problem names."""
    if not path or path == ("config",):
        return "config"
    if path[0] != "config":
        return _rel(list(path))
    raw = path[1]
    parsed = config_key(raw) if isinstance(raw, str) else None
    if parsed is None:
        return "config" + "".join(member(part) for part in path[1:])
    ns, name = parsed
    return f"{ns}:{_rel([name, *path[2:]])}"


@dataclass
class StackFile:
    """A stack file's config, keys sorted as Pulumi reads them: the project's sections, aws:region
    (as written: None when absent) and the warnings about keys this program does not read."""

    sections: dict[str, Any]
    region: Any
    warnings: list[Problem] = field(default_factory=list)
    source: str = ""


def _other_namespace(ns: str, name: str) -> tuple[Problem | None, Problem | None]:
    """(refusal, warning) for a key outside this program's namespace: an AWS provider key it does not
    know, an empty namespace, one that is a misspelling of ours or of aws, or one left to Pulumi."""
    full = f"{ns}:{name}"
    if ns == "aws":
        if name in AWS_PROVIDER_KEYS:
            return None, None
        meant = did_you_mean(name, sorted(AWS_PROVIDER_KEYS), edits=2)
        hint = f"; did you mean aws:{meant}?" if meant else ""
        return None, Problem(full, f"is not a config key of the AWS provider, which ignores it{hint}")
    if not ns:
        return Problem(full, f"has an empty namespace; write {PROJECT}:{name} (or {name} alone)"), None
    if (meant := did_you_mean(ns, [PROJECT], edits=2) or did_you_mean(ns, ["aws"], edits=1)) is not None:
        return (
            Problem(
                full,
                f"the namespace {ns!r} is not one this program or its providers read, so Pulumi would pass "
                f"the key on unread; did you mean {meant}:{name}?",
            ),
            None,
        )
    if ns in QUIET_NAMESPACES:
        return None, None
    return None, Problem(full, f"is not read by this program (namespace {ns!r}); it is left to Pulumi")


def sort_config(config: dict[Any, Any], source: str, lines: Callable[[str], int | None] | None = None) -> StackFile:
    """Sort the config keys of a stack file (or of the engine's config) by namespace, refusing keys
    Pulumi would read otherwise than they look: a key Pulumi cannot parse, two spellings of one key,
    a misspelt namespace or one that differs from ours only by case or separators."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    sections: dict[str, Any] = {}
    region: Any = None
    seen: dict[tuple[str, str], str] = {}

    def at(raw: str) -> str:
        line = lines(raw) if lines else None
        return f"{raw!r} (line {line})" if line else repr(raw)

    for raw, value in config.items():
        if not isinstance(raw, str):
            problems.append(Problem("config", f"has a key {short(raw)} that is not a string"))
            continue
        parsed = config_key(raw)
        if parsed is None:
            problems.append(
                Problem(
                    "config" + member(raw),
                    "is not a Pulumi config key: Pulumi reads `namespace:name` (a key without a namespace is "
                    f"the project's, `{PROJECT}:<name>`), and refuses an empty name or a key with more colons",
                )
            )
            continue
        ns, name = parsed
        if (ns, name) in seen:
            problems.append(
                Problem(
                    f"{ns}:{name}" if ns != PROJECT else key_path([name]),
                    f"is given twice: as {at(seen[(ns, name)])} and as {at(raw)} (Pulumi reads a key without a "
                    f"namespace as {PROJECT}:<key>, and <ns>:config:<key> as <ns>:<key>); keep one",
                )
            )
            continue
        seen[(ns, name)] = raw
        if ns == PROJECT:
            sections[name] = value
            if value is None:
                warnings.append(
                    Problem(key_path([name]), "has no value (Pulumi warns too); the section's defaults apply")
                )
        elif (ns, name) == ("aws", "region"):
            region = value
        else:
            refused, warned = _other_namespace(ns, name)
            problems += [refused] if refused else []
            warnings += [warned] if warned else []
    if problems:
        raise ConfigError(problems, source, warnings)
    return StackFile(sections, region, warnings, source)


# ---- values, whoever read them ----------------------------------------------------------------------


def _walk(value: Any, loc: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (location, value) below `value`, iteratively (a deep value cannot exhaust the stack)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [(loc, value)]
    while stack:
        here, item = stack.pop()
        yield here, item
        if len(here) > MAX_DEPTH:
            continue
        if isinstance(item, dict):
            stack.extend(((*here, k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(((*here, i), v) for i, v in reversed(list(enumerate(item))))


def _at(loc: tuple[str | int, ...]) -> str:
    return key_path(list(loc)) if loc else "config"


def value_problems(raw: dict[str, Any]) -> list[Problem]:
    """What no value in the namespace may be, whichever way it was read: a Pulumi secret (it would be
    echoed into resources), a `${...}` interpolation (Pulumi passes stack config on as written), a
    non-string key, or nesting beyond what a stack file needs."""
    problems: list[Problem] = []
    count = 0
    for loc, value in _walk(raw, ()):
        count += 1
        if count > MAX_NODES:
            problems.append(Problem("config", f"holds more than {MAX_NODES} values; a stack config is small"))
            break
        if len(loc) > MAX_DEPTH:
            problems.append(Problem(_at(loc), f"nests more than {MAX_DEPTH} levels deep"))
            continue
        if isinstance(value, dict):
            for k in value:
                if not isinstance(k, str):
                    problems.append(Problem(_at(loc), f"has a key {short(k)} that is not a string"))
            if "secure" in value and len(value) == 1:
                problems.append(
                    Problem(
                        _at(loc),
                        "is a Pulumi secret: a secret value here would be echoed into resources; set it as a "
                        "Pulumi secret of its own (`pulumi config set --secret <key> <value>`) and name that key "
                        "in `secrets.<Secret>.fromConfig`, which makes the Kubernetes Secrets that carry it",
                    )
                )
        elif isinstance(value, str) and _INTERPOLATION.search(value):
            found = _INTERPOLATION.search(value)
            assert found is not None
            problems.append(
                Problem(
                    _at(loc),
                    f"holds {short(found.group(), 40)}, but Pulumi does not interpolate stack config: the program "
                    f"would get these characters as written; write the value itself",
                )
            )
    return problems


def is_secure(value: Any) -> bool:
    """A Pulumi secret as the program sees it: `{secure: <ciphertext>}` in a stack file, the same shape
    (never the value) for a key the engine marks secret (`pulumi_stack_config`)."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def secret_config_keys(raw_secrets: Any) -> set[str]:
    """The config keys `secrets.<Secret>.fromConfig` names, read from the section as written (before it is
    validated: the keys they name are not sections)."""
    names: set[str] = set()
    if isinstance(raw_secrets, dict):
        for source in raw_secrets.values():
            entries = source.get("fromConfig") if isinstance(source, dict) else None
            if isinstance(entries, dict):
                names.update(v for v in entries.values() if isinstance(v, str))
    return names


def plain_secret_problems(values: dict[str, Any]) -> list[Problem]:
    """A config key `fromConfig` names must be a Pulumi secret: in plain text its value would sit in the
    stack file and in Pulumi's state unencrypted. The value is never shown."""
    return [
        Problem(
            key_path([key]),
            f"is named by secrets.*.fromConfig but is not a Pulumi secret (its value would be stored in clear "
            f"text); set it with `pulumi config set --secret {key} <value>`",
        )
        for key, value in values.items()
        if not is_secure(value)
    ]


def region_problems(region: Any) -> list[Problem]:
    """`aws:region` must be written, as a string naming a Region an AWS account provides."""
    known = aws_regions()
    if region is None:
        return [
            Problem(
                "aws:region",
                "is required: the region the stack deploys to (the AWS provider, Karpenter, the load-balancer "
                "controller and the exports all use it); add e.g. aws:region: us-west-2",
            )
        ]
    if not isinstance(region, str):
        return [Problem("aws:region", f"must be a string naming an AWS Region, e.g. us-west-2 (got {short(region)})")]
    if region in known:
        return []
    if not region.strip():
        return [Problem("aws:region", "is empty; name the AWS Region the stack deploys to, e.g. us-west-2")]
    meant = region.strip() if region.strip() in known else did_you_mean(region, known, edits=2)
    return [
        Problem(
            "aws:region",
            f"{short(region)} is not an AWS Region of a commercial account"
            + (f"; did you mean {meant}?" if meant else "; the Regions are listed in stacks/data/regions.json"),
        )
    ]


_ACM_REGION = re.compile(r"^arn:(?P<partition>[^:]*):acm:(?P<region>[^:]*):")


def region_rules(config: StackConfig) -> list[Problem]:
    """What the stack's Region bounds: the zones a created VPC may span, the ACM certificate's Region."""
    problems: list[Problem] = []
    found = aws_region(config.aws_region)
    if found is None:
        return problems
    vpc = config.cluster.vpc if config.cluster is not None else None
    if vpc is not None and not vpc.adopted and vpc.availability_zones > len(found.zones):
        problems.append(
            Problem(
                key_path(["cluster", "vpc", "availabilityZones"]),
                f"is {vpc.availability_zones}, but {found.code} ({found.name}) has {len(found.zones)} availability "
                f"zones an account can use; ask for at most {len(found.zones)}",
            )
        )
    tls = config.gateway.tls
    arn = tls.certificate_arn if tls is not None else None
    parts = _ACM_REGION.match(arn) if arn else None
    if parts and (parts["region"] != found.code or parts["partition"] != "aws"):
        problems.append(
            Problem(
                key_path(["gateway", "tls", "certificateArn"]),
                f"is a certificate in {parts['region']} (partition {parts['partition']}), but the stack deploys "
                f"to {found.code}: a load balancer can only use an ACM certificate of its own Region; request or "
                f"import the certificate in {found.code}",
            )
        )
    return problems


def _under(path: str, parents: set[str]) -> bool:
    return any(path == p or path.startswith((f"{p}.", f"{p}[")) for p in parents)


def parse_sections(raw: dict[str, Any], region: Any, source: str = "") -> StackConfig:
    """Validate the `inference-platform:*` sections (keys without the prefix) and `aws:region` (as
    written; None when absent): the config models and what the Region bounds. The cross-section rules
    run over the resolved stack (stacks/pipeline.py `check_config`)."""
    if not isinstance(raw, dict):
        raise ConfigError([Problem("config", f"the sections must be a map, not {short(raw)}")], source)
    named = secret_config_keys(raw.get("secrets"))
    values = {k: v for k, v in raw.items() if k not in SECTIONS and k in named}
    raw = {k: v for k, v in raw.items() if k not in values}
    problems: list[Problem] = []
    for key in raw:
        if key not in SECTIONS and isinstance(raw[key], dict) and set(raw[key]) == {"secure"}:
            # A Pulumi secret (`pulumi config set --secret`) that no Secret reads any longer.
            problems.append(
                Problem(
                    key_path([str(key)]),
                    "is a Pulumi secret that no `secrets.<Secret>.fromConfig` entry names, so nothing reads it; "
                    f"name it in the Secret it belongs to (e.g. `secrets.<Secret>.fromConfig: {{<entry>: {key}}}`) "
                    f"or remove it with `pulumi config rm {PROJECT}:{key}`",
                )
            )
        elif key not in SECTIONS:
            meant = did_you_mean(str(key), SECTIONS, edits=0)
            problems.append(
                Problem(
                    key_path([str(key)]),
                    "unknown section; "
                    + (f"did you mean {PROJECT}:{meant}? " if meant else "")
                    + f"sections are {', '.join(SECTIONS)}; a Pulumi secret's key is read only when "
                    "`secrets.<Secret>.fromConfig` names it",
                )
            )
    if problems:
        raise ConfigError(problems, source)
    bad_region = region_problems(region)
    problems = bad_region + value_problems(raw) + plain_secret_problems(values)
    data: dict[str, Any] = {k: v for k, v in raw.items() if v is not None}
    data["secretConfig"] = tuple(sorted(k for k, v in values.items() if is_secure(v)))
    # With a bad aws:region the sections are still checked (all problems at once), against a real
    # Region; the refusal of aws:region stands whatever they say.
    data["awsRegion"] = "us-west-2" if bad_region else region
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as exc:
        seen = {p.path for p in problems}
        problems += [p for p in problems_from(exc, StackConfig) if not _under(p.path, seen)]
        raise ConfigError(problems, source) from None
    problems += region_rules(config)
    if problems:
        raise ConfigError(problems, source)
    return config


# ---- the stack file ---------------------------------------------------------------------------------


def _refused(exc: YamlReadError, source: str) -> ConfigError:
    def line(p: YamlProblem) -> str:
        return f" (line {p.line})" if p.line and f"line {p.line}" not in p.message else ""

    return ConfigError([Problem(_doc_path(p.path), f"{p.message}{line(p)}") for p in exc.problems], source)


def read_stack(path: Path) -> StackFile:
    """A Pulumi.<stack>.yaml read as Pulumi reads it (ConfigError naming each key it cannot read)."""
    source = str(path)
    try:
        doc = read_yaml(path)
    except YamlReadError as exc:
        raise _refused(exc, source) from None
    top = doc.value
    if top is None:
        top = {}
    if not isinstance(top, dict):
        raise ConfigError(
            [Problem("config", f"the stack file must be a YAML map with a `config:` key, not {short(top)}")], source
        )
    problems = []
    for key in top:
        if key in STACK_FILE_KEYS:
            continue
        line = doc.line((key,))
        where = f" (line {line})" if line else ""
        if ":" in key or key in SECTIONS:
            hint = "a config key belongs under `config:`; indent it there"
        elif meant := did_you_mean(key, STACK_FILE_KEYS, edits=2):
            hint = f"did you mean {meant}?"
        else:
            hint = f"a stack file's top-level keys are {', '.join(STACK_FILE_KEYS)}"
        problems.append(
            Problem(
                _doc_path((key,)),
                f"is not a key Pulumi reads at the top of a stack file{where}, so it would be ignored; {hint}",
            )
        )
    config = top.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        problems.append(
            Problem("config", f"must be a map of config keys (`namespace:key: value`), not {short(config)}")
        )
    if problems:
        raise ConfigError(problems, source)
    found = sort_config(config, source, lambda raw: doc.line(("config", raw)))
    if top.get("environment"):
        found.warnings.append(
            Problem(
                "environment",
                "imports Pulumi ESC environments: config they set is not in this file, so it is checked only "
                "when the program runs (pulumi preview)",
            )
        )
    return found


def read_stack_file(path: Path) -> tuple[dict[str, Any], Any]:
    """The namespace's sections and aws:region (as written) of a Pulumi.<stack>.yaml."""
    found = read_stack(path)
    return found.sections, found.region


def stack_path(arg: str) -> Path:
    """A stack name (`dev`) or a path to a Pulumi.<stack>.yaml -> the file's path."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml"):
        return path
    for candidate in (ROOT / f"Pulumi.{arg}.yaml", ROOT / "stacks" / "examples" / f"Pulumi.{arg}.yaml"):
        if candidate.exists():
            return candidate
    raise ConfigError(
        [
            Problem(
                "stack",
                "no such stack: give a stack name with a Pulumi.<name>.yaml "
                "at the project root or in stacks/examples, or a path",
            )
        ],
        arg,
    )


# ---- the engine's config (pulumi up, preview, the mocks) --------------------------------------------


def pulumi_stack_config() -> StackFile:
    """The config as the Pulumi engine (or the mocks) passed it in, keys sorted as a stack file's."""
    from pulumi.runtime import config as runtime_config

    merged: dict[str, Any] = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config.get_config_secret_keys_env())
    problems: list[Problem] = []
    decoded: dict[str, Any] = {}
    for key, value in merged.items():
        parsed = config_key(key) if isinstance(key, str) else None
        if parsed is not None and parsed[0] == PROJECT and (key in secret or runtime_config.is_config_secret(key)):
            # The engine hands a secret over decrypted: the checks see only that it is one, never its value
            # (the program reads it with Config.require_secret, as a secret Output).
            value = {"secure": DECRYPTED}
        elif parsed is not None and parsed[0] == PROJECT and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass  # a plain string
            except (RecursionError, ValueError):
                problems.append(Problem(key_path([parsed[1]]), f"nests more than {MAX_DEPTH} levels deep"))
                continue
        decoded[key] = value
    found = sort_config(decoded, "stack config")
    if problems:
        raise ConfigError(problems, "stack config")
    return found


# What the checks hold for a secret the engine decrypted: a marker, never the value.
DECRYPTED = "[decrypted by Pulumi]"
# What the offline render hands the program for a `secure:` value, which it cannot decrypt: a placeholder
# it marks secret, so the render shows where the secret goes (as `[secret]`) and never a value.
OFFLINE_PLACEHOLDER = "offline-render-placeholder:"


def offline_secret_keys(config: dict[str, str]) -> list[str]:
    """The config keys `sections_to_pulumi_config` gave a placeholder for: the render marks them secret."""
    return sorted(k for k, v in config.items() if isinstance(v, str) and v.startswith(OFFLINE_PLACEHOLDER))


def sections_to_pulumi_config(sections: dict[str, Any], region: Any) -> dict[str, str]:
    """The inverse of `pulumi_stack_config`: what `pulumi up` would hand the program. A `secure:` value
    cannot be decrypted here: it becomes a placeholder naming its key (`offline_secret_keys`)."""
    out = {
        f"{PROJECT}:{k}": f"{OFFLINE_PLACEHOLDER}{PROJECT}:{k}" if is_secure(v) else json.dumps(v)
        for k, v in sections.items()
    }
    if region is not None:
        out["aws:region"] = region if isinstance(region, str) else json.dumps(region)
    return out
