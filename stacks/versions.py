"""The versions catalog: every chart, image and EKS add-on the platform installs, pinned in one place.

Defaults are the versions inspected for this release: the conformance checks validate every object
against those versions' CRDs and every release against those charts. A stack overrides a chart's version with
`addons.<name>.version`, a model's image with `models[].image` and any other image with
`images.<name>` (stacks/config/images.py); nothing else picks versions. Digests are left out until
one is read from the registry: a stack pins them (prod must, for every image it renders).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from .awaits import IMAGE_PULL_SECONDS, NODE_LAUNCH_SECONDS, SERVICE_START_SECONDS


@dataclass(frozen=True)
class Chart:
    """A Helm chart: `repo` is an https chart repository or an `oci://` registry path."""

    chart: str
    version: str
    repo: str

    def with_version(self, version: str | None) -> Chart:
        return self if version is None else replace(self, version=version)


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    digest: str | None = None

    @property
    def ref(self) -> str:
        base = f"{self.repository}:{self.tag}"
        return f"{base}@{self.digest}" if self.digest else base

    @property
    def pinned(self) -> bool:
        return self.digest is not None


class ImageOverride(Protocol):
    """What may override a catalog image: `models[].image` and `images.<name>` alike."""

    @property
    def repository(self) -> str | None: ...

    @property
    def tag(self) -> str | None: ...

    @property
    def digest(self) -> str | None: ...


def overridden(base: Image, override: ImageOverride | None) -> Image:
    """A catalog image with an override applied field by field: a digest belongs to one repository and
    tag, so the catalog's is kept only while neither changed."""
    if override is None:
        return base
    keep = override.repository is None and override.tag is None
    return Image(
        override.repository or base.repository,
        override.tag or base.tag,
        override.digest or (base.digest if keep else None),
    )


CHARTS: dict[str, Chart] = {
    # --- capacity (Karpenter, device plugins) -------------------------------------------------
    "karpenter": Chart("karpenter", "1.14.1", "oci://public.ecr.aws/karpenter"),
    # The CRDs as templates, so `helm upgrade` updates them (a chart's crds/ directory is install-only).
    "karpenter-crd": Chart("karpenter-crd", "1.14.1", "oci://public.ecr.aws/karpenter"),
    "nvidia-device-plugin": Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin"),
    "neuron": Chart("neuron-helm-chart", "1.10.0", "oci://public.ecr.aws/neuron"),
    # aws/eks-charts stable/aws-efa-k8s-device-plugin: its Chart.yaml version carries the "v".
    "aws-efa-k8s-device-plugin": Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts"),
    # --- storage -------------------------------------------------------------------------------
    # --- serving platforms ---------------------------------------------------------------------
    "dynamo": Chart("dynamo-platform", "1.4.2", "https://helm.ngc.nvidia.com/nvidia/ai-dynamo"),
    # AIBrix publishes its chart only in git (vllm-project/aibrix dist/chart at tag v0.7.0): no
    # repository; scripts/vendor-charts.sh copies it to charts/vendor/aibrix-<version>/aibrix.
    "aibrix": Chart("aibrix", "0.7.0", ""),
    "kuberay": Chart("kuberay-operator", "1.7.0", "https://ray-project.github.io/kuberay-helm/"),
    "nim-operator": Chart("k8s-nim-operator", "3.1.2", "https://helm.ngc.nvidia.com/nvidia"),
    # kubernetes-sigs/lws v0.10.0: hack/push-chart.sh packages charts/lws with --version v0.10.0 (the "v"
    # kept) and pushes it to registry.k8s.io/lws/charts, the repository its installation doc names.
    "lws": Chart("lws", "v0.10.0", "oci://registry.k8s.io/lws/charts"),
    # kedacore/charts: keda 2.20.2 (tag v2.20.2) and keda-add-ons-http 0.15.0, both published to the
    # repository KEDA's deployment docs name.
    "keda": Chart("keda", "2.20.2", "https://kedacore.github.io/charts"),
    "keda-http": Chart("keda-add-ons-http", "0.15.0", "https://kedacore.github.io/charts"),
    # --- front door and monitoring -------------------------------------------------------------
    # Chart version = controller appVersion since v3 (aws/eks-charts stable/aws-load-balancer-controller).
    "aws-load-balancer-controller": Chart("aws-load-balancer-controller", "3.5.0", "https://aws.github.io/eks-charts"),
    "envoy-gateway": Chart("gateway-helm", "v1.9.0", "oci://docker.io/envoyproxy"),
    # llm-d/llm-d-router v0.10.0 config/charts/llm-d-router-standalone: the endpoint picker alone (no
    # InferencePool, no proxy with the values the front door sets); hack/push-chart.sh publishes it
    # with --version v0.10.0 to ghcr.io/llm-d/charts.
    "llm-d-router-standalone": Chart("llm-d-router-standalone", "v0.10.0", "oci://ghcr.io/llm-d/charts"),
    # Its Gateway API and Envoy Gateway CRDs come from gateway-crds-helm (CRD_SOURCES), not its crds/.
    "kube-prometheus-stack": Chart(
        "kube-prometheus-stack", "81.6.2", "https://prometheus-community.github.io/helm-charts"
    ),
    # Serves custom.metrics.k8s.io from Prometheus for HPAs (appVersion v0.12.0).
    "prometheus-adapter": Chart("prometheus-adapter", "5.3.0", "https://prometheus-community.github.io/helm-charts"),
    "dcgm-exporter": Chart("dcgm-exporter", "4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts"),
}

