"""The LiteLLM proxy: one OpenAI-compatible entry point over the stack's exposed models and, only
when listed, external providers.

Pure builders of:
- the router config (`config.yaml` in a ConfigMap, passed to the proxy with `--config`): one
  `model_list` entry per exposed model, pointing at its in-cluster Service with the name the
  engine serves (`stacks/resolve`), plus one entry per model of each listed external
  provider; fallbacks exactly as configured (stacks/rules/serving.py has already refused any
  fallback to a model outside that list);
- the Deployment: master key, provider keys and database URL come from existing Secrets through
  `secretKeyRef` and are referenced from the config as `os.environ/...`; no key is ever literal;
- a NetworkPolicy that limits egress to DNS, the model namespaces on their serving ports, Redis
  and the database when asked, and HTTPS to the internet only when an external provider is listed
  (Kubernetes NetworkPolicy cannot match host names: the allowed hosts are recorded on the policy
  and need an egress proxy or an FQDN-aware CNI to be enforced per host).

A provider gateway is not an inference engine and not authentication: the master key protects the
proxy, and the gateway in front of it authenticates clients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from stacks import bedrock
from stacks.awaits import await_service
from stacks.config.addons import ExternalProvider, LiteLLM
from stacks.config.teams import PLATFORM_CLIENTS
from stacks.naming import labels as k8s_labels
from stacks.naming import provider_env, scanner_waivers
from stacks.resolved import (
    KEDA_NAMESPACE,
    LITELLM_NAMESPACE,
    TEAM_LABEL,
    WAKE_HEADER,
    Endpoint,
    ImageTable,
    KeySecret,
    ResolvedModel,
)
from stacks.versions import Image

from .. import peers, secretfiles
from ..autoscaling import wake
from ..gateway import picker
from ..peers import Pods
from ..secretfiles import SecretFile

ROOT_REASON = (
    "the ghcr.io/berriai/litellm image runs as root (its non-root build is a separate image, not verified "
    "here); no capabilities, no privilege escalation"
)
NAME = "litellm"
PORT = 4000
CONFIG_PATH = "/etc/litellm/config.yaml"
# Keys inside the referenced Secrets.
MASTER_KEY_KEY = "master-key"
API_KEY_KEY = "api-key"
DATABASE_URL_KEY = "database-url"
SECRETS_DIR = "/var/run/secrets/litellm"
PRIVATE_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]


# What the front door routes to the proxy under `/litellm`: the OpenAI paths only. LiteLLM's admin
# API (/key/*, /user/*, /team/*, /model/*, /ui, /metrics, ...) is never routed.
ROUTE_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models")
METRICS_PATH = "/metrics"


def proxy_served(callers: tuple[str, ...], key_secrets: tuple[KeySecret, ...]) -> Endpoint:
    """The proxy as the front door sees it: one more authenticated route (`https://<hostname>/litellm/v1`,
    admitting the platform's clients and the teams with `litellm` access: stacks/resolve/access.py) and a
    metrics endpoint on the serving port."""
    return Endpoint(
        name=NAME,
        served_model_name=NAME,
        engine="litellm",
        namespace=LITELLM_NAMESPACE,
        service=NAME,
        port=PORT,
        metrics_path=METRICS_PATH,
        metrics_port=PORT,
        route_paths=ROUTE_PATHS,
        management_paths=(),
        expose=True,
        callers=callers,
        key_secrets=key_secrets,
    )


def internal_models(models: Sequence[Endpoint]) -> list[Endpoint]:
    return [s for s in models if s.expose]


def picked(s: Endpoint) -> bool:
    """LiteLLM calls the model through its endpoint picker's proxy (RoutePicking.litellm_proxy)."""
    return s.routing is not None and s.routing.litellm_proxy


def model_params(s: Endpoint) -> dict[str, Any]:
    """One of the stack's models as LiteLLM calls it. A model that scales to zero is called through the
    KEDA HTTP add-on's interceptor, with the platform header that names it (LiteLLM passes litellm_params
    to completion(), whose extra_headers go on the upstream request); a picked model through the Envoy
    beside its endpoint picker, which asks the picker for the pod as the model's route does (without it
    kube-proxy would spread LiteLLM's requests round robin, blind to prefix caches and queues); the
    others at their Service."""
    base = picker.proxy_url(s) if picked(s) else f"http://{s.service}.{s.namespace}.svc.cluster.local:{s.port}"
    params: dict[str, Any] = {
        # hosted_vllm: LiteLLM's provider for self-hosted OpenAI-compatible servers; it needs
        # no placeholder API key (a dummy key is not authentication anyway).
        "model": f"hosted_vllm/{s.served_model_name}",
        "api_base": f"{base}/v1",
    }
    if s.wake is not None:
        params["api_base"] = f"{wake.PROXY_URL}/v1"
        params["extra_headers"] = {WAKE_HEADER: s.wake.header}
        # The first request after idle waits through the cold start.
        params["timeout"] = wake.request_seconds(s)
    return params


def adapter_entries(s: Endpoint) -> list[dict[str, Any]]:
    """The LoRA adapters a model's engine loads itself (`models[].lora`), each a model of its own name at
    the model's own server: the engine serves an adapter under its name (a request's `model`)."""
    if not isinstance(s, ResolvedModel):
        return []
    return [
        {"model_name": name, "litellm_params": {**model_params(s), "model": f"hosted_vllm/{name}"}}
        for name in s.proxied_adapter_names
    ]


def provider_params(provider: ExternalProvider, model: str) -> dict[str, Any]:
    """One external model's `litellm_params`: `<provider>/<model>` and the key's variable. For Bedrock,
    `aws_region_name` (LiteLLM's Bedrock parameter) and the key only when a Secret holds one (a Bedrock
    API key): without one, LiteLLM's boto3 default credential chain finds the credentials EKS Pod Identity
    puts in the pod (the proxy's IAM role, components/serving/litellm_iam.py)."""
    params: dict[str, Any] = {"model": f"{provider.name}/{model}"}
    if provider.name == bedrock.PROVIDER:
        params["aws_region_name"] = provider.region
    if provider.api_key_secret is not None:
        params["api_key"] = f"os.environ/{provider_env(provider.name)}"
    return params


def uses_bedrock(addon: LiteLLM) -> bool:
    """The proxy calls Bedrock with its own IAM role: some Bedrock provider has no API key."""
    return any(p.name == bedrock.PROVIDER and p.api_key_secret is None for p in addon.external_providers)


def router_config(addon: LiteLLM, models: Sequence[Endpoint], monitoring: bool) -> dict[str, Any]:
    model_list: list[dict[str, Any]] = [
        {"model_name": s.name, "litellm_params": model_params(s)} for s in internal_models(models)
    ]
    model_list += [entry for s in internal_models(models) for entry in adapter_entries(s)]
    for provider in addon.external_providers:
        for model in provider.models:
            model_list.append({"model_name": model, "litellm_params": provider_params(provider, model)})
    router: dict[str, Any] = {}
    if addon.fallbacks:
        router["fallbacks"] = [{source: list(targets)} for source, targets in addon.fallbacks.items()]
    if addon.redis:
        router.update({"redis_host": "os.environ/REDIS_HOST", "redis_port": "os.environ/REDIS_PORT"})
    general: dict[str, Any] = {"master_key": "os.environ/LITELLM_MASTER_KEY"}
    if addon.database_url_secret:
        general["database_url"] = "os.environ/DATABASE_URL"
    document: dict[str, Any] = {"model_list": model_list, "general_settings": general}
    if router:
        document["router_settings"] = router
    # Dropping unsupported parameters silently changes what a request asked for.
    settings: dict[str, Any] = {"drop_params": False}
    if monitoring:
        # /metrics for the PodMonitor (components/monitoring/collection.py litellm_pod_monitor).
        settings["callbacks"] = ["prometheus"]
    document["litellm_settings"] = settings
    return document


def secret_files(addon: LiteLLM) -> list[SecretFile]:
    """The proxy's credentials, each from its existing Secret, as the variables the router config
    names (`os.environ/...`): mounted as files and exported only into the proxy's process."""
    files = [
        SecretFile("LITELLM_MASTER_KEY", addon.master_key_secret, MASTER_KEY_KEY, "master-key", f"{SECRETS_DIR}/master")
    ]
    files += [
        SecretFile(provider_env(p.name), p.api_key_secret, API_KEY_KEY, f"provider-{i}", f"{SECRETS_DIR}/provider-{i}")
        for i, p in enumerate(addon.external_providers)
        if p.api_key_secret is not None
    ]
    if addon.database_url_secret:
        files.append(
            SecretFile("DATABASE_URL", addon.database_url_secret, DATABASE_URL_KEY, "database-url", f"{SECRETS_DIR}/db")
        )
    return files


def deployment(addon: LiteLLM, config_hash: str, image: Image) -> dict[str, Any]:
    files = secret_files(addon)
    labels = k8s_labels(NAME, NAME)
    selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": NAME,
            "namespace": LITELLM_NAMESPACE,
            "labels": labels,
            "annotations": scanner_waivers(
                {
                    "CKV_K8S_23": ROOT_REASON,
                    "CKV_K8S_40": f"runs as root (uid 0): {ROOT_REASON}",
                    "CKV_K8S_22": "a proxy running as its image's root user writes where the image expects "
                    "(Python caches, temporary files); no capabilities, no privilege escalation",
                }
            )
            | await_service(),
        },
        "spec": {
            "replicas": addon.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                # A config change rolls the pods: the proxy reads its config only at start.
                "metadata": {"labels": labels, "annotations": {"inference-platform.io/config-hash": config_hash}},
                "spec": {
                    "serviceAccountName": NAME,
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [_proxy_container(addon, files, image)],
                    "volumes": [
                        {"name": "config", "configMap": {"name": f"{NAME}-config"}},
                        *secretfiles.volumes(files),
                    ],
                },
            },
        },
    }


