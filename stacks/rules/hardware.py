"""Engine images against the hardware their pool runs: an image with no build for the pool's CPU
architecture (Arm Grace hosts such as p6e-gb200 are arm64) never starts, and a CUDA build without
Blackwell kernels (sm_100/sm_103, CUDA 12.8+) fails on B200 and B300 with "no kernel image is available".
The RTX PRO Blackwell GPUs of g7 and g7e are compute capability 12.0 (sm_120), a separate target: an image
built for sm_100 has no kernel for them, so they are checked against the image's own sm_120 fact.
Facts per image are in stacks/versions.py IMAGE_PLATFORMS with their sources; what they rule out is
refused, what they do not state is a warning that names the check. Beside the engine, the images a model's
pods pull on its pool (the preparation steps, AIBrix's runtime sidecar) are refused the same way where a
fact rules them out; an unknown one of those is not warned (the catalog reads no build definition for the
AWS CLI image), the engine's is."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks import rule, warning
from ..errors import Problem, key_path
from ..resolved import ResolvedModel, ResolvedPool, ResolvedStack
from ..versions import Image, ImagePlatforms, image_platforms

# The catalog's GPUs that need Blackwell kernels (Karpenter's instance-gpu-name values).
BLACKWELL = frozenset({"b200", "b300", "gb200"})
# The catalog's RTX PRO Blackwell GPUs (g7: RTX PRO 4500, g7e: RTX PRO 6000 Server Edition): compute
# capability 12.0 (NVIDIA's MIG user guide, Supported GPUs), which needs sm_120 kernels, not sm_100's.
RTX_BLACKWELL = frozenset({"rtx-pro-4500", "rtx-pro-server-6000"})


def _image_key(model: ResolvedModel) -> tuple[str, ...]:
    """Where the image comes from: `models[i].image` when the stack overrides it, else the pool the
    model runs on (the engine's catalog image is fixed; the pool is what to change)."""
    image = model.config.image
    if image.repository or image.tag:
        return ("image",)
    return ("pool",)


def _blackwell(model: ResolvedModel) -> list[str]:
    return sorted({t.name for t in model.pool.instance_types if t.gpu_name in BLACKWELL})


def _sm120(model: ResolvedModel) -> list[str]:
    return [t.name for t in model.pool.instance_types if t.gpu_name in RTX_BLACKWELL]


def _instead(facts: ImagePlatforms, arch: str, key: str) -> str:
    """What to change: the same release's arm64 tag where the project publishes one under its own tag,
    else a pool of an architecture the image has, or another build."""
    if arch == "arm64" and facts.arm64_tag:
        return (
            f"Set {key}.tag to {facts.arm64_tag} (the same release's arm64 build, published under its own tag; "
            f"confirm with `docker buildx imagetools inspect`), or serve the model on an amd64 pool"
        )
    have = " or ".join(sorted(facts.architectures or ()))
    return f"Serve the model on an {have} pool, or set {key} to a build for {arch}"


def _pod_images(stack: ResolvedStack, model: ResolvedModel) -> list[tuple[str, Image]]:
    """The platform's images a model's pods pull on its pool beside the engine, with the stack's pins: the
    preparation steps (init containers and the fill Job, components/storage/prepare.py) and AIBrix's
    runtime sidecar where AIBrix loads the adapters (stacks/resolve/images.py renders the same)."""
    names = ["model-prep-s3", "model-prep-hub"] if model.prepared else []
    if model.adapter_loader == "aibrix":
        names.append("aibrix-runtime")
    return [(name, stack.images[name]) for name in names if name in stack.images]


def _no_build(image: Image, facts: ImagePlatforms, pool: str, arch: str) -> str:
    return (
        f"{image.repository}:{image.tag} is published for {', '.join(sorted(facts.architectures or ()))} only, "
        f"but pool {pool} runs {arch} nodes: the pull finds no {arch} image and the pod never starts "
        f"({facts.source})"
    )


@rule
def images_have_a_build_for_the_pool_architecture(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        arch = model.pool.config.architecture
        facts = image_platforms(model.image)
        if facts is not None and facts.architectures is not None and arch not in facts.architectures:
            fix = _instead(facts, arch, f"models[{model.index}].image")
            yield Problem(
                model.key(*_image_key(model)), f"{_no_build(model.image, facts, model.pool.name, arch)}. {fix}"
            )
        for name, image in _pod_images(stack, model):
            side = image_platforms(image)
            if side is not None and side.architectures is not None and arch not in side.architectures:
                yield Problem(
                    model.key("pool"),
                    f"{model.name}'s pods also pull {name}: {_no_build(image, side, model.pool.name, arch)}. "
                    f"{_instead(side, arch, f'images.{name}')}",
                )


@warning
def images_not_known_for_the_pool_architecture(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        arch = model.pool.config.architecture
        if arch == "amd64" or (facts is not None and facts.architectures is not None):
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"pool {model.pool.name} runs {arch} nodes and the catalog does not know whether "
            f"{model.image.ref} has an {arch} build; check with `docker buildx imagetools inspect "
            f"{model.image.repository}:{model.image.tag}` before the first rollout",
        )


@rule
def blackwell_needs_an_image_with_its_kernels(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _blackwell(model)) or facts is None or facts.blackwell is not False:
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"{model.image.repository}:{model.image.tag} has no Blackwell kernels (sm_100/sm_103, CUDA 12.8+) "
            f"but pool {model.pool.name} allows {', '.join(types)}: the engine fails at start-up with 'no "
            f"kernel image is available' ({facts.source}). Set models[].image to a CUDA 12.8+ build, or serve "
            f"on a pool without B200/B300",
        )


@warning
def blackwell_kernels_not_known(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _blackwell(model)) or (facts is not None and facts.blackwell is not None):
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"pool {model.pool.name} allows {', '.join(types)} (Blackwell: sm_100/sm_103) and the catalog does "
            f"not know whether {model.image.ref} carries their kernels (CUDA 12.8 or later); check the image's "
            f"CUDA version before the first rollout",
        )