# Where a release's pods run, which decides what its `helm --wait` waits through:
# - `none`: no pods (CRDs only): the API calls alone;
# - `system`: pinned to the system nodes (or kept off Karpenter's by the chart), which exist: the images'
#   pull and the pods' start;
# - `anywhere`: not pinned; with an untainted Karpenter pool they may land on a node launched for them:
#   the node too;
# - `daemonset`: one pod per existing node it selects (a DaemonSet never launches a node), however many
#   accelerator nodes run: the pull and the start.
Placement = Literal["none", "system", "anywhere", "daemonset"]
# Helm's own default timeout (pulumi-kubernetes helm.v3.Release `timeout`: 300 seconds), what a release
# with no pods is given.
HELM_DEFAULT_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class ReleaseWait:
    """What a pinned chart's release waits for (`helm.v3.Release` waits until its resources are ready,
    `timeout` seconds per operation): where its pods run, any wait beyond pull and start (`extra`:
    volumes, hook Jobs), whether it creates Services (which the AWS Load Balancer Controller's
    fail-closed Service webhook admits), and why."""

    placement: Placement
    services: bool
    reason: str
    extra: int = 0

    @property
    def timeout(self) -> int:
        if self.placement == "none":
            return HELM_DEFAULT_TIMEOUT_SECONDS + self.extra
        node = NODE_LAUNCH_SECONDS if self.placement == "anywhere" else 0
        return node + IMAGE_PULL_SECONDS + SERVICE_START_SECONDS + self.extra


CRDS_ONLY = ReleaseWait("none", False, "CRDs only")

# One entry per catalog chart (tests/test_awaits.py checks every CHARTS key has one, and the pinned
# charts on file for their Services and webhooks).
RELEASE_WAITS: dict[str, ReleaseWait] = {
    "karpenter": ReleaseWait(
        "system", True, "the controller's Deployment: the chart's affinity keeps it off Karpenter's nodes"
    ),
    "karpenter-crd": CRDS_ONLY,
    "nvidia-device-plugin": ReleaseWait("daemonset", False, "a DaemonSet on the GPU nodes that exist"),
    "neuron": ReleaseWait(
        "anywhere",
        True,
        "the device plugin DaemonSet on the Neuron nodes, and the scheduler extension's Deployment and "
        "Service (chart not on file: taken to create Services)",
    ),
    "aws-efa-k8s-device-plugin": ReleaseWait("daemonset", False, "a DaemonSet on the EFA nodes that exist"),
    "dynamo": ReleaseWait(
        "anywhere",
        True,
        "the operator's Deployment, whose init container applies the CRDs first",
        extra=SERVICE_START_SECONDS,
    ),
    "aibrix": ReleaseWait(
        "anywhere",
        True,
        "the controller manager, gateway plugin, metadata service with its Redis, and their Envoy proxy",
        extra=SERVICE_START_SECONDS,
    ),
    "kuberay": ReleaseWait("anywhere", True, "the operator's Deployment"),
    "nim-operator": ReleaseWait(
        "anywhere", True, "the operator's Deployment (chart not on file: taken to create Services)"
    ),
    "lws": ReleaseWait("anywhere", True, "the controller's Deployment and its webhook Service"),
    "keda": ReleaseWait("anywhere", True, "the operator, metrics API server and admission webhook Deployments"),
    "keda-http": ReleaseWait("anywhere", True, "the interceptor, scaler and operator Deployments"),
    "aws-load-balancer-controller": ReleaseWait(
        "system", True, "the controller's Deployment on the system nodes (its own Services are exempt from its webhook)"
    ),
    "envoy-gateway": ReleaseWait(
        "anywhere", True, "the controller's Deployment, after the certgen Job hook", extra=SERVICE_START_SECONDS
    ),
    "llm-d-router-standalone": ReleaseWait("system", True, "the endpoint picker's Deployment on the system nodes"),
    "kube-prometheus-stack": ReleaseWait(
        "system",
        True,
        "Prometheus, Alertmanager and Grafana on the system nodes, Prometheus's EBS volume, the admission "
        "webhook's certificate Jobs",
        extra=SERVICE_START_SECONDS,
    ),
    "prometheus-adapter": ReleaseWait("system", True, "the adapter's Deployment on the system nodes"),
    "dcgm-exporter": ReleaseWait("daemonset", True, "a DaemonSet on the GPU nodes that exist, and its Service"),
}


def release_wait(pinned: Chart) -> ReleaseWait:
    """The wait of a pinned chart's release, by the chart it installs."""
    for name, entry in CHARTS.items():
        if entry.chart == pinned.chart:
            return RELEASE_WAITS[name]
    if any(r.chart is not None and r.chart.chart == pinned.chart for r in CRD_SOURCES.values()):
        return CRDS_ONLY  # a CRD chart of CRD_SOURCES (prometheus-operator-crds): nothing to wait for
    raise KeyError(f"chart {pinned.chart} is not in the catalog (stacks/versions.py CHARTS)")


