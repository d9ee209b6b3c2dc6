r"""Shared pieces of the stack-config models: the strict base class and reusable field types.

Every model forbids unknown keys and is frozen, so a typo in a stack file is an error, never a
silently ignored setting. Stack-file keys are camelCase; Python attributes are snake_case.

Values are read exactly as written: nothing is stripped or normalized. Every string of the stack
file (values, list items and map keys, at any depth) is refused when it holds a control or
invisible formatting character (NUL, escape, a bidirectional override, a zero-width space), has
leading or trailing whitespace, or is empty (`Strict._plain_text`), each at its own key path.
Patterns use explicit ASCII classes (`[0-9]`, never `\d` or `\w`, which match other scripts' digits
and letters).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..quantity import QuantityError, mebibytes, millicores

PROJECT = "inference-platform"


def stack_key(field: str) -> str:
    """snake_case attribute -> the stack file's camelCase key, with unit suffixes as the contract
    spells them (root_volume_gib -> rootVolumeGiB, throughput_per_tib -> throughputPerTiB)."""
    key = to_camel(field)
    for wrong, right in (("Gib", "GiB"), ("Tib", "TiB"), ("Mibps", "MiBps"), ("Mib", "MiB")):
        if key.endswith(wrong):
            key = key[: -len(wrong)] + right
    return key


# Unicode categories refused in any string: controls (Cc: NUL, ESC, DEL, C1), format characters (Cf:
# bidirectional overrides, zero-width spaces, BOM), surrogates, private use, line and paragraph
# separators.
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
SHOWN_CHARS = 40


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """A bad value as a message echoes it: its repr, cut to a short prefix when long."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"


def text_problem(value: str) -> str | None:
    """Why a stack-file string cannot be used as written, or None."""
    if value == "":
        return "is an empty string: give a value, or remove the key (or list item) to use the default"
    # str.isprintable() is False for every refused category (all are Unicode "Other" or "Separator"),
    # so the per-character scan runs only on the rare value that holds one: a 5 MB value costs
    # milliseconds, not seconds.
    if not value.isprintable():
        for i, char in enumerate(value):
            kind = _REFUSED_CATEGORIES.get(unicodedata.category(char))
            if kind:
                return f"holds {kind} (U+{ord(char):04X}) at position {i}: values are used byte for byte, so remove it"
    if value != value.strip():
        return (
            f"{shown(value)} has leading or trailing whitespace: values are used exactly as written, never "
            f"trimmed; remove it"
        )
    return None


def _holds_model(annotation: Any) -> bool:
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(arg) for arg in get_args(annotation))


@functools.cache
def _fields_holding_models(model: type[BaseModel]) -> dict[str, bool]:
    """A model's keys (as written in the stack file) -> whether the field holds a nested model."""
    return {(f.alias or n): _holds_model(f.annotation) for n, f in model.model_fields.items()}


def _scalar_kind(annotation: Any) -> str | None:
    """ "bool" for a field that is a boolean (or None), "number" for an int or float one, else None."""
    from types import NoneType
    from typing import get_args

    kinds = {a for a in (get_args(annotation) or (annotation,)) if a is not NoneType}
    if kinds == {bool}:
        return "bool"
    if kinds and kinds <= {int, float}:
        return "number"
    return None


@functools.cache
def _scalar_fields(model: type[BaseModel]) -> dict[str, str]:
    """A model's boolean and numeric keys (as written in the stack file) -> "bool" or "number"."""
    kinds = {(f.alias or n): _scalar_kind(f.annotation) for n, f in model.model_fields.items()}
    return {key: kind for key, kind in kinds.items() if kind is not None}


# YAML 1.1's base-60 numbers (`1:30` was 90); yaml.v3, and so Pulumi, reads them as strings.
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


