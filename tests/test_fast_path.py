"""The cold start's fast path: SOCI parallel pull on accelerator pools, compile caches on the shared
cache, and warm nodes from a Karpenter CapacityBuffer, each with its refusal at the key that asks for it."""

from __future__ import annotations

import copy
import email

import pytest
import yaml

from components.capacity.nodepools import capacity_buffer, ec2_node_class, warm_pod_template
from components.capacity.plugins import karpenter_values
from stacks import conformance
from stacks.config.pools import NodePoolSection
from stacks.errors import ConfigError
from stacks.exports import resolve_pool
from stacks.fastpath import SOCI_THROUGHPUT_MIBPS, warm_chunk, warm_pools
from stacks.golden import stack_files
from stacks.load import ROOT
from stacks.plan import plan, plan_json
from tests.builders import resolved_model, resolved_stack, sourced
from tests.conftest import sections_of

SCHEMAS = conformance.schema_dir()
DEV = ROOT / "Pulumi.dev.yaml"


def pool(**kw) -> NodePoolSection:
    raw = {"name": "gpu", "accelerator": "nvidia", "instanceTypes": ["g6.xlarge", "g6.12xlarge"]}
    raw.update(kw)
    return NodePoolSection.model_validate(raw)


def node_class(p: NodePoolSection) -> dict:
    return ec2_node_class(resolve_pool(p, None), cluster="inference-dev", node_role="node-role", tags={})