# The images a model runs (its engine's, or its serving platform's runtime), each named by its engine
# module (components/engines/<engine>.py): `models[].image` overrides them, per model.
MODEL_IMAGES: dict[str, Image] = {
    # --- inference engines (the source document's inspected versions) ----------------------------
    "vllm-openai": Image("vllm/vllm-openai", "v0.29.0"),
    "sglang": Image("lmsysorg/sglang", "v0.5.19"),
    "text-generation-inference": Image("ghcr.io/huggingface/text-generation-inference", "3.3.7"),
    "ollama": Image("ollama/ollama", "0.34.0"),
    "model-free-nim": Image("nvcr.io/nim/nvidia/model-free-nim", "2.0.12"),
    # NxD Inference path (vLLM 0.16 with the vllm-neuron 0.5.3 plugin) for Inf2/Trn1/Trn2. This DLC line
    # ends at SDK 2.31.1: from 2.32.0 the pytorch-inference-vllm-neuronx 0.16 DLC is no longer published
    # (aws-neuron-sdk release-notes/components/containers.rst, 2.32.0) and 2.32's only vLLM DLC is the
    # 0.24 vllm-neuron beta, Trn2/Trn3 only. aws-neuron/deep-learning-containers README lists this tag
    # for trn1, trn2, trn3 and inf2.
    "vllm-neuronx": Image(
        "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx", "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    ),
    # --- serving platforms' runtimes ------------------------------------------------------------
    "dynamo-vllm": Image("nvcr.io/nvidia/ai-dynamo/vllm-runtime", "1.4.2"),
    "dynamo-sglang": Image("nvcr.io/nvidia/ai-dynamo/sglang-runtime", "1.4.2"),
    "dynamo-trtllm": Image("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime", "1.4.2"),
    # Ray 2.58 publishes ray-llm for Python 3.12 and CUDA 13.0 only (docker/ray-llm/cuda.wanda.yaml;
    # the cu128/py311 images were retired, ray-project/ray#62458). CUDA 13 needs driver R580+: the EKS
    # AL2023 NVIDIA AMIs ship 580 (amazon-eks-ami templates/al2023/variables-default.json).
    "ray-llm": Image("rayproject/ray-llm", "2.58.0-py312-cu130"),
}


@dataclass(frozen=True)
class ImagePlatforms:
    """What hardware an image runs on: the CPU architectures its tag is published for (a node pulls only
    its own from the manifest list) and whether its CUDA build carries Blackwell kernels (sm_100 for B200
    and GB200, sm_103 for B300; CUDA 12.8 or later with those in its arch list: True; a CUDA build below
    12.8: False). None: not published where the catalog read; `docker buildx imagetools inspect <image>`
    answers the first, the image's CUDA version the second. A CPU-only image (no kernels) records None for
    `blackwell`: the Blackwell rules read engine images only. `arm64_tag`: the tag of the same release's
    arm64 build where the project publishes it under its own tag (a suffix) instead of in this tag's
    manifest list, what the refusal tells the stack to set. `sm120`: whether the CUDA build carries kernels
    for compute capability 12.0, the RTX PRO Blackwell GPUs of g7 and g7e (a different target from B200's
    sm_100: True only where the image's build definition lists 12.0 or 120 in its CUDA arch list; False where
    it is read and lacks it; None where the catalog has not read it), with where that is read in `source`."""

    architectures: frozenset[str] | None
    blackwell: bool | None
    source: str
    arm64_tag: str | None = None
    sm120: bool | None = None


MULTI_ARCH = frozenset({"amd64", "arm64"})
AMD64_ONLY = frozenset({"amd64"})

# Keyed by (repository, tag): a `models[].image` or `images.<name>` override to another tag is a different
# image, unknown here. stacks/rules/hardware.py refuses what a fact rules out and warns where an engine
# image is unknown. Sources are the upstream build definitions at (or nearest to) the pinned tag, as
# repo@ref:path; where the nearest stored ref is not the pinned tag, the entry says which it is.
IMAGE_PLATFORMS: dict[tuple[str, str], ImagePlatforms] = {
    ("vllm/vllm-openai", "v0.29.0"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "vllm-project/vllm .buildkite/scripts/publish-release-images.sh: vllm/vllm-openai:v<release> is a manifest "
        "list of the -x86_64 and -aarch64 builds, and the default build is CUDA 13.0 (CUDA 12.9 is the -cu129 "
        "variant); NVIDIA/Model-Optimizer#2042 runs these multi-arch release tags on B300/GB300 (sm_103) with the "
        "CUDA 13 build; B200 (sm_100) needs CUDA 12.8 or later (vllm-project/vllm#17901). sm_120: vllm 0.29.0's "
        "source (PyPI sdist) .buildkite/release-pipeline.yaml builds the release image with torch_cuda_arch_list "
        "CUDA_ARCH_X86 '7.5 8.0 8.6 8.9 9.0 10.0 12.0' (CUDA 13.0.2; arm64 '8.0 8.7 8.9 9.0 10.0 11.0 12.0') for "
        "docker/Dockerfile",
        sm120=True,
    ),
    ("ghcr.io/huggingface/text-generation-inference", "3.3.7"): ImagePlatforms(
        AMD64_ONLY,
        None,
        "huggingface/text-generation-inference .github/workflows/build.yaml builds `platforms: 'linux/amd64'` only "
        "(no arm64 TGI image is published); its CUDA build's Blackwell kernels are not stated for 3.3.7",
    ),
    ("lmsysorg/sglang", "v0.5.19"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "sgl-project/sglang@16739a6:.github/workflows/_docker-build-and-publish.yml (the release workflow's "
        "reusable build before the CUDA 12 lane was retired): an amd64 and an arm64 build (GRACE_BLACKWELL=1) "
        "of docker/Dockerfile per CUDA variant, joined by `docker buildx imagetools create` into one manifest "
        "list per tag; the plain v{version} tag is the cu129 variant (CUDA 12.9.1; test_docker_build_metadata_"
        "args.py), and v0.5.19 is the last release with that lane (sgl-project/sglang#38404). docker/Dockerfile "
        "builds its kernels for TORCH_CUDA_ARCH_LIST 9.0;10.0;10.3 on CUDA 12.8+. sm_120 is not in that list, "
        "which covers only what the Dockerfile compiles; the sgl-kernel wheel it installs has its own arch list, "
        "not read: sm_120 unknown",
    ),
    ("ollama/ollama", "0.34.0"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "ollama/ollama@v0.33.0-rc2 (the newest tag stored; 0.34.0 is later):.github/workflows/release.yaml "
        "docker-build-push builds linux/amd64 and linux/arm64 and docker-merge-push joins them into one "
        "manifest list per version; llama/server/CMakePresets.json builds the CUDA 12.8 library for "
        "CMAKE_CUDA_ARCHITECTURES ...;90a;100;120 and the CUDA 13.0 one for ...;100-virtual;103-virtual;110-virtual;"
        "120-virtual;121-virtual (sm_120 in both)",
        sm120=True,
    ),
    ("nvcr.io/nim/nvidia/model-free-nim", "2.0.12"): ImagePlatforms(
        None,
        True,
        "docs.nvidia.com/nim/large-language-models/2.0.1/reference/support-matrix.html: NIM LLM 2.0's vLLM "
        "profiles are verified on NVIDIA-B200, NVIDIA-B300-SXM6-AC and NVIDIA-GB200; the CPU architectures the "
        "model-free-nim 2.0.12 image is published for are not stated in the 2.0 docs",
    ),
    ("public.ecr.aws/neuron/pytorch-inference-vllm-neuronx", "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"): (
        ImagePlatforms(
            AMD64_ONLY,
            None,
            "Neuron hosts are x86 only: every Inf2, Trn1, Trn2 and Trn3 type is x86_64 (the catalog's "
            "instances.json; Karpenter v1.14 pkg/providers/amifamily/al2023.go has no arm64 Neuron AMI), and "
            "aws-neuron/aws-neuron-sdk@v2.31.1:deploy/docker-examples/inference/Dockerfile-inference-dlc builds "
            "the inference DLC on x86_64 (Mambaforge Linux-x86_64, /lib/x86_64-linux-gnu); no CUDA",
        )
    ),
    # Dynamo: its main branch of 2026-08-22 (after the 1.4.0 branch cut, read from the fork wxsms/dynamo),
    # whose release ledger lists each 1.4 runtime's backend, CUDA and architectures.
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime", "1.4.2"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "ai-dynamo/dynamo@main:docs/fern/components/releases.data.ts: vllm-runtime "
        '1.4.0 is "vLLM v0.26.0 · CUDA 13.0 · AMD64/ARM64" (patch releases keep their base\'s CUDA support: '
        "CUDA_NOTES), built FROM vllm/vllm-openai (container/context.yaml)",
    ),
    ("nvcr.io/nvidia/ai-dynamo/sglang-runtime", "1.4.2"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "ai-dynamo/dynamo@main:docs/fern/components/releases.data.ts: sglang-runtime "
        '1.4.0 is "SGLang v0.5.16 · CUDA 13.0 · AMD64/ARM64" (patch releases keep their base\'s CUDA '
        "support), built FROM lmsysorg/sglang's cu130 runtime (container/context.yaml)",
    ),
    ("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime", "1.4.2"): ImagePlatforms(
        MULTI_ARCH,
        True,
        "ai-dynamo/dynamo@main:docs/fern/components/releases.data.ts: "
        'tensorrtllm-runtime 1.4.0 is "TRT-LLM v1.3.0rc22 · CUDA 13.1 · AMD64/ARM64" (patch releases keep '
        "their base's CUDA support)",
    ),
    ("rayproject/ray-llm", "2.58.0-py312-cu130"): ImagePlatforms(
        AMD64_ONLY,
        True,
        "ray-project/ray ci/ray_ci/docker_container.py `_get_image_tags`: a tag without an architecture suffix "
        "is the x86_64 build and an aarch64 build is published as <tag>-aarch64; ray-images.json listed ray-llm "
        "for x86_64 only until ray-project/ray#65002 (opened 2026-07-25, merged) added arm64 ray-llm images; the "
        "2.58.0 wheels were built 2026-08-20 (commit cec0a09). That 2.58.0's -aarch64 tag exists is not read "
        "from the registry: the refusal says to confirm it. CUDA 13.0 (docker/ray-llm/cuda.wanda.yaml, "
        "rayllm_py312_cu130.lock), EP kernels built for TORCH_CUDA_ARCH_LIST 9.0a 10.0a (docker/ray-llm/"
        "Dockerfile)",
        arm64_tag="2.58.0-py312-cu130-aarch64",
    ),
    # Beside the engine, a model's pods pull the preparation images (init containers and the fill Job, on
    # the model's own pool: components/storage/prepare.py) and, when AIBrix loads its adapters, AIBrix's
    # runtime sidecar. model-prep-hub is the vLLM image above. model-prep-s3 (the AWS CLI) has no entry:
    # no build definition read states its platforms.
    ("docker.io/aibrix/runtime", "v0.7.0"): ImagePlatforms(
        MULTI_ARCH,
        None,
        "vllm-project/aibrix@v0.7.0:.github/workflows/release-build.yaml builds the runtime component "
        "(build/container/Dockerfile.python) with `platforms: linux/amd64,linux/arm64`; CPU-only",
    ),
}


