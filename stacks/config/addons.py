"""The `addons` section: what is installed on the cluster beyond Kubernetes itself.

Each add-on is `enabled` plus an optional `version` that overrides the pinned default in
`stacks/versions.py`; defaults are safe and cheap.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from .base import Addon, HostPattern, SecretName, Strict, VersionKey
from .pools import InstanceTypeName


class NvidiaDevicePlugin(Addon):
    """The NVIDIA device plugin chart, which makes AL2023 GPU nodes advertise `nvidia.com/gpu`."""

    enabled: bool = Field(
        default=True,
        description="Install the plugin when some NVIDIA pool runs AL2023 (its AMI ships the driver but no "
        "plugin; Bottlerocket brings its own). Refused off while such a pool exists.",
    )


class Neuron(Addon):
    """The AWS Neuron Helm chart: device plugin, scheduler extension, node problem detector."""

    enabled: bool = Field(
        default=True,
        description="Install the Neuron chart when some pool is `accelerator: neuron`; refused off while such a "
        "pool exists (no node would advertise `aws.amazon.com/neuron`).",
    )
    scheduler: bool = Field(
        default=True,
        description="Also run the Neuron scheduler extension (custom scheduler `neuron-scheduler`), which "
        "Neuron workloads are given automatically.",
    )
    node_problem_detector: bool = Field(
        default=True,
        description="Also run the Neuron node problem detector on Neuron nodes (its requests count in the fit checks).",
    )


class KarpenterAddon(Addon):
    """Karpenter, with its node repair gate."""

    enabled: bool = Field(
        default=True,
        description="Install Karpenter, which launches every node pool's nodes; required while `nodePools` is not "
        "empty.",
    )
    node_repair: bool | None = Field(
        default=None,
        description="Karpenter's node repair (the chart's `settings.featureGates.nodeRepair`, alpha in 1.14.1): "
        "replace a node whose health condition has been bad for its toleration (AcceleratedHardwareReady 10 "
        "minutes, the kubelet's Ready 30). Unset: on where the node monitoring agent runs "
        "(`nodeMonitoringAgent.enabled`), which sets the accelerator conditions; off: broken nodes stay until "
        "an operator drains them.",
    )


class NodeMonitoringAgent(Strict):
    """The EKS node monitoring agent (the managed add-on `eks-node-monitoring-agent`)."""

    enabled: bool = Field(
        default=True,
        description="Run the EKS node monitoring agent on every node (accelerator pools' taints tolerated): it "
        "reads kernel, GPU (XID, DCGM) and Neuron logs and sets node conditions such as "
        "`AcceleratedHardwareReady` that Karpenter's node repair acts on. Its version is "
        "`cluster.addonVersions.eks-node-monitoring-agent`, else the catalog pin.",
    )


class Dynamo(Addon):
    """NVIDIA Dynamo's platform chart (the cluster-wide operator) in `dynamo-system`; needed by
    `engine: dynamo`."""

    grove: bool = Field(
        default=False,
        description="Install and enable the chart's Grove orchestrator (`global.grove.install/enabled`), which "
        "runs a graph's multi-node workers; also on, whatever this says, when some Dynamo model of this stack has "
        "`nodesPerReplica` above 1. A platform whose teams' stacks serve multi-node Dynamo graphs sets it: the "
        "operator detects its orchestrators when it starts.",
    )


class Aibrix(Addon):
    """AIBrix (controller manager, gateway plugin, metadata service, GPU optimizer) from a vendored
    chart; needed by `models[].adapters` and `autoscaling.owner: aibrix`. Its Gateway replaces the
    platform's own."""

    version: VersionKey | None = Field(
        default=None,
        description="Exact AIBrix release overriding the pin: the vendored chart `charts/vendor/aibrix-<version>` "
        "(run `scripts/vendor-charts.sh`) and its component image tags.",
    )


