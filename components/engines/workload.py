"""The one workload shape every engine module fills in.

A model becomes a Deployment, a
ClusterIP Service, a PodDisruptionBudget and, with `autoscaling.owner: hpa`, an autoscaling/v2 HPA.
Every pod gets: accelerator requests equal to limits and cpu/memory/ephemeral-storage from
stacks/sizing.py (the same figures the fit rule checks, the node-local cache included), its pool's
tolerations, node selector and scheduler, a zone spread, memory-backed /dev/shm when a replica spans
several accelerators, a startup probe sized for model loading (the engine's allowance or the
cache's budget for the model's size, whichever is larger), readiness and liveness on the engine's
real health paths (each engine module's FACTS), a restricted security context with writable caches on
volumes, the model cache from the storage concern (volume, preparation init containers and the
`model-reader` service account that reads the bucket), the model's selector label
(`Endpoint.selector`) on every pod and object, AIBrix's pod labels when AIBrix is on, and
secrets mounted as files. Engine modules supply only what differs: command, args, env, extra
volumes, run-as user and startup allowance.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from stacks import offload
from stacks.awaits import await_for
from stacks.config import ModelSection
from stacks.engine_facts import SHUTDOWN_SECONDS, Dialect, EngineFacts, ModelFacts
from stacks.fit import Requests, container_resources
from stacks.groups import ReplicaGroup
from stacks.metrics import custom_metric
from stacks.naming import scanner_waivers
from stacks.resolved import PICKER_ENGINE_LABEL, REVISION_LABEL, STARTUP_PERIOD_SECONDS, PodShape, TraceExport
from stacks.versions import Image

from ..serving import aibrix
from ..storage import kvtier
from ..storage.prepare import AS_ROOT, TOKEN_DIR, TOKEN_KEY, TOKEN_VOLUME, token_volume
from .spec import WorkloadSpec

HOME = "/home/engine"
# One definition of the token file, shared with the preparation init containers.
HF_TOKEN_DIR = TOKEN_DIR
HF_TOKEN_KEY = TOKEN_KEY  # the key the huggingFaceToken Secret must carry
SHM_PATH = "/dev/shm"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


# The non-root user the engine images are built for (vLLM, SGLang ...), unless an engine says otherwise.
ENGINE_UID = 1000


@dataclass(frozen=True, kw_only=True)
class EngineContainer:
    """What an engine module decides; everything else is common."""

    # None keeps the image's ENTRYPOINT (args then run through it).
    command: list[str] | None
    args: list[str]
    env: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    # None keeps the image's user (images that need root, e.g. the Neuron DLC); then `root_reason`
    # says why, and the workload carries it as a scanner waiver (scanner_annotations).
    run_as_user: int | None = ENGINE_UID
    root_reason: str | None = None
    extra_ports: list[dict[str, Any]] = field(default_factory=list)
    # The Hugging Face token file, when the engine downloads from the Hub itself.
    uses_hf_token: bool = True
    # False when the engine places models[].engineArgs itself (NIM puts them after nim-serve).
    append_engine_args: bool = True
    image_pull_secrets: list[str] = field(default_factory=list)
    # Containers beside the engine in its pod (AIBrix's runtime sidecar for a model with adapters).
    sidecars: list[dict[str, Any]] = field(default_factory=list)


def name_of(spec: WorkloadSpec) -> str:
    """The workload's name: the one the resolved model's scale target names (stacks/resolve/models.py)."""
    return spec.served.workload[2]


def pod_labels(spec: WorkloadSpec) -> dict[str, str]:
    """The pods' labels: the model selector the network policies and monitors use, the revision the
    pods serve (kept on their metrics, so a canary is told from the stable revision) and, with AIBrix
    on, the labels its gateway plugin and adapter controller find model pods by."""
    labels = {**spec.labels, **selector(spec), **revision_label(spec.model)}
    routing = spec.served.routing
    if routing is not None and routing.engine_type is not None:
        # Only on picked models: a new label on every vLLM pod would roll every one of them.
        labels[PICKER_ENGINE_LABEL] = routing.engine_type
    if spec.served.aibrix:
        labels.update(aibrix.pod_labels(spec.served, adapters=spec.served.adapter_loader == "aibrix"))
    return labels


def revision_label(model: ModelSection) -> dict[str, str]:
    """`inference-platform.io/revision: <revision>` when the revision is a valid label value (a 40-hex
    commit always is; a long or oddly ending branch name is not, and goes unlabelled). Never part of
    a selector: a Deployment's selector is immutable, and a new revision must not replace the workload."""
    rev = model.revision
    if rev and len(rev) <= 63 and rev[-1].isalnum():
        return {REVISION_LABEL: rev}
    return {}