def scalar_problem(kind: str, value: Any) -> str | None:
    """Why a value cannot be read as a boolean or a number as Pulumi passes it, or None. pydantic's lax
    mode would turn the strings `on`, `yes`, `y`, `1` and the number 1 into true, and `off`, `no`, `n`
    into false: a meaning the stack file did not write for Pulumi, which reads YAML 1.2 (they are
    strings there) and passes them on as written."""
    if kind == "bool" and value is not None and not isinstance(value, bool):
        shown_value = shown(value) if isinstance(value, str) else repr(value)
        return (
            f"{shown_value} is not a boolean: Pulumi reads the stack file as YAML 1.2, where yes/no/on/off/y/n "
            "are strings, not booleans; write true or false"
        )
    if kind == "number" and isinstance(value, str) and _SEXAGESIMAL.fullmatch(value):
        return (
            f"{shown(value)} is a string as Pulumi reads it (YAML 1.2 has no base-60 numbers; YAML 1.1 read "
            "`1:30` as 90): write the number itself"
        )
    return None


def _walk(value: Any, loc: tuple[str | int, ...], out: list[tuple[tuple[str | int, ...], str, Any]]) -> None:
    if isinstance(value, str):
        if (why := text_problem(value)) is not None:
            out.append((loc, why, value))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, (*loc, i), out)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (why := text_problem(key)) is not None:
                out.append(((*loc, key), f"(the key) {why}", key))
            _walk(item, (*loc, key), out)


def _rebuilt(exc: ValidationError, skip: list[tuple[str | int, ...]]) -> list[InitErrorDetails]:
    """pydantic's own errors, kept as they are, except those under a key already refused as text."""
    out: list[InitErrorDetails] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if any(loc[: len(s)] == s for s in skip):
            continue
        # Without a context the message is used as written: braces (a pattern's `{64}`) stay single.
        out.append(InitErrorDetails(type=PydanticCustomError(err["type"], err["msg"]), loc=loc, input=err.get("input")))
    return out


class Strict(BaseModel):
    """Base of every stack-config model: camelCase keys only, unknown keys refused, immutable, and
    every plain string of its own keys checked as text (nested models check their own)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=stack_key,
        validate_by_alias=True,
        validate_by_name=False,
        str_strip_whitespace=False,
    )

    @model_validator(mode="wrap")
    @classmethod
    def _plain_text(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        found: list[tuple[tuple[str | int, ...], str, Any]] = []
        fields = _fields_holding_models(cls)
        scalars = _scalar_fields(cls)
        for key, value in data.items():
            if isinstance(key, str) and (why := text_problem(key)) is not None:
                found.append(((key,), f"(the key) {why}", key))
                continue
            if isinstance(key, str) and key in scalars and (why := scalar_problem(scalars[key], value)) is not None:
                found.append(((key,), why, value))
                continue
            holds_model = fields.get(key) if isinstance(key, str) else None
            if holds_model is None:
                continue  # an unknown key: refused as such
            if holds_model:
                # Nested models check their own strings; a list of them may still hold plain items.
                if isinstance(value, list):
                    for i, item in enumerate(value):
                        if not isinstance(item, dict):
                            _walk(item, (key, i), found)
                elif not isinstance(value, dict):
                    _walk(value, (key,), found)
                continue
            _walk(value, (key,), found)
        if not found:
            return handler(data)
        refused = [
            InitErrorDetails(
                type=PydanticCustomError("value_error", "Value error, {why}", {"why": why}), loc=loc, input=value
            )
            for loc, why, value in found
        ]
        try:
            handler(data)
        except ValidationError as exc:
            refused += _rebuilt(exc, [loc for loc, _, _ in found])
        raise ValidationError.from_exception_data(cls.__name__, refused)


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(
            f"{shown(value)} is not a CIDR block; write one like 10.42.0.0/16 (host bits zero): {exc}"
        ) from None
    if str(net) != value:
        raise ValueError(f"{shown(value)} is not written as a CIDR block; write {net} (values are used as written)")
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]

# RFC 1123 label: Kubernetes namespaces, Service names and most of our logical names.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[str, StringConstraints(pattern=DNS_LABEL, max_length=40)]
# RFC 1123 subdomain (Secret, ConfigMap and PersistentVolumeClaim names): dot-separated labels, 253 in all.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

# IAM ARNs, ASCII only: the partition, a 12-digit account, then role/ or user/, an optional path and a
# name of at most 64 (IAM's character set: letters, digits and + = , . @ _ -).
IamArn = Annotated[
    str,
    StringConstraints(
        pattern=r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$",
        max_length=2048,
    ),
]

# Karpenter durations: no day unit (`30d` is invalid upstream).
Duration = Annotated[str, StringConstraints(pattern=r"^([0-9]+(s|m|h))+$")]

SecretName = Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN, max_length=253)]

SHA256_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
GIT_REVISION = re.compile(r"^[0-9a-f]{40}$")

# ---- quantities (stacks/quantity.py) ---------------------------------------------------------------

# k8s.io/apimachinery's quantity grammar, as the CRDs' OpenAPI spells it (documents the shape;
# stacks/quantity.py decides the value).
QUANTITY_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"


def _as_text(value: Any) -> Any:
    """A YAML number written for a quantity (`cpu: 2`) is the quantity `"2"`, as Kubernetes reads it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    return value


