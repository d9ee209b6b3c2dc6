"""Checkov waivers for objects the upstream charts render, each with that object's own reason.

`make scan` runs Checkov over every chart-rendered object too (`DIR/<stack>/charts/`, written by
`python -m stacks charts`). A finding is first fixed through the chart's values (in the component that
builds the release); what the chart gives no value for, or what the workload needs, is waived here:
one entry per (chart directory `<chart>-<version>`, kind, name pattern), check id -> why, true of that
object and checked against the chart's template named in it. `annotate` writes them as
`checkov.io/skipN` annotations onto the scan copies only (these files are never applied). A chart bump
changes the key, so its waivers go dead and tests/test_chart_waivers.py fails until they are
re-verified against the new templates. .checkov.yaml keeps the few skips true of every object.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def always(obj: dict[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class Waiver:
    chart: str  # the chart directory, `<chart>-<version>`
    kind: str
    name: str  # fnmatch pattern on metadata.name
    checks: dict[str, str]  # check id -> why
    # Only objects the chart renders in this shape (a value the stack sets adds containers): a waiver must
    # fail without it on every object it applies to (tests/test_chart_waivers.py).
    when: Callable[[dict[str, Any]], bool] = always


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def config_manager(obj: dict[str, Any]) -> bool:
    """The NVIDIA device plugin chart rendered with `config.map` (GPU sharing): its config-manager runs."""
    return any(c.get("command") == ["config-manager"] for c in _containers(obj))


def sys_admin(obj: dict[str, Any]) -> bool:
    """A container of the object adds CAP_SYS_ADMIN (the device plugin chart with a MIG strategy)."""
    return any(
        "SYS_ADMIN" in (((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or [])
        for c in _containers(obj)
    )


# Shared reasons, each true of every object that uses it.
API_TOKEN = "the controller watches and writes Kubernetes objects through the API server with this token"
NO_NETPOL = (
    "no NetworkPolicy selects it: the platform confines the model namespaces, LiteLLM and monitoring, not "
    "the add-on controllers; this one must reach the API server"
)
NO_PROBES = "the chart's template defines no probes and has no value for them"


def monitoring_netpol(name: str, admits: str) -> str:
    """CKV2_K8S_6 for a pod the monitoring namespace's own policies select: Checkov scans the chart's
    directory alone, and the policy is one of the program's objects."""
    return (
        f"the platform's monitoring/{name} NetworkPolicy selects it (components/monitoring/policies.py, "
        f"behind the namespace's default deny: {admits}), rendered with the program's objects, not in this "
        "chart's directory"
    )