def selector(spec: WorkloadSpec) -> dict[str, str]:
    return {"app.kubernetes.io/name": name_of(spec), **spec.served.selector}


def metadata(spec: WorkloadSpec, name: str | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name or name_of(spec),
        "namespace": spec.served.namespace,
        "labels": {**spec.labels, **spec.served.selector},
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def unique_volumes(volumes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pod's volumes with each name once (the API server refuses duplicates). The cache's
    preparation steps and the engine may both ask for the same volume; two different volumes under
    one name are a bug, not something to pick between."""
    seen: dict[str, dict[str, Any]] = {}
    for volume in volumes:
        first = seen.setdefault(volume["name"], volume)
        if first != volume:
            raise ValueError(f"two different pod volumes named {volume['name']!r}: {first} and {volume}")
    return list(seen.values())


def hf_token(spec: WorkloadSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts, env) for the Hugging Face token Secret, as a file and HF_TOKEN_PATH."""
    secret = spec.model.secrets.hugging_face_token
    if secret is None:
        return [], [], []
    volumes = [token_volume(secret)]
    mounts = [{"name": TOKEN_VOLUME, "mountPath": HF_TOKEN_DIR, "readOnly": True}]
    env = [{"name": "HF_TOKEN_PATH", "value": f"{HF_TOKEN_DIR}/{HF_TOKEN_KEY}"}]
    return volumes, mounts, env


def startup_probe(path: str, port: int | str, seconds: int) -> dict[str, Any]:
    """An HTTP startup probe that tolerates `seconds` (whole periods) of loading; liveness starts only
    after it."""
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": STARTUP_PERIOD_SECONDS,
        "timeoutSeconds": 5,
        "failureThreshold": seconds // STARTUP_PERIOD_SECONDS,
    }


def probes(spec: WorkloadSpec) -> dict[str, Any]:
    """Startup for as long as the model may take to load (`ResolvedModel.startup_seconds`), then
    readiness and liveness on the engine's own health paths."""
    f = spec.facts
    period = STARTUP_PERIOD_SECONDS
    return {
        "startupProbe": startup_probe(f.ready_path, "http", spec.served.startup_seconds),
        "readinessProbe": {
            "httpGet": {"path": f.ready_path, "port": "http"},
            "periodSeconds": period,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": f.health_path, "port": "http"},
            "periodSeconds": 15,
            "timeoutSeconds": 10,
            "failureThreshold": 4,
        },
    }


def security_context(run_as_user: int | None) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if run_as_user is not None:
        ctx.update({"runAsNonRoot": True, "runAsUser": run_as_user, "runAsGroup": run_as_user})
    return ctx


def topology_spread(spec: WorkloadSpec) -> list[dict[str, Any]]:
    # ScheduleAnyway: accelerators are scarce; a skewed replica beats a Pending one.
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector(spec)},
        }
        for key in (ZONE, HOSTNAME)
    ]


