"""The serving platforms the stack enables, and their per-model objects.

`ServingPlatforms` installs, each only when its add-on is enabled:
- NVIDIA Dynamo: the dynamo-platform chart (the operator, which applies the CRDs) from NVIDIA's NGC Helm
  repository, for `engine: dynamo` models (DynamoGraphDeployments);
- AIBrix 0.7.0: its chart (controller manager, gateway plugin, metadata service, CRDs). AIBrix
  publishes the chart only in its git repository (`dist/chart` at the release tag), so it is
  installed from a vendored copy (scripts/vendor-charts.sh); it routes through Envoy Gateway,
  so it waits for the Envoy Gateway controller when the front door installed it. With it, the
  ClientTrafficPolicy on its Gateway's listener that strips a client's `routing-strategy` header
  (values.py `aibrix_listener_policy`: the chart's patched route would otherwise bypass
  authentication);
- the KubeRay operator, for `engine: ray-serve` models (RayServices);
- the NIM Operator, for `engine: nim` models (NIMServices);
- LeaderWorkerSet in `lws-system` (its CRD names its webhook Service there), for models whose
  replicas span nodes (`addons.lws`, turned on by stacks/resolve/platform.py `with_model_addons` when
  one does);
- KEDA in `keda`, for models whose replicas KEDA owns (`addons.keda`, turned on by
  stacks/resolve/platform.py `with_keda` when one does: components/autoscaling/keda.py), and its HTTP
  add-on (`addons.kedaHttp`, on when a model scales to zero: components/autoscaling/wake.py) after it;
- LiteLLM, as plain manifests (router ConfigMap, Deployment, Service, NetworkPolicy).

`ModelAddons` adds the per-model AIBrix objects (ModelAdapters, PodAutoscalers); each waits for
the AIBrix release that installs its CRD.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from stacks.config.addons import AddonsSection
from stacks.config.gateway import GatewaySection
from stacks.naming import MANAGED_BY, TOKEN
from stacks.naming import labels as k8s_labels
from stacks.resolved import (
    CONTROLLER_NAMESPACES,
    KEDA_NAMESPACE,
    LITELLM_NAMESPACE,
    LWS_NAMESPACE,
    Endpoint,
    GatewayParent,
    ImageTable,
    ManagedSecret,
    ResolvedModel,
)
from stacks.versions import CRD_SOURCES, chart, crd_source

from .. import crds, peers, podidentity
from ..autoscaling import wake
from ..autoscaling.keda import keda_values
from ..autoscaling.wake import http_addon_values
from ..k8s import register, release
from ..secrets import create_secrets
from . import aibrix, litellm, litellm_keys
from .litellm_iam import bedrock_policy
from .values import (
    aibrix_listener_policy,
    aibrix_values,
    dynamo_values,
    kuberay_values,
    lws_values,
    nim_operator_values,
)


@dataclass(frozen=True, kw_only=True)
class ServingPlatformsArgs:
    addons: AddonsSection
    gateway: GatewaySection  # AIBrix's Envoy Service follows the front door's TLS
    # The models the LiteLLM proxy routes to (its exposed ones).
    models: list[Endpoint]
    provider: k8s.Provider
    # The stack's pinned platform images (LiteLLM, Redis, AIBrix's Envoy pair and init image).
    images: ImageTable
    # The Envoy Gateway controller release, when the front door installs it (AIBrix needs it).
    envoy_gateway: pulumi.Resource | None = None
    # The front door's load-balancer annotations (components/gateway/routing.py
    # load_balancer_annotations): AIBrix's chart owns its Envoy Service and must carry them.
    gateway_service_annotations: dict[str, str] = field(default_factory=dict)
    # The Gateway LiteLLM's route attaches to: its proxies are the only pods that may call LiteLLM
    # (None: no route, so only the scraper may).
    route_parent: GatewayParent | None = None
    # The platform keeps teams' LiteLLM virtual keys: its key Job calls the proxy.
    virtual_keys: bool = False
    # The AWS Load Balancer Controller's release, when this stack runs it: its Service webhook fails
    # closed, so every Service, and every release creating one, waits for it; and AIBrix's namespace,
    # where its Gateway's LoadBalancer Service lives, is created after it and deleted (awaited) before it.
    service_webhook: pulumi.Resource | None = None
    # The Secrets of the proxy's namespace the program creates from Pulumi secrets (its master, provider and
    # database keys), and their values: created after the namespace, before the proxy that mounts them.
    secrets: tuple[ManagedSecret, ...] = ()
    secret_values: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    # For the LiteLLM proxy's own IAM role (a Bedrock provider without an API key): the stack's cluster
    # name (physical names), the Cluster component's name output (the association's cluster), and tags.
    cluster_name: str = ""
    cluster: pulumi.Input[str] = ""
    tags: dict[str, str] = field(default_factory=dict)


class ServingPlatforms(pulumi.ComponentResource):
    """Dynamo, AIBrix, KubeRay, NIM Operator, LeaderWorkerSet, KEDA and LiteLLM installations."""

    # The releases by add-on name (their CRDs' installers), and the LiteLLM proxy's Deployment.
    releases: dict[str, pulumi.Resource]
    litellm: pulumi.Resource | None
    # The Secrets it created from Pulumi secrets, by namespace.
    secrets: dict[str, list[pulumi.Resource]]

    def __init__(self, name: str, args: ServingPlatformsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ServingPlatforms", name, None, opts)
        self._name = name
        addons = args.addons
        self.releases = {}
        self.litellm = None
        self.secrets = {}
        values = {
            "dynamo": (addons.dynamo, lambda: dynamo_values(addons.dynamo)),
            "aibrix": (
                addons.aibrix,
                lambda: aibrix_values(addons.aibrix, args.gateway, args.images, args.gateway_service_annotations),
            ),
            "kuberay": (addons.kuberay, lambda: kuberay_values(addons.kuberay)),
            "nim-operator": (addons.nim_operator, nim_operator_values),
            "lws": (addons.lws, lambda: lws_values(chart("lws", addons.lws.version).version)),
            "keda": (addons.keda, keda_values),
            "keda-http": (
                addons.keda_http,
                lambda: http_addon_values(chart("keda-http", addons.keda_http.version).version),
            ),
        }
        namespaces = {"lws": LWS_NAMESPACE, "keda": KEDA_NAMESPACE, "keda-http": KEDA_NAMESPACE}
        # The chart names its Services after itself; its release takes the chart's name too.
        release_names = {"keda-http": wake.RELEASE_NAME}
        for key, (addon, build) in values.items():
            if not addon.enabled:
                continue
            depends = [args.envoy_gateway] if key == "aibrix" and args.envoy_gateway is not None else []
            if key == "aibrix":
                depends.append(self._aibrix_namespace(name, args))
            if key == "keda-http":
                # The chart renders a ScaledObject for its own interceptor: KEDA's CRDs come first.
                depends = [self.releases["keda"]]
            # A chart whose CRDs sit in its crds/ gets them from the program, upgraded with its version.
            owns_crds = key in CRD_SOURCES
            if owns_crds:
                source = crd_source(key, addon.version)
                child = pulumi.ResourceOptions(parent=self, provider=args.provider)
                depends = [crds.install(f"{name}-{key}-crds", source, child), *depends]
            self.releases[key] = release(
                f"{name}-{key}",
                chart(key, addon.version),
                release_name=release_names.get(key, key),
                namespace=namespaces.get(key) or CONTROLLER_NAMESPACES[key],
                create_namespace=key != "aibrix",
                skip_crds=owns_crds,
                values=build(),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends),
                service_webhook=args.service_webhook,
            )
        if "aibrix" in self.releases:
            # After the release: the chart creates the Gateway it targets (and the CRD is Envoy Gateway's).
            after = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.releases["aibrix"]])
            gw = args.gateway
            register(aibrix_listener_policy(gw.client_header if gw.auth == "jwt" else None), after)
        if addons.litellm.enabled:
            self.litellm = self._litellm(args, addons)
        self.register_outputs({})

    def _aibrix_namespace(self, name: str, args: ServingPlatformsArgs) -> pulumi.Resource:
        """AIBrix's namespace, owned by the program rather than made by Helm (which never deletes it):
        its Gateway's proxies and their LoadBalancer Service run there (Envoy Gateway's GatewayNamespace
        mode), and Pulumi deletes a Namespace and waits until it is gone, finalizers included, so on
        destroy the NLB is removed while the load balancer controller still runs."""
        lb = [args.service_webhook] if args.service_webhook is not None else []
        return register(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": CONTROLLER_NAMESPACES["aibrix"], "labels": dict(MANAGED_BY)},
            },
            pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=lb),
            name=f"{name}-aibrix-ns",
        )

    def _litellm(self, args: ServingPlatformsArgs, addons: AddonsSection) -> pulumi.Resource:
        mon = addons.monitoring
        objects = litellm.manifests(
            addons.litellm,
            args.models,
            mon.enabled,
            args.images,
            proxies=peers.proxies(args.route_parent) if args.route_parent is not None else None,
            scraper=peers.prometheus(mon.existing_prometheus) if mon.enabled else None,
            key_job=litellm_keys.PODS if args.virtual_keys else None,
        )
        namespace = register(objects[0], pulumi.ResourceOptions(parent=self, provider=args.provider))
        after_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace])
        keys = self.secrets[LITELLM_NAMESPACE] = create_secrets(self._name, args.secrets, args.secret_values, after_ns)
        # The association exists before the proxy's pods: Pod Identity injects credentials at pod creation.
        identity = [self._litellm_identity(args)] if litellm.uses_bedrock(addons.litellm) else []
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace, *keys, *identity])
        applied = {
            obj["kind"] + "/" + obj["metadata"]["name"]: register(obj, child, service_webhook=args.service_webhook)
            for obj in objects[1:]
        }
        return applied[f"Deployment/{litellm.NAME}"]

    def _litellm_identity(self, args: ServingPlatformsArgs) -> pulumi.Resource:
        """The proxy's IAM role (invoke the named Bedrock models, nothing else), assumed through EKS Pod
        Identity by its ServiceAccount `litellm` in `litellm`."""
        name, addon = f"{self._name}-litellm", args.addons.litellm
        child = pulumi.ResourceOptions(parent=self)
        role = podidentity.role(
            f"{name}-role", cluster=args.cluster_name, purpose="litellm", tags=args.tags, parent=self
        )
        document = podidentity.scope(args.cluster_name, self).apply(
            lambda s: json.dumps(bedrock_policy(addon, s.account, s.partition))
        )
        aws.iam.RolePolicy(f"{name}-bedrock", role=role.id, policy=document, opts=child)
        return aws.eks.PodIdentityAssociation(
            f"{name}-identity",
            cluster_name=args.cluster,
            namespace=LITELLM_NAMESPACE,
            service_account=litellm.NAME,
            role_arn=role.arn,
            tags=args.tags,
            opts=child,
        )


@dataclass(frozen=True, kw_only=True)
class ModelAddonsArgs:
    models: list[ResolvedModel]
    provider: k8s.Provider
    aibrix: pulumi.Resource | None
    # Namespaces by name, so a CR waits for its namespace.
    namespaces: dict[str, pulumi.Resource]


class ModelAddons(pulumi.ComponentResource):
    """Per-model AIBrix ModelAdapters and PodAutoscalers."""

    def __init__(self, name: str, args: ModelAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{TOKEN}:ModelAddons", name, None, opts)
        # A model has adapters or the AIBrix autoscaler only on a platform that runs AIBrix (the serving
        # rules refuse them otherwise): this stack's release, or, in a team's stack, the platform's.
        for served in args.models:
            objects = aibrix.model_objects(served, k8s_labels(served.name, served.name))
            if not objects:
                continue
            depends = [r for r in (args.aibrix, args.namespaces.get(served.namespace)) if r is not None]
            child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends)
            for obj in objects:
                register(obj, child)
        self.register_outputs({})