WAIVERS: tuple[Waiver, ...] = (
    # ---- AIBrix 0.7.0: its templates take only images and resources for these, no security contexts.
    Waiver("aibrix-0.7.0", "ClusterRole", "aibrix-controller-manager", {
        "CKV_K8S_155": "the controller injects the CA of its own webhooks into their configurations "
        "(templates/controller-manager/rbac.yaml: get/list/update/watch, no create or delete)",
    }),
    Waiver("aibrix-0.7.0", "Deployment", "aibrix-controller-manager", {
        "CKV_K8S_22": "templates/controller-manager/deployment.yaml sets no readOnlyRootFilesystem and "
        "has no value for it",
        "CKV_K8S_31": "templates/controller-manager/deployment.yaml sets only runAsNonRoot at pod level, "
        "no seccomp profile, and has no value for it",
        "CKV_K8S_38": API_TOKEN + " (it reconciles AIBrix's custom resources)",
        "CKV_K8S_40": "the chart sets runAsNonRoot but no runAsUser and has no value for it: the image's "
        "own non-root user",
        "CKV2_K8S_6": NO_NETPOL + " and serve its admission webhooks to it",
    }),
    *(
        Waiver("aibrix-0.7.0", "Deployment", name, {
            **{check: f"{template} has no securityContext at pod or container level and no value for one"
               for check in ("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29",
                             "CKV_K8S_30", "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40")},
            **extra,
        })
        for name, template, extra in (
            ("aibrix-gateway-plugins", "templates/gateway-plugin/deployment.yaml", {
                "CKV_K8S_10": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_12": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_13": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_38": API_TOKEN + " (it reads pods and models to route requests)",
                "CKV2_K8S_6": NO_NETPOL + " and is called by the AIBrix Envoy as its external processor",
            }),
            ("aibrix-metadata-service", "templates/metadata-service/deployment.yaml", {
                "CKV_K8S_10": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_12": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_13": "its busybox init container (waits for Redis) has no resources in the "
                "template and no value for them",
                "CKV_K8S_38": API_TOKEN + " (it manages users and models)",
                "CKV2_K8S_6": NO_NETPOL + " and is called by the gateway plugin",
            }),
            ("aibrix-gpu-optimizer", "templates/gpu-optimizer/deployment.yaml", {
                "CKV_K8S_8": NO_PROBES + " (templates/gpu-optimizer/deployment.yaml)",
                "CKV_K8S_9": NO_PROBES + " (templates/gpu-optimizer/deployment.yaml)",
                "CKV_K8S_38": "the template sets automountServiceAccountToken: true: it lists the "
                "deployments it optimises through the API server",
                "CKV2_K8S_6": NO_NETPOL + " and read the engines' metrics",
            }),
            ("aibrix-redis-master", "templates/metadata-service/redis.yaml", {
                "CKV_K8S_8": NO_PROBES + " (templates/metadata-service/redis.yaml)",
                "CKV_K8S_9": NO_PROBES + " (templates/metadata-service/redis.yaml)",
                "CKV_K8S_38": "templates/metadata-service/redis.yaml names no service account and has no "
                "value to turn the token off: the namespace's default account, bound to no role",
                "CKV2_K8S_6": "no NetworkPolicy selects it: the platform confines the model namespaces, LiteLLM "
                "and monitoring, not AIBrix's own store, which the gateway plugin and metadata service use",
            }),
        )
    ),
    # ---- AWS Load Balancer Controller 3.5.0 (everything else fixed in components/loadbalancer.py)
    Waiver("aws-load-balancer-controller-3.5.0", "Deployment", "aws-load-balancer-controller", {
        "CKV_K8S_38": API_TOKEN + " (Services, Ingresses, TargetGroupBindings and their endpoints)",
        "CKV2_K8S_6": NO_NETPOL + ", serve its webhooks to it, and reach the ELBv2 and EC2 endpoints "
        "(host names, which a NetworkPolicy cannot match)",
    }),
    # ---- NVIDIA device plugin 0.20.0
    Waiver("nvidia-device-plugin-0.20.0", "DaemonSet", "nvidia-device-plugin", {
        "CKV_K8S_22": "the plugin writes its socket under the host's /var/lib/kubelet/device-plugins "
        "and the chart (templates/daemonset-device-plugin.yml) has no value for a read-only root",
        "CKV_K8S_23": "templates/daemonset-device-plugin.yml runs the plugin as root: it registers "
        "with the kubelet through a root-owned host socket directory",
        "CKV_K8S_8": NO_PROBES + " (templates/daemonset-device-plugin.yml); the kubelet sees it "
        "through its device-plugin registration",
        "CKV_K8S_9": NO_PROBES + " (templates/daemonset-device-plugin.yml); it serves no traffic",
        "CKV_K8S_38": "the plugin reads its node's labels through the API server (templates/role.yml: "
        "nodes get/list/watch)",
        "CKV_K8S_40": "runs as root (uid 0) to register with the kubelet through its host socket directory",
        "CKV2_K8S_6": "no NetworkPolicy selects it: a node agent talking to the kubelet's socket and "
        "the API server, serving nothing",
    }),
    # With a sharing config (nodePools[].gpuSharing) the chart adds its config-manager init container and
    # sidecar, which pick the node's config by its nvidia.com/device-plugin.config label.
    Waiver("nvidia-device-plugin-0.20.0", "DaemonSet", "nvidia-device-plugin", {
        **{check: "with `config.map` (GPU sharing) templates/daemonset-device-plugin.yml adds the "
           "config-manager init container and sidecar, which take no resources value in the chart"
           for check in ("CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13")},
        "CKV_K8S_30": "with `config.map` the chart's config-manager init container (templates/"
        "daemonset-device-plugin.yml) has no securityContext value; the plugin and sidecar have theirs",
    }, when=config_manager),
    Waiver("nvidia-device-plugin-0.20.0", "DaemonSet", "nvidia-device-plugin", {
        check: "with a MIG sharing config the chart's securityContext helper (templates/_helpers.tpl "
        "nvidia-device-plugin.requiresCapSysAdmin: migStrategy mixed or single) adds CAP_SYS_ADMIN, which "
        "the plugin needs to enumerate MIG devices"
        for check in ("CKV_K8S_20", "CKV_K8S_25", "CKV_K8S_28", "CKV_K8S_37", "CKV_K8S_39")
    }, when=sys_admin),
    Waiver("nvidia-device-plugin-0.20.0", "DaemonSet", "nvidia-device-plugin-mps-control-daemon", {
        **{check: "templates/daemonset-mps-control-daemon.yml runs its init and main containers "
           "privileged with hostPID to mount the MPS shm on the host; it schedules only on nodes "
           "labelled nvidia.com/mps.capable: true, which nothing in the platform sets (no GFD, no sharing "
           "config), so it runs nowhere"
           for check in ("CKV_K8S_16", "CKV_K8S_17", "CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23",
                         "CKV_K8S_28", "CKV_K8S_37", "CKV_K8S_40")},
        "CKV_K8S_8": NO_PROBES + " (templates/daemonset-mps-control-daemon.yml); it runs on no node here",
        "CKV_K8S_9": NO_PROBES + " (templates/daemonset-mps-control-daemon.yml); it runs on no node here",
        "CKV_K8S_38": "it reads its node's labels through the API server (templates/role.yml: nodes "
        "get/list/watch); it runs on no node here",
        "CKV2_K8S_6": "no NetworkPolicy selects it: a node agent serving nothing; it runs on no node here",
    }),
    Waiver("nvidia-device-plugin-0.20.0", "DaemonSet", "nvidia-device-plugin-mps-control-daemon", {
        check: "with `config.map` (GPU sharing) the chart's config-manager containers in "
        "templates/daemonset-mps-control-daemon.yml take no resources or securityContext value; it runs on "
        "no node here (nothing sets nvidia.com/mps.capable)"
        for check in ("CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13", "CKV_K8S_30")
    }, when=config_manager),
    # ---- DCGM exporter 4.8.2
    Waiver("dcgm-exporter-4.8.2", "DaemonSet", "dcgm-exporter", {
        **{check: "DCGM reads GPU profiling counters, which needs root and CAP_SYS_ADMIN "
           "(templates/daemonset.yaml and the chart's default securityContext); every other capability "
           "is dropped and privilege escalation is off"
           for check in ("CKV_K8S_23", "CKV_K8S_25", "CKV_K8S_39", "CKV_K8S_40")},
        "CKV_K8S_22": "the chart's values.yaml leaves readOnlyRootFilesystem commented out, to be "
        "enabled only with tmpfs volumes for what DCGM writes; the platform mounts none yet",
        "CKV_K8S_29": "templates/daemonset.yaml takes podSecurityContext, left empty: the container's "
        "context (root with SYS_ADMIN, all else dropped) is the one that matters",
        "CKV_K8S_31": "templates/daemonset.yaml takes podSecurityContext, left empty: DCGM's profiling "
        "ioctls are not in a stated seccomp profile upstream",
        "CKV2_K8S_6": monitoring_netpol("dcgm-exporter", "Prometheus's pods on 9400, no egress"),
    }),
    # ---- Envoy Gateway v1.9.0
    Waiver("gateway-helm-v1.9.0", "ClusterRole", "envoy-gateway-gateway-helm-certgen:*", {
        "CKV_K8S_155": "certgen writes the CA into the topology injector's webhook configuration, by "
        "name only (templates/certgen-rbac.yaml: update/patch on resourceNames "
        "envoy-gateway-topology-injector.<namespace>)",
    }),
    Waiver("gateway-helm-v1.9.0", "RoleBinding", "envoy-gateway-gateway-helm-certgen", {
        "CKV2_K8S_5": "certgen creates the control plane's TLS Secrets: its Role "
        "(templates/certgen-rbac.yaml) grants get/create/update on secrets in its own namespace only",
    }),
    Waiver("gateway-helm-v1.9.0", "Job", "envoy-gateway-gateway-helm-certgen", {
        "CKV_K8S_38": "certgen writes Secrets and a webhook configuration through the API server with "
        "this token",
        "CKV2_K8S_6": "no NetworkPolicy selects it: a run-once job that talks only to the API server",
    }),
    Waiver("gateway-helm-v1.9.0", "Deployment", "envoy-gateway", {
        "CKV_K8S_38": API_TOKEN + " (Gateway API objects, and the Envoy proxies it deploys)",
        "CKV2_K8S_6": NO_NETPOL + ", and serve xDS to every Envoy proxy",
    }),
    # ---- Karpenter 1.14.1
    Waiver("karpenter-1.14.1", "Deployment", "karpenter", {
        "CKV_K8S_38": API_TOKEN + " (nodes, pods, NodePools and NodeClaims)",
        "CKV2_K8S_6": NO_NETPOL + " and the EC2, SQS and pricing endpoints (host names, which a "
        "NetworkPolicy cannot match)",
    }),
    # ---- kube-prometheus-stack 81.6.2
    Waiver("kube-prometheus-stack-81.6.2", "ClusterRole", "kube-prometheus-stack-admission", {
        "CKV_K8S_155": "the admission jobs write the CA into the operator's own webhook configurations "
        "(templates/prometheus-operator/admission-webhooks/job-patch/clusterrole.yaml: get/update/patch)",
    }),
    Waiver("kube-prometheus-stack-81.6.2", "RoleBinding", "kube-prometheus-stack-admission", {
        "CKV2_K8S_5": "the admission job creates the webhook's TLS Secret: its Role "
        "(job-patch/role.yaml) grants get/create on secrets in the monitoring namespace only",
    }),
    Waiver("kube-prometheus-stack-81.6.2", "ClusterRole", "kube-prometheus-stack-operator", {
        "CKV_K8S_49": "the operator owns the monitoring custom resources and the StatefulSets, "
        "ConfigMaps and Secrets it generates from them (templates/prometheus-operator/clusterrole.yaml): "
        "every verb, on the resource types it lists (no resource wildcard)",
    }),
    Waiver("kube-prometheus-stack-81.6.2", "Deployment", "kube-prometheus-stack-operator", {
        "CKV_K8S_38": API_TOKEN + " (it reconciles Prometheus, Alertmanager and their monitors)",
        "CKV2_K8S_6": monitoring_netpol(
            "prometheus-operator", "the API server and Prometheus's pods on 10250, egress to the API server"
        ),
    }),
    Waiver("kube-prometheus-stack-81.6.2", "Job", "kube-prometheus-stack-admission-*", {
        "CKV_K8S_38": "the job writes the webhook's Secret and configuration through the API server "
        "with this token",
        "CKV2_K8S_6": monitoring_netpol("prometheus-operator-admission", "no ingress, egress to the API server"),
    }),
    # ---- KubeRay 1.7.0
    Waiver("kuberay-operator-1.7.0", "Deployment", "kuberay-operator", {
        "CKV_K8S_38": API_TOKEN + " (RayClusters, RayServices and their pods)",
        "CKV2_K8S_6": NO_NETPOL + " and each Ray head's dashboard (which admits only this operator's pods)",
    }),
    # ---- prometheus-adapter 5.3.0
    Waiver("prometheus-adapter-5.3.0", "ClusterRole", "prometheus-adapter-server-resources", {
        "CKV_K8S_49": "every verb on the custom.metrics.k8s.io group only, the API this adapter itself "
        "serves (templates/custom-metrics-cluster-role.yaml)",
    }),
    Waiver("prometheus-adapter-5.3.0", "ClusterRoleBinding", "prometheus-adapter-hpa-controller", {
        check: "binds the adapter to prometheus-adapter-server-resources, whose one rule is '*' on the "
        "custom.metrics.k8s.io group (templates/custom-metrics-cluster-role-binding-hpa.yaml): the "
        "wildcard matches this check, but the group holds no bindings, secrets, services, pods or users"
        for check in ("CKV2_K8S_1", "CKV2_K8S_2", "CKV2_K8S_3", "CKV2_K8S_4", "CKV2_K8S_5")
    }),
    Waiver("prometheus-adapter-5.3.0", "Deployment", "prometheus-adapter", {
        "CKV_K8S_38": "the adapter authenticates and authorises its API clients through the API "
        "server, and maps metrics onto pods and namespaces, with this token",
        "CKV2_K8S_6": monitoring_netpol(
            "prometheus-adapter", "the API server's aggregation layer on 6443, egress to the API server and Prometheus"
        ),
    }),
    # ---- AWS EFA device plugin v0.5.30 (only with an `efa: true` pool): privileged by the chart's own
    # values.securityContext, on the host network by templates/daemonset.yaml (no value for it).
    Waiver("aws-efa-k8s-device-plugin-v0.5.30", "DaemonSet", "aws-efa-k8s-device-plugin", {
        **dict.fromkeys(("CKV_K8S_8", "CKV_K8S_9"), "templates/daemonset.yaml defines no probes and has no "
                        "value for them"),
        "CKV_K8S_16": "the plugin opens the host's EFA verbs devices (hostPath /dev/infiniband) to advertise "
        "vpc.amazonaws.com/efa; the chart's values.securityContext runs it privileged and the chart has no "
        "narrower profile",
        "CKV_K8S_20": "privileged by the chart's values.securityContext (allowPrivilegeEscalation: true with "
        "privileged: true), which it needs to open the host's EFA devices",
        **dict.fromkeys(("CKV_K8S_23", "CKV_K8S_40"), "runs as root (values.securityContext runAsUser 0, "
                        "runAsNonRoot false) to open the host's EFA device nodes and write the kubelet's "
                        "device-plugin socket"),
        **dict.fromkeys(("CKV_K8S_28", "CKV_K8S_37"), "privileged (values.securityContext): a privileged "
                        "container holds every capability, NET_RAW included, whatever it drops"),
        "CKV_K8S_19": "templates/daemonset.yaml sets hostNetwork true unconditionally (no value): the "
        "plugin sees the host's EFA interfaces",
        "CKV_K8S_29": "templates/daemonset.yaml renders no pod securityContext and has no value for one; "
        "the container's is the chart's privileged one",
        "CKV_K8S_31": "templates/daemonset.yaml renders no pod securityContext (no value for a seccomp "
        "profile), and a privileged container runs unconfined regardless",
        "CKV2_K8S_6": "no NetworkPolicy selects it: it runs on the host network, where NetworkPolicy does "
        "not apply, and talks only to the kubelet's device-plugin socket",
    }),
    # ---- LeaderWorkerSet v0.10.0 (with a multi-node model): webhooks served by its own cert rotator.
    Waiver("lws-v0.10.0", "ClusterRole", "lws-manager-role", {
        "CKV_K8S_155": "the controller writes the CA of its own self-signed webhook certificate into its "
        "two webhook configurations (enableCertManager false; templates/rbac/role.yaml: get/list/update/"
        "watch, no create or delete)",
    }),
    Waiver("lws-v0.10.0", "Deployment", "lws-controller-manager", {
        "CKV_K8S_38": API_TOKEN + " (it reconciles LeaderWorkerSets, their StatefulSets and pods)",
        "CKV2_K8S_6": NO_NETPOL + " and serve its admission webhooks to it",
    }),
    # ---- KEDA 2.20.2 (autoscaling.owner: keda): the chart's containers are secure by default (every
    # capability dropped, read-only root, no privilege escalation, the runtime's seccomp profile).
    Waiver("keda-2.20.2", "ClusterRole", "keda-operator-minimal-cluster-role", {
        "CKV_K8S_155": "the operator writes the CA of its self-generated certificate into its own "
        "admission webhook configuration (certificates.autoGenerated, no cert-manager; templates/manager/"
        "minimal-rbac.yaml: get/list/patch/update/watch of validatingwebhookconfigurations, no create or delete)",
    }),
    Waiver("keda-2.20.2", "Deployment", "keda-operator", {
        "CKV_K8S_38": API_TOKEN + " (it reconciles ScaledObjects and their HPAs and patches scale subresources)",
        "CKV2_K8S_6": NO_NETPOL + ", query Prometheus and the HTTP add-on's scaler for every trigger",
    }),
    Waiver("keda-2.20.2", "Deployment", "keda-operator-metrics-apiserver", {
        "CKV_K8S_38": API_TOKEN + " (it authorizes the HPA controller's external-metrics requests)",
        "CKV2_K8S_6": NO_NETPOL + ", and the EKS control plane, outside the pod network, calls its "
        "external.metrics.k8s.io API on port 6443",
    }),
    Waiver("keda-2.20.2", "Deployment", "keda-admission-webhooks", {
        "CKV_K8S_38": API_TOKEN + " (it reads HPAs and ScaledObjects to refuse a second owner of a workload)",
        "CKV2_K8S_6": NO_NETPOL + ", and the EKS control plane calls its admission webhook on port 9443",
    }),
    # ---- llm-d router standalone v0.10.0 (a model's endpoint picker, models[].routing): the
    # library chart's deployment template takes image, flags, resources, affinity and tolerations,
    # no security context.
    Waiver("llm-d-router-standalone-v0.10.0", "Deployment", "*-picker-epp", {
        **{check: "charts/router/templates/_deployment.yaml renders no securityContext at pod level or on "
           "the picker's container and has no value for either (the Envoy beside it, where LiteLLM calls "
           "the model, runs with the platform's: components/gateway/picker.py proxy_values)"
           for check in ("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29",
                         "CKV_K8S_30", "CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40")},
        "CKV_K8S_38": "the picker watches the model's pods through the API server with this token (the "
        "chart's Role `<release>-epp-sa`: pods get/list/watch, in the model's namespace only)",
        "CKV2_K8S_6": "the platform's own `<model>-picker-ingress` NetworkPolicy selects it (components/"
        "gateway/isolation.py: only its route's Envoy proxies on 9002, Prometheus's pods on 9090 and, where it "
        "calls the model through the picker, LiteLLM's pods on 8081), rendered "
        "with the program's objects, not in this chart's directory",
    }),
    # ---- KEDA HTTP add-on 0.15.0 (interceptor, external scaler, operator, in keda).
    *(
        Waiver("keda-add-ons-http-0.15.0", "Deployment", name, {
            "CKV_K8S_38": API_TOKEN + why,
            **netpol,
        })
        for name, why, netpol in (
            ("keda-add-ons-http-interceptor", " (it watches InterceptorRoutes and the targets' endpoints)", {
                "CKV2_K8S_6": "the platform's keda/interceptor-ingress NetworkPolicy selects these pods "
                "(components/gateway/isolation.py interceptor_ingress: the route's Envoy proxies and LiteLLM's "
                "pods on 8080, the add-on's scaler on 9090), rendered with the program's objects, not in this "
                "chart's directory",
            }),
            ("keda-add-ons-http-external-scaler", " (it watches InterceptorRoutes and the interceptor's "
             "endpoints)", {"CKV2_K8S_6": NO_NETPOL + " and answer KEDA's operator on its gRPC port"}),
            ("keda-add-ons-http-controller-manager", " (it reconciles InterceptorRoutes and HTTPScaledObjects)",
             {"CKV2_K8S_6": NO_NETPOL}),
        )
    ),
)  # fmt: skip


def waivers_for(chart: str, obj: dict[str, Any]) -> dict[str, str]:
    """Every waiver of the registry that applies to this object of this chart: check id -> why."""
    name = (obj.get("metadata") or {}).get("name") or ""
    found: dict[str, str] = {}
    for w in WAIVERS:
        if w.chart == chart and w.kind == obj.get("kind") and fnmatch.fnmatchcase(name, w.name) and w.when(obj):
            found.update(w.checks)
    return found


def annotate(chart: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its waivers as `checkov.io/skipN` annotations (numbered after any it has)."""
    reasons = waivers_for(chart, obj)
    # Checkov splits `CHECK=reason` at every "=": one more and it fails on the annotation.
    assert not any("=" in why for why in reasons.values()), f"a waiver reason of {chart} holds '='"
    if not reasons:
        return obj
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    start = 1 + sum(1 for key in annotations if key.startswith("checkov.io/skip"))
    for i, (check, why) in enumerate(sorted(reasons.items()), start):
        annotations[f"checkov.io/skip{i}"] = f"{check}={why}"
    meta["annotations"] = annotations
    return obj