def shm_volume(spec: WorkloadSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """NCCL and the engines' worker processes share tensors through /dev/shm; the container
    runtime's 64Mi default breaks a tensor-parallel group. An engine whose KV-cache CPU tier is a
    shared-memory region (vLLM's) gets room for the whole tier on top; the tier is already in the
    pod's memory request and limit, which a memory-backed volume is charged to."""
    tier = offload.tier_mib(spec.model) if spec.facts.kv_offload and spec.facts.kv_offload.in_shm else 0
    if spec.model.accelerators_per_replica <= 1 and not tier:
        return [], []
    engine = spec.served.requests.memory_mib - tier
    base = min(16 * 1024, engine // 4) if spec.model.accelerators_per_replica > 1 else 0
    size = f"{base + tier}Mi"
    return (
        [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}],
        [{"name": "dshm", "mountPath": SHM_PATH}],
    )


def merge_env(env: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per name, the later winning in the earlier's place: an engine may override a cache
    default (server-side apply refuses an env list with a duplicate name)."""
    merged: dict[str, dict[str, Any]] = {}
    for entry in env:
        merged[entry["name"]] = entry
    return list(merged.values())


def helper_container(
    spec: WorkloadSpec,
    engine_run_as: int | None,
    *,
    name: str,
    command: list[str],
    env: list[dict[str, Any]],
    cpu: str = "1",
    memory: str = "2Gi",
) -> dict[str, Any]:
    """A preparation container beside the engine: same image, cache and home, small resources."""
    return {
        "name": name,
        "image": spec.image.ref,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "env": merge_env([{"name": "HOME", "value": HOME}, *spec.cache.env, *env]),
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
        "volumeMounts": [{"name": "home", "mountPath": HOME}, *spec.cache.volume_mounts],
        "securityContext": {**security_context(engine_run_as), **(AS_ROOT if spec.cache.writes_as_root else {})},
    }


def engine_container(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, Any]:
    """The serving container: the engine's command on the model's image, with the resolved resources,
    the cache's and the token's mounts and env, a restricted security context and the probes."""
    f = spec.facts
    _, tok_mounts, tok_env = hf_token(spec) if engine.uses_hf_token else ([], [], [])
    _, shm_mounts = shm_volume(spec)
    return {
        "name": "engine",
        "image": spec.image.ref,
        "imagePullPolicy": "IfNotPresent",
        **({"command": engine.command} if engine.command else {}),
        "args": [*engine.args, *(spec.model.engine_args if engine.append_engine_args else [])],
        "ports": [{"name": "http", "containerPort": f.port, "protocol": "TCP"}, *engine.extra_ports],
        "env": merge_env([{"name": "HOME", "value": HOME}, *spec.cache.env, *tok_env, *engine.env]),
        "resources": copy.deepcopy(dict(spec.served.serving_resources)),
        "volumeMounts": [
            {"name": "home", "mountPath": HOME},
            *spec.cache.volume_mounts,
            *shm_mounts,
            *tok_mounts,
            *engine.volume_mounts,
        ],
        "securityContext": security_context(engine.run_as_user),
        **probes(spec),
    }


def pod_security(run_as_user: int | None) -> dict[str, Any]:
    security: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if run_as_user is not None:
        # Pod-wide, so init containers from images whose own user is root (the preparation steps)
        # run as this uid too instead of failing the kubelet's runAsNonRoot check.
        uid = run_as_user
        security.update({"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": uid, "fsGroup": uid})
    return security


def scrape_annotations(facts: EngineFacts) -> dict[str, str]:
    """Where the scrapers read the engine's metrics (none when it exports none)."""
    if not facts.metrics_path:
        return {}
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/path": facts.metrics_path,
        "prometheus.io/port": str(facts.metrics_port or facts.port),
    }


OWN_DIR = 'mkdir -p "$COMPILE_DIR" && chgrp "$GROUP" "$COMPILE_DIR" && chmod 2770 "$COMPILE_DIR"'
# The revision's directory and the model's above it (`${COMPILE_DIR%/*}`).
OWN_KV_DIR = (
    'mkdir -p "$COMPILE_DIR" && chgrp "$GROUP" "$COMPILE_DIR" "${COMPILE_DIR%/*}" '
    '&& chmod 2770 "$COMPILE_DIR" "${COMPILE_DIR%/*}"'
)


def compile_dir_owner(spec: WorkloadSpec, engine: EngineContainer) -> list[dict[str, Any]]:
    """On FSx (the Lustre root is root's, and fsGroup does not reach it), the model's compile-cache
    directory made by root like the cache's other writers, with every capability dropped: root owns what it
    makes, so it may give the directory the pod's fsGroup (a supplementary group of every container) and
    set-group-ID rwx for that group, and the engine's user writes there. Elsewhere the engine makes it: EFS
    access points write as the pod's identity, and an engine that runs as root needs nobody's help.
    The same for the KV-cache file tier's directory (`kvCacheOffload.shared`), which the engine and the
    pruning CronJob (components/storage/kvtier.py, in the same group) write, and for the model's directory
    above it, from which the pruner removes the revisions no workload serves."""
    if not spec.cache.writes_as_root or engine.run_as_user is None:
        return []
    group = engine.run_as_user  # the pod's fsGroup (pod_security)
    dirs = (("compile-cache-dir", spec.cache.compile_dir, OWN_DIR), ("kv-cache-dir", spec.cache.kv_dir, OWN_KV_DIR))
    return [
        {
            "name": name,
            "image": spec.image.ref,
            "imagePullPolicy": "IfNotPresent",
            "command": [
                "/bin/sh",
                "-c",
                script,
            ],
            "env": [{"name": "COMPILE_DIR", "value": target}, {"name": "GROUP", "value": str(group)}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}},
            "volumeMounts": list(spec.cache.volume_mounts),
            "securityContext": {**security_context(None), **AS_ROOT},
        }
        for name, target, script in dirs
        if target is not None
    ]


