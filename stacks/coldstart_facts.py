"""The documented facts a model's cold start is estimated from (stacks/coldstart.py `estimate`), each with
its source, in one place. A figure here is a published measurement or a documented rate; where no figure
is published the entry says so and states the bound it uses instead. The engine images' compressed sizes
are recorded beside their pins in stacks/versions.py (`MODEL_IMAGE_SIZES`, `UNKNOWN_IMAGE`); the
instances' network rates are the hardware catalog's (stacks/data/instances.json `network_baseline_mbps`).

Every wait a model has (its startup probe, its scale-to-zero wake budget, its Pulumi await) is the
estimate times SAFETY_FACTOR.
"""

from __future__ import annotations

from dataclasses import dataclass

# The estimate is built from single published measurements and documented rates, not worst cases: a
# slower registry, a busier file system or a slower boot than the one measured must not fail a start.
# Half again covers the spread those sources show (the same 10.8 GB image pulled in 60 s to 112 s
# depending on the pull path alone), and keeps a scale-to-zero model's wake budget within twice its
# estimate, the promise the documentation makes to clients.
SAFETY_FACTOR = 1.5
# The longest a client is asked to wait for a model woken from zero.
WAKE_BUDGET_CAP_SECONDS = 15 * 60


@dataclass(frozen=True)
class Fact:
    """One figure the estimate reads: its value, its unit, and where it is published."""

    value: float
    unit: str
    source: str


# --- node: launch, join and the accelerator's device plugin registering it -----------------------------

# NVIDIA/k8s-device-plugin#291: a Karpenter-launched g4dn/g5.xlarge node had its GPUs advertised by the
# device plugin about 90 s after Karpenter created it (launch, boot, join, plugin registration).
GPU_NODE_READY = Fact(
    90,
    "s",
    "NVIDIA/k8s-device-plugin#291: a Karpenter g4dn/g5.xlarge node advertised its GPUs about 90 s after launch",
)
# No published launch-to-ready figure for the large multi-GPU, Inferentia or Trainium types: boot on GPU
# types takes longer than on the measured c-types (awslabs/amazon-eks-ami#1099), and these carry more
# devices, NVMe and EFA to initialise. Bounded at twice the measured GPU figure.
UNMEASURED_NODE_READY = Fact(
    2 * GPU_NODE_READY.value,
    "s",
    "no published launch-to-ready figure for this family: bounded at twice the measured GPU node's 90 s "
    "(awslabs/amazon-eks-ami#1099: GPU types boot slower than the measured CPU types)",
)
# The families whose nodes match the measured one: single-node NVIDIA types of the g line.
MEASURED_NODE_FAMILIES = frozenset({"g4dn", "g5", "g6", "g6e"})
# A node the pool keeps warm (nodePools[].warmNodes: a Karpenter capacity buffer) is already there.
WARM_NODE = Fact(0, "s", "a warm node kept by the pool's capacity buffer (nodePools[].warmNodes)")

# --- image: the engine image's compressed bytes over the pull path ------------------------------------

# aws-samples/karpenter-blueprints blueprints/soci-snapshotter/README.md (the blueprint of PR #32): the
# vLLM DLC (10,778,400,361 bytes as kubelet reports it) pulled in 1m52.33s with containerd's default
# pull and in 59.813s with SOCI parallel pull/unpack on AL2023, on nodes with more than 8 Gbps of network
# and a gp3 root volume at 1000 MiB/s.
_BLUEPRINT_IMAGE_BYTES = 10_778_400_361
PULL_STANDARD = Fact(
    _BLUEPRINT_IMAGE_BYTES / 112.33,
    "B/s",
    "aws-samples/karpenter-blueprints soci-snapshotter blueprint: a 10.78 GB vLLM image pulled in 1m52.33s "
    "with containerd's default pull",
)
PULL_SOCI = Fact(
    _BLUEPRINT_IMAGE_BYTES / 59.813,
    "B/s",
    "aws-samples/karpenter-blueprints soci-snapshotter blueprint: the same 10.78 GB image in 59.813s with "
    "SOCI parallel pull on AL2023 (pytorch/ci-infra#1033 quotes AWS's ~60% on a 10 GB DLC)",
)
# A pre-pulled image cache (nodePools[].imagePull: snapshot): the data volume is created from an EBS
# snapshot that already holds the images, so nothing is pulled; the engine reads the image's files off the
# new volume as it starts. With fast snapshot restore, "volumes created from FSR-enabled snapshots are fully
# initialized at creation and instantly deliver all of their provisioned performance": the image's bytes at
# the data volume's provisioned throughput (600 MiB/s, stacks/fastpath.py).
FSR_URL = "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-fast-snapshot-restore.html"
SNAPSHOT_FSR_SOURCE = (
    f"{FSR_URL}: a volume created from a snapshot with fast snapshot restore delivers its provisioned "
    "throughput at creation; the data volume's 600 MiB/s (nodePools[].imagePull: snapshot)"
)
# Without it the volume is initialized lazily: each block is downloaded from S3 when first read, and "the
# default volume initialization rate fluctuates throughout the initialization process". AWS publishes no
# figure for that rate, so no faster figure is claimed: the term falls back to the standard pull's.
INITIALIZATION_URL = "https://docs.aws.amazon.com/ebs/latest/userguide/initalize-volume.html"
PULL_SNAPSHOT_LAZY = Fact(
    PULL_STANDARD.value,
    "B/s",
    f"no published rate for a snapshot volume's lazy initialization from S3 ({INITIALIZATION_URL}: the default "
    f"rate fluctuates), so counted as a standard pull: {PULL_STANDARD.source}",
)
# --- weights: their bytes over the storage path --------------------------------------------------------

