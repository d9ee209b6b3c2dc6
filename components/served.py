"""What the front door, the scrapers and LiteLLM need to know about each served model: its Service,
port, metrics endpoint and which paths may be routed. Pure; built from the validated config."""

from __future__ import annotations

from dataclasses import dataclass

from stacks.config import ModelSection, StackConfig
from stacks.engines import facts

from .storage.cache import per_replica

DEFAULT_NAMESPACE = "inference"
# The label every pod (and the Service) of a served model carries, so the gateway's network policies,
# the scrapers and the model's own peers can select exactly that model's pods.
MODEL_LABEL = "inference-platform.io/model"
NIM_API_VERSION = "apps.nvidia.com/v1alpha1"


@dataclass(frozen=True)
class ServedModel:
    name: str  # the model name clients ask for (models[].name)
    served_model_name: str  # what the engine reports in /v1/models
    engine: str
    namespace: str
    service: str
    port: int
    metrics_path: str | None
    metrics_port: int | None
    route_paths: tuple[str, ...]
    management_paths: tuple[str, ...]
    expose: bool
    # The workload a scaler targets, exactly as the engine builds it: (apiVersion, kind, name).
    scale_target: tuple[str, str, str]

    @property
    def selector(self) -> dict[str, str]:
        """Labels selecting this model's pods: engine modules put them on every pod they create."""
        return {MODEL_LABEL: self.name}


def namespace_of(config: StackConfig, model: ModelSection) -> str:
    if model.namespace:
        return model.namespace
    if config.stack.role == "workloads" and config.stack.team:
        return config.stack.team
    return DEFAULT_NAMESPACE


def _service_and_target(config: StackConfig, model: ModelSection, port: int) -> tuple[str, int, tuple[str, str, str]]:
    """The Service clients reach and the workload a scaler targets, as the engine module builds it:
    the DynamoGraphDeployment or RayService (their operators generate the Services from the custom
    resource's name, components/serving/dynamo.py, rayservice.py); a NIMService when the NIM
    Operator runs NIM; a StatefulSet when each replica has its own cache volume; else a Deployment."""
    if model.engine == "dynamo":
        from .serving import dynamo

        service, port = dynamo.served_service(model)
        return service, port, (dynamo.API_VERSION, "DynamoGraphDeployment", dynamo.graph_name(model))
    if model.engine == "ray-serve":
        from .serving import rayservice

        service, port = rayservice.served_service(model)
        return service, port, (rayservice.API_VERSION, "RayService", model.name)
    if model.engine == "nim" and config.addons.nim_operator.enabled:
        return model.name, port, (NIM_API_VERSION, "NIMService", model.name)
    if per_replica(config.storage, model):
        return model.name, port, ("apps/v1", "StatefulSet", model.name)
    return model.name, port, ("apps/v1", "Deployment", model.name)


def served_model(config: StackConfig, model: ModelSection) -> ServedModel:
    f = facts(model.engine)
    service, port, target = _service_and_target(config, model, f.port)
    return ServedModel(
        name=model.name,
        served_model_name=model.name,
        engine=model.engine,
        namespace=namespace_of(config, model),
        service=service,
        port=port,
        metrics_path=f.metrics_path,
        metrics_port=f.metrics_port or (f.port if f.metrics_path else None),
        route_paths=f.route_paths,
        management_paths=f.management_paths,
        expose=model.expose,
        scale_target=target,
    )


def served_models(config: StackConfig) -> list[ServedModel]:
    return [served_model(config, m) for m in config.models]