class KubeRay(Addon):
    """The KubeRay operator chart in `kuberay-system`; needed by `engine: ray-serve`."""

    version: VersionKey | None = Field(
        default=None,
        description="Exact KubeRay release overriding the pin: the chart version and the operator image tag.",
    )


class Lws(Addon):
    """LeaderWorkerSet (kubernetes-sigs/lws) in `lws-system`: the controller that runs a replica spanning
    nodes (`models[].nodesPerReplica` > 1) as one group of pods."""

    enabled: bool = Field(
        default=False,
        description="Install LeaderWorkerSet; also installed, whatever this says, when some model has "
        "`nodesPerReplica` above 1.",
    )


class Keda(Addon):
    """KEDA (the keda chart) in `keda`: the operator, its admission webhooks and the metrics server that
    serves external.metrics.k8s.io to the HPAs it creates, beside prometheus-adapter (which serves only
    custom.metrics)."""

    enabled: bool = Field(
        default=False,
        description="Install KEDA; also installed, whatever this says, when some model has `autoscaling.owner: "
        "keda`. A platform whose teams' models use it sets it.",
    )


class KedaHttp(Addon):
    """The KEDA HTTP add-on (the keda-add-ons-http chart) in `keda`: the interceptor that holds a request
    to a model scaled to zero while KEDA starts it, and its external scaler."""

    enabled: bool = Field(
        default=False,
        description="Install the HTTP add-on (and KEDA); also installed, whatever this says, when some model "
        "has `autoscaling.minReplicas: 0`. A platform whose teams' models scale to zero sets it.",
    )


class NimOperator(Addon):
    """NVIDIA's NIM Operator chart in `nim-operator`: with it, `engine: nim` models become NIMServices
    (which then need `secrets.ngcApiKey`)."""


# Also names the provider's key variable (<NAME>_API_KEY), so it starts with a letter.
ProviderName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$", max_length=40)]
# A model name LiteLLM serves (`model_name`, and `<provider>/<model>` upstream): provider ids such as
# gpt-4o-mini, claude-3-5-sonnet-20241022, anthropic.claude-v2:1 or models/gemini-pro.
ServedModelName = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9]([A-Za-z0-9._:@-]*[A-Za-z0-9])?(/[A-Za-z0-9][A-Za-z0-9._:@-]*)*$", max_length=200
    ),
]


class ExternalProvider(Strict):
    """An external model provider LiteLLM may route to (data leaves the cluster)."""

    name: ProviderName = Field(
        description="LiteLLM provider name (`openai`, `anthropic`, `bedrock`, ...); lower case, starting with a "
        "letter, since it also names the key's variable `<NAME>_API_KEY`."
    )
    models: list[ServedModelName] = Field(
        min_length=1,
        description="Model names the provider may serve through the proxy (its own ids, e.g. `gpt-4o-mini`, or for "
        "`bedrock` a Bedrock model id such as `anthropic.claude-3-5-haiku-20241022-v1:0` or a cross-Region "
        "inference profile id such as `us.anthropic.claude-3-5-haiku-20241022-v1:0`); unique across the stack's "
        "exposed models and every provider.",
    )
    api_key_secret: SecretName | None = Field(
        default=None,
        description="Existing Secret in namespace `litellm` whose key `api-key` holds the provider's API key, "
        "mounted as a file; required for every provider but `bedrock`, where it is an optional Bedrock API key "
        "(without it the proxy calls Bedrock as its own IAM role, through EKS Pod Identity).",
    )
    region: str | None = Field(
        default=None,
        description="`bedrock` only, and required there: the AWS Region the proxy calls Bedrock in (LiteLLM's "
        "`aws_region_name`), e.g. `us-west-2`; a cross-Region inference profile must be called from a Region "
        "of its geography.",
    )
    egress_hosts: list[HostPattern] = Field(
        min_length=1,
        description="DNS names the provider is reached at (e.g. `api.openai.com`, or `*.openai.azure.com`), each "
        "listed once, recorded on the egress NetworkPolicy; enforcing them per host needs an egress proxy or an "
        "FQDN-aware CNI.",
    )