def pod_template(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, Any]:
    tok_vols, _, _ = hf_token(spec) if engine.uses_hf_token else ([], [], [])
    shm_vols, _ = shm_volume(spec)
    pod_spec: dict[str, Any] = {
        "securityContext": pod_security(engine.run_as_user),
        "enableServiceLinks": False,
        # Servers and preparation steps never call the Kubernetes API; Pod Identity mounts its own
        # token (eks-pod-identity-token), independent of this.
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": SHUTDOWN_SECONDS,
        "topologySpreadConstraints": topology_spread(spec),
        "initContainers": [
            *spec.cache.init_containers,
            *compile_dir_owner(spec, engine),
            *engine.init_containers,
        ],
        "containers": [engine_container(spec, engine), *engine.sidecars],
        "volumes": unique_volumes(
            [{"name": "home", "emptyDir": {}}, *spec.cache.volumes, *shm_vols, *tok_vols, *engine.volumes]
        ),
    }
    if engine.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": n} for n in engine.image_pull_secrets]
    if spec.pod_service_account:
        pod_spec["serviceAccountName"] = spec.pod_service_account
    if not pod_spec["initContainers"]:
        del pod_spec["initContainers"]
    meta: dict[str, Any] = {"labels": pod_labels(spec)}
    if annotations := scrape_annotations(spec.facts):
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec.placement.place(pod_spec)}


# Why an engine's root filesystem stays writable (Checkov CKV_K8S_22), true of every engine container:
# its own user, no capabilities, no privilege escalation (pod_template), so a writable root holds
# nothing but its own files.
WRITABLE_ROOT = (
    "an inference server and the libraries it loads write at run time outside its volumes (temporary "
    "files, compiled kernels and caches placed where each library chooses), and a read-only root fails "
    "it at the first such write, not at start; the container has no capabilities and no privilege escalation"
)


def scanner_reasons(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, str]:
    """This workload's Checkov waivers, each with this workload's own reason: running as root
    (CKV_K8S_23, CKV_K8S_40), as a uid below 10000 (CKV_K8S_40) and with a writable root (CKV_K8S_22)."""
    root = []
    if engine.run_as_user is None:
        if not engine.root_reason:
            raise ValueError(f"engine {spec.model.engine} runs as root without saying why (root_reason)")
        root.append(engine.root_reason)
    if spec.cache.writes_as_root and (spec.cache.init_containers or engine.init_containers):
        root.append("the FSx cache's writers run as root with no capabilities: the Lustre root is root's")
    reasons = {"CKV_K8S_22": WRITABLE_ROOT}
    for owner in compile_dir_owner(spec, engine):
        made = "compile-cache" if owner["name"] == "compile-cache-dir" else "KV-cache"
        root.append(f"the FSx {made} directory is made by root with no capabilities, for the pod's group")
    if root:
        reasons["CKV_K8S_23"] = "; ".join(root)
        reasons["CKV_K8S_40"] = "runs as root (uid 0): " + "; ".join(root)
    else:
        reasons["CKV_K8S_40"] = (
            f"runs as uid {engine.run_as_user}, the non-root user its image is built for; a uid shared with a "
            f"host user matters only through host namespaces or hostPath volumes, and the pod has neither"
        )
    return reasons


def scanner_annotations(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, str]:
    """The workload's Checkov waiver annotations (scanner_reasons)."""
    return scanner_waivers(scanner_reasons(spec, engine))