# FSx for Lustre PERSISTENT_2: throughput is provisioned per TiB of storage (storage.fsx.throughputPerTiB
# x storageCapacityGiB), docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html.
FSX_SOURCE = "FSx for Lustre performance (AWS docs): throughput per TiB of storage x the file system's size"
# Amazon EFS performance summary (docs.aws.amazon.com/efs/latest/ug/performance.html): 500 MiBps per
# client, General Purpose mode.
EFS_PER_CLIENT = Fact(500 * 2**20, "B/s", "Amazon EFS performance (AWS docs): 500 MiBps per client")
# EFS bursting mode: every bursting file system can drive 100 MiB/s while it has burst credits
# (aws.amazon.com what's-new 2020-06-30, "Amazon EFS increases file system minimum throughput").
EFS_BURSTING = Fact(
    100 * 2**20,
    "B/s",
    "Amazon EFS bursting mode (AWS what's-new 2020-06-30): 100 MiB/s with burst credits",
)
# The Run:ai streamer opens `concurrency` S3 clients (components/engines/streamer.py sets 16); each
# GET stream's rate is AWS's S3 design guidance of about 85-90 MB/s per concurrent request, bounded by
# the instance's network.
S3_PER_STREAM = Fact(
    85e6,
    "B/s",
    "https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/"
    "horizontal-scaling-and-request-parallelization-for-high-throughput.html: make one concurrent request "
    "for each 85-90 MB/s of desired network throughput",
)
# huggingface_hub's default downloader (the preparation's snapshot_download, without hf_transfer) tops at
# about 100 MB/s on a 10 Gbit link (oobabooga/textgen#6143).
HUB = Fact(100e6, "B/s", "oobabooga/textgen#6143: huggingface_hub's default download tops at about 100 MB/s")
# A node-local cache (the instance store, or an emptyDir on the root volume) is read back after its
# fill; no per-type NVMe read figure is on file, so it is bounded by a gp3 root volume's baseline
# (125 MiB/s, Amazon EBS gp3 docs). Also the bound for an existing claim of unknown storage.
NODE_DISK = Fact(
    125 * 2**20,
    "B/s",
    "no per-type NVMe read figure on file: bounded by a gp3 volume's 125 MiB/s baseline (Amazon EBS docs)",
)

# --- engine: start, load, compile or graph capture -----------------------------------------------------

# vllm-project/vllm#20264: with its torch.compile cache reused, a vLLM replica answered 59 s after the
# container started (weights loaded in 0.7 s from the page cache, torch.compile 7.5 s from the cache,
# CUDA graph capture 17 s, engine init 34 s).
ENGINE_WARM = Fact(
    59,
    "s",
    "vllm-project/vllm#20264: first response 59 s after start with the torch.compile cache reused "
    "(compile 7.5 s from cache, CUDA graphs 17 s)",
)
# mitchross/talos-argocd-proxmox#1848: torch.compile took 166 s of an 11-minute start, thrown away on
# every restart without a persistent cache.
TORCH_COMPILE = Fact(
    166,
    "s",
    "mitchross/talos-argocd-proxmox#1848: torch.compile took 166 s of an 11-minute start without a cache",
)
# aws-neuron/aws-neuron-sdk#825 (optimum-neuron's cache miss message): a graph not in the cache "will be
# recompiled. This may take up to one hour for large models."
NEURON_COMPILE = Fact(
    3600,
    "s",
    "aws-neuron/aws-neuron-sdk#825: a Neuron graph missing from the cache may take up to one hour to compile",
)
# aws-neuron/transformers-neuronx#80: with the compilation cache populated, Llama 7B loaded onto the
# NeuronCores in about 40 s from a safetensors checkpoint.
NEURON_CACHED = Fact(
    40,
    "s",
    "aws-neuron/transformers-neuronx#80: about 40 s to load Llama 7B with the Neuron compile cache populated",
)
