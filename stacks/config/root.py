"""The root model: one validated object for the whole stack file."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from .addons import AddonsSection
from .base import KeyedError, Strict
from .cluster import ClusterSection
from .gateway import GatewaySection
from .images import ImagesSection
from .models import ModelSection
from .pools import NodePoolSection
from .secrets import SecretsSection
from .stack import StackSection
from .storage import StorageSection
from .teams import TeamSection


def _known_region(code: str) -> str:
    from ..regions import region

    if region(code) is None:
        raise ValueError(f"{code[:60]!r} is not an AWS Region of a commercial account (stacks/data/regions.json)")
    return code


AwsRegion = Annotated[str, AfterValidator(_known_region)]

# Section key in the stack file -> attribute on StackConfig.
SECTIONS = {
    "stack": "stack",
    "cluster": "cluster",
    "nodePools": "node_pools",
    "addons": "addons",
    "storage": "storage",
    "gateway": "gateway",
    "models": "models",
    "images": "images",
    "teams": "teams",
    "secrets": "secrets",
}

# Sections only a platform (or all-in-one) stack may set: (stack-file key, attribute).
PLATFORM_OWNED = (
    ("cluster", "cluster"),
    ("nodePools", "node_pools"),
    ("addons", "addons"),
    ("storage", "storage"),
    ("gateway", "gateway"),
    ("teams", "teams"),
)


class StackConfig(Strict):
    """Everything under the `inference-platform:` namespace of a Pulumi.<stack>.yaml. Sections marked
    platform-owned are refused in a `workloads` stack: they belong to its platform stack."""

    stack: StackSection = Field(
        default_factory=StackSection, description="The stack's role, environment and, for a team, its platform."
    )
    cluster: ClusterSection | None = Field(
        default=None,
        description="The EKS cluster, its network and system nodes; required unless `stack.role` is `workloads`, "
        "which may not set it.",
    )
    node_pools: list[NodePoolSection] = Field(
        default_factory=list,
        description="Karpenter node pools for GPUs, Neuron devices and CPUs; empty: only the system nodes. "
        "Platform-owned.",
    )
    addons: AddonsSection = Field(
        default_factory=AddonsSection, description="What is installed on the cluster. Platform-owned."
    )
    storage: StorageSection = Field(
        default_factory=StorageSection, description="Model bucket and model cache. Platform-owned."
    )
    gateway: GatewaySection = Field(
        default_factory=GatewaySection, description="The authenticated HTTPS front door. Platform-owned."
    )
    models: list[ModelSection] = Field(
        default_factory=list, description="The served models; a `platform` stack may not have any."
    )
    teams: list[TeamSection] = Field(
        default_factory=list,
        max_length=200,
        description="The app teams whose workloads stacks run on this platform: their namespaces, deploy "
        "identities, quotas, client keys and LiteLLM access. Platform-owned.",
    )
    images: ImagesSection = Field(
        default_factory=ImagesSection,
        description="Pins for the platform's own images by catalog name (stacks/versions.py): the preparation "
        "steps' `model-prep-s3` (aws-cli) and `model-prep-hub`, `neuron-monitor`, `litellm`, `redis`, AIBrix's "
        "`envoy-proxy`, `envoy-gateway`, `busybox` and `aibrix-runtime`, `dynamo-planner`. Each takes "
        "`repository`, `tag` and `digest`; `environment: prod` requires a digest for every image the stack "
        "renders (dev and staging warn). A model's engine image is pinned per model by `models[].image`.",
    )
    secrets: SecretsSection = Field(
        default_factory=dict,
        description="Where each Secret the stack references comes from, by Secret name: `fromConfig` (the "
        "program creates it from Pulumi secrets of this stack, `pulumi config set --secret <key> <value>`) or "
        "`external: true` (made outside the stack; only in a namespace the stack does not create). Every Secret "
        "a stack's pods or policies reference needs one (docs/operator-guide.md, Secrets).",
    )
    secret_config: tuple[str, ...] = Field(
        default=(),
        exclude=True,
        description="The Pulumi config keys of this project set as secrets (`pulumi config set --secret`), by name; "
        "never their values. Read by the load step, not written in a section.",
    )
    aws_region: AwsRegion = Field(
        exclude=True,
        description="The stack file's `aws:region` (the AWS provider's own key): the Region the stack deploys "
        "to, one an AWS commercial account provides (stacks/data/regions.json). Required, never assumed: the "
        "Karpenter and load-balancer controller settings, the zones a created VPC spans, the ACM certificate "
        "and the exports all follow it.",
    )

    @model_validator(mode="after")
    def _role_shapes_sections(self) -> Self:

        if self.stack.role == "workloads":
            # The platform stack owns these; a team stack sees them through the platform's exports.
            owned = [key for key, attr in PLATFORM_OWNED if attr in self.model_fields_set and getattr(self, attr)]
            if owned:
                raise KeyedError(
                    [
                        (
                            (key,),
                            f"a workloads stack cannot change platform resources; remove {key} (the platform "
                            f"stack {self.stack.platform_stack} owns it)",
                        )
                        for key in owned
                    ]
                )
        elif self.stack.role == "platform" and self.models:
            raise KeyedError(
                [
                    (
                        ("models",),
                        "a platform stack serves no models of its own; move models to a workloads stack "
                        "(python -m stacks new <name> --role workloads ...) or use role: all-in-one",
                    )
                ]
            )
        elif self.cluster is None:
            raise KeyedError(
                [
                    (
                        ("cluster",),
                        f"the cluster section is required (at least cluster.name) for a {self.stack.role} stack",
                    )
                ]
            )
        return self

    def pool(self, name: str) -> NodePoolSection | None:
        return next((p for p in self.node_pools if p.name == name), None)