def workload(spec: WorkloadSpec, engine: EngineContainer) -> dict[str, Any]:
    template = pod_template(spec, engine)
    waiver = scanner_annotations(spec, engine)
    body: dict[str, Any] = {
        "selector": {"matchLabels": selector(spec)},
        "template": template,
        "revisionHistoryLimit": 3,
    }
    replicas = spec.served.pod("server").replicas
    if replicas is not None:  # (None: the autoscaler's; stacks/resolved.py PodShape.replicas)
        body["replicas"] = replicas
    body["strategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling_update(spec.model)}
    # A new pod may take its whole allowance (a node, the image, the cache fill, the startup probe)
    # before it is ready: the controller reports no stalled rollout before that, and `pulumi up` waits
    # for every step of the rollout (ResolvedModel.await_seconds) instead of the provider's 10 minutes.
    body["progressDeadlineSeconds"] = spec.served.allowance.seconds
    annotations = {**waiver, **await_for(spec.served.await_seconds)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(spec, annotations=annotations),
        "spec": body,
    }


def rolling_update(model: ModelSection) -> dict[str, int]:
    """maxSurge and maxUnavailable of a model's rollout (a Deployment's pods, a LeaderWorkerSet's
    groups): by default no surge, which would need spare accelerator nodes (a whole group's for a
    LeaderWorkerSet, and reserved capacity rarely has them), so one replica at a time is stopped and
    replaced; with `rollout.maxSurge` the new replicas start first and none is stopped early
    (stacks/rules/groups.py holds the pool's limits to the surge)."""
    surge = model.rollout.max_surge
    return {"maxSurge": surge, "maxUnavailable": 0 if surge else 1}


def service(spec: WorkloadSpec) -> dict[str, Any]:
    f = spec.facts
    ports = [{"name": "http", "port": spec.served.port, "targetPort": "http", "protocol": "TCP"}]
    if f.metrics_port and f.metrics_port != f.port:
        ports.append({"name": "metrics", "port": f.metrics_port, "targetPort": f.metrics_port, "protocol": "TCP"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(spec, name=spec.served.service),
        "spec": {"type": "ClusterIP", "selector": selector(spec), "ports": ports},
    }


def disruption_budget(spec: WorkloadSpec) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(spec),
        # Karpenter consolidation and node upgrades take one replica at a time.
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(spec)}},
    }


def hpa_scaling(model: ModelSection, facts: EngineFacts) -> dict[str, Any]:
    """The scaling part of an autoscaling/v2 HPA spec (the HPA below, and the NIMService's
    spec.scale.hpa): the engine's own gauge per pod, served by prometheus-adapter under its
    custom-metrics name (components/monitoring prometheus_adapter_values)."""
    a = model.autoscaling
    name = facts.scaling_metric(a.metric)
    if name is None:  # refused by stacks/rules/engines.py before anything is built
        raise ValueError(f"engine {model.engine} exports no metric to scale on")
    return {
        "minReplicas": max(1, a.min_replicas),
        "maxReplicas": a.max_replicas,
        "metrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": custom_metric(name)},
                    "target": {"type": "AverageValue", "averageValue": a.target_value},
                },
            }
        ],
        # Model servers take minutes to start: scale up promptly, down slowly.
        "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0},
            "scaleDown": {"stabilizationWindowSeconds": 600},
        },
    }


def autoscaler(spec: WorkloadSpec) -> dict[str, Any]:
    api_version, kind, name = spec.served.workload
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(spec),
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
            **hpa_scaling(spec.model, spec.facts),
        },
    }


def deployment(model: ModelSection) -> tuple[str, str, str]:
    """The workload every engine the platform runs itself becomes: a Deployment named after the model."""
    return "apps/v1", "Deployment", model.name


def server_pods(model: ModelSection, requests: Requests, group: ReplicaGroup) -> tuple[PodShape, ...]:
    """The pods of an engine the platform runs as its own workload: one server per replica, or a group's
    leader and workers, every one with the sized requests (accelerator and memory limits equal to them);
    `replicas` of them unless an autoscaler owns the count (then the workload leaves it out, so `pulumi
    up` never resets what the scaler chose)."""
    resources = container_resources(requests)
    replicas = model.replicas if model.autoscaling.owner == "none" else None

    def shape(role: str, count: int) -> PodShape:
        return PodShape(
            role=role,
            count=count,
            replicas=replicas,
            per_replica=True,
            requests=requests,
            resources=resources,
            pool=True,
        )

    if not group.multi_node:
        return (shape("server", 1),)
    return (shape("leader", 1), shape("worker", group.nodes - 1))