class LiteLLM(Addon):
    """The LiteLLM proxy in front of the stack's models; external providers only when listed."""

    version: VersionKey | None = Field(
        default=None,
        description="Exact LiteLLM release overriding the pinned proxy image, e.g. `1.100.1` (image tag `v1.100.1`).",
    )
    master_key_secret: SecretName = Field(
        default="litellm-master-key",
        description="Existing Secret in namespace `litellm` whose key `master-key` protects the proxy (and "
        "authenticates Prometheus's scrape).",
    )
    external_providers: list[ExternalProvider] = Field(
        default_factory=list,
        description="External providers the proxy may route to; without one, no traffic leaves the cluster.",
    )
    fallbacks: dict[ServedModelName, list[ServedModelName]] = Field(
        default_factory=dict,
        description="`model: [fallback, ...]`; every name must be an exposed model of the stack or a model of a "
        "listed provider.",
    )
    database_url_secret: SecretName | None = Field(
        default=None,
        description="Existing Secret with key `database-url` (virtual keys, spend tracking); unset: no database.",
    )
    redis: bool = Field(
        default=False, description="Run a small Redis in the namespace for router state shared across replicas."
    )
    replicas: int = Field(default=2, ge=1, le=20, description="Proxy replicas.")


class CostSection(Strict):
    """`addons.monitoring.cost`: showback of tokens and cost per team and model, as Prometheus recording
    rules and two Grafana dashboards (a team's and the platform's), from the engines' token counters,
    kube-state-metrics and a dated price table (stacks/pricing.py)."""

    enabled: bool = Field(
        default=True,
        description="Record tokens per second and cost per hour per team, namespace and model, and cost per "
        "million tokens, and provision the team and platform cost dashboards (with monitoring on).",
    )
    spot_discount: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="The share of the on-demand price a spot node is assumed to save (0.6: spot costs 40 % of "
        "on demand). Spot prices change by the hour and zone, so no table holds them. Unset, spot nodes are "
        "costed at the on-demand price (an upper bound), with a warning when a pool may launch spot.",
    )
    prices: dict[InstanceTypeName, Annotated[float, Field(gt=0, le=1000)]] = Field(
        default_factory=dict,
        description="USD per on-demand instance-hour by instance type, overriding the price table (Karpenter's "
        "us-east-1 on-demand table, stacks/data/prices.json): your Region's list price, or a negotiated or "
        "Savings Plans rate.",
    )