def image_platforms(image: Image) -> ImagePlatforms | None:
    """The platforms the catalog knows for this image (by repository and tag), or None."""
    return IMAGE_PLATFORMS.get((image.repository, image.tag))


@dataclass(frozen=True)
class ImageSize:
    """An engine image's compressed size (what a node pulls), and where it is published. `bound`: no size
    is published for the pinned tag, and this is a stated upper bound, not a measurement."""

    bytes: float
    source: str
    bound: bool = False


# The compressed size of every MODEL_IMAGES entry (tests/test_cold_start_estimate.py holds every key to one):
# what its pull costs a fresh node (stacks/coldstart.py). Sizes of the pinned tags themselves are not
# published; each entry names the nearest published figure and says whether it is a measurement of the
# repository or an upper bound (an image's size on disk bounds its compressed size from above).
# The largest engine image size published: vllm/vllm-openai:latest's 28.6 GB on disk (vllm-project/vllm#22377).
# It bounds every image no size is published for.
LARGEST_IMAGE_BYTES = 28.6e9
UNKNOWN_IMAGE = ImageSize(
    LARGEST_IMAGE_BYTES,
    "no compressed size published for this image: bounded by vLLM's 28.6 GB on disk (vllm-project/vllm#22377), "
    "the largest engine image size published",
    bound=True,
)