@rule
def rtx_blackwell_needs_an_image_with_sm_120_kernels(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _sm120(model)) or facts is None or facts.sm120 is not False:
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"{model.image.repository}:{model.image.tag} has no sm_120 kernels but pool {model.pool.name} allows "
            f"{', '.join(types)} (RTX PRO Blackwell, compute capability 12.0): the engine fails at start-up with "
            f"'no kernel image is available' ({facts.source}). Set models[].image to a build whose CUDA arch list "
            f"includes 12.0, or serve on a pool without g7/g7e",
        )


@warning
def rtx_blackwell_kernels_not_known(stack: ResolvedStack) -> Iterable[Problem]:
    for model in stack.models:
        facts = image_platforms(model.image)
        if not (types := _sm120(model)) or (facts is not None and facts.sm120 is not None):
            continue
        yield Problem(
            model.key(*_image_key(model)),
            f"pool {model.pool.name} allows {', '.join(types)} (RTX PRO Blackwell: sm_120, not B200's sm_100) and "
            f"the catalog does not know whether {model.image.ref} carries sm_120 kernels; check that the image's "
            f"CUDA arch list (TORCH_CUDA_ARCH_LIST or CMAKE_CUDA_ARCHITECTURES) includes 12.0 before the first rollout",
        )


def _pools(stack: ResolvedStack):
    return enumerate(stack.platform.pools if stack.owns_platform else ())


def _types_key(i: int, pool: ResolvedPool) -> str:
    """The key that chose a pool's types: `nodePools[i].instanceTypes` or `.instanceFamilies`."""
    return key_path(["nodePools", i, "instanceTypes" if pool.config.instance_types else "instanceFamilies"])