class MonitoringAddon(Addon):
    """Metrics: kube-prometheus-stack (or an existing Prometheus), exporters, dashboards, rules, and
    prometheus-adapter serving the engines' metrics to HorizontalPodAutoscalers."""

    enabled: bool = Field(
        default=True,
        description="Install monitoring: kube-prometheus-stack (unless `existingPrometheus`), prometheus-adapter, "
        "the DCGM exporter and neuron-monitor, PodMonitors, dashboards and SLO alerts.",
    )
    version: VersionKey | None = Field(
        default=None, description="Exact kube-prometheus-stack chart version overriding the pin."
    )
    crds_version: VersionKey | None = Field(
        default=None,
        description="Exact prometheus-operator-crds chart version: the Prometheus Operator CRDs the program applies "
        "(kube-prometheus-stack's own crds/ are never upgraded by Helm). Unset: the catalog's match for `version` "
        "(the release whose appVersion is the operator version kube-prometheus-stack runs); needed when `version` "
        "is one the catalog does not map.",
    )
    existing_prometheus: bool = Field(
        default=False,
        description="Use a Prometheus the cluster already runs instead of installing kube-prometheus-stack; "
        "PodMonitors, rules, dashboards and exporters are still created (the Prometheus Operator CRDs must exist "
        "and it must select them).",
    )
    prometheus_url: Annotated[str, StringConstraints(pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")] | None = (
        Field(
            default=None,
            description="With `existingPrometheus` only: its in-cluster query URL (scheme, host, port; no path), e.g. "
            "`http://prometheus-operated.monitoring.svc:9090`, so prometheus-adapter is installed. Without it no model "
            "may use `autoscaling.owner: hpa`.",
        )
    )
    retention: Annotated[str, StringConstraints(pattern=r"^[0-9]+(h|d|w)$")] = Field(
        default="15d", description="How long Prometheus keeps metrics, in hours, days or weeks (`12h`, `15d`, `2w`)."
    )
    storage_gib: int = Field(
        default=50,
        ge=10,
        le=16384,
        description="Size in GiB of Prometheus's persistent volume (encrypted gp3 through the EBS CSI driver, "
        "StorageClass `gp3-encrypted`): its data survives a reschedule or node replacement. Prometheus deletes "
        "the oldest blocks beyond 85 % of it (`retentionSize`), whichever comes first with `retention`.",
    )
    alertmanager_storage_gib: int = Field(
        default=2,
        ge=1,
        le=1024,
        description="Size in GiB of Alertmanager's persistent volume (silences and notification state).",
    )
    alertmanager_config_secret: SecretName | None = Field(
        default=None,
        description="Existing Secret in namespace `monitoring` whose key `alertmanager.yaml` is Alertmanager's "
        "whole configuration (receivers and routes: where alerts go). Unset, the chart's default routes every "
        "alert to a receiver that sends nothing (a warning in prod).",
    )
    grafana: bool = Field(
        default=True,
        description="Run Grafana as part of the platform's kube-prometheus-stack. It is fully provisioned, not "
        "persistent: data source, dashboards (ConfigMaps) and admin come from the platform, so a restart loses "
        "nothing the platform made, and dashboards edited in its UI are not kept (commit them as ConfigMaps).",
    )
    grafana_admin_secret: SecretName | None = Field(
        default=None,
        description="Existing Secret in namespace `monitoring` with keys `admin-user` and `admin-password` for "
        "Grafana's admin; unset, the chart generates a random password and keeps it across upgrades.",
    )
    adapter_version: VersionKey | None = Field(
        default=None, description="Exact prometheus-adapter chart version overriding the pin."
    )
    dcgm_exporter_version: VersionKey | None = Field(
        default=None, description="Exact DCGM exporter chart version overriding the pin."
    )
    cost: CostSection = Field(
        default_factory=CostSection,
        description="Tokens and cost per team and model: recording rules, dashboards, prices and the spot discount.",
    )

    @property
    def serves_custom_metrics(self) -> bool:
        """Whether the platform runs prometheus-adapter (HPAs need it): over its own Prometheus, or an
        existing one whose URL the stack gives."""
        return self.enabled and (not self.existing_prometheus or self.prometheus_url is not None)

    @model_validator(mode="after")
    def _url_only_for_an_existing_prometheus(self) -> Self:
        if self.prometheus_url and not self.existing_prometheus:
            raise ValueError(
                "prometheusUrl names an existing Prometheus: set existingPrometheus: true with it, or drop it "
                "to use the platform's own"
            )
        return self


# An OTLP endpoint the collector exports to: scheme, host, optional port and path (`/v1/traces` for
# OTLP/HTTP), nothing the exporter would read as credentials.
OtlpEndpoint = Annotated[
    str, StringConstraints(pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._/-]*)?$", max_length=253)
]


