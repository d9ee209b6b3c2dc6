"""Kubernetes resource quantities: the one parser every cpu, memory and storage figure goes through.

The grammar and the suffixes are k8s.io/apimachinery `resource.Quantity`'s (pkg/api/resource/quantity.go):

    <quantity>        ::= <signedNumber><suffix>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>

Values are exact (`fractions.Fraction`), never floats, so `0.1` cores is 100 millicores and `1.5Gi`
is 1536 MiB exactly.

How the stack file's quantities are read (the decision for figures finer than the platform counts):
- cpu is counted in millicores. Kubernetes does not allow a CPU precision finer than 1m (a
  `1.5m` request is rounded up to 2m by the API): a stack file's cpu finer than 1m is refused,
  naming the millicores to write, rather than silently rounded (`millicores(..., exact=True)`).
- memory and storage are counted in MiB (the containers, quotas and limits the platform renders
  say `<n>Mi`/`<n>Gi`): a stack file's memory that is not a whole MiB is refused, naming the
  nearest MiB, rather than rounded; a fraction of a byte (`500m` is half a byte, not 500Mi) is
  refused with that hint.
- Quantities the platform itself rendered (the policy pack reading a pod at preview) are read as
  Kubernetes reads them: rounded up (`exact=False`), as `Quantity.MilliValue()`/`Value()` do.

A quantity is also refused when negative, longer than 64 characters, or beyond what a Kubernetes
quantity holds (an exponent beyond +-18, or more than 2^63-1 of the base unit).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$",
    re.ASCII,
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
MAX_CHARS = 64
MAX_EXPONENT = 18
MAX_VALUE = 2**63 - 1
MIB = 2**20

# How a message shows a bad value: a short prefix, never the whole input.
_SHOWN = 40


def _shown(text: str) -> str:
    return repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}… ({len(text)} characters)"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or not one the platform can use as given."""


def parse(text: str) -> Fraction:
    """A Kubernetes quantity string -> its exact value in the base unit (cores, bytes)."""
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity: write it as a string such as '500m', '2' or '16Gi'")
    if len(text) > MAX_CHARS:
        raise QuantityError(f"{_shown(text)} is not a quantity: longer than {MAX_CHARS} characters")
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(
            f"{_shown(text)} is not a Kubernetes quantity: write a number with an optional suffix, "
            f"e.g. 500m or 2 (cpu), 512Mi, 16Gi or 1Ti (memory); binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E, "
            f"or an exponent e3"
        )
    number, suffix = match.group("number"), match.group("suffix") or ""
    value = Fraction(number if not number.endswith(".") else number[:-1] or "0")
    if match.group("exponent") is not None:
        exponent = int(match.group("exponent"))
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"{_shown(text)}: an exponent beyond ±{MAX_EXPONENT} is not a usable quantity")
        value *= Fraction(10) ** exponent
    elif suffix in _BINARY:
        value *= _BINARY[suffix]
    else:
        value *= _DECIMAL[suffix]
    if match.group("sign") == "-" and value != 0:
        value = -value
    if abs(value) > MAX_VALUE:
        raise QuantityError(f"{_shown(text)} is larger than a Kubernetes quantity holds")
    return value


def _nonnegative(text: str, value: Fraction) -> Fraction:
    if value < 0:
        raise QuantityError(f"{_shown(text)} is negative: a request, limit or quota is at least 0")
    return value


def millicores(text: str, *, exact: bool = True) -> int:
    """CPU in millicores: '500m' -> 500, '2' -> 2000, '0.1' -> 100, '1e3' -> 1_000_000.

    `exact`: refuse a precision finer than 1m (the stack file); else round up as Kubernetes does."""
    milli = _nonnegative(text, parse(text)) * 1000
    if milli.denominator != 1:
        if exact:
            up = math.ceil(milli)
            raise QuantityError(
                f"{_shown(text)} is {float(milli):g} millicores: Kubernetes allows no CPU precision finer "
                f"than 1m (it would round this up); write {up}m"
            )
        return math.ceil(milli)
    return int(milli)


def byte_count(text: str, *, exact: bool = True) -> int:
    """Memory or storage in bytes: '1Ki' -> 1024, '1k' -> 1000; a fraction of a byte refused (exact)
    or rounded up."""
    value = _nonnegative(text, parse(text))
    if value.denominator != 1:
        if exact:
            hint = (
                f" ({text[:-1]}m is milli, a thousandth; write {text[:-1]}Mi for mebibytes)"
                if text.endswith("m") and not text.endswith("Mm")
                else ""
            )
            raise QuantityError(f"{_shown(text)} is not a whole number of bytes{hint}")
        return math.ceil(value)
    return int(value)


def mebibytes(text: str, *, exact: bool = True) -> int:
    """Memory or storage in MiB: '24Gi' -> 24576, '512Mi' -> 512, '1073741824' -> 1024.

    `exact`: refuse what is not a whole MiB (the stack file: the platform renders memory in Mi);
    else round up (a rendered quantity read back)."""
    count = byte_count(text, exact=exact)
    if count % MIB:
        if exact:
            up = -(-count // MIB)
            raise QuantityError(
                f"{_shown(text)} is {count / MIB:.6g}Mi: the platform sets memory in whole MiB; write {up}Mi "
                f"(or a whole number of Mi, Gi or Ti)"
            )
        return -(-count // MIB)
    return count // MIB
