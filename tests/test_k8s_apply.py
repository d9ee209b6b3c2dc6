"""components/k8s.py: the typed classes manifests are applied as, looked up by name on first use."""

from __future__ import annotations

import pytest

from components.k8s import TYPED, typed_class


@pytest.mark.parametrize(("api_version", "kind"), sorted(TYPED))
def test_every_core_kind_resolves_to_the_typed_class_of_its_api_group(api_version, kind):
    cls = typed_class(api_version, kind)
    group = "core" if "/" not in api_version else api_version.split("/")[0].split(".")[0]
    version = api_version.rpartition("/")[2]
    assert cls.__name__ == kind
    assert cls.__module__.startswith(f"pulumi_kubernetes.{group}.{version}"), cls.__module__


def test_a_kind_without_a_typed_class_is_applied_as_a_custom_resource():
    assert typed_class("karpenter.sh/v1", "NodePool") is None
    assert typed_class("v1", "NoSuchKind") is None