class TracingAddon(Addon):
    """OpenTelemetry traces: a collector in `tracing` that receives OTLP from the gateway's proxies, the
    endpoint pickers and the engines that export it, and forwards every span to the stack's backend."""

    endpoint: OtlpEndpoint | None = Field(
        default=None,
        description="The trace backend's OTLP endpoint the collector exports to (Tempo, Jaeger, an ADOT or "
        "vendor collector), e.g. `http://tempo.tempo.svc:4317` (gRPC) or `https://otlp.example.com/v1/traces` "
        "(HTTP); required when `enabled`.",
    )
    protocol: Literal["grpc", "http"] = Field(
        default="grpc",
        description="How the collector speaks to `endpoint`: OTLP over gRPC (the `otlp` exporter) or over HTTP "
        "(`otlphttp`). Every hop inside the cluster sends OTLP/gRPC to the collector either way.",
    )
    sampling_ratio: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Fraction of requests traced, decided once at the gateway (Envoy's samplingFraction) and "
        "followed by every later hop through the W3C `traceparent` header (the picker and engines sample "
        "parent-based with the same ratio for requests that arrive without one).",
    )

    @model_validator(mode="after")
    def _enabled_needs_an_endpoint(self) -> Self:
        if self.enabled and self.endpoint is None:
            raise ValueError(
                "tracing needs the backend the collector exports to: set endpoint (e.g. http://tempo.tempo.svc:4317), "
                "or enabled: false"
            )
        return self


class AddonsSection(Strict):
    """`inference-platform:addons`: what is installed on the cluster beyond Kubernetes itself. Every
    add-on is `enabled` plus an optional `version` overriding its pin in `stacks/versions.py`."""

    nvidia_device_plugin: NvidiaDevicePlugin = Field(
        default_factory=NvidiaDevicePlugin, description="NVIDIA device plugin for AL2023 GPU pools."
    )
    neuron: Neuron = Field(default_factory=Neuron, description="AWS Neuron chart for Inferentia and Trainium pools.")
    karpenter: KarpenterAddon = Field(
        default_factory=KarpenterAddon,
        description="Karpenter, which launches every node pool's nodes; required while `nodePools` is not empty.",
    )
    node_monitoring_agent: NodeMonitoringAgent = Field(
        default_factory=NodeMonitoringAgent,
        description="The EKS node monitoring agent (a managed add-on): node health conditions for node repair.",
    )
    dynamo: Dynamo = Field(default_factory=Dynamo, description="NVIDIA Dynamo operator, for `engine: dynamo`.")
    aibrix: Aibrix = Field(
        default_factory=Aibrix, description="AIBrix, for LoRA adapters and `autoscaling.owner: aibrix`."
    )
    kuberay: KubeRay = Field(default_factory=KubeRay, description="KubeRay operator, for `engine: ray-serve`.")
    nim_operator: NimOperator = Field(
        default_factory=NimOperator, description="NIM Operator: NIM models become NIMServices."
    )
    lws: Lws = Field(default_factory=Lws, description="LeaderWorkerSet, for models that span nodes.")
    keda: Keda = Field(default_factory=Keda, description="KEDA, for `autoscaling.owner: keda`.")
    keda_http: KedaHttp = Field(
        default_factory=KedaHttp,
        description="The KEDA HTTP add-on, for models that scale to zero or on its request count "
        "(`autoscaling.signal: requests`); turned on when one does.",
    )
    litellm: LiteLLM = Field(
        default_factory=LiteLLM, description="LiteLLM proxy: one OpenAI-compatible endpoint over several models."
    )
    monitoring: MonitoringAddon = Field(
        default_factory=MonitoringAddon, description="Prometheus, prometheus-adapter, exporters, dashboards and alerts."
    )
    tracing: TracingAddon = Field(
        default_factory=TracingAddon,
        description="OpenTelemetry traces from the gateway, the endpoint pickers and the engines, through a "
        "collector, to `endpoint`.",
    )
    envoy_gateway: Addon = Field(
        default_factory=lambda: Addon(enabled=True),
        description="Envoy Gateway, which runs the gateway (and AIBrix's); installed only when one of them is on, "
        "and refused off while one is.",
    )
    # Turn it off only where the cluster already runs one (installed by other means, or EKS Auto
    # Mode's own).
    aws_load_balancer_controller: Addon = Field(
        default_factory=lambda: Addon(enabled=True),
        description="AWS Load Balancer Controller, which turns the gateway's (or AIBrix's) LoadBalancer Service "
        "into an NLB; installed only when one of them is on.",
    )
