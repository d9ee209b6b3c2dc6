"""The CrossGuard pack refuses at preview what `stacks validate` refuses, on resource properties as
the engine sends them (camelCase). Arguments are built by hand (shared/PULUMI_TESTING.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)

from policypack import validators as v
from stacks.load import ROOT
from tests.conftest import ALL_STACKS

DIGEST = "sha256:" + "a" * 64


def opts(protect: bool = False) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def resource_args(typ: str, props: dict[str, Any], protect: bool = False, config=None) -> ResourceValidationArgs:
    return ResourceValidationArgs(
        resource_type=typ,
        props=props,
        urn=f"urn:pulumi:s::p::{typ}::x",
        name="x",
        opts=opts(protect),
        provider=None,
        config=config,
    )


def res(typ: str, props: dict[str, Any], name: str = "x") -> PolicyResource:
    return PolicyResource(
        resource_type=typ,
        props=props,
        urn=f"urn:pulumi:s::p::{typ}::{name}",
        name=name,
        opts=opts(),
        provider=None,
        parent=None,
        dependencies=[],
        property_dependencies={},
    )


def violations(fn, args) -> list[str]:
    found: list[str] = []
    fn(args, lambda message, urn=None: found.append(message))
    return found


def stack(*resources: PolicyResource, config=None) -> StackValidationArgs:
    return StackValidationArgs(resources=list(resources), config=config)


def node_pool(name: str, types: list[str], taints: list[dict] | None = None, label: str | None = None) -> dict:
    labels = {"inference-platform.io/pool": name}
    if label:
        labels["inference-platform.io/accelerator"] = label
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "taints": taints or [],
                },
            }
        },
    }


def deployment(name: str, pool: str, gpus: int, image: str = "vllm/vllm-openai:v0.29.0") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "inference"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"inference-platform.io/pool": pool},
                    "containers": [
                        {
                            "name": "engine",
                            "image": image,
                            "resources": {
                                "requests": {"cpu": "2", "memory": "16Gi"},
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                }
            }
        },
    }


def test_the_pack_assembles_every_named_policy_and_main_only_assembles():
    names = {p.name for p in v.POLICIES}
    assert names == {
        "pinned-chart-versions",
        "tainted-accelerator-pools",
        "protected-stateful-resources",
        "schedulable-replicas",
        "replicas-within-team-quota",
        "authenticated-routes",
        "image-digests-in-prod",
        "one-scaler-owner",
    }
    main = (ROOT / "policypack" / "__main__.py").read_text()
    assert "def " not in main and "PolicyPack(" in main, "__main__.py only assembles the validators"
    assert (ROOT / "policypack" / "PulumiPolicy.yaml").exists()


def test_a_helm_release_with_a_version_range_is_refused_and_an_exact_one_passes():
    release = {"chart": "oci://public.ecr.aws/karpenter/karpenter", "version": "^1.14", "namespace": "kube-system"}
    assert any(
        "karpenter" in m and "exact" in m
        for m in violations(v.pinned_chart_versions, resource_args(v.HELM_RELEASE, release))
    )
    release["version"] = "1.14.1"
    assert not violations(v.pinned_chart_versions, resource_args(v.HELM_RELEASE, release))
    release.pop("version")
    assert violations(v.pinned_chart_versions, resource_args(v.HELM_RELEASE, release)), "no version means newest"


def test_a_gpu_node_pool_without_its_taint_is_refused():
    bare = node_pool("gpu", ["g6.xlarge"])
    assert any(
        "nvidia.com/gpu:NoSchedule" in m
        for m in violations(v.tainted_accelerator_pools, resource_args(v.NODE_POOL, bare))
    )
    tainted = node_pool("gpu", ["g6.xlarge"], [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    assert not violations(v.tainted_accelerator_pools, resource_args(v.NODE_POOL, tainted))


def test_a_neuron_pool_is_recognised_from_its_instance_types_and_needs_the_neuron_taint():
    wrong = node_pool("inf", ["inf2.xlarge"], [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    assert any(
        "aws.amazon.com/neuron" in m for m in violations(v.tainted_accelerator_pools, resource_args(v.NODE_POOL, wrong))
    )


def test_a_cpu_pool_needs_no_taint():
    assert not violations(v.tainted_accelerator_pools, resource_args(v.NODE_POOL, node_pool("cpu", ["m7i.xlarge"])))


def test_an_unprotected_bucket_is_refused_in_prod_and_allowed_in_dev():
    props = {"bucket": "models", "tags": {"inference-platform:environment": "prod"}}
    assert violations(v.protected_stateful_resources, resource_args("aws:s3/bucketV2:BucketV2", props))
    assert not violations(
        v.protected_stateful_resources, resource_args("aws:s3/bucketV2:BucketV2", props, protect=True)
    )
    props["tags"]["inference-platform:environment"] = "dev"
    assert not violations(v.protected_stateful_resources, resource_args("aws:s3/bucketV2:BucketV2", props))


def test_a_replica_that_fits_no_instance_type_of_its_pool_is_refused():
    pool = res(v.NODE_POOL, node_pool("gpu", ["g6.xlarge", "g6.12xlarge"]), "gpu")
    big = res("kubernetes:apps/v1:Deployment", deployment("llama-70b", "gpu", 8))
    found = violations(v.schedulable_replicas, stack(pool, big))
    assert any("fits no instance type of pool gpu" in m and "nvidia.com/gpu 8 > 4" in m for m in found), found
    small = res("kubernetes:apps/v1:Deployment", deployment("qwen", "gpu", 1))
    assert not violations(v.schedulable_replicas, stack(pool, small))


def test_an_exposed_route_without_an_authenticating_security_policy_is_refused():
    route = res(
        v.HTTP_ROUTE,
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "qwen", "namespace": "inference"},
            "spec": {"parentRefs": [{"name": "inference", "namespace": "gateway"}], "rules": []},
        },
    )
    assert any("inference/qwen" in m for m in violations(v.authenticated_routes, stack(route)))
    assert not violations(v.authenticated_routes, stack(route, config={"allowUnauthenticated": True}))
    cors_only = res(
        v.SECURITY_POLICY,
        {
            "metadata": {"name": "cors", "namespace": "inference"},
            "spec": {
                "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "qwen"}],
                "cors": {},
            },
        },
    )
    assert violations(v.authenticated_routes, stack(route, cors_only)), "a policy without auth protects nothing"
    gateway_auth = res(
        v.SECURITY_POLICY,
        {
            "metadata": {"name": "keys", "namespace": "gateway"},
            "spec": {
                "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference"}],
                "apiKeyAuth": {
                    "credentialRefs": [{"name": "inference-api-keys"}],
                    "extractFrom": [{"headers": ["x-api-key"]}],
                },
            },
        },
    )
    assert not violations(v.authenticated_routes, stack(route, gateway_auth)), "auth on the parent Gateway covers it"


def test_images_without_digests_are_refused_in_prod_only():
    workload = res("kubernetes:apps/v1:Deployment", deployment("qwen", "gpu", 1))
    assert not violations(v.image_digests_in_prod, stack(workload, config={"environment": "dev"}))
    found = violations(v.image_digests_in_prod, stack(workload, config={"environment": "prod"}))
    assert any("inference/qwen" in m and "digest" in m for m in found), found
    pinned = res("kubernetes:apps/v1:Deployment", deployment("qwen", "gpu", 1, f"vllm/vllm-openai:v0.29.0@{DIGEST}"))
    assert not violations(v.image_digests_in_prod, stack(pinned, config={"environment": "prod"}))


def test_the_environment_is_read_from_the_resources_when_the_pack_has_no_config():
    quota = res(
        "kubernetes:core/v1:ResourceQuota",
        {"metadata": {"name": "q", "namespace": "search", "labels": {"inference-platform.io/environment": "prod"}}},
    )
    workload = res("kubernetes:apps/v1:Deployment", deployment("qwen", "gpu", 1))
    assert violations(v.image_digests_in_prod, stack(quota, workload))


def test_two_autoscalers_on_one_workload_are_refused():
    hpa = res(
        "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
        {
            "metadata": {"name": "qwen", "namespace": "inference"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen"},
                "maxReplicas": 4,
            },
        },
    )
    pa = res(
        "kubernetes:autoscaling.aibrix.ai/v1alpha1:PodAutoscaler",
        {
            "metadata": {"name": "qwen-pa", "namespace": "inference"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen"},
                "maxReplicas": 4,
                "scalingStrategy": "KPA",
            },
        },
    )
    found = violations(v.one_scaler_owner, stack(hpa, pa))
    assert found == [
        "inference/Deployment/qwen is scaled by 2 autoscalers (AIBrix PodAutoscaler qwen-pa, HPA qwen); "
        "keep exactly one owner"
    ]
    assert not violations(v.one_scaler_owner, stack(hpa))


def test_keda_beside_the_dynamo_planner_on_one_component_is_refused():
    """Neither KEDA's webhook nor the HPA controller sees the planner, which patches the same adapter."""
    components = [
        {"name": "Frontend", "type": "frontend", "replicas": 1},
        {"name": "Planner", "type": "planner", "replicas": 1},
        {"name": "DecodeWorker", "type": "decode", "scalingAdapter": {}},
    ]
    graph = res(
        "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment",
        {"metadata": {"name": "qwen", "namespace": "inference"}, "spec": {"components": components}},
    )
    keda = res(
        "kubernetes:keda.sh/v1alpha1:ScaledObject",
        {
            "metadata": {"name": "qwen-decodeworker", "namespace": "inference"},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "nvidia.com/v1beta1",
                    "kind": "DynamoGraphDeploymentScalingAdapter",
                    "name": "qwen-decodeworker",
                },
                "triggers": [],
            },
        },
    )
    assert violations(v.one_scaler_owner, stack(graph, keda)) == [
        "inference/DynamoGraphDeploymentScalingAdapter/qwen-decodeworker is scaled by 2 autoscalers (KEDA "
        "ScaledObject qwen-decodeworker, the Dynamo planner of qwen); keep exactly one owner"
    ]
    without_planner = res(
        "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment",
        {
            "metadata": {"name": "qwen", "namespace": "inference"},
            "spec": {"components": [c for c in components if c["type"] != "planner"]},
        },
    )
    assert not violations(v.one_scaler_owner, stack(without_planner, keda))