MODEL_IMAGE_SIZES: dict[str, ImageSize] = {
    "vllm-openai": ImageSize(
        12.64e9,
        "vllm-project/vllm#27154 (discuss.vllm.ai: vllm/vllm-openai:latest is 12.64 GB, Oct 2025); none published "
        "for v0.29.0",
    ),
    "sglang": ImageSize(11e9, "sgl-project/sglang#3673: lmsysorg/sglang:latest is 11 GB; none published for v0.5.19"),
    "text-generation-inference": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for TGI 3.3.7: bounded by vLLM's 28.6 GB on disk (vllm-project/vllm#22377)",
        bound=True,
    ),
    "ollama": ImageSize(
        3.5e9, "stratosphereips/stratocyberlab#57: the latest ollama image is 3.5 GB of download; none for 0.34.0"
    ),
    "model-free-nim": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for model-free-nim 2.0.12: bounded by vLLM's 28.6 GB on disk (vllm#22377)",
        bound=True,
    ),
    "vllm-neuronx": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for the vllm-neuronx 0.16 DLC: bounded by vLLM's 28.6 GB on disk (vllm#22377)",
        bound=True,
    ),
    "dynamo-vllm": ImageSize(
        12.2e9,
        "ai-dynamo/dynamo#1058: the vLLM runtime image is about 12.2 GB built (on disk, an upper bound)",
        bound=True,
    ),
    "dynamo-sglang": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for Dynamo's SGLang runtime: bounded by vLLM's 28.6 GB on disk (vllm#22377)",
        bound=True,
    ),
    "dynamo-trtllm": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for Dynamo's TensorRT-LLM runtime: bounded by vLLM's 28.6 GB on disk (vllm#22377)",
        bound=True,
    ),
    "ray-llm": ImageSize(
        LARGEST_IMAGE_BYTES,
        "none published for rayproject/ray-llm 2.58: bounded by vLLM's 28.6 GB on disk (vllm#22377)",
        bound=True,
    ),
}


def image_size(image: Image) -> ImageSize | None:
    """The recorded size of a model image when it is a catalog pin (same repository and tag); None for an
    image the catalog does not pin (a `models[].image` override to another tag or repository)."""
    for name, pinned in MODEL_IMAGES.items():
        if (pinned.repository, pinned.tag) == (image.repository, image.tag):
            return MODEL_IMAGE_SIZES[name]
    return None