@warning
def types_with_secondary_figures_are_confirmed(stack: ResolvedStack) -> Iterable[Problem]:
    """A type whose vCPU, memory or ENI figures no EC2-generated table publishes (p6e-gb200, trn2u,
    trn2.3xlarge) is sized from the sources its catalog entry names: Karpenter reads the real figures at
    launch, but the fit and quota rules estimate from these."""
    for i, pool in _pools(stack):
        for itype in pool.instance_types:
            if not itype.secondary_figures:
                continue
            figures = ", ".join(itype.secondary_labels)
            yield Problem(
                _types_key(i, pool),
                f"{itype.name}'s {figures}: not in any EC2-generated table the catalog reads (stacks/data/"
                f"instances-frontier.json says where each comes from); the fit and quota rules estimate from them. "
                f"Confirm with `aws ec2 describe-instance-types --instance-types {itype.name}` before sizing "
                f"models to the last GiB",
            )


@warning
def ultraserver_types_need_their_capacity_block(stack: ResolvedStack) -> Iterable[Problem]:
    """UltraServer members are sold as UltraServer Capacity Blocks, not On-Demand or Spot: Karpenter
    launches them only into the reservation, as capacity type `reserved`."""
    for i, pool in _pools(stack):
        members = [t.name for t in pool.instance_types if t.ultraserver]
        if not members or (pool.config.capacity_order == ("reserved",) and pool.config.capacity_reservations):
            continue
        yield Problem(
            key_path(["nodePools", i, "capacityTypes"]),
            f"{', '.join(members)} {'is an UltraServer member' if len(members) == 1 else 'are UltraServer members'} "
            f"({pool.instance_types[0].ultraserver if len(members) == 1 else 'sold as UltraServer Capacity Blocks'}): "
            f"no On-Demand or Spot launch is offered. Buy the Capacity Block, then set capacityTypes: [reserved] and "
            f"capacityReservations to its reservation",
        )


@warning
def grace_hosts_run_the_al2023_arm_nvidia_ami(stack: ResolvedStack) -> Iterable[Problem]:
    """The EKS accelerated-AMI guide lists p6e-gb200 under AL2023 ARM NVIDIA only."""
    for i, pool in _pools(stack):
        grace = [t.name for t in pool.instance_types if t.gpu_name == "gb200"]
        if grace and pool.config.ami_family != "al2023":
            yield Problem(
                key_path(["nodePools", i, "amiAlias"]),
                f"{', '.join(grace)} is listed by the EKS accelerated-AMI guide (ml-eks-optimized-ami) under AL2023 "
                f"ARM NVIDIA only, not {pool.config.ami_family}: use amiAlias al2023@<version>",
            )


@warning
def nvlink_spans_one_grace_node(stack: ResolvedStack) -> Iterable[Problem]:
    """GB200's NVLink domain crosses nodes only through IMEX channels, which the NVIDIA DRA driver's
    ComputeDomain claims provide; Karpenter provisions no DRA claims on AWS (karpenter-provider-aws#9519),
    so a replica over several p6e-gb200 nodes talks over the network, not NVLink."""
    for model in stack.models:
        grace = [t for t in model.pool.instance_types if t.gpu_name == "gb200"]
        if grace and model.config.nodes_per_replica >= 2:
            yield Problem(
                model.key("nodesPerReplica"),
                f"{model.name} spans {model.config.nodes_per_replica} {grace[0].name} nodes: their multi-node NVLink "
                f"needs IMEX channels (the NVIDIA DRA driver's ComputeDomain), which Karpenter cannot provision on "
                f"AWS, so the replica's traffic between nodes goes over the network. Keep a replica within one "
                f"node's {grace[0].gpu_count} GPUs where it fits",
            )


@warning
def types_the_eks_amis_may_not_run_are_confirmed(stack: ResolvedStack) -> Iterable[Problem]:
    """A type the EKS accelerated-AMI guide does not list (g7) may boot without a driver for its GPU: the
    node joins, but its device plugin finds no GPU and Karpenter never calls it initialized."""
    for i, pool in _pools(stack):
        caveats = {t.family: t for t in pool.instance_types if t.ami_caveat}
        for family, itype in sorted(caveats.items()):
            yield Problem(
                _types_key(i, pool),
                f"{family}: {itype.ami_caveat}. Launch one {itype.name} from {pool.config.ami_alias} and check "
                f"`nvidia-smi` before serving on it",
            )
