"""`python -m stacks new`: write a commented Pulumi.<name>.yaml that validates as written.

- `--role workloads --platform org/project/stack --team <team>`: an app team's stack. When the
  platform's stack file is in this repository, the starter model is put on one of its exported pools
  (an NVIDIA pool if there is one, else a Neuron pool) and the quota is sized to hold it.
- `--role platform|all-in-one --preset gpu-small|inf2|mixed`: a platform stack with accelerator
  pools chosen from the hardware catalog (all-in-one adds a starter model).
The text is validated with the same load step as `stacks validate` before it is written; an
existing file is never overwritten.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import yaml

from .config import PROJECT, StackConfig
from .errors import ConfigError, Problem
from .exports import PlatformExports, read_platform
from .load import parse_sections
from .paths import ROOT
from .pipeline import PlatformLookup, check_config, repo_platform
from .resolve import resolve
from .resolved import ResolvedStack
from .rules.models import gated_repo
from .versions import IMAGES, Image

SCHEMA_MODELINE = "# yaml-language-server: $schema={schema}\n"

POOLS = {
    "gpu": """\
    # NVIDIA GPUs: 1-GPU replicas land on g6.xlarge, 4-GPU tensor-parallel groups on g6.12xlarge.
    - name: gpu
      accelerator: nvidia
      instanceTypes: [g6.xlarge, g6.12xlarge]
      capacityTypes: [on-demand]
      amiAlias: {ami}   # prod requires a pinned release (al2023@vYYYYMMDD)
      rootVolumeGiB: 200
      limits: {{accelerators: 16}}  # the pool never grows past this many GPUs
      consolidateAfter: 10m
""",
    "inferentia": """\
    # AWS Inferentia2: whole Neuron devices (aws.amazon.com/neuron); inf2.24xlarge holds 6.
    - name: inferentia
      accelerator: neuron
      instanceTypes: [inf2.xlarge, inf2.24xlarge]
      amiAlias: {ami}
      limits: {{accelerators: 12}}
