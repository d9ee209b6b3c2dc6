"""The API server's ValidatingAdmissionPolicy evaluation, offline, enough to ask what a rendered policy
and binding do with one request: cel-python (celpy) evaluates the CEL, the rest follows the
Kubernetes documentation of admissionregistration.k8s.io/v1 ("Validating Admission Policy"):

- a request is matched when the policy's `matchConstraints.resourceRules` name its group, version,
  resource and operation (`*` any) and the binding's `matchResources.namespaceSelector` selects its
  namespace's labels (matchLabels, and matchExpressions In, NotIn, Exists, DoesNotExist);
- the variables `object`, `oldObject` (null on CREATE), `request` (namespace, name, operation, kind,
  resource), `namespaceObject` (the namespace: name and labels), `params` (null: no paramKind) and
  `variables`, each variable evaluated in order (the API server evaluates them lazily: a variable no
  expression reads never fails there, and here it would, which is stricter);
- a validation that evaluates to false denies with its messageExpression's value (its static message
  when that fails or spans lines); one that cannot be evaluated is an error, which `failurePolicy:
  Fail` turns into a denial. `Verdict` keeps both apart, so a test sees a check that errs instead of
  denying.

The API server also fills in the CRD's defaults before admission: `defaulted` does that from the CRD's
schema (every property with a `default` that the object leaves out, recursively), so a test can ask
what the policy sees.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import celpy
from celpy import celtypes


@dataclass(frozen=True)
class Verdict:
    """What the policy did with one request: not matched, or the messages of the validations that
    evaluated to false and the errors of those that could not be evaluated."""

    matched: bool
    denials: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failed: tuple[int, ...] = field(default=(), compare=False)  # indexes of the failed validations

    @property
    def admitted(self) -> bool:
        return not self.denials and not self.errors


@cache
def _program(expression: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate_cel(expression: str, activation: dict[str, Any]) -> Any:
    """One CEL expression's value; raises celpy.CELEvalError when it cannot be evaluated."""
    value = _program(expression).evaluate(activation)
    if isinstance(value, celpy.CELEvalError):
        raise value
    return value


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector against a label set."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        held = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }
        assert op in held, f"the evaluator does not know the selector operator {op}"
        if not held[op]:
            return False
    return True


def _named(names: list[str], value: str) -> bool:
    return "*" in names or value in names


def rule_matches(policy: dict[str, Any], gvr: tuple[str, str, str], operation: str) -> bool:
    group, version, resource = gvr
    return any(
        _named(r["apiGroups"], group)
        and _named(r["apiVersions"], version)
        and _named(r["resources"], resource)
        and _named(r["operations"], operation)
        for r in policy["spec"]["matchConstraints"]["resourceRules"]
    )


@dataclass(frozen=True)
class Request:
    """One admission request: the object, where it is written (namespace and its labels), how."""

    obj: dict[str, Any]
    namespace: str
    labels: dict[str, str]
    operation: str = "CREATE"
    old: dict[str, Any] | None = None

    def gvr(self) -> tuple[str, str, str]:
        group, _, version = self.obj["apiVersion"].rpartition("/")
        return group, version, self.obj["kind"].lower() + "s"

    def activation(self) -> dict[str, Any]:
        group, version, resource = self.gvr()
        request = {
            "namespace": self.namespace,
            "name": self.obj["metadata"]["name"],
            "operation": self.operation,
            "kind": {"group": group, "version": version, "kind": self.obj["kind"]},
            "resource": {"group": group, "version": version, "resource": resource},
        }
        namespace = {"metadata": {"name": self.namespace, "labels": self.labels}}
        values = {
            "object": self.obj,
            "oldObject": self.old,
            "request": request,
            "namespaceObject": namespace,
            "params": None,
        }
        return {k: celpy.json_to_cel(v) for k, v in values.items()}


def _message(validation: dict[str, Any], activation: dict[str, Any]) -> str:
    expression = validation.get("messageExpression")
    if expression:
        try:
            text = evaluate_cel(expression, activation)
        except celpy.CELEvalError:
            text = None
        if isinstance(text, str) and "\n" not in text:
            return str(text)
    return str(validation.get("message") or f"failed expression: {validation['expression']}")


def admit(policy: dict[str, Any], binding: dict[str, Any], req: Request) -> Verdict:
    """What the policy, through this binding, does with the request."""
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    selector = binding["spec"].get("matchResources", {}).get("namespaceSelector") or {}
    if not rule_matches(policy, req.gvr(), req.operation) or not selects(selector, req.labels):
        return Verdict(matched=False)
    activation = req.activation()
    computed: dict[celtypes.StringType, Any] = {}
    for variable in policy["spec"].get("variables") or []:
        activation["variables"] = celtypes.MapType(computed)
        computed[celtypes.StringType(variable["name"])] = evaluate_cel(variable["expression"], activation)
    activation["variables"] = celtypes.MapType(computed)
    denials, errors, failed = [], [], []
    for i, validation in enumerate(policy["spec"]["validations"]):
        try:
            ok = evaluate_cel(validation["expression"], activation)
        except celpy.CELEvalError as exc:
            errors.append(f"{validation['expression']}: {exc}")
            failed.append(i)
            continue
        assert isinstance(ok, celtypes.BoolType), f"a validation evaluates to a bool, not {ok!r}"
        if not ok:
            denials.append(_message(validation, activation))
            failed.append(i)
    return Verdict(matched=True, denials=tuple(denials), errors=tuple(errors), failed=tuple(failed))


def defaulted(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server stores it: every default of its CRD's structural schema filled in
    where the object leaves the property out (the defaults are applied to each level, then inside)."""
    out = copy.deepcopy(obj)
    _fill(out, schema)
    return out


def _fill(node: Any, schema: dict[str, Any]) -> None:
    if isinstance(node, dict):
        for key, prop in (schema.get("properties") or {}).items():
            if key not in node and "default" in prop:
                node[key] = copy.deepcopy(prop["default"])
            if key in node:
                _fill(node[key], prop)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        for item in node:
            _fill(item, schema["items"])