# The platform's own images, each pinned per stack by the `images` section (stacks/config/images.py).
PLATFORM_IMAGES: dict[str, Image] = {
    # The OpenTelemetry Collector (contrib distribution: its otlp/otlphttp exporters, and the sigv4auth
    # and awsxray ones a later X-Ray exporter needs) for `addons.tracing`. Run from the platform's own
    # manifests (components/tracing.py): the opentelemetry-collector chart is not among the charts kept
    # for offline rendering. Its config path is /etc/otelcol-contrib/config.yaml, binary otelcol-contrib.
    "otel-collector": Image("otel/opentelemetry-collector-contrib", "0.139.0"),
    # The profiling job of a DynamoGraphDeploymentRequest (the 1.4.2 CRD: "the planner image";
    # before 1.1 it was the frontend image).
    "dynamo-planner": Image("nvcr.io/nvidia/ai-dynamo/dynamo-planner", "1.4.2"),
    # Since 1.84 LiteLLM tags release images v<version> (and <version>); the main-<tag> form is gone
    # (docs.litellm.ai/blog/cleaner-release-versions). Plain manifests, no database image needed.
    "litellm": Image("ghcr.io/berriai/litellm", "v1.100.1"),
    "redis": Image("redis", "7.4"),
    # AIBrix 0.7.0's EnvoyProxy pins Envoy v1.33.2 and shutdown manager gateway v1.2.8, under our
    # Envoy Gateway 1.9.0, whose release matrix pairs it with Envoy distroless-v1.39.0 and runs its
    # own image (the chart version) as the shutdown manager (its release notes' compatibility matrix).
    "envoy-proxy": Image("docker.io/envoyproxy/envoy", "distroless-v1.39.0"),
    "envoy-gateway": Image("docker.io/envoyproxy/gateway", "v1.9.0"),
    # The llm-d router's endpoint picker (models[].routing). The chart's source values say `main` with
    # pullPolicy Always; hack/push-chart.sh rewrites them to this tag at release, and the front door
    # sets them from here either way.
    "endpoint-picker": Image("ghcr.io/llm-d/llm-d-router-endpoint-picker", "v0.10.0"),
    # The Envoy the picker's chart runs beside it when LiteLLM calls a picked model through the picker
    # (components/gateway/picker.py proxy_values): the llm-d-router-standalone v0.10.0 chart's envoy preset
    # (values.yaml `router.proxy.presets.envoy.image`), the release its envoy.yaml was written for. A
    # distroless nonroot image (envoy ci/Dockerfile-envoy: gcr.io/distroless/base-nossl:nonroot, uid 65532).
    # The chart takes it as one string, so a digest (`images.picker-proxy.digest`) rides on it whole.
    "picker-proxy": Image("docker.io/envoyproxy/envoy", "distroless-v1.33.2"),
    # AIBrix's runtime sidecar (the container the adapter controller detects by its name,
    # `aibrix-runtime`): with the controller's --enable-runtime-sidecar (the 0.7.0 chart passes it), the
    # controller hands it an adapter's artifactURL, and it downloads the artifact itself (boto3's default
    # credential chain for s3://, so the pod's Pod Identity) before loading it into vLLM from local disk.
    # AIBrix's release workflow (.github/workflows/release-build.yaml at v0.7.0) pushes aibrix/runtime:<tag>.
    "aibrix-runtime": Image("docker.io/aibrix/runtime", "v0.7.0"),
    # AIBrix's init containers default to busybox:stable, a tag that moves.
    "busybox": Image("docker.io/library/busybox", "1.37.0"),
    # The SLO benchmark (models[].benchmark): guidellm's release workflow tags its container with the git
    # tag (guidellm .github/workflows/release.yml, build-multiarch-container.yml); ENTRYPOINT
    # /opt/app-root/bin/guidellm, user 1001 (Containerfile). The tag's presence in ghcr is not verified
    # here: prod pins it by digest (`images.guidellm`).
    "guidellm": Image("ghcr.io/vllm-project/guidellm", "v0.8.1"),
    # --- model preparation (components/storage/prepare.py) ---------------------------------------
    # Copies a model's prefix from the model bucket (`aws s3 sync`).
    "model-prep-s3": Image("public.ecr.aws/aws-cli/aws-cli", "2.32.9"),
    # Downloads from Hugging Face with huggingface_hub.snapshot_download; the pinned vLLM image
    # already carries huggingface_hub and is usually already on a GPU node.
    "model-prep-hub": Image("vllm/vllm-openai", "v0.29.0"),
    # --- monitoring ----------------------------------------------------------------------------
    "neuron-monitor": Image("public.ecr.aws/neuron/neuron-monitor", "1.3.0"),
}

IMAGES: dict[str, Image] = {**MODEL_IMAGES, **PLATFORM_IMAGES}

# AIBrix 0.7.0's values schema (values.schema.json) takes these as `repository:tag` (Envoy's pair) or
# as repository and tag (the init image), with patterns that admit no `@sha256:` digest: they are
# pinned by tag, or by a mirror repository whose tags are immutable.
TAG_ONLY_IMAGES = {
    "envoy-proxy": "AIBrix 0.7.0's values schema admits `repository:tag` only for its Envoy image",
    "envoy-gateway": "AIBrix 0.7.0's values schema admits `repository:tag` only for its shutdown-manager image",
    "busybox": "AIBrix 0.7.0's values schema admits a repository and a tag only for its init image",
}


# EKS managed add-ons, pinned per Kubernetes minor version (aws eks describe-addon-versions
# --kubernetes-version 1.34 --addon-name <name>). A minor without pins resolves, at deploy time,
# to the default version EKS ships for it (aws.eks.get_addon_version, most_recent=False).
# The node monitoring agent's pin: its release v1.6.7 (aws/eks-node-monitoring-agent tag v1.6.7,
# 2026-07-14, whose chart ships image tag v1.6.7-eksbuild.1: the add-on version string); v1.7.0
# (2026-08-04) moved the DCGM host engine into the agent's image and is left for a later bump.
# Check before a bump: aws eks describe-addon-versions --kubernetes-version 1.34
#   --addon-name eks-node-monitoring-agent
EKS_ADDONS: dict[str, dict[str, str]] = {
    "1.34": {"eks-node-monitoring-agent": "v1.6.7-eksbuild.1"},
}


def chart(name: str, override: str | None = None) -> Chart:
    return CHARTS[name].with_version(override)


# ---- CRDs -----------------------------------------------------------------------------------------
# Helm installs a chart's crds/ directory on the first install and never again: a version bump would
# leave the old CRDs in place. So every chart whose CRDs the platform relies on gets them from a source
# the program applies on every `pulumi up`, at the version tied to the chart's own, and its release skips
# crds/ (components/crds.py). Three upstream mechanisms, chosen per chart below:
#   "release":  a chart that renders the CRDs as templates, installed as a Helm release (`helm upgrade`
#               patches templates), adopting CRDs an earlier crds/ install left (take_ownership);
#   "template": such a chart rendered client-side and applied server-side by Pulumi, object by object
#               (`helm template | kubectl apply --server-side`), for CRDs too large for a Helm release;
#   "files":    the chart's own crds/ files at its release tag (raw.githubusercontent.com URLs), applied
#               server-side as Pulumi resources (yaml ConfigGroup), so an upgrade is a server-side patch.
# Charts that need nothing here: keda and keda-add-ons-http render their CRDs as templates
# (`crds.install`, on by default), dynamo-platform 1.4 ships none (its operator's crd-apply init container
# applies them), and the device-plugin, exporter, adapter and picker charts install no CRDs.

CrdApply = Literal["release", "template", "files"]