def _cpu(value: str) -> str:
    try:
        millicores(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    return value


def _memory(value: str) -> str:
    try:
        mebibytes(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    return value


def _positive_cpu(value: str) -> str:
    if millicores(value) == 0:
        raise ValueError(f"{shown(value)} is no CPU at all; give at least 1m, or remove the key")
    return value


def _positive_memory(value: str) -> str:
    if mebibytes(value) == 0:
        raise ValueError(f"{shown(value)} is no memory at all; give at least 1Mi, or remove the key")
    return value


_QUANTITY_TEXT = StringConstraints(pattern=QUANTITY_PATTERN, max_length=64)
# CPU: cores or millicores, any Kubernetes quantity that is a whole number of millicores.
CpuQuantity = Annotated[str, _QUANTITY_TEXT, BeforeValidator(_as_text), AfterValidator(_cpu)]
# Memory or storage: any Kubernetes quantity that is a whole number of MiB.
MemoryQuantity = Annotated[str, _QUANTITY_TEXT, BeforeValidator(_as_text), AfterValidator(_memory)]
PositiveCpu = Annotated[CpuQuantity, AfterValidator(_positive_cpu)]
PositiveMemory = Annotated[MemoryQuantity, AfterValidator(_positive_memory)]

# ---- versions --------------------------------------------------------------------------------------

# A version key: the exact-version rule itself is stacks/guards.py `chart_version_problem`, which the
# policy pack shares (run by stacks/rules/guards.py with the stack's other rules, so it is reported
# together with them); the type only bounds the length a message may echo.
VersionKey = Annotated[str, StringConstraints(max_length=64)]

# ---- hostnames -------------------------------------------------------------------------------------

_HOSTNAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]([-a-z0-9]*[a-z0-9])?$", re.ASCII)


def hostname_problem(value: str, *, wildcard: bool = False) -> str | None:
    """Why `value` is not a DNS name the Gateway API (and DNS) accepts: lower-case labels of letters,
    digits and inner hyphens, each at most 63 characters, 253 in all, a top-level label that is not
    numeric (so never an IP address); `wildcard` allows a leading `*.`."""
    name = value[2:] if wildcard and value.startswith("*.") else value
    if len(value) > 253:
        return f"{shown(value)} is {len(value)} characters; a DNS name is at most 253"
    if not _HOSTNAME.match(name):
        return (
            f"{shown(value)} is not a DNS name: lower-case labels of letters, digits and inner hyphens joined by "
            f"dots, e.g. inference.example.com" + (" (a leading *. is allowed)" if wildcard else "")
        )
    long = next((label for label in name.split(".") if len(label) > 63), None)
    if long is not None:
        return f"{shown(value)} has a label of {len(long)} characters ({shown(long, 20)}); a DNS label is at most 63"
    return None


def _hostname(value: str) -> str:
    if (why := hostname_problem(value)) is not None:
        raise ValueError(why)
    return value


def _host_or_wildcard(value: str) -> str:
    if (why := hostname_problem(value, wildcard=True)) is not None:
        raise ValueError(why)
    return value


Hostname = Annotated[str, StringConstraints(max_length=253), AfterValidator(_hostname)]
HostPattern = Annotated[str, StringConstraints(max_length=253), AfterValidator(_host_or_wildcard)]

# ---- S3 --------------------------------------------------------------------------------------------

# Amazon S3 User Guide, "General purpose bucket naming rules".
BUCKET_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$", re.ASCII)
# Object key characters AWS calls safe (S3 User Guide, "Naming Amazon S3 objects"), for prefixes.
_KEY_PREFIX = re.compile(r"^[0-9A-Za-z!_.*'()/-]*$", re.ASCII)


def bucket_name_problem(name: str) -> str | None:
    """Why `name` cannot be a general purpose S3 bucket's name, by AWS's rules; None when it can."""
    if not 3 <= len(name) <= 63:
        return f"{shown(name)} is {len(name)} characters; an S3 bucket name has 3 to 63"
    if not _BUCKET.match(name):
        return (
            f"{shown(name)} is not an S3 bucket name: lower-case letters, digits, dots and hyphens, beginning and "
            f"ending with a letter or digit"
        )
    if ".." in name:
        return f"{shown(name)} has two adjacent dots, which an S3 bucket name may not"
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return f"{shown(name)} is formatted as an IP address, which an S3 bucket name may not be"
    prefix = next((p for p in BUCKET_RESERVED_PREFIXES if name.startswith(p)), None)
    if prefix:
        return f"{shown(name)} starts with {prefix}, a prefix S3 reserves"
    suffix = next((x for x in BUCKET_RESERVED_SUFFIXES if name.endswith(x)), None)
    if suffix:
        return f"{shown(name)} ends with {suffix}, a suffix S3 reserves"
    return None


def _bucket(value: str) -> str:
    if (why := bucket_name_problem(value)) is not None:
        raise ValueError(why)
    return value


BucketName = Annotated[str, AfterValidator(_bucket)]


def key_prefix_problem(prefix: str) -> str | None:
    """Why an object-key prefix (after the bucket) is unsafe: characters outside AWS's safe set, an
    empty or `.`/`..` segment (which a file system would resolve), or over 1024 characters."""
    if len(prefix) > 1024:
        return f"the key prefix is {len(prefix)} characters; S3 keys are at most 1024"
    if not _KEY_PREFIX.match(prefix):
        return (
            f"the key prefix {shown(prefix)} has characters outside S3's safe set (letters, digits and "
            f"! _ . * ' ( ) / -)"
        )
    segments = prefix.rstrip("/").split("/") if prefix else []
    if any(seg in ("", ".", "..") for seg in segments):
        return f"the key prefix {shown(prefix)} has an empty, `.` or `..` segment; write each directory once"
    return None


def s3_url_problem(value: str) -> str | None:
    """Why `value` is not `s3://<bucket>[/<prefix>]` with a valid bucket and a safe prefix."""
    if not value.startswith("s3://"):
        return f"{shown(value)} is not an s3:// URL; write s3://<bucket>/<prefix>"
    bucket, _, prefix = value[len("s3://") :].partition("/")
    return bucket_name_problem(bucket) or key_prefix_problem(prefix)


def _s3_url(value: str) -> str:
    if (why := s3_url_problem(value)) is not None:
        raise ValueError(why)
    return value


S3Url = Annotated[str, StringConstraints(max_length=1100), AfterValidator(_s3_url)]

# ---- identifiers that become paths or arguments ----------------------------------------------------

# A model revision: a 40-hex commit, or a branch or tag name of one path segment (no `/`, no `..`, no
# whitespace): it becomes a directory of the model cache and the bucket (`<owner>/<model>/<revision>/`).
_REVISION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$", re.ASCII)


def revision_problem(value: str) -> str | None:
    if not _REVISION.match(value) or ".." in value or value.endswith((".", ".lock")):
        return (
            f"{shown(value)} is not a revision: give the repository's 40-hex commit, or a branch or tag name of "
            f"letters, digits, '.', '_' and '-' (no '/', no '..', no whitespace); it names a directory of the "
            f"model cache"
        )
    return None


def _revision(value: str) -> str:
    if (why := revision_problem(value)) is not None:
        raise ValueError(why)
    return value


Revision = Annotated[str, StringConstraints(min_length=1, max_length=128), AfterValidator(_revision)]

# A Hugging Face Hub repo id: `org/name`, each part letters, digits, '.', '_' and '-', beginning and
# ending with a letter, digit or '_', no '--' or '..' (huggingface_hub validate_repo_id), name <= 96.
_HUB_PART = r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_HUB_ID = re.compile(rf"^{_HUB_PART}/{_HUB_PART}$", re.ASCII)


def hub_id_problem(value: str) -> str | None:
    if not _HUB_ID.match(value) or "--" in value or ".." in value:
        return (
            f"{shown(value)} is not a Hugging Face repo id: write org/name (letters, digits, '.', '_' and '-'; "
            f"no '--' or '..'), e.g. Qwen/Qwen3-8B"
        )
    return None


def absolute_path_problem(value: str, root: str | None = None) -> str | None:
    """Why `value` is not a normalized absolute POSIX path (inside `root` when given)."""
    import posixpath

    if not value.startswith("/") or posixpath.normpath(value) != value.rstrip("/") or "//" in value:
        return f"{shown(value)} is not a normalized absolute path (no '.', '..' or empty segments)"
    if not re.match(r"^[A-Za-z0-9._/@+=,:-]+$", value, re.ASCII):
        return f"{shown(value)} has characters other than letters, digits and . _ / @ + = , : -"
    if root is not None and not (value == root or value.startswith(root.rstrip("/") + "/")):
        return f"{shown(value)} is outside {root}, where the pod's cache is mounted"
    return None


class Addon(Strict):
    """An optional add-on: whether it is installed and, optionally, a version overriding the catalog."""

    enabled: bool = Field(default=False, description="Whether the add-on is installed.")
    version: VersionKey | None = Field(
        default=None,
        description="Exact chart version (e.g. `1.14.1`; no range or `latest`) overriding the pin in "
        "`stacks/versions.py`; unset: the pin.",
    )


class KeyedError(ValueError):
    """A model validator's refusal that belongs to keys below the model: `problems_from` reports each
    (relative location, message) at that deeper key path instead of at the model's own path.

        raise KeyedError([(("models",), "a platform stack serves no models ...")])
    """

    def __init__(self, items: Sequence[tuple[tuple[str | int, ...], str]]) -> None:
        self.items = list(items)
        super().__init__("; ".join(msg for _, msg in self.items))


# ---- image references (distribution/reference, the OCI grammar) -----------------------------------

# reference/regexp.go: a path component is lower-case alphanumerics joined by a separator (`.`, `_`,
# `__` or one or more `-`); a domain is DNS components (letters, digits, inner hyphens) joined by
# dots, or an IPv6 address in brackets, optionally with a port. The first component of a name is a
# domain only when it contains `.` or `:` or is `localhost` (ParseNormalizedNamed), so in
# `registry:5000/img` the `:5000` is the registry's port, never a tag. The whole name is at most 255.
_PATH_COMPONENT = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = rf"({_DOMAIN_COMPONENT}(\.{_DOMAIN_COMPONENT})*|\[[0-9A-Fa-f:.]+\])(:[0-9]+)?"
_IMAGE_PATH = re.compile(rf"^{_PATH_COMPONENT}(/{_PATH_COMPONENT})*$", re.ASCII)
_IMAGE_DOMAIN = re.compile(rf"^{_DOMAIN}$", re.ASCII)
IMAGE_TAG = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"


def image_repository_problem(value: str) -> str | None:
    """Why `value` is not an image name (registry and path, without tag or digest) by the OCI grammar."""
    if len(value) > 255:
        return f"{shown(value)} is {len(value)} characters; an image name is at most 255"
    first, sep, rest = value.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        if not _IMAGE_DOMAIN.match(first):
            return f"{shown(value)}: {shown(first, 30)} is not a registry host (a DNS name or [IPv6], optional :port)"
        path = rest
    else:
        path = value
    if "@" in path:
        return f"{shown(value)} names a digest: give it in image.digest, and only the name in image.repository"
    if ":" in path:
        return f"{shown(value)} names a tag: give it in image.tag, and only the name in image.repository"
    if not _IMAGE_PATH.match(path):
        return (
            f"{shown(value)} is not an image name: lower-case path components of letters and digits joined by "
            f"'.', '_', '__' or '-', separated by '/', after an optional registry host (e.g. "
            f"registry.example.com:5000/team/vllm)"
        )
    return None


def _image_repository(value: str) -> str:
    if (why := image_repository_problem(value)) is not None:
        raise ValueError(why)
    return value


ImageRepository = Annotated[str, StringConstraints(max_length=255), AfterValidator(_image_repository)]

# ---- URLs that reach their consumer byte for byte --------------------------------------------------

_URL_PATH = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$", re.ASCII)
_URL_QUERY = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*$", re.ASCII)


def http_url_problem(value: str, *, max_length: int = 253, query: bool = False) -> str | None:
    """Why `value` is not an http(s) URL used exactly as written: scheme, a host (DNS name or IP
    address, no user info), an optional port, a path (and, with `query`, a query) of URL characters,
    no fragment. Never normalized: no slash added, nothing lower-cased."""
    from urllib.parse import urlsplit

    if len(value) > max_length:
        return f"{shown(value)} is {len(value)} characters; at most {max_length} reach the gateway's schema"
    if not re.match(r"^https?://", value, re.ASCII):
        return f"{shown(value)} is not an http(s) URL; write it as https://host/path"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        return f"{shown(value)} is not a URL: {exc}"
    if "@" in parts.netloc:
        return f"{shown(value)} has user information before the host (`@`); give the host alone"
    host = (parts.hostname or "").lower()  # only to check it: the URL itself is kept as written
    try:
        ipaddress.ip_address(host)
    except ValueError:
        single_label = re.match(DNS_LABEL, host, re.ASCII) is not None and len(host) <= 63
        if parts.netloc.startswith("[") or not (single_label or hostname_problem(host) is None):
            return f"{shown(value)} has no valid host ({shown(host, 30)})"
    if port is not None and not 1 <= port <= 65535:
        return f"{shown(value)}: port {port} is out of range"
    if parts.fragment or "#" in value:
        return f"{shown(value)} has a fragment (#...), which a server never receives"
    if not _URL_PATH.match(parts.path):
        return f"{shown(value)} has characters a URL path cannot hold unescaped"
    if parts.query or "?" in value:
        if not query:
            return f"{shown(value)} has a query (?...); give the URL without it"
        if not _URL_QUERY.match(parts.query):
            return f"{shown(value)} has characters a URL query cannot hold unescaped"
    return None


def _issuer_url(value: str) -> str:
    if (why := http_url_problem(value)) is not None:
        raise ValueError(why)
    return value


def _fetch_url(value: str) -> str:
    if (why := http_url_problem(value, query=True)) is not None:
        raise ValueError(why)
    return value


# An `iss` value: compared with the token's byte for byte. A JWKS URI: fetched as written.
IssuerUrl = Annotated[str, StringConstraints(max_length=253), AfterValidator(_issuer_url)]
FetchUrl = Annotated[str, StringConstraints(max_length=253), AfterValidator(_fetch_url)]