""",
}
PRESETS = {"gpu-small": ("gpu",), "inf2": ("inferentia",), "mixed": ("gpu", "inferentia")}

MODELS = {
    "nvidia": """\
    - name: qwen3-8b
      engine: vllm                # vllm | sglang | nim | tgi | ollama | dynamo | ray-serve
      model: Qwen/Qwen3-8B
      revision: b968826d9c46dd6066d109eabc6255188de91218   # the Hugging Face commit: pin it
      pool: {pool}
      acceleratorsPerReplica: 1   # GPUs per replica (the tensor-parallel group)
      replicas: 1
      maxModelLen: 8192
      parameters: 8B              # with dtype, the weights are checked against GPU memory
      dtype: bf16
{token}      expose: true                # route it through the platform's authenticated gateway
{image}""",
    "neuron": """\
    - name: llama-3-8b-neuron
      engine: neuron-vllm
      model: meta-llama/Llama-3.1-8B-Instruct
      revision: 0e9e39f249a16976918f6564b8830bc894c89659   # the Hugging Face commit: pin it
      pool: {pool}
      acceleratorsPerReplica: 1   # whole Neuron devices (2 NeuronCores and 32 GiB HBM each)
      replicas: 1
      maxModelLen: 4096
      parameters: 8B
      dtype: bf16
{token}      expose: true
{image}""",
}
REPOS = {"nvidia": "Qwen/Qwen3-8B", "neuron": "meta-llama/Llama-3.1-8B-Instruct"}


def token_lines(repo: str) -> str:
    """The model's Hugging Face token: a Secret only for a repository the program knows is gated
    (`gated_repo`, the list the rules warn from); for any other, a comment saying it cannot know."""
    if gated_repo(repo):
        return (
            "      secrets: {huggingFaceToken: hf-token}   # gated on the Hub: a token of an account that accepted\n"
            "                                              # the licence (a Secret the stack makes, secrets below)\n"
        )
    return (
        f"      # No Hugging Face token: {repo.split('/')[0]} is not among the organizations this program knows\n"
        "      # to gate their repositories (GATED_ORGS, stacks/rules/models.py), so it cannot tell whether one\n"
        "      # is needed. If fetching the weights answers 401/403, add secrets: {huggingFaceToken: hf-token}\n"
        "      # and an hf-token entry in the secrets section (docs/operator-guide.md#secrets).\n"
    )


# Placeholders `pulumi config set --secret <key> <value>` replaces with the encrypted value (a
# placeholder left in place fails `pulumi up` before anything is created: Pulumi cannot decrypt it).
PLACEHOLDER = "secure: v1:set-with-pulumi-config-set-secret"


def secrets_text(sources: dict[str, str]) -> str:
    """The `secrets` section for `sources` (Secret name -> its fromConfig map, as written) and one
    placeholder per Pulumi secret it names: the program creates each Secret, so the first `pulumi up`
    needs none made by hand (docs/operator-guide.md#secrets). No sources, no section."""
    if not sources:
        return ""
    keys = [k.split(": ")[1] for v in sources.values() for k in v.strip("{}").split(", ")]
    lines = [
        "  # Where each Secret the stack references comes from: the program creates it from this stack's",
        "  # Pulumi secrets. Before the first `pulumi up`, set each one below:",
        *(f"  #   pulumi config set --secret {key} <value>" for key in keys),
        f"  {PROJECT}:secrets:",
        *(f"    {name}: {{fromConfig: {entries}}}" for name, entries in sources.items()),
    ]
    for key in keys:
        lines += [f"  {PROJECT}:{key}:", f"    {PLACEHOLDER}"]
    return "\n".join(lines) + "\n"


HF_TOKEN = {"hf-token": "{token: hfToken}"}


def hf_token(accelerator: str | None) -> dict[str, str]:
    """The hf-token Secret's source when the starter model on `accelerator` (None: no model) needs it."""
    return HF_TOKEN if accelerator is not None and gated_repo(REPOS[accelerator]) else {}


GATEWAY_SECRETS = {
    "inference-api-keys": "{default: gatewayKeyDefault}",  # one entry per client: its API key
    "inference-tls": "{tls.crt: tlsCertificate, tls.key: tlsPrivateKey}",  # PEM chain and key
}


def replicas_line(environment: str) -> str:
    """Prod starts with two replicas: with one, every rollout and node replacement stops the model
    (stacks/rules/upgrades.py refuses that in prod unless the stack accepts the downtime)."""
    if environment == "prod":
        return "      replicas: 2                 # one serves while a rollout or node replacement stops the other\n"
    return "      replicas: 1\n"


def starter_model(accelerator: str, pool: str, digest: str | None, environment: str) -> str:
    """The starter model entry of MODELS on `pool`, with its image pin and its environment's replicas."""
    text = MODELS[accelerator].format(pool=pool, image=image_line(digest), token=token_lines(REPOS[accelerator]))
    return text.replace("      replicas: 1\n", replicas_line(environment))


def image_line(digest: str | None) -> str:
    if digest is None:
        return ""
    return f'      image: {{digest: "{digest}"}}   # the engine image this model runs, pinned\n'


REFERENCE = "docs/reference/stack-file.md"


def shown(path: Path) -> str:
    """The written file as a command takes it: relative to the project root when it is inside it (the
    commands run from there), else its absolute path (`--out-dir` anywhere)."""
    full = path.resolve()
    try:
        return str(full.relative_to(ROOT.resolve()))
    except ValueError:
        return str(full)


def header_commands(path: Path) -> str:
    """The header's commands, naming the file where it is written (a bare stack name finds only files
    at the project root or in stacks/examples), and where every key is documented."""
    return (
        f"# Validate with `python -m stacks validate {shown(path)}`, preview offline with\n"
        f"# `python -m stacks render {shown(path)}`.\n"
        f"# Every key is documented in {REFERENCE}.\n"
    )


def platform_text(
    name: str, role: str, preset: str, environment: str, ami: str, digest: str | None, *, path: Path | None = None
) -> str:
    """A platform or all-in-one stack of `preset`, to be written at `path` (default: the project root's
    Pulumi.<name>.yaml)."""
    path = path or ROOT / f"Pulumi.{name}.yaml"
    pools = PRESETS[preset]
    model = ""
    first = None
    if role == "all-in-one":
        first = "nvidia" if "gpu" in pools else "neuron"
        model = f"  {PROJECT}:models:\n" + starter_model(first, pools[0], digest, environment)
    on = str("inferentia" in pools).lower()
    return f"""\
# {name}: a {role} stack (preset {preset}).
{header_commands(path)}config:
  aws:region: us-west-2
  {PROJECT}:stack:
    role: {role}
    environment: {environment}       # dev | staging | prod (prod refuses unpinned AMIs and images)
  {PROJECT}:cluster:
    name: {name}
    kubernetesVersion: "1.34"
    vpc:
      cidr: 10.42.0.0/16        # a new VPC; or adopt one with id/privateSubnetIds/publicSubnetIds
      availabilityZones: 3
    endpoint:
      publicAccess: true
      publicAccessCidrs: [203.0.113.0/24]   # replace with your office/VPN ranges
    admins: []                  # IAM role ARNs given cluster-admin, e.g. arn:aws:iam::<acct>:role/platform-admins
  {PROJECT}:nodePools:
{"".join(POOLS[p].format(ami=ami) for p in pools)}  {PROJECT}:addons:
    nvidiaDevicePlugin: {{enabled: {str("gpu" in pools).lower()}}}
    neuron: {{enabled: {on}, scheduler: {on}, nodeProblemDetector: {on}}}
    monitoring: {{enabled: true}}
  {PROJECT}:storage:
    modelCache: efs             # efs | fsx | local | none: where model weights are cached
    modelBucket: {{create: true}}
  {PROJECT}:gateway:
    enabled: true
    hostname: inference.{name}.example.com
    auth: apiKey                # apiKey | jwt; keys live in the Secret below (secrets: one entry per client)
    apiKeysSecret: inference-api-keys
    tls:                        # a kubernetes.io/tls Secret in inference-gateway (made from secrets below),
      secretName: inference-tls #   or certificateArn: arn:aws:acm:... to terminate TLS on the NLB
  # App teams, each deploying its own models from a workloads stack (docs/operator-guide.md#tenancy):
  # {PROJECT}:teams:
  #   - name: search
  #     deployers: [arn:aws:iam::<account>:role/search-deployers]
  #     quota: {{gpus: 4, cpu: "64", memory: 256Gi}}
{model}{secrets_text({**GATEWAY_SECRETS, **hf_token(first)})}"""


def _team_model(platform: str, platforms: PlatformLookup) -> tuple[str, str, str]:
    """(accelerator, pool, note) for the starter model, from the platform's exports when known."""
    source = platforms(platform)
    if source is None:
        return "nvidia", "gpu", f"# {platform} is not in this repository: check that it exports a pool named gpu.\n"
    pools = [p.config for p in read_platform(source.exports, source.where).pools]
    for accelerator in ("nvidia", "neuron"):
        match = next((p for p in pools if p.accelerator == accelerator), None)
        if match is not None:
            return accelerator, match.name, f"# Pools exported by {platform}: {', '.join(p.name for p in pools)}.\n"
    raise ConfigError([Problem(platform, "the platform exports no accelerator pool a model could run on")])


def _quota_size(platform: str, team: str, models_text: str, platforms: PlatformLookup) -> tuple[str, str]:
    """(cpu, memory) of the starter quota: room for two replicas of the starter model as the stack
    resolves it on the platform's pool (the requests its pods will render), and at least 32 cpu / 128Gi."""
    cpu, memory = 32, 128
    source = platforms(platform)
    if source is not None:
        stack = {"role": "workloads", "platformStack": platform, "team": team}
        sections = {"stack": stack, "models": yaml.safe_load(models_text)}
        resolved = resolve(parse_sections(sections, "us-west-2"), source)
        for model in resolved.models:
            cpu = max(cpu, math.ceil(2 * model.requests.cpu_m / 1000))
            memory = max(memory, math.ceil(2 * model.requests.memory_mib / 1024))
    return f'"{cpu}"', f"{memory}Gi"


def workloads_text(
    name: str,
    platform: str,
    team: str,
    environment: str,
    digest: str | None,
    platforms: PlatformLookup = repo_platform,
    *,
    path: Path | None = None,
) -> str:
    """A team's stack on `platform`, whose exports `platforms` finds (its stack file in this repository),
    to be written at `path` (default: the project root's Pulumi.<name>.yaml)."""
    path = path or ROOT / f"Pulumi.{name}.yaml"
    accelerator, pool, note = _team_model(platform, platforms)
    gpus, neuron = (2, 0) if accelerator == "nvidia" else (0, 2)
    models = starter_model(accelerator, pool, digest, environment)
    cpu, memory = _quota_size(platform, team, models, platforms)
    return f"""\
# {name}: the {team} team's models on the platform stack {platform}.
{header_commands(path)}\
# A workloads stack sets only `stack` and `models`: cluster, pools, add-ons, storage, gateway and the
# team itself are the platform's and are read from its exports through a StackReference. The team
# must be one the platform declares; for two replicas of the starter model its entry needs at least
#   quota: {{gpus: {gpus}, neuronDevices: {neuron}, cpu: {cpu}, memory: {memory}}}
# (a replica's cpu/memory as the engine deploys it: stacks/sizing.py). Run `pulumi up` as one of the
# team's deployers: the stack reaches the cluster as the team's deploy role, which may write only the
# team's namespaces (docs/app-team-guide.md#deploying-as-your-team).
{note}config:
  aws:region: us-west-2
  {PROJECT}:stack:
    role: workloads
    environment: {environment}
    platformStack: {platform}
    team: {team}                # declared by the platform (teams[]): its namespaces, quota, keys, deploy role
  {PROJECT}:models:
{models}{secrets_text(hf_token(accelerator))}"""


def _sections(text: str) -> tuple[dict[str, Any], Any]:
    doc: dict[str, Any] = yaml.safe_load(text)
    sections = {k.split(":", 1)[1]: v for k, v in doc["config"].items() if k.startswith(f"{PROJECT}:")}
    return sections, doc["config"].get("aws:region")


def check(text: str, source: str, platforms: PlatformLookup | None = None) -> None:
    sections, region = _sections(text)
    check_config(parse_sections(sections, region, source=source), source, platforms)


def _platform_of(config: StackConfig) -> PlatformExports | None:
    ref = config.stack.platform_stack
    return repo_platform(ref) if ref else None


INSPECT = "docker buildx imagetools inspect {image}"


def _as_dev(text: str) -> ResolvedStack:
    """The stack as written, resolved as a dev stack (which needs no pins): what it will render."""
    sections, _ = _sections(text)
    config = parse_sections({**sections, "stack": {**sections["stack"], "environment": "dev"}}, "us-west-2")
    return resolve(config, _platform_of(config))


def _pinned_images(stack: ResolvedStack) -> list[str]:
    """The platform images the stack renders that take a digest (the tag-only ones cannot)."""
    from stacks.versions import TAG_ONLY_IMAGES

    return [n for n in stack.images if n not in TAG_ONLY_IMAGES]


def _take_from(image: Image) -> str:
    """Where a digest comes from: the image by repository:tag and the command that prints its digest."""
    ref = f"{image.repository}:{image.tag}"
    return f"the digest of {ref}: `{INSPECT.format(image=ref)}` prints it (Digest: sha256:...)"


def missing_pins(
    text: str, role: str, environment: str, ami_version: str | None, image_digest: str | None, pins: dict[str, str]
) -> list[Problem]:
    """Every pin a prod stack still needs, all in one answer: the AMI release, each model's engine image
    digest and each platform image's digest, each naming the image to take its digest from."""
    if environment != "prod":
        return []
    stack = _as_dev(text)
    problems = []
    if role != "workloads" and ami_version is None:
        problems.append(
            Problem("--ami-version", "prod pins node AMIs: give the EKS AL2023 release to run, e.g. v20261015")
        )
    if image_digest is None:
        problems += [
            Problem(
                "--image-digest",
                f"prod pins images: give the sha256 digest of the engine image model {m.name} runs, "
                f"{_take_from(m.image)}",
            )
            for m in stack.models
        ]
    problems += [
        Problem(
            "--image-pin",
            f"prod pins every image the stack renders: give --image-pin {n}=sha256:<64 hex> (the catalog's {n}, "
            f"stacks/versions.py), {_take_from(IMAGES[n])}",
        )
        for n in _pinned_images(stack)
        if n not in pins
    ]
    return problems


def with_image_pins(text: str, pins: dict[str, str]) -> str:
    """The stack with an `images` section pinning the given platform images (none given: unchanged)."""
    if not pins:
        return text
    lines = "".join(f'    {n}: {{digest: "{d}"}}\n' for n, d in pins.items())
    return f"{text}  {PROJECT}:images:               # the platform's own images, pinned (stacks/versions.py)\n{lines}"


def new_stack(
    name: str,
    role: str,
    *,
    out_dir: Path,
    preset: str | None = None,
    platform: str | None = None,
    team: str | None = None,
    environment: str = "dev",
    ami_version: str | None = None,
    image_digest: str | None = None,
    image_pins: dict[str, str] | None = None,
) -> Path:
    path = out_dir / f"Pulumi.{name}.yaml"
    problems = []
    if path.exists():
        problems.append(Problem(str(path), "already exists; choose another name or remove the file"))
    if role == "workloads" and (platform is None or team is None):
        problems.append(Problem("--platform/--team", "a workloads stack needs --platform org/project/stack and --team"))
    if role != "workloads" and (platform is not None or team is not None):
        problems.append(Problem("--platform/--team", f"only a workloads stack takes them (role is {role})"))
    if problems:
        raise ConfigError(problems)
    if role == "workloads":
        assert platform is not None and team is not None
        text = workloads_text(name, platform, team, environment, image_digest, path=path)
    else:
        ami = f"al2023@{ami_version}" if ami_version else "al2023@latest"
        text = platform_text(name, role, preset or "gpu-small", environment, ami, image_digest, path=path)
    pins = dict(image_pins or {})
    missing = missing_pins(text, role, environment, ami_version, image_digest, pins)
    if missing:
        raise ConfigError(missing)
    text = with_image_pins(text, pins)
    schema = Path(__file__).resolve().parent / "stack.schema.json"
    text = SCHEMA_MODELINE.format(schema=os.path.relpath(schema, out_dir.resolve())) + text
    check(text, str(path))
    path.write_text(text)
    return path