def _proxy_container(addon: LiteLLM, files: list[SecretFile], image: Image) -> dict[str, Any]:
    """The `litellm` container: the router config, the mounted keys exported at exec, Redis's address
    when asked."""
    env: list[dict[str, Any]] = []
    if addon.redis:
        env += [
            {"name": "REDIS_HOST", "value": f"{NAME}-redis.{LITELLM_NAMESPACE}.svc.cluster.local"},
            {"name": "REDIS_PORT", "value": "6379"},
        ]
    probe = {"httpGet": {"port": PORT}, "periodSeconds": 10, "timeoutSeconds": 5}
    return {
        "name": "litellm",
        "image": image.ref,
        # The image's entrypoint execs `litellm "$@"`; this one first exports the
        # mounted keys ("litellm" fills $0, the flags are "$@").
        "command": ["/bin/sh", "-c", secretfiles.exec_script(files, "litellm"), "litellm"],
        "args": ["--config", CONFIG_PATH, "--port", str(PORT)],
        "ports": [{"name": "http", "containerPort": PORT}],
        "env": env,
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/litellm", "readOnly": True},
            *secretfiles.mounts(files),
        ],
        "readinessProbe": {**probe, "httpGet": {"path": "/health/readiness", "port": PORT}},
        "livenessProbe": {
            **probe,
            "httpGet": {"path": "/health/liveliness", "port": PORT},
            "initialDelaySeconds": 30,
        },
        "resources": {
            "requests": {"cpu": "1", "memory": "2Gi"},
            "limits": {"memory": "4Gi"},
        },
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }


def network_policy(
    addon: LiteLLM,
    models: Sequence[Endpoint],
    *,
    proxies: Pods | None,
    scraper: Pods | None,
    key_job: Pods | None = None,
) -> dict[str, Any]:
    """The proxy's pods: ingress on its port only from the Envoy proxies its route goes through (whose
    SecurityPolicy authenticates first), for `/metrics` on that same port the scraping Prometheus's pods
    (which send the master key) and, when the platform keeps teams' virtual keys, its key Job's pod
    (which calls the key API with the master key); no other pod calls it. Egress to DNS, the models it routes to,
    Redis and the database when asked, and HTTPS to the internet only with an external provider."""
    models = internal_models(models)
    egress: list[dict[str, Any]] = [dns_egress(), *_model_egress(models), *_backend_egress(addon)]
    hosts = sorted({h for p in addon.external_providers for h in p.egress_hosts})
    if addon.external_providers:
        egress.append(
            {
                "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": PRIVATE_RANGES}}],
                "ports": [{"protocol": "TCP", "port": 443}],
            }
        )
    if uses_bedrock(addon):
        # The EKS Pod Identity agent (link-local, inside the ranges refused above) hands the SDK the
        # proxy role's credentials.
        egress.append(peers.POD_IDENTITY_AGENT)
    metadata: dict[str, Any] = {
        "name": f"{NAME}-egress",
        "namespace": LITELLM_NAMESPACE,
        "labels": k8s_labels(NAME, NAME),
    }
    if hosts:
        metadata["annotations"] = {"inference-platform.io/allowed-egress-hosts": ",".join(hosts)}
    callers = [c for c in (proxies, scraper, key_job) if c is not None]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata,
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [peers.rule(callers, (PORT,), LITELLM_NAMESPACE)] if callers else [],
            "egress": egress,
        },
    }


