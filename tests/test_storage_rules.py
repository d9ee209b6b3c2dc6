"""Storage refusals: each is a ConfigError naming the key and the fix, before any resource exists."""

from __future__ import annotations

import pytest

from stacks.errors import ConfigError
from stacks.load import ROOT
from stacks.pipeline import check_sections
from tests.conftest import sections_of

EXAMPLES = ROOT / "stacks" / "examples"


def refused(sections: dict, key: str, *words: str) -> str:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    text = str(info.value)
    assert f"inference-platform:{key}" in text, text
    for word in words:
        assert word in text, text
    return text


def local() -> dict:
    return sections_of(EXAMPLES / "Pulumi.storage-local.yaml")


def test_the_storage_examples_are_accepted():
    for name in ("storage-efs", "storage-fsx", "storage-local"):
        check_sections(sections_of(EXAMPLES / f"Pulumi.{name}.yaml"), "us-west-2")


def test_a_local_cache_on_a_pool_without_instance_store_is_refused(dev):
    dev["storage"] = {"modelCache": "local"}
    dev["nodePools"][0]["localNvme"] = "raid0"
    dev["nodePools"][1]["localNvme"] = "raid0"
    refused(dev, "nodePools[1].instanceTypes[0]", "inf2.xlarge has no instance store")


def test_a_local_cache_on_a_pool_that_does_not_stripe_its_nvme_is_refused():
    sections = local()
    sections["nodePools"][0]["localNvme"] = "none"
    refused(sections, "nodePools[0].localNvme", "localNvme: raid0")


def test_a_local_cache_on_a_family_with_bare_types_is_refused(dev):
    dev["storage"] = {"modelCache": "local"}
    pool = dev["nodePools"][1]
    del pool["instanceTypes"]
    pool["instanceFamilies"] = ["inf2"]
    pool["localNvme"] = "raid0"
    refused(dev, "nodePools[1].instanceFamilies[0]", "family inf2 includes types without instance store")


def test_a_local_cache_needs_the_model_size():
    sections = local()
    del sections["models"][0]["parameters"]
    del sections["models"][0]["dtype"]
    refused(sections, "models[0].parameters", "sizes each pod's NVMe volume")


def test_a_local_cache_larger_than_any_instance_store_is_refused():
    sections = local()
    sections["nodePools"][0]["instanceTypes"] = ["g6.xlarge"]
    sections["models"][0]["parameters"] = "200B"
    sections["models"][0]["dtype"] = "fp8"
    sections["nodePools"][0]["limits"] = {"accelerators": 64}
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2")
    assert "the local cache for qwen3-8b needs" in str(info.value)


def test_more_than_one_replica_on_a_readwriteonce_claim_is_refused(dev):
    dev["storage"] = {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteOnce"}}
    refused(dev, "models[0].replicas", "mounts on one node only", "efs or fsx")


def test_one_replica_on_a_readwriteonce_claim_is_accepted(dev):
    dev["storage"] = {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteOnce"}}
    for model in dev["models"]:
        model["replicas"] = 1
        model.pop("autoscaling", None)
    check_sections(dev, "us-west-2")


def test_a_readwritemany_claim_may_be_shared_by_many_replicas(dev):
    dev["storage"] = {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteMany"}}
    check_sections(dev, "us-west-2")


def test_an_existing_claim_beside_a_managed_cache_is_refused(dev):
    dev["storage"]["existingClaim"] = {"name": "weights", "accessMode": "ReadWriteMany"}
    refused(dev, "storage", "existingClaim is used only with modelCache: none")


def test_an_fsx_import_path_without_fsx_is_refused(dev):
    dev["storage"]["fsx"] = {"importPath": "s3://acme-models/"}
    refused(dev, "storage.fsx.importPath", "only applies with modelCache: fsx")


def test_an_fsx_size_lustre_refuses_is_refused(dev):
    dev["storage"] = {"modelCache": "fsx", "fsx": {"storageCapacityGiB": 3000}}
    refused(dev, "storage.fsx.storageCapacityGiB", "1200 or a multiple of 2400")


def test_an_fsx_throughput_lustre_refuses_is_refused(dev):
    dev["storage"] = {"modelCache": "fsx", "fsx": {"throughputPerTiB": 200}}
    refused(dev, "storage.fsx.throughputPerTiB")


def test_production_refuses_unprotected_storage(dev):
    dev["stack"]["environment"] = "prod"
    dev["storage"]["protect"] = False
    with pytest.raises(ConfigError) as info:
        check_sections(dev, "us-west-2")
    assert "inference-platform:storage.protect" in str(info.value)


def test_one_replica_on_a_readwriteonce_claim_warns_about_rollouts(dev):
    from stacks.pipeline import stack_warnings

    dev["storage"] = {"modelCache": "none", "existingClaim": {"name": "weights", "accessMode": "ReadWriteOnce"}}
    for model in dev["models"]:
        model["replicas"] = 1
        model.pop("autoscaling", None)
    warnings = [str(w) for w in stack_warnings(check_sections(dev, "us-west-2"))]
    assert any("models[0].replicas" in w and "rollout" in w for w in warnings), warnings