def test_validate_uses_the_same_checks_for_addon_versions_and_prod_storage(dev):
    import pytest

    from stacks.errors import ConfigError
    from stacks.pipeline import check_sections

    dev["addons"]["neuron"]["version"] = "1.x"
    dev["stack"]["environment"] = "prod"
    dev["storage"]["protect"] = False
    with pytest.raises(ConfigError) as info:
        check_sections(dev, "us-west-2")
    found = [str(p) for p in info.value.problems]
    assert any(p.startswith("inference-platform:addons.neuron.version:") and "exact" in p for p in found), found
    assert any(p.startswith("inference-platform:storage.protect:") for p in found), found


# ---- the pack over every shipped stack's render (issue 14 item 4) ------------------------------------


def pack_resources(rendered) -> list[PolicyResource]:
    """A render's resources as the policy pack receives them."""
    out = []
    for r in rendered.resources:
        out.append(
            PolicyResource(
                resource_type=r.type,
                props=dict(r.inputs),
                urn=r.urn,
                name=r.name,
                opts=opts(protect=r.protect),
                provider=None,
                parent=None,
                dependencies=[],
                property_dependencies={},
            )
        )
    return out


def pack_violations(rendered, config: dict[str, Any] | None = None) -> list[str]:
    """Every policy of the pack over a render, as `pulumi preview --policy-pack` runs them, each
    violation prefixed with its policy's name."""
    from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

    resources = pack_resources(rendered)
    found: list[str] = []
    for policy in v.POLICIES:
        fn = policy.validate  # type: ignore[attr-defined]
        report = lambda message, urn=None, name=policy.name: found.append(f"{name}: {message}")  # noqa: E731
        if isinstance(policy, ResourceValidationPolicy):
            for res in resources:
                args = ResourceValidationArgs(
                    resource_type=res.resource_type, props=res.props, urn=res.urn, name=res.name, opts=res.opts,
                    provider=None, config=config or {},
                )  # fmt: skip
                fn(args, report)
        elif isinstance(policy, StackValidationPolicy):
            fn(StackValidationArgs(resources=resources, config=config or {}), report)
    return found


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_the_policy_pack_passes_on_every_shipped_stacks_render(path):
    from tests.conftest import rendered_stack

    found = pack_violations(rendered_stack(path))
    assert not found, found


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_the_pack_reads_every_shipped_stacks_environment_from_its_own_render(path):
    """Without pack config (the workflows set none), `image-digests-in-prod` knows a stack's environment
    only from the tags and labels of what it renders: a team's stack too, which creates no AWS resource
    and whose quota is the platform's."""
    from tests.conftest import rendered_stack, sections_of

    want = sections_of(path)["stack"].get("environment", "dev")
    assert v.environment(pack_resources(rendered_stack(path)), None) == want