@dataclass(frozen=True)
class CrdSource:
    """The CRDs of the catalog chart `owner` at `version`, as the program applies them: `chart` (with
    `values`) for "release" and "template", `urls` for "files". `crds` names them (plural.group)."""

    owner: str
    version: str
    apply: CrdApply
    crds: tuple[str, ...]
    chart: Chart | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    urls: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """What is applied, as a person would name it: the CRD chart and version, or the tag's files."""
        if self.chart is not None:
            return f"{self.chart.chart} {self.chart.version}"
        return f"{self.owner} {self.version} crds/ ({len(self.urls)} files)"


@dataclass(frozen=True)
class CrdRecipe:
    """How to get one chart's CRDs at any version the catalog knows: a CRD chart (`chart`; its version
    is the owner's, or `chart_versions[owner version]` when the CRD chart has its own numbering), or the
    owner's crds/ `files[owner version]` at `url` (with `{tag}` and `{file}`; the tag is `tag` with the
    version). `why` says why this mechanism for this chart; `crds` names the CRDs of the pinned version."""

    why: str
    apply: CrdApply
    crds: tuple[str, ...]
    chart: Chart | None = None
    chart_versions: Mapping[str, str] | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    url: str = ""
    tag: str = "v{version}"
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class UnknownCrdVersionError(LookupError):
    """The catalog cannot say where a chart's CRDs are at this version (stacks/rules/crds.py refuses it)."""


# The NIM Operator's CRDs (apps.nvidia.com plurals) at 3.1.2: one file each in its chart's crds/.
NIM_OPERATOR_KINDS = (
    "nemocustomizers",
    "nemodatastores",
    "nemoentitystores",
    "nemoevaluators",
    "nemoguardrails",
    "nimbuilds",
    "nimcaches",
    "nimpipelines",
    "nimservices",
)

