"""The `addons` section: what is installed on the cluster beyond Kubernetes itself.

Each add-on is `enabled` plus an optional `version` that overrides the pinned default in
`stacks/versions.py`; defaults are safe and cheap.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, StringConstraints, model_validator

from .base import Addon, SecretName, Strict


class NvidiaDevicePlugin(Addon):
    enabled: bool = True


class Neuron(Addon):
    """The AWS Neuron Helm chart: device plugin, scheduler extension, node problem detector."""

    enabled: bool = True
    scheduler: bool = True
    node_problem_detector: bool = True


class Dynamo(Addon):
    pass


class Aibrix(Addon):
    pass


class KubeRay(Addon):
    pass


class NimOperator(Addon):
    pass


# Also names the provider's key variable (<NAME>_API_KEY), so it starts with a letter.
ProviderName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$")]


class ExternalProvider(Strict):
    """An external model provider LiteLLM may route to (data leaves the cluster)."""

    name: ProviderName
    models: list[str] = Field(min_length=1)
    api_key_secret: SecretName
    egress_hosts: list[str] = Field(min_length=1)


class LiteLLM(Addon):
    """The LiteLLM proxy in front of the stack's models; external providers only when listed."""

    master_key_secret: SecretName = "litellm-master-key"
    external_providers: list[ExternalProvider] = Field(default_factory=list)
    fallbacks: dict[str, list[str]] = Field(default_factory=dict)
    database_url_secret: SecretName | None = None
    redis: bool = False
    replicas: int = Field(default=2, ge=1, le=20)


class Monitoring(Addon):
    """Metrics: kube-prometheus-stack (or an existing Prometheus), exporters, dashboards, rules, and
    prometheus-adapter serving the engines' metrics to HorizontalPodAutoscalers."""

    enabled: bool = True
    existing_prometheus: bool = False
    # The existing Prometheus's in-cluster query URL (scheme, host and port; no path), for
    # prometheus-adapter. Only with existingPrometheus: otherwise the platform's own Prometheus is used.
    prometheus_url: Annotated[str, StringConstraints(pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")] | None = None
    retention: Annotated[str, StringConstraints(pattern=r"^[0-9]+(h|d|w)$")] = "15d"
    grafana: bool = True
    # An existing Secret in namespace `monitoring` with keys admin-user and admin-password for
    # Grafana's admin; unset, the chart generates a random password and keeps it across upgrades.
    grafana_admin_secret: SecretName | None = None
    # Chart versions overriding the catalog (`version` is kube-prometheus-stack's).
    adapter_version: str | None = None
    dcgm_exporter_version: str | None = None

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


class AddonsSection(Strict):
    """`inference-platform:addons`."""

    nvidia_device_plugin: NvidiaDevicePlugin = Field(default_factory=NvidiaDevicePlugin)
    neuron: Neuron = Field(default_factory=Neuron)
    karpenter: Addon = Field(default_factory=lambda: Addon(enabled=True))
    dynamo: Dynamo = Field(default_factory=Dynamo)
    aibrix: Aibrix = Field(default_factory=Aibrix)
    kuberay: KubeRay = Field(default_factory=KubeRay)
    nim_operator: NimOperator = Field(default_factory=NimOperator)
    litellm: LiteLLM = Field(default_factory=LiteLLM)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    envoy_gateway: Addon = Field(default_factory=lambda: Addon(enabled=True))
    # Provisions the NLB for the gateway's (or AIBrix's) LoadBalancer Service. Turn it off only where
    # the cluster already runs one (installed by other means, or EKS Auto Mode's own).
    aws_load_balancer_controller: Addon = Field(default_factory=lambda: Addon(enabled=True))