def platform_model(
    model: ModelSection,
    facts: EngineFacts,
    *,
    image: Image,
    dialect: Dialect,
    hub_repo: str | None,
    workload: tuple[str, str, str] | None = None,
    prepared: bool = True,
) -> ModelFacts:
    """What an engine the platform runs as its own workload makes of a model: a Deployment (or the given
    workload) and a Service both named after the model, on the engine's port, which KEDA scales
    directly; the weights come from `hub_repo` (None: not the Hugging Face Hub), prepared by the
    platform unless `prepared` says they come some other way."""
    work = workload or deployment(model)
    return ModelFacts(
        image=image,
        service=model.name,
        port=facts.port,
        workload=work,
        keda_targets=(work,),
        dialect=dialect,
        hub_repo=hub_repo,
        prepared=prepared,
        platform_images=(),
        names=(),
        addons=(),
        keda_floor=None,
    )


def manifests(spec: WorkloadSpec, engine: EngineContainer) -> list[dict[str, Any]]:
    """Workload, Service, PodDisruptionBudget, (autoscaling.owner: hpa) HPA and (kvCacheOffload.shared)
    the KV-cache file tier's pruning CronJob for one model."""
    work = workload(spec, engine)
    objs = [work, service(spec), disruption_budget(spec)]
    if spec.model.autoscaling.owner == "hpa":
        objs.append(autoscaler(spec))
    objs += kv_pruner(spec, engine)
    return objs


def kv_pruner(spec: WorkloadSpec, engine: EngineContainer) -> list[dict[str, Any]]:
    """The CronJob that bounds the model's KV-cache file tier, in the engine's group (its FSx directory's)."""
    if spec.cache.kv_dir is None:
        return []
    return [
        kvtier.pruner_cron_job(
            workload=name_of(spec),
            namespace=spec.served.namespace,
            kv_dir=spec.cache.kv_dir,
            kv_gib=spec.served.cache.kv_gib,
            kv_live=spec.served.cache.kv_live,
            group=engine.run_as_user if engine.run_as_user is not None else ENGINE_UID,
            images=spec.images,
        )
    ]


# --- OpenTelemetry export (addons.tracing): the flags and variables that send a model's spans to the
# platform's collector, sampled parent-based so a request the gateway traced is traced at every hop.

# The OpenTelemetry SDK's standard sampler (opentelemetry-specification sdk-environment-variables):
# follow the caller's `traceparent` decision, else sample the ratio.
OTEL_SAMPLER = "parentbased_traceidratio"


def otel_sdk_env(tracing: TraceExport, service: str) -> list[dict[str, str]]:
    """The OpenTelemetry SDK variables of a Python engine: its service name in the backend, the sampler,
    and plaintext gRPC to the in-cluster collector (vLLM's exporter defaults to TLS otherwise)."""
    return [
        {"name": "OTEL_SERVICE_NAME", "value": service},
        {"name": "OTEL_TRACES_SAMPLER", "value": OTEL_SAMPLER},
        {"name": "OTEL_TRACES_SAMPLER_ARG", "value": sampling_arg(tracing.sampling_ratio)},
        {"name": "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "value": "true"},
    ]


def sampling_arg(value: float) -> str:
    """A sampling ratio as the SDKs read it (`0.05`), without float noise."""
    return f"{value:.6g}"


def vllm_trace_args(tracing: TraceExport | None) -> list[str]:
    """vLLM 0.29's `--otlp-traces-endpoint` (vllm/config/observability.py)."""
    return ["--otlp-traces-endpoint", tracing.endpoint] if tracing else []


def tgi_trace_args(tracing: TraceExport | None, service: str) -> list[str]:
    """TGI 3.3.7's launcher flags (launcher/src/main.rs): its router exports OTLP/gRPC itself."""
    return ["--otlp-endpoint", tracing.endpoint, "--otlp-service-name", service] if tracing else []