CRD_SOURCES: dict[str, CrdRecipe] = {
    "karpenter": CrdRecipe(
        why="aws/karpenter-provider-aws publishes karpenter-crd, the same CRDs as templates, at every controller "
        "version (its upgrade guide installs it beside the controller)",
        apply="release",
        chart=CHARTS["karpenter-crd"],
        crds=(
            "capacitybuffers.autoscaling.x-k8s.io",
            "ec2nodeclasses.karpenter.k8s.aws",
            "nodeclaims.karpenter.sh",
            "nodeoverlays.karpenter.sh",
            "nodepools.karpenter.sh",
        ),
    ),
    "envoy-gateway": CrdRecipe(
        why="envoyproxy/gateway publishes gateway-crds-helm at every release; its install guide applies it with "
        "`helm template | kubectl apply --server-side` because the CRDs are too large for a Helm release "
        "(helm/helm#12277). The experimental Gateway API channel, as gateway-helm's own crds/ carries; it also "
        "renders the Gateway API safe-upgrade ValidatingAdmissionPolicy gateway-helm would (crds.enabled: false)",
        apply="template",
        chart=Chart("gateway-crds-helm", "", "oci://docker.io/envoyproxy"),
        values={
            "crds": {"gatewayAPI": {"enabled": True, "channel": "experimental"}, "envoyGateway": {"enabled": True}}
        },
        crds=(
            "backendtlspolicies.gateway.networking.k8s.io",
            "gatewayclasses.gateway.networking.k8s.io",
            "gateways.gateway.networking.k8s.io",
            "grpcroutes.gateway.networking.k8s.io",
            "httproutes.gateway.networking.k8s.io",
            "listenersets.gateway.networking.k8s.io",
            "referencegrants.gateway.networking.k8s.io",
            "tcproutes.gateway.networking.k8s.io",
            "tlsroutes.gateway.networking.k8s.io",
            "udproutes.gateway.networking.k8s.io",
            "xbackends.gateway.networking.x-k8s.io",
            "xbackendtrafficpolicies.gateway.networking.x-k8s.io",
            "xmeshes.gateway.networking.x-k8s.io",
            "backends.gateway.envoyproxy.io",
            "backendtrafficpolicies.gateway.envoyproxy.io",
            "clienttrafficpolicies.gateway.envoyproxy.io",
            "envoyextensionpolicies.gateway.envoyproxy.io",
            "envoypatchpolicies.gateway.envoyproxy.io",
            "envoyproxies.gateway.envoyproxy.io",
            "httproutefilters.gateway.envoyproxy.io",
            "securitypolicies.gateway.envoyproxy.io",
        ),
    ),
    "kube-prometheus-stack": CrdRecipe(
        why="prometheus-community publishes prometheus-operator-crds, the operator's CRDs as templates, installed "
        "with `helm install` (its README); its version follows its own numbering, so each kube-prometheus-stack "
        "version maps to the release with the same operator appVersion (81.6.2 and 26.0.1: v0.88.1; 77.0.1 and "
        "23.0.0: v0.85.0; read from both charts' Chart.yaml at their tags)",
        apply="release",
        chart=Chart("prometheus-operator-crds", "", "https://prometheus-community.github.io/helm-charts"),
        chart_versions={"81.6.2": "26.0.1", "77.0.1": "23.0.0"},
        crds=tuple(
            f"{plural}.monitoring.coreos.com"
            for plural in (
                "alertmanagerconfigs",
                "alertmanagers",
                "podmonitors",
                "probes",
                "prometheusagents",
                "prometheuses",
                "prometheusrules",
                "scrapeconfigs",
                "servicemonitors",
                "thanosrulers",
            )
        ),
    ),
    "kuberay": CrdRecipe(
        why="KubeRay publishes no CRD chart; its chart's crds/ is helm-chart/kuberay-operator/crds at tag v<version>",
        apply="files",
        url="https://raw.githubusercontent.com/ray-project/kuberay/{tag}/helm-chart/kuberay-operator/crds/{file}",
        files={
            "1.7.0": (
                "ray.io_rayclusters.yaml",
                "ray.io_raycronjobs.yaml",
                "ray.io_rayjobs.yaml",
                "ray.io_rayservices.yaml",
            )
        },
        crds=("rayclusters.ray.io", "raycronjobs.ray.io", "rayjobs.ray.io", "rayservices.ray.io"),
    ),
    "lws": CrdRecipe(
        why="LWS publishes no CRD chart; its chart's crds/ is charts/lws/crds at the tag (the chart version, "
        "which carries the v)",
        apply="files",
        url="https://raw.githubusercontent.com/kubernetes-sigs/lws/{tag}/charts/lws/crds/{file}",
        tag="{version}",
        files={
            "v0.10.0": (
                "disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml",
                "disaggregatedset.x-k8s.io_disaggregatedsets.yaml",
                "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
            )
        },
        crds=(
            "disaggregatedsetrolescalers.disaggregatedset.x-k8s.io",
            "disaggregatedsets.disaggregatedset.x-k8s.io",
            "leaderworkersets.leaderworkerset.x-k8s.io",
        ),
    ),
    "aws-load-balancer-controller": CrdRecipe(
        why="aws/eks-charts keeps no tags; the controller's repository carries the same chart under "
        "helm/aws-load-balancer-controller at tag v<version> (its crds/ files identical to the 3.5.0 chart's)",
        apply="files",
        url="https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/{tag}/"
        "helm/aws-load-balancer-controller/crds/{file}",
        files={"3.5.0": ("crds.yaml", "gateway-crds.yaml")},
        crds=(
            "albtargetcontrolconfigs.elbv2.k8s.aws",
            "globalaccelerators.aga.k8s.aws",
            "ingressclassparams.elbv2.k8s.aws",
            "listenerruleconfigurations.gateway.k8s.aws",
            "loadbalancerconfigurations.gateway.k8s.aws",
            "targetgroupbindings.elbv2.k8s.aws",
            "targetgroupconfigurations.gateway.k8s.aws",
        ),
    ),
    "aibrix": CrdRecipe(
        why="AIBrix publishes its chart only in git: its crds/ is dist/chart/crds at tag v<version>",
        apply="files",
        url="https://raw.githubusercontent.com/vllm-project/aibrix/{tag}/dist/chart/crds/{file}",
        files={
            "0.7.0": (
                "autoscaling.aibrix.ai_podautoscalers.yaml",
                "model.aibrix.ai_modeladapters.yaml",
                "orchestration.aibrix.ai_kvcaches.yaml",
                "orchestration.aibrix.ai_podsets.yaml",
                "orchestration.aibrix.ai_rayclusterfleets.yaml",
                "orchestration.aibrix.ai_rayclusterreplicasets.yaml",
                "orchestration.aibrix.ai_rolesets.yaml",
                "orchestration.aibrix.ai_stormservices.yaml",
            )
        },
        crds=(
            "podautoscalers.autoscaling.aibrix.ai",
            "modeladapters.model.aibrix.ai",
            "kvcaches.orchestration.aibrix.ai",
            "podsets.orchestration.aibrix.ai",
            "rayclusterfleets.orchestration.aibrix.ai",
            "rayclusterreplicasets.orchestration.aibrix.ai",
            "rolesets.orchestration.aibrix.ai",
            "stormservices.orchestration.aibrix.ai",
        ),
    ),
    "nim-operator": CrdRecipe(
        why="the NIM Operator publishes no CRD chart; its chart's crds/ is deployments/helm/k8s-nim-operator/crds "
        "at tag v<version> (its own pre-upgrade crd-apply hook is turned off: one owner per CRD)",
        apply="files",
        url="https://raw.githubusercontent.com/NVIDIA/k8s-nim-operator/{tag}/deployments/helm/k8s-nim-operator/crds/{file}",
        files={"3.1.2": tuple(f"apps.nvidia.com_{p}.yaml" for p in NIM_OPERATOR_KINDS)},
        crds=tuple(f"{p}.apps.nvidia.com" for p in NIM_OPERATOR_KINDS),
    ),
}


def crd_source(owner: str, version: str | None = None, crd_version: str | None = None) -> CrdSource:
    """Where the CRDs of catalog chart `owner` at `version` (default: its pin) come from. `crd_version`
    overrides a CRD chart's own version (addons.monitoring.crdsVersion). UnknownCrdVersionError when the
    catalog cannot say: a version it has no CRD chart version or crds/ file list for."""
    recipe = CRD_SOURCES[owner]
    version = version or CHARTS[owner].version
    if recipe.chart is not None:
        crd_chart_version = crd_version or (
            recipe.chart_versions.get(version) if recipe.chart_versions is not None else version
        )
        if crd_chart_version is None:
            raise UnknownCrdVersionError(
                f"the catalog has no {recipe.chart.chart} version for {CHARTS[owner].chart} {version}"
            )
        return CrdSource(
            owner,
            version,
            recipe.apply,
            recipe.crds,
            chart=recipe.chart.with_version(crd_chart_version),
            values=recipe.values,
        )
    files = recipe.files.get(version)
    if files is None:
        raise UnknownCrdVersionError(f"the catalog has no crds/ file list for {CHARTS[owner].chart} {version}")
    tag = recipe.tag.format(version=version)
    urls = tuple(recipe.url.format(tag=tag, file=f) for f in files)
    return CrdSource(owner, version, recipe.apply, recipe.crds, urls=urls)