def dns_egress() -> dict[str, Any]:
    """Egress to the cluster DNS (kube-dns in kube-system)."""
    return {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }


def _model_egress(models: Sequence[Endpoint]) -> list[dict[str, Any]]:
    """Egress to the exposed models: their namespaces on their serving ports, the pickers' pods of the
    picked ones on the proxy port, and the KEDA HTTP add-on's interceptor when one of them scales to zero."""
    egress: list[dict[str, Any]] = []
    # A picked model's own pods are its picker's to call, not LiteLLM's.
    direct = [s for s in models if not picked(s)]
    namespaces = sorted({s.namespace for s in direct})
    ports = sorted({s.port for s in direct})
    if namespaces:
        egress.append(
            {
                "to": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}
                            ]
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": p} for p in ports],
            }
        )
    egress += [
        peers.to([Pods(s.namespace, picker.pod_labels(s))], (picker.PROXY_PORT,), LITELLM_NAMESPACE)
        for s in models
        if picked(s)
    ]
    if any(s.wake is not None for s in models):
        # Models that scale to zero answer through the KEDA HTTP add-on's interceptor.
        egress.append(
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": KEDA_NAMESPACE}},
                        "podSelector": {"matchLabels": dict(wake.INTERCEPTOR_POD_LABELS)},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": wake.PROXY_PORT}],
            }
        )
    return egress


def _backend_egress(addon: LiteLLM) -> list[dict[str, Any]]:
    """Egress to the proxy's own Redis and to its database, each only when the stack asks for it."""
    egress: list[dict[str, Any]] = []
    if addon.redis:
        egress.append(
            {
                "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": f"{NAME}-redis"}}}],
                "ports": [{"protocol": "TCP", "port": 6379}],
            }
        )
    if addon.database_url_secret:
        # The database (e.g. RDS) lives in the VPC: private addresses only, PostgreSQL port.
        egress.append(
            {
                "to": [{"ipBlock": {"cidr": cidr}} for cidr in PRIVATE_RANGES[:3]],
                "ports": [{"protocol": "TCP", "port": 5432}],
            }
        )
    return egress


def redis_objects(image: Image) -> list[dict[str, Any]]:
    name = f"{NAME}-redis"
    labels = k8s_labels(name, NAME)
    selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": NAME}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": LITELLM_NAMESPACE,
                "labels": labels,
                "annotations": await_service(),
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "containers": [
                            {
                                "name": "redis",
                                "image": image.ref,
                                "args": ["--save", "", "--appendonly", "no"],
                                "ports": [{"name": "redis", "containerPort": 6379}],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "256Mi"},
                                    "limits": {"memory": "512Mi"},
                                },
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": LITELLM_NAMESPACE, "labels": labels},
            "spec": {"selector": selector, "ports": [{"name": "redis", "port": 6379, "targetPort": 6379}]},
        },
    ]


def manifests(
    addon: LiteLLM,
    models: Sequence[Endpoint],
    monitoring: bool,
    images: ImageTable,
    *,
    proxies: Pods | None,
    scraper: Pods | None,
    key_job: Pods | None = None,
) -> list[dict[str, Any]]:
    """The proxy's namespace, config, Deployment, Service and network policy (and Redis), in the
    stack's `litellm` and `redis` images; `proxies` and `scraper` are who may call it
    (`network_policy`)."""
    import hashlib

    rendered = yaml.safe_dump(router_config(addon, models, monitoring), sort_keys=False)
    config_hash = hashlib.sha256(rendered.encode()).hexdigest()[:16]
    labels = k8s_labels(NAME, NAME)
    objects: list[dict[str, Any]] = [
        # The platform's namespace: its route attaches to the front door's listener from here.
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": LITELLM_NAMESPACE, "labels": {**labels, TEAM_LABEL: PLATFORM_CLIENTS}},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NAME, "namespace": LITELLM_NAMESPACE, "labels": labels},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{NAME}-config", "namespace": LITELLM_NAMESPACE, "labels": labels},
            "data": {"config.yaml": rendered},
        },
        deployment(addon, config_hash, images["litellm"]),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": LITELLM_NAMESPACE, "labels": labels},
            "spec": {
                "selector": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": NAME},
                "ports": [{"name": "http", "port": PORT, "targetPort": PORT}],
            },
        },
        network_policy(addon, models, proxies=proxies, scraper=scraper, key_job=key_job),
    ]
    if addon.redis:
        objects += redis_objects(images["redis"])
    return objects
