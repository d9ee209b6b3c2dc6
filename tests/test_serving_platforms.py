"""The serving platforms as the program registers them: pinned releases, their CRs waiting for them,
and the installers recorded for the Models component. The example's releases and dependencies come
from its session-cached render; a variant is built with the ServingPlatforms component alone."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.serving.platforms import ServingPlatforms, ServingPlatformsArgs
from stacks.mocks import RecordingMocks
from stacks.resolved import ResolvedStack
from tests.conftest import rendered_stack
from tests.serving_support import SERVING, serving_sections, serving_stack

RELEASE = "kubernetes:helm.sh/v3:Release"


def _example() -> RecordingMocks:
    """What the whole program registers for the serving example (rendered once per process)."""
    return rendered_stack(SERVING).mocks


def _build_platforms(stack: ResolvedStack, envoy_gateway: bool = False) -> dict[str, Any]:
    """Register only the ServingPlatforms component for this resolved stack, wired as Platform wires
    it (optionally behind an Envoy Gateway release `eg`); returns its installers by add-on."""
    installers: dict[str, Any] = {}

    @pulumi.runtime.test
    def build():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        envoy = None
        if envoy_gateway:
            envoy = k8s.helm.v3.Release(
                "eg", name="eg", chart="oci://docker.io/envoyproxy/gateway-helm", version="v1.9.0"
            )
        platforms = ServingPlatforms(
            "serving",
            ServingPlatformsArgs(
                addons=stack.platform.addons,
                gateway=stack.platform.gateway,
                models=list(stack.models),
                provider=provider,
                images=stack.images,
                envoy_gateway=envoy,
            ),
        )
        installers.update(platforms.releases)
        if platforms.litellm is not None:
            installers["litellm"] = platforms.litellm
        return provider.urn

    build()
    return installers


def test_each_enabled_platform_is_a_pinned_release_and_litellm_is_manifests():
    mocks = _example()
    releases = {r.inputs["name"]: r.inputs for r in mocks.of_type(RELEASE)}
    serving = set(releases) & {"dynamo", "aibrix", "kuberay", "nim-operator", "litellm"}
    assert serving == {"dynamo", "aibrix", "kuberay"}, "nimOperator is not enabled in the example"
    assert releases["dynamo"]["chart"] == "dynamo-platform" and releases["dynamo"]["version"] == "1.4.2"
    assert releases["dynamo"]["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia/ai-dynamo"
    assert releases["dynamo"]["values"]["global"]["nats"]["install"] is False, "1.4: TCP request, ZMQ event plane"
    assert releases["dynamo"]["values"]["global"]["etcd"]["install"] is False, "kubernetes discovery needs no etcd"
    assert releases["kuberay"]["chart"] == "kuberay-operator" and releases["kuberay"]["version"] == "1.7.0"
    assert releases["kuberay"]["values"]["image"]["tag"] == "v1.7.0"
    assert releases["aibrix"]["chart"] == "charts/vendor/aibrix-0.7.0/aibrix", "AIBrix ships its chart only in git"
    assert releases["aibrix"]["values"]["controllerManager"]["container"]["image"]["tag"] == "v0.7.0"
    deployments = {r.inputs["metadata"]["name"] for r in mocks.of_type("kubernetes:apps/v1:Deployment")}
    assert "litellm" in deployments


def test_aibrix_custom_resources_wait_for_the_aibrix_release():
    mocks = _example()
    aibrix = next(r for r in mocks.of_type(RELEASE) if r.inputs["name"] == "aibrix")
    crs = [
        r for r in mocks.records if r.type.startswith("kubernetes:model.aibrix.ai") or "autoscaling.aibrix" in r.type
    ]
    assert {r.inputs["kind"] for r in crs} == {"ModelAdapter", "PodAutoscaler"}
    assert all(aibrix.urn in r.depends_on for r in crs), "a CR needs its CRD installed first"


def test_nothing_is_installed_when_no_platform_is_enabled(dev_render):
    mocks = dev_render.mocks
    names = {r.inputs["name"] for r in mocks.of_type(RELEASE)}
    assert not names & {"dynamo", "aibrix", "kuberay", "nim-operator"}
    assert not any(r.inputs.get("metadata", {}).get("namespace") == "litellm" for r in mocks.kubernetes_objects())


def test_the_nim_operator_is_installed_when_enabled(mocks):
    sections = serving_sections()
    sections["addons"]["nimOperator"] = {"enabled": True}
    installers = _build_platforms(serving_stack(sections))
    assert "nim-operator" in installers, "the Models component finds the NIM Operator's installer"
    releases = {r.inputs["name"]: r.inputs for r in mocks.of_type(RELEASE)}
    assert releases["nim-operator"]["chart"] == "k8s-nim-operator"
    assert releases["nim-operator"]["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    assert releases["nim-operator"]["version"] == "3.1.2"


def test_aibrix_waits_for_the_envoy_gateway_controller_when_the_front_door_installs_it(mocks):
    installers = _build_platforms(serving_stack(), envoy_gateway=True)
    assert set(installers) == {"dynamo", "aibrix", "kuberay", "keda", "litellm"}
    envoy = mocks.named(RELEASE, "eg")
    aibrix = mocks.named(RELEASE, "serving-aibrix")
    assert envoy.urn in aibrix.depends_on, "AIBrix's gateway resources attach to Envoy Gateway"
    assert envoy.urn not in mocks.named(RELEASE, "serving-kuberay").depends_on
