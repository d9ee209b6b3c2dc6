"""A small evaluator of IAM identity policies, enough to ask what a rendered policy document lets its
role do with one request: an action on a resource, with the request's condition keys.

The rules it follows are IAM's (IAM User Guide, "Policy evaluation logic" and "IAM JSON policy
elements"): a request is allowed when some Allow statement matches it and no Deny statement does; a
statement matches when one of its actions and one of its resources match (`*` any run of characters,
`/` included, `?` one character) and every condition holds; a condition on a key the request does not
carry does not hold. Operators: StringEquals, StringLike, ArnLike, Bool (those the program renders; an
unknown one fails loudly rather than passing).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any


def listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _like(pattern: str, value: str) -> bool:
    return fnmatch.fnmatchcase(value, pattern)


def _condition_holds(operator: str, key: str, wanted: Any, context: Mapping[str, str]) -> bool:
    if key not in context:
        return False
    value = context[key]
    if operator == "StringEquals" or operator == "Bool":
        return value in listed(wanted)
    if operator in ("StringLike", "ArnLike"):
        return any(_like(p, value) for p in listed(wanted))
    raise AssertionError(f"the evaluator does not know the condition operator {operator}")


def _matches(st: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    if not any(_like(a, action) for a in listed(st["Action"])):
        return False
    if not any(_like(r, resource) for r in listed(st["Resource"])):
        return False
    return all(
        _condition_holds(operator, key, wanted, context)
        for operator, keys in (st.get("Condition") or {}).items()
        for key, wanted in keys.items()
    )


def allows(doc: Mapping[str, Any], action: str, resource: str, **context: str) -> bool:
    """Whether the policy document allows `action` on `resource` for a request carrying `context`
    (condition keys with `:` written as `__`: `s3__prefix="teams/a/"` is `s3:prefix`)."""
    keys = {k.replace("__", ":"): v for k, v in context.items()}
    statements = doc["Statement"]
    if any(st["Effect"] == "Deny" and _matches(st, action, resource, keys) for st in statements):
        return False
    return any(st["Effect"] == "Allow" and _matches(st, action, resource, keys) for st in statements)