def refusals(sections: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolved_stack(sourced(sections))
    return [str(p) for p in caught.value.problems]


# ---- SOCI parallel pull --------------------------------------------------------------------------------


def node_configs(user_data: str) -> list[dict]:
    """The nodeadm NodeConfig parts of a MIME multipart userData, parsed as Karpenter and nodeadm read it."""
    message = email.message_from_string(user_data)
    assert message.is_multipart(), "AL2023 userData Karpenter merges must be a MIME multipart archive"
    parts = [p for p in message.get_payload() if p.get_content_type() == "application/node.eks.aws"]
    return [yaml.safe_load(p.get_payload()) for p in parts]


def test_a_soci_pools_node_class_enables_fast_image_pull_in_a_mime_node_config_and_fast_volume():
    obj = node_class(pool())
    configs = node_configs(obj["spec"]["userData"])
    assert configs == [
        {
            "apiVersion": "node.eks.aws/v1alpha1",
            "kind": "NodeConfig",
            "spec": {"featureGates": {"FastImagePull": True}},
        }
    ], "nodeadm's FastImagePull gate, the one feature gate it turns SOCI parallel pull on by"
    ebs = obj["spec"]["blockDeviceMappings"][0]["ebs"]
    assert ebs["throughput"] >= 600, "parallel unpack would be held to gp3's 125 MiB/s baseline"
    assert ebs["iops"] * 0.25 >= ebs["throughput"], "gp3 allows at most 0.25 MiB/s per provisioned IOPS"


@pytest.mark.schemas
def test_soci_node_classes_validate_against_the_ec2nodeclass_crd():
    assert SCHEMAS is not None
    for p in (pool(), pool(amiAlias="bottlerocket@v1.44.0")):
        assert conformance.validate_custom(node_class(p), SCHEMAS) == []


def test_a_bottlerocket_soci_pool_sets_the_soci_snapshotter_on_its_data_volume():
    obj = node_class(pool(amiAlias="bottlerocket@v1.44.0"))
    assert obj["spec"]["userData"] == '[settings.container-runtime]\nsnapshotter = "soci"\n'
    data = next(d for d in obj["spec"]["blockDeviceMappings"] if d.get("rootVolume"))
    assert data["deviceName"] == "/dev/xvdb" and data["ebs"]["throughput"] == SOCI_THROUGHPUT_MIBPS, (
        "Bottlerocket keeps images on its data volume"
    )


def test_a_standard_pool_and_a_cpu_pool_render_no_user_data_and_the_gp3_baseline():
    for p in (pool(imagePull="standard"), pool(name="cpu", accelerator="none", instanceTypes=["m7i.large"])):
        obj = node_class(p)
        assert "userData" not in obj["spec"]
        assert "throughput" not in obj["spec"]["blockDeviceMappings"][0]["ebs"]


def test_the_default_is_standard_where_soci_cannot_run():
    assert resolve_pool(pool(amiAlias="bottlerocket@v1.40.0"), None).image_pull == "standard"
    assert resolve_pool(pool(), None).image_pull == "soci"


def _dev_with_pool(**changes) -> dict:
    sections = sections_of(DEV)
    sections["nodePools"][0].update(changes)
    return sections


def test_soci_on_types_nodeadm_would_ignore_the_gate_on_is_refused_naming_the_key_and_types():
    resolved_stack(sourced(_dev_with_pool(imagePull="soci", instanceTypes=["g6.xlarge"])))  # 4 vCPUs, 16 GiB
    small = sections_of(DEV)
    small["nodePools"] = [
        {"name": "tiny", "accelerator": "none", "instanceTypes": ["m7i.large"], "imagePull": "soci"},
        *small["nodePools"],
    ]
    found = [p for p in refusals(small) if "nodePools[0].imagePull" in p]
    assert found and "m7i.large are smaller" in found[0], found


def test_soci_on_a_bottlerocket_release_without_the_setting_is_refused():
    found = refusals(_dev_with_pool(imagePull="soci", amiAlias="bottlerocket@v1.40.0"))
    assert any("nodePools[0].imagePull" in p and "v1.44.0" in p for p in found), found


# ---- pre-pulled image cache (imagePull: snapshot) -----------------------------------------------------

SNAP = "snap-0123456789abcdef0"


def snapshot_pool(fsr: bool = False, **kw) -> NodePoolSection:
    raw = {
        "amiAlias": "bottlerocket@v1.44.0",
        "imagePull": "snapshot",
        "imageSnapshot": {"id": SNAP, "fastSnapshotRestore": fsr},
        **kw,
    }
    return pool(**raw)


def test_a_snapshot_pools_data_volume_is_created_from_the_image_cache_at_soci_throughput():
    obj = node_class(snapshot_pool())
    os_volume, data = obj["spec"]["blockDeviceMappings"]
    assert os_volume["deviceName"] == "/dev/xvda" and "snapshotID" not in os_volume["ebs"], "the OS volume is the AMI's"
    assert data["deviceName"] == "/dev/xvdb" and data["rootVolume"], "Bottlerocket keeps containerd's images on xvdb"
    assert data["ebs"]["snapshotID"] == SNAP, "the data volume starts with the pre-pulled images"
    assert data["ebs"]["throughput"] == SOCI_THROUGHPUT_MIBPS and data["ebs"]["iops"] * 0.25 >= SOCI_THROUGHPUT_MIBPS
    assert "encrypted" not in data["ebs"], "a launch template takes no encryption value for a volume from a snapshot"
    assert "userData" not in obj["spec"], "nothing to pull: no SOCI snapshotter setting"


@pytest.mark.schemas
def test_a_snapshot_pools_node_class_validates_against_the_ec2nodeclass_crd():
    assert SCHEMAS is not None
    obj = node_class(snapshot_pool(fsr=True))
    assert conformance.validate_custom(obj, SCHEMAS) == []
    # The CRD's CEL rule (not checked by JSON schema): snapshotID or volumeSize on every ebs block.
    assert all("snapshotID" in d["ebs"] or "volumeSize" in d["ebs"] for d in obj["spec"]["blockDeviceMappings"])


def test_snapshot_on_an_al2023_pool_is_refused_naming_the_key_and_the_fix():
    found = refusals(_dev_with_pool(imagePull="snapshot", amiAlias="al2023@latest", imageSnapshot={"id": SNAP}))
    hits = [p for p in found if "nodePools[0].imagePull" in p]
    assert hits and "custom AMI" in hits[0] and "bottlerocket@" in hits[0], found


def test_snapshot_without_an_image_snapshot_is_refused_naming_the_key_and_the_fix():
    found = refusals(_dev_with_pool(imagePull="snapshot", amiAlias="bottlerocket@v1.44.0"))
    assert any("nodePools[0].imageSnapshot" in p and "snap-" in p for p in found), found


def test_an_image_snapshot_without_imagepull_snapshot_is_refused_naming_the_key():
    found = refusals(_dev_with_pool(imagePull="soci", imageSnapshot={"id": SNAP}))
    assert any("nodePools[0].imageSnapshot" in p and "imagePull: snapshot" in p for p in found), found


@pytest.mark.parametrize("bad", [{"id": "snap-xyz"}, {"id": "ami-0123456789abcdef0"}, {}])
def test_a_missing_or_malformed_snapshot_id_is_refused_at_its_key(bad):
    found = refusals(_dev_with_pool(imagePull="snapshot", amiAlias="bottlerocket@v1.44.0", imageSnapshot=bad))
    hits = [p for p in found if "nodePools[0].imageSnapshot.id" in p]
    assert hits and "snap-0123456789abcdef0" in hits[0], ("the message shows a well-formed id", found)


def test_a_valid_snapshot_pool_passes_every_rule():
    stack = resolved_stack(
        sourced(
            _dev_with_pool(
                imagePull="snapshot",
                amiAlias="bottlerocket@v1.44.0",
                imageSnapshot={"id": SNAP, "fastSnapshotRestore": True},
            )
        )
    )
    assert stack.platform.pools[0].image_pull == "snapshot"


def test_the_image_term_reads_a_fast_restored_snapshot_at_volume_throughput_and_else_counts_a_standard_pull():
    from stacks.coldstart import image_term
    from stacks.coldstart_facts import FSR_URL, INITIALIZATION_URL
    from stacks.versions import MODEL_IMAGES

    image = MODEL_IMAGES["vllm-openai"]
    fast = image_term(image, resolve_pool(snapshot_pool(fsr=True), None))
    lazy = image_term(image, resolve_pool(snapshot_pool(fsr=False), None))
    standard = image_term(image, resolve_pool(pool(imagePull="standard"), None))
    soci = image_term(image, resolve_pool(pool(imagePull="soci"), None))
    assert fast.source.startswith("snapshot with fast snapshot restore") and FSR_URL in fast.source
    assert fast.seconds < soci.seconds, "read off a fully initialized volume, not pulled"
    assert lazy.source.startswith("snapshot without fast snapshot restore") and INITIALIZATION_URL in lazy.source
    assert lazy.seconds == standard.seconds, "no published lazy-load rate: no faster figure is claimed"


def test_a_platform_exports_its_snapshot_pools_image_cache_for_a_teams_estimate():
    from stacks.exports import _pool_export, read_pools

    exported = _pool_export(resolve_pool(snapshot_pool(fsr=True), None))
    assert exported["imagePull"] == "snapshot" and exported["imageSnapshot"]["fastSnapshotRestore"] is True
    (back,) = read_pools({"nodePools": [exported]})
    assert back.image_pull == "snapshot" and back.config.image_snapshot is not None
    assert back.config.image_snapshot.fast_snapshot_restore


# The stacks that declare pools (a workloads stack runs on its platform's).
WITH_POOLS = [p for p in stack_files() if "nodePools" in sections_of(p)]


@pytest.mark.parametrize("path", WITH_POOLS, ids=lambda p: p.name)
def test_every_accelerator_pool_of_every_shipped_stack_pulls_with_soci_unless_it_says_standard(path):
    sections = sections_of(path)
    stack = resolved_stack(sections)
    for p in stack.platform.pools:
        if p.accelerator == "none":
            continue
        expected = p.config.image_pull or "soci"
        assert p.image_pull == expected, (path.name, p.name)
        obj = ec2_node_class(p, cluster="c", node_role="r", tags={})
        assert ("userData" in obj["spec"]) == (expected == "soci"), (path.name, p.name)


# ---- compile caches -------------------------------------------------------------------------------------

COMPILE_VARS = {
    "vllm": {"VLLM_CACHE_ROOT", "TRITON_CACHE_DIR"},
    "sglang": {"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "SGLANG_DG_CACHE_DIR"},
    "neuron-vllm": {"NEURON_COMPILE_CACHE_URL", "NEURON_COMPILED_ARTIFACTS"},
}


def engine_container(manifests: list[dict], model: str) -> dict:
    for obj in manifests:
        if obj["kind"] in ("Deployment", "LeaderWorkerSet") and obj["metadata"]["name"] == model:
            spec = obj["spec"].get("template") or obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
            return next(c for c in spec["spec"]["containers"] if c["name"] == "engine")
    raise AssertionError(f"no workload {model}")


@pytest.mark.parametrize("path", stack_files(), ids=lambda p: p.name)
def test_every_model_on_a_shared_cache_keeps_its_compile_cache_keyed_by_model_revision_image_and_shape(path):
    stack = resolved_stack(sections_of(path))
    if stack.platform.storage.model_cache not in ("efs", "fsx"):
        assert not any(m.compile_cache for m in stack.models), "nothing to share on a node-local cache"
        return
    from tests.conftest import stack_manifests

    manifests = stack_manifests(path)
    for m in stack.models:
        if m.engine not in COMPILE_VARS or m.config.compile_cache is False:
            continue
        assert m.compile_cache, f"{m.name}: on by default on {stack.platform.storage.model_cache}"
        image = m.image.tag
        key = f"/models/_compile/{m.cache.bucket_prefix}/{image}"
        assert m.cache.compile_dir is not None and m.cache.compile_dir.startswith(key + "/"), m.cache.compile_dir
        assert m.cache.compile_dir.endswith(f"/tp{m.tensor_parallel}-pp{m.group.pipeline}")
        container = engine_container(manifests, m.workload[2])
        env = {e["name"]: e.get("value") for e in container["env"]}
        for var in COMPILE_VARS[m.engine]:
            assert env[var].startswith(m.cache.compile_dir + "/"), (m.name, var, env.get(var))
        mounts = {v["mountPath"] for v in container["volumeMounts"]}
        assert mounts & {"/models", "/models/_compile"}, "the compile cache is on the shared claim"


def test_a_new_revision_or_image_compiles_under_a_new_key():
    sections = sections_of(DEV)
    first = resolved_model(resolved_stack(sections), "qwen3-8b").cache.compile_dir
    changed = copy.deepcopy(sections)
    changed["models"][0]["image"] = {"tag": "v0.29.1"}
    second = resolved_model(resolved_stack(changed), "qwen3-8b").cache.compile_dir
    assert first and second and first != second and "/v0.29.1/" in second


def test_a_streamed_model_mounts_the_shared_claim_for_its_compile_cache():
    sections = sections_of(DEV)
    sections["models"][0]["loadFormat"] = "runai-streamer"
    from tests.builders import engine_objects

    stack = resolved_stack(sourced(sections))
    objects = engine_objects(stack, "qwen3-8b")
    deploy = next(o for o in objects if o["kind"] == "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert {"name": "compile-cache", "persistentVolumeClaim": {"claimName": "model-cache"}} in pod["volumes"]
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "compile-cache", "mountPath": "/models/_compile", "subPath": "_compile"} in mounts, (
        "only the compile tree: a streamed model reads no weights from the cache"
    )
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["VLLM_CACHE_ROOT"].startswith("/models/_compile/")


def test_on_fsx_the_compile_directory_is_handed_to_the_engines_user_before_it_starts():
    path = ROOT / "stacks" / "examples" / "Pulumi.storage-fsx.yaml"
    stack = resolved_stack(sections_of(path))
    from tests.builders import engine_objects

    model = next(m for m in stack.models if m.compile_cache)
    deploy = next(o for o in engine_objects(stack, model.name) if o["kind"] == "Deployment")
    inits = {c["name"]: c for c in deploy["spec"]["template"]["spec"]["initContainers"]}
    owner = inits["compile-cache-dir"]
    assert owner["securityContext"]["capabilities"] == {"drop": ["ALL"]}, "root with no capability, as every writer"
    env = {e["name"]: e["value"] for e in owner["env"]}
    assert env["COMPILE_DIR"] == model.cache.compile_dir and env["GROUP"] == "1000", "the pod's fsGroup"
    assert "chmod 2770" in owner["command"][-1], "group rwx, set-group-ID so the engine's files keep the group"


@pytest.mark.parametrize("cache", ["local", "none"])
def test_a_compile_cache_on_storage_that_cannot_be_shared_is_refused_at_its_key(cache):
    sections = sections_of(DEV)
    sections["storage"] = {**sections.get("storage", {}), "modelCache": cache}
    sections["storage"].pop("efs", None)
    sections["models"][0]["compileCache"] = True
    found = [p for p in refusals(sections) if "models[0].compileCache" in p]
    assert found and cache in found[0] and "efs or fsx" in found[0], found


def test_compile_cache_false_keeps_none():
    sections = sections_of(DEV)
    sections["models"][0]["compileCache"] = False
    model = resolved_model(resolved_stack(sections), "qwen3-8b")
    assert not model.compile_cache and model.cache.compile_dir is None


# ---- warm nodes -----------------------------------------------------------------------------------------


def _warm_dev(n: int = 1) -> dict:
    sections = sections_of(DEV)
    sections["nodePools"][0]["warmNodes"] = n
    return sections


@pytest.mark.schemas
def test_a_warm_pool_gets_a_capacity_buffer_that_passes_its_crd_and_sized_to_its_largest_model():
    assert SCHEMAS is not None
    stack = resolved_stack(_warm_dev(2))
    (gpu, chunk), *_ = warm_pools(stack.platform.pools, stack.models)
    buffer = capacity_buffer(gpu)
    assert conformance.validate_custom(buffer, SCHEMAS) == []
    assert buffer["spec"]["replicas"] == 2 and buffer["spec"]["podTemplateRef"]["name"] == "warm-gpu"
    template = warm_pod_template(gpu.config, chunk, "busybox:1.37.0")
    assert conformance.validate_core(template, stack.platform.kubernetes_version) == []
    pod = template["template"]["spec"]
    assert pod["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"inference-platform.io/pool": "gpu"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"


def test_warm_nodes_turn_on_karpenters_capacity_buffer_gate():
    values = karpenter_values(cluster="c", queue="q", capacity_buffer=True)
    assert values["settings"]["featureGates"] == {"capacityBuffer": True}
    assert "featureGates" not in karpenter_values(cluster="c", queue="q")["settings"]


def test_a_warm_pool_renders_its_buffer_and_the_gate_in_the_program():
    from tests.conftest import render_sections

    rendered = render_sections(sourced(_warm_dev(1)))
    kinds = {(m["kind"], m["metadata"]["name"]) for m in rendered.manifests()}
    assert ("CapacityBuffer", "warm-gpu") in kinds and ("PodTemplate", "warm-gpu") in kinds
    karpenter = next(r for r in rendered.releases() if r["name"] == "karpenter")
    assert karpenter["values"]["settings"]["featureGates"]["capacityBuffer"] is True


def test_warm_nodes_beyond_the_pools_limits_are_refused_at_the_key():
    sections = _warm_dev(17)
    found = [p for p in refusals(sections) if "nodePools[0].warmNodes" in p]
    assert found and "limits" in found[0], found


def test_the_plan_states_what_warm_nodes_cost():
    stack = resolved_stack(_warm_dev(2))
    text = plan(stack)
    assert "2 warm node(s)" in text and "g6.xlarge" in text and "1460 instance-hours a month" in text
    gpu = next(p for p in plan_json(stack)["pools"] if p["name"] == "gpu")
    assert gpu["warmNodes"] == 2 and gpu["imagePull"] == "soci" and "on-demand" in gpu["warmCost"]
    chunk = warm_chunk(stack.platform.pools[0], stack.models)
    assert chunk is not None and chunk.instance is not None
