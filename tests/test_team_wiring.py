"""The seams between a team's workloads stack and the platform it runs on: the quota and the fit use
the engines' real sizing, the team's pods reach the platform's model cache and bucket through what the
platform made in the team's namespace, and its routes attach to the Gateway the platform exports."""

from __future__ import annotations

from typing import Any

import pytest

from policypack import validators as v
from stacks.errors import ConfigError
from stacks.exports import export_platform
from stacks.load import ROOT, sections_to_pulumi_config
from stacks.pipeline import PlatformLookup, check_sections
from stacks.render import Rendered, run_program
from stacks.resolve import own_platform
from stacks.resolved import CACHE_CLAIM, GATEWAY_NAME, GATEWAY_NAMESPACE, HTTPS_LISTENER
from stacks.sizing import replica_requests
from tests.builders import resolved_stack
from tests.conftest import PLATFORM_REF, live_platform, render_sections, rendered_stack, sections_of, team_quota
from tests.test_policies import res, stack, violations

PLATFORM = ROOT / "stacks" / "examples" / "Pulumi.platform.yaml"
TEAM = ROOT / "stacks" / "examples" / "Pulumi.team-search.yaml"


@pytest.fixture
def team() -> dict[str, Any]:
    return sections_of(TEAM)


def problems(sections: dict[str, Any], platforms: PlatformLookup | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        check_sections(sections, "us-west-2", platforms=platforms)
    return [str(p) for p in info.value.problems]


def platform_exports() -> dict[str, Any]:
    """What the platform stack exports (its resolved view, exactly as `pulumi up` would export it)."""
    return export_platform(own_platform(check_sections(sections_of(PLATFORM), "us-west-2").config))


def team_render() -> Rendered:
    """The team's stack file rendered against the platform's stack file (once per process)."""
    return rendered_stack(TEAM)


# ---- 1. quota and fit with the engines' sizing -------------------------------------------------------


def test_a_quota_below_the_engines_default_sizing_for_one_replica_is_refused(team):
    # No models[].resources: the replica's cpu/memory come only from the engine's default sizing.
    assert "resources" not in team["models"][1]
    # A 4-device inf2 replica's default sizing is 57 cpu / 207Gi (`stacks plan team-search`).
    found = problems(team, team_quota(cpu="48", memory="192Gi"))
    for key in ("cpu", "memory"):
        assert any(p.startswith("inference-platform:models[1]:") and f"teams[].quota.{key}" in p for p in found), (
            f"the default sizing of a 4-device inf2 replica exceeds quota.{key}: {found}"
        )


def test_the_quota_check_counts_exactly_what_the_engine_deploys(team):
    seen = resolved_stack(team)  # against the platform's stack file, as validation sees it
    model = seen.models[1]
    need = replica_requests(model.config, model.pool.config, seen.platform.storage)
    cpu = f"{need.cpu_m - 500}m"
    found = problems(team, team_quota(cpu=cpu))
    assert any("quota.cpu" in p and f"{need.cpu_m}m of requests.cpu" in p and cpu in p for p in found), (
        f"the refusal quotes the sizing's {need.cpu_m}m: {found}"
    )
    check_sections(team, "us-west-2", platforms=team_quota(cpu=f"{need.cpu_m}m"))  # one replica's worth is enough


def test_the_rendered_pods_request_what_the_quota_check_assumed(team):
    seen = resolved_stack(team)  # against the platform's stack file, as validation sees it
    mocks = team_render().mocks
    for model in seen.models:
        deployment = mocks.named("kubernetes:apps/v1:Deployment", f"platform-models-deployment-{model.name}")
        pod = deployment.inputs["spec"]["template"]["spec"]
        engine = next(c for c in pod["containers"] if c["name"] == "engine")
        need = replica_requests(model.config, model.pool.config, seen.platform.storage)
        assert v.container_requests(engine) == need, (
            f"{model.name}: one source of requests for the engine, the fit and the quota"
        )


def test_the_policy_pack_refuses_a_team_quota_smaller_than_a_rendered_pod():
    """The quota is the platform's (its stack renders it); the pack compares it with a team's pods
    wherever both are in one preview, and `stacks validate` always does (quota_holds_one_replica)."""
    deployment = team_render().mocks.named(
        "kubernetes:apps/v1:Deployment", "platform-models-deployment-llama-3-8b-neuron"
    )
    quota = rendered_stack(PLATFORM).mocks.named(
        "kubernetes:core/v1:ResourceQuota", "resourcequota-search-search-quota"
    )
    pod = res(v.WORKLOADS[0], deployment.inputs, "llama")
    assert not violations(v.replicas_within_team_quota, stack(res(v.RESOURCE_QUOTA, quota.inputs), pod))
    small = {**quota.inputs, "spec": {"hard": {**quota.inputs["spec"]["hard"], "requests.cpu": "48"}}}
    found = violations(v.replicas_within_team_quota, stack(res(v.RESOURCE_QUOTA, small), pod))
    assert any("requests.cpu" in m and "search/llama-3-8b-neuron" in m for m in found), found


def test_a_pod_counts_its_largest_init_container_and_its_ephemeral_storage():
    pod = {
        "initContainers": [{"resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}],
        "containers": [{"resources": {"requests": {"cpu": "1", "memory": "8Gi", "ephemeral-storage": "10Gi"}}}],
    }
    got = v.pod_requests(pod)
    assert (got.cpu_m, got.memory_mib, got.ephemeral_mib) == (4000, 8192, 10240), got


# ---- 2. the model cache and bucket reader in the team namespace ---------------------------------------


def test_the_team_mounts_the_cache_claim_the_platform_made_on_its_efs_storage_class():
    platform = rendered_stack(PLATFORM).mocks
    claims = [
        c.inputs
        for c in platform.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        if c.inputs["metadata"]["namespace"] == "search"
    ]
    assert len(claims) == 1, "one model-cache claim in the team namespace, the platform's"
    claim = claims[0]
    assert claim["metadata"] == {**claim["metadata"], "name": "model-cache", "namespace": "search"}
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "every replica on every node shares it"
    assert claim["spec"]["storageClassName"] == platform_exports()["storageClasses"]["modelCache"] == "efs-models"
    mocks = team_render().mocks
    assert not mocks.of_type("kubernetes:core/v1:PersistentVolumeClaim"), "the team stack makes no claim"
    for deployment in mocks.of_type("kubernetes:apps/v1:Deployment"):
        volumes = deployment.inputs["spec"]["template"]["spec"]["volumes"]
        cache = next(vol for vol in volumes if vol["name"] == "model-cache")
        assert cache == {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache"}}, (
            f"{deployment.name} mounts the team's claim, not a node-local emptyDir"
        )


def test_the_teams_pods_read_the_bucket_as_the_model_reader_the_platform_bound_to_the_teams_role():
    platform = rendered_stack(PLATFORM).mocks
    account = platform.named("kubernetes:core/v1:ServiceAccount", "platform-team-search-readers-sa-search").inputs
    assert account["metadata"]["name"] == "model-reader" and account["metadata"]["namespace"] == "search"
    assoc = platform.named(
        "aws:eks/podIdentityAssociation:PodIdentityAssociation", "platform-team-search-readers-search"
    ).inputs
    role = platform.named("aws:iam/role:Role", "platform-team-search-readers-role")
    assert assoc["roleArn"] == role.outputs["arn"], "the team's own reader role, not the platform's"
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("search", "model-reader")
    mocks = team_render().mocks
    assert not mocks.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation"), "the team stack binds none"
    answer = mocks._stack_reference_outputs(PLATFORM_REF)["outputs"]
    deployment = mocks.named("kubernetes:apps/v1:Deployment", "platform-models-deployment-qwen3-8b")
    assert deployment.inputs["spec"]["template"]["spec"]["serviceAccountName"] == "model-reader"
    inits = deployment.inputs["spec"]["template"]["spec"]["initContainers"]
    env = {e["name"]: e.get("value") for c in inits for e in c.get("env", [])}
    assert env.get("MODEL_BUCKET") == answer["modelBucket"], "the cache is filled from the platform's bucket"
    assert env.get("MODEL_PREFIX", "").startswith("teams/search/qwen3-8b/"), "from the team's own prefix"


def test_a_team_stack_on_an_fsx_platform_is_refused_with_the_alternative(team):
    live = platform_exports()
    live["storage"] = {"modelCache": "fsx"}
    live["storageClasses"] = {}
    found = problems(team, live_platform(live))
    assert any(
        p.startswith("inference-platform:stack.platformStack:") and "modelCache: fsx" in p and "efs" in p for p in found
    ), found


def test_exports_of_the_previous_contract_version_are_refused(team):
    live = platform_exports()
    live["exportsVersion"] = 1
    found = problems(team, live_platform(live))
    assert any("stack.platformStack" in p and "contract version 1" in p for p in found), found


# ---- 3. exports: gateway and storage classes ----------------------------------------------------------


def test_the_platform_render_exports_gateway_storage_classes_and_the_teams_deploy_roles():
    rendered = rendered_stack(PLATFORM)
    mocks = rendered.mocks
    out = rendered.outputs
    assert out["gatewayParent"] == {
        "namespace": GATEWAY_NAMESPACE,
        "name": GATEWAY_NAME,
        "listener": HTTPS_LISTENER,
        "hostname": "inference.staging.example.com",
        "shared": True,
    }
    assert out["storageClasses"] == {"modelCache": "efs-models"}
    for team in ("search", "chat"):
        role = mocks.named("aws:iam/role:Role", f"platform-team-{team}-deploy")
        assert out["teamDeployRoleArns"][team] == role.outputs["arn"], "the tenancy component's deploy role"
    answer = mocks._stack_reference_outputs(PLATFORM_REF)["outputs"]
    assert set(answer) <= set(out), f"the mocks answer only what the platform exports: {set(answer) - set(out)}"
    agreed = ("gatewayParent", "storageClasses", "storage", "exportsVersion", "clusterName", "region")
    for key in (*agreed, "teamDeployRoleArns", "clusterCertificateAuthority"):
        assert answer[key] == out[key], f"the mocks' StackReference answer agrees with the render on {key}"


def test_team_routes_attach_to_the_gateway_the_platform_exports(mocks, team, monkeypatch):
    answer = mocks._stack_reference_outputs

    def renamed(stack_ref: str) -> dict[str, Any]:
        out = answer(stack_ref)
        out["outputs"]["gatewayParent"] = {"namespace": "edge", "name": "public", "listener": "tls", "shared": True}
        return out

    monkeypatch.setattr(mocks, "_stack_reference_outputs", renamed)
    run_program(sections_to_pulumi_config(team, "us-west-2"))
    routes = mocks.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    assert routes, "the team's exposed models get routes"
    for route in routes:
        assert route.inputs["metadata"]["namespace"] == "search", "in the team's namespace, beside its model"
        assert route.inputs["spec"]["parentRefs"] == [{"name": "public", "namespace": "edge", "sectionName": "tls"}]
    assert not mocks.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway"), "the team creates no Gateway"
    assert not mocks.of_type("kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant"), (
        "a route beside its Services needs no grant, and a team writes none into another namespace"
    )


def _pod_specs(objs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(workload name, pod spec) of every object that templates pods."""
    return [
        (o["metadata"]["name"], o["spec"]["template"]["spec"])
        for o in objs
        if isinstance(o.get("spec"), dict) and "spec" in (o["spec"].get("template") or {})
    ]


def _requests_neuron(pod: dict[str, Any]) -> bool:
    containers = [*pod.get("initContainers", []), *pod["containers"]]
    return any(
        key.startswith("aws.amazon.com/neuron")
        for c in containers
        for block in (c.get("resources") or {}).values()
        for key in block
    )


def test_the_team_render_uses_exactly_the_scheduler_storage_class_and_gateway_the_platform_render_exports():
    """The team-search example against the platform example, both as rendered (session-cached): what
    the platform's outputs say is what the team's objects use, with nothing re-derived in between."""
    out = rendered_stack(PLATFORM).outputs
    objs = team_render().manifests()

    scheduler = out["schedulerNames"]["neuron"]
    assert scheduler, "the platform installs the Neuron scheduler extension (addons.neuron.scheduler: true)"
    neuron = [(name, pod) for name, pod in _pod_specs(objs) if _requests_neuron(pod)]
    assert [name for name, _ in neuron] == ["llama-3-8b-neuron"], "the team's one Neuron model has Neuron pods"
    for name, pod in neuron:
        assert pod.get("schedulerName") == scheduler, (
            f"{name}: a Neuron pod must name the scheduler the platform's chart installs, or it stays Pending"
        )

    (claim,) = [
        o
        for o in rendered_stack(PLATFORM).manifests()
        if o["kind"] == "PersistentVolumeClaim"
        and o["metadata"]["name"] == CACHE_CLAIM
        and o["metadata"]["namespace"] == "search"
    ]
    assert claim["spec"]["storageClassName"] == out["storageClasses"]["modelCache"], (
        "the team's cache claim binds through the StorageClass the platform exports"
    )

    parent = out["gatewayParent"]
    routes = [o for o in objs if o["kind"] == "HTTPRoute"]
    exposed = {m["name"] for m in sections_of(TEAM)["models"] if m.get("expose")}
    assert exposed and {r["metadata"]["name"] for r in routes} == exposed, "one route per exposed team model"
    for route in routes:
        assert route["metadata"]["namespace"] == "search", "a team's route lives in the team's namespace"
        assert route["spec"]["parentRefs"] == [
            {"name": parent["name"], "namespace": parent["namespace"], "sectionName": parent["listener"]}
        ], f"{route['metadata']['name']}: attached to exactly the listener the platform exports"


def test_parent_gateway_reads_the_exported_names_only_for_a_workloads_stack(dev, team):
    exported = {"namespace": "edge", "name": "public", "listener": "tls", "shared": True}
    live = {**platform_exports(), "gatewayParent": exported}
    own = resolved_stack(dev, exports=live).route_parent
    assert (own.namespace, own.name, own.listener, own.own) == (
        GATEWAY_NAMESPACE,
        GATEWAY_NAME,
        HTTPS_LISTENER,
        True,
    ), "an all-in-one stack attaches to its own Gateway"
    theirs = resolved_stack(team, exports=live).route_parent
    assert (theirs.namespace, theirs.name, theirs.listener, theirs.own) == ("edge", "public", "tls", False), (
        "a workloads stack attaches to the listener its platform exports, and never creates it"
    )


def test_stacks_new_sizes_the_starter_quota_with_the_engines_sizing():
    from stacks.newstack import check, workloads_text

    live = platform_exports()
    for pool in live["nodePools"]:
        if pool["name"] == "gpu":
            pool["instanceTypes"] = ["g6e.48xlarge"]  # a 1-GPU share of this node is ~21 cpu
    text = workloads_text("search-dev", PLATFORM_REF, "search", "dev", None, live_platform(live))
    check(text, "search-dev", live_platform(live))  # validates as written, quota included
    assert 'cpu: "32"' not in text, "two default-sized replicas need more than the 32-cpu floor"


def test_an_exposed_team_model_on_a_platform_without_a_gateway_is_refused(team):
    live = platform_exports()
    live["gatewayParent"] = None
    found = problems(team, live_platform(live))
    for model in team["models"]:
        model["expose"] = False
    check_sections(team, "us-west-2")  # unexposed models need no gateway
    assert any(p.startswith("inference-platform:models[0].expose:") and "gatewayParent" in p for p in found), found


def test_a_team_model_on_a_platform_running_aibrix_gets_its_adapters_and_autoscaler(team):
    """The AIBrix release is the platform's, not in the team's stack: the team's ModelAdapters and
    PodAutoscaler are still rendered, in the team's namespace."""
    live = platform_exports()
    live["addons"]["aibrix"] = True
    model = team["models"][0]
    model["autoscaling"] = {"owner": "aibrix", "strategy": "KPA", "minReplicas": 1, "maxReplicas": 2}
    model["autoscaling"] |= {"metric": "vllm:num_requests_waiting", "targetValue": "8"}
    model.pop("replicas", None)
    model["adapters"] = [{"name": "sql-lora", "artifactURL": "huggingface://acme/qwen3-8b-sql-lora"}]
    objs = render_sections(team, platform_exports=live).manifests()
    made = {(o["kind"], o["metadata"]["namespace"]) for o in objs if o["kind"] in ("ModelAdapter", "PodAutoscaler")}
    assert made == {("ModelAdapter", "search"), ("PodAutoscaler", "search")}, made
