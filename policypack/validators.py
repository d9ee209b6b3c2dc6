"""The policy pack's validators: the same checks as `stacks validate`, on resource properties.

Resource policies see one resource (`ResourceValidationArgs`); stack policies see every resource of
the stack (`StackValidationArgs`) for rules that relate resources (a route and its SecurityPolicy, a
replica and its NodePool, a workload and its autoscalers). Properties are camelCase, as the engine
sends them; Kubernetes objects carry apiVersion/kind/metadata/spec. Field names follow the upstream CRDs
(Karpenter v1 NodePool, Gateway API v1 HTTPRoute, Envoy Gateway v1alpha1
SecurityPolicy, autoscaling/v2 HPA, AIBrix v1alpha1 PodAutoscaler, KEDA v1alpha1 ScaledObject).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pydantic import ValidationError

from components.scheduling import ACCELERATOR_LABEL, POOL_LABEL, TAINT_KEYS
from stacks.config.pools import NodePoolSection
from stacks.fit import (
    Requests,
    cpu_m_of,
    daemonset_overhead,
    explain_no_fit,
    fit,
    mib_of,
    mig_requests_of,
    requests_of,
)
from stacks.guards import (
    QUOTA_RESOURCES,
    accelerator_taint_problem,
    chart_version_problem,
    image_digest_problem,
    mig_quota_shortfalls,
    quota_shortfalls,
    route_auth_problem,
    scaler_owner_problems,
    stateful_protection_problem,
)
from stacks.hardware import catalog
from stacks.helper_pods import pod_requests
from stacks.resolved import scaling_adapter_name
from stacks.sharing import CONFIG_LABEL, mig_quota_key, sharing_of_config

Report = Callable[[str, str | None], None]

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
WORKLOADS = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet")
# The platform's helper pods (acceptance, benchmark, compile and fill Jobs; the benchmark's and the KV-cache
# pruner's CronJobs) run in the models' namespaces and are charged to the same ResourceQuota.
JOB = "kubernetes:batch/v1:Job"
CRON_JOB = "kubernetes:batch/v1:CronJob"
DYNAMO_GRAPH = "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"
SCALERS = {
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler": "HPA",
    "kubernetes:autoscaling.aibrix.ai/v1alpha1:PodAutoscaler": "AIBrix PodAutoscaler",
    "kubernetes:keda.sh/v1alpha1:ScaledObject": "KEDA ScaledObject",
}
STATEFUL = {
    "aws:s3/bucket:Bucket": "the S3 bucket",
    "aws:s3/bucketV2:BucketV2": "the S3 bucket",
    "aws:efs/fileSystem:FileSystem": "the EFS file system",
}
# Not stateful: the FSx for Lustre file system is a cache of the model bucket, deleted with its VPC
# (components/storage/fsx.py says why it is neither protected nor retained).
AUTH_FIELDS = ("apiKeyAuth", "jwt", "extAuth", "oidc", "basicAuth")
ENV_TAG = "inference-platform:environment"
ENV_LABEL = "inference-platform.io/environment"


# ---- reading props ---------------------------------------------------------------------------------


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return props.get("metadata") or {}


def _spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return props.get("spec") or {}


def _ident(props: Mapping[str, Any], fallback: str) -> str:
    meta = _meta(props)
    name = meta.get("name") or fallback
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name


def containers(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every container and init container anywhere in an object (pod templates of Deployments,
    StatefulSets, DynamoGraphDeployments, RayServices alike)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (c for c in value if isinstance(c, Mapping))
            else:
                yield from containers(value)
    elif isinstance(node, list):
        for value in node:
            yield from containers(value)


def environment(resources: list[PolicyResource], config: Mapping[str, Any] | None) -> str | None:
    """The stack's environment: the pack's config, else the tags/labels the program puts on resources."""
    if config and config.get("environment"):
        return str(config["environment"])
    for res in resources:
        tags = res.props.get("tags") or {}
        if isinstance(tags, Mapping) and tags.get(ENV_TAG):
            return str(tags[ENV_TAG])
        labels = _meta(res.props).get("labels") or {}
        if isinstance(labels, Mapping) and labels.get(ENV_LABEL):
            return str(labels[ENV_LABEL])
    return None


# ---- resource policies -----------------------------------------------------------------------------


def pinned_chart_versions(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type != HELM_RELEASE:
        return
    chart = str(args.props.get("chart") or args.name).rsplit("/", 1)[-1]
    if problem := chart_version_problem(chart, args.props.get("version")):
        report(problem, None)


def pool_accelerator(props: Mapping[str, Any]) -> str:
    """nvidia | neuron | none, from the pool's label or the instance types/families it allows."""
    template = _spec(props).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if labels.get(ACCELERATOR_LABEL):
        return str(labels[ACCELERATOR_LABEL])
    known = catalog()
    for req in (template.get("spec") or {}).get("requirements") or []:
        if req.get("operator") != "In":
            continue
        values = req.get("values") or []
        if req.get("key") == "node.kubernetes.io/instance-type":
            kinds = {known[v].accelerator for v in values if v in known}
        elif req.get("key") == "karpenter.k8s.aws/instance-family":
            kinds = {t.accelerator for t in known.values() if t.family in values}
        elif req.get("key") == "karpenter.k8s.aws/instance-gpu-manufacturer" and "nvidia" in values:
            kinds = {"nvidia"}
        else:
            continue
        kinds.discard("none")
        if kinds:
            return sorted(kinds)[0]
    return "none"


def tainted_accelerator_pools(args: ResourceValidationArgs, report: Report) -> None:
    if args.resource_type != NODE_POOL:
        return
    accelerator = pool_accelerator(args.props)
    taints = ((_spec(args.props).get("template") or {}).get("spec") or {}).get("taints") or []
    problem = accelerator_taint_problem(_ident(args.props, args.name), accelerator, TAINT_KEYS.get(accelerator), taints)
    if problem:
        report(problem, None)


def protected_stateful_resources(args: ResourceValidationArgs, report: Report) -> None:
    what = STATEFUL.get(args.resource_type)
    if what is None:
        return
    env = (args.get_config() or {}).get("environment") or (args.props.get("tags") or {}).get(ENV_TAG)
    if problem := stateful_protection_problem(f"{what} {args.name}", bool(args.opts.protect), env == "prod"):
        report(problem, None)


# ---- stack policies --------------------------------------------------------------------------------


def container_requests(container: Mapping[str, Any]) -> Requests:
    """One container's requests, read as the rules read the resolved pods' (stacks/fit.py requests_of)."""
    return requests_of(container.get("resources") or {})


def pod_mig_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """One pod's MIG instances per profile, counted as `pod_requests` counts every resource."""
    total: dict[str, int] = {}
    for container in pod_spec.get("containers") or []:
        for profile, n in mig_requests_of(container.get("resources") or {}).items():
            total[profile] = total.get(profile, 0) + n
    for init in pod_spec.get("initContainers") or []:
        for profile, n in mig_requests_of(init.get("resources") or {}).items():
            total[profile] = max(total.get(profile, 0), n)
    return total


def pool_section(props: Mapping[str, Any]) -> NodePoolSection | None:
    """The NodePool as the capacity check's model (instance types or families from requirements)."""
    template = _spec(props).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    name = labels.get(POOL_LABEL) or _meta(props).get("name")
    types: list[str] = []
    families: list[str] = []
    for req in (template.get("spec") or {}).get("requirements") or []:
        if req.get("operator") == "In" and req.get("key") == "node.kubernetes.io/instance-type":
            types = list(req.get("values") or [])
        elif req.get("operator") == "In" and req.get("key") == "karpenter.k8s.aws/instance-family":
            families = list(req.get("values") or [])
    if not name or bool(types) == bool(families):
        return None  # no instance-type bound this check can reason about
    section: dict[str, Any] = {
        "name": name,
        "accelerator": pool_accelerator(props),
        "instanceTypes": types,
        "instanceFamilies": families,
    }
    # A shared pool's nodes advertise slices, not GPUs: its device-plugin label says which.
    if (sharing := sharing_of_config(labels.get(CONFIG_LABEL))) is not None:
        section["gpuSharing"] = sharing
    try:
        return NodePoolSection.model_validate(section)
    except ValidationError:
        return None


def schedulable_replicas(args: StackValidationArgs, report: Report) -> None:
    pools: dict[str, NodePoolSection] = {}
    for res in args.resources:
        if res.resource_type == NODE_POOL and (pool := pool_section(res.props)) is not None:
            pools[pool.name] = pool
    if not pools:
        return  # a workloads stack: its pools were checked against the platform's exports
    for res in args.resources:
        if res.resource_type not in WORKLOADS:
            continue
        pod = (_spec(res.props).get("template") or {}).get("spec") or {}
        pool = pools.get((pod.get("nodeSelector") or {}).get(POOL_LABEL, ""))
        if pool is None:
            continue
        requests = pod_requests(pod)
        result = fit(requests, pool, daemonset_overhead(pool))
        if not result.ok:
            report(explain_no_fit(f"a replica of {_ident(res.props, res.name)}", requests, pool, result), res.urn)


def quota_limits(hard: Mapping[str, Any]) -> Requests:
    """A ResourceQuota's `hard` requests as Requests; a resource it does not bound is unlimited."""
    unlimited = 2**62
    values = {key: hard.get(key) for key in QUOTA_RESOURCES}
    return Requests(
        cpu_m=cpu_m_of(values["requests.cpu"]) if values["requests.cpu"] is not None else unlimited,
        memory_mib=mib_of(values["requests.memory"]) if values["requests.memory"] is not None else unlimited,
        gpu=int(values["requests.nvidia.com/gpu"]) if values["requests.nvidia.com/gpu"] is not None else unlimited,
        neuron=int(values["requests.aws.amazon.com/neuron"])
        if values["requests.aws.amazon.com/neuron"] is not None
        else unlimited,
        gpu_shared=int(values["requests.nvidia.com/gpu.shared"])
        if values["requests.nvidia.com/gpu.shared"] is not None
        else unlimited,
    )


def quota_mig_limits(hard: Mapping[str, Any], profiles: Iterable[str]) -> dict[str, int]:
    """The MIG instances a ResourceQuota's `hard` allows of each of these profiles; a profile it does not
    name is left out (not bounded)."""
    return {p: int(hard[mig_quota_key(p)]) for p in profiles if hard.get(mig_quota_key(p)) is not None}


def pod_template_spec(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec a workload, Job or CronJob creates its pods from; None for any other kind."""
    spec = _spec(props)
    if resource_type == CRON_JOB:
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    elif resource_type not in (*WORKLOADS, JOB):
        return None
    return (spec.get("template") or {}).get("spec") or {}


def replicas_within_team_quota(args: StackValidationArgs, report: Report) -> None:
    """A team's ResourceQuota admits at least one pod of each of its workloads and of each helper Job and
    CronJob beside them, MIG instances per profile included (stacks validate runs the same comparisons,
    stacks/guards.py quota_shortfalls and mig_quota_shortfalls, on the resolved requests before rendering)."""
    hards: dict[str, Mapping[str, Any]] = {}
    for res in args.resources:
        if res.resource_type == RESOURCE_QUOTA:
            hards[_meta(res.props).get("namespace") or "default"] = _spec(res.props).get("hard") or {}
    if not hards:
        return
    for res in args.resources:
        pod = pod_template_spec(res.resource_type, res.props)
        hard = hards.get(_meta(res.props).get("namespace") or "default")
        if pod is None or hard is None:
            continue
        migs = pod_mig_requests(pod)
        shorts = quota_shortfalls(pod_requests(pod), quota_limits(hard))
        for short in [*shorts, *mig_quota_shortfalls(migs, quota_mig_limits(hard, migs))]:
            report(
                f"a pod of {_ident(res.props, res.name)} requests {short.requested} of {short.resource} but its "
                f"namespace's ResourceQuota allows {short.available}: the API server would refuse every pod of it",
                res.urn,
            )


def _targets(policy: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = _spec(policy)
    return [*(spec.get("targetRefs") or []), *([spec["targetRef"]] if spec.get("targetRef") else [])]


def authenticated_routes(args: StackValidationArgs, report: Report) -> None:
    allow = bool((args.get_config() or {}).get("allowUnauthenticated"))
    protected: set[tuple[str, str, str]] = set()  # (kind, namespace, name)
    selectors: list[tuple[str, Mapping[str, str]]] = []  # (namespace, matchLabels) for HTTPRoutes
    for res in args.resources:
        if res.resource_type != SECURITY_POLICY or not any(_spec(res.props).get(f) for f in AUTH_FIELDS):
            continue
        ns = _meta(res.props).get("namespace") or "default"
        for ref in _targets(res.props):
            protected.add((str(ref.get("kind")), ns, str(ref.get("name"))))
        for sel in _spec(res.props).get("targetSelectors") or []:
            if sel.get("kind") == "HTTPRoute" and sel.get("matchLabels"):
                selectors.append((ns, sel["matchLabels"]))
    for res in args.resources:
        if res.resource_type != HTTP_ROUTE:
            continue
        meta = _meta(res.props)
        ns, name, labels = meta.get("namespace") or "default", meta.get("name") or res.name, meta.get("labels") or {}
        covered = ("HTTPRoute", ns, name) in protected
        covered = covered or any(
            ("Gateway", parent.get("namespace") or ns, parent.get("name")) in protected
            for parent in _spec(res.props).get("parentRefs") or []
        )
        covered = covered or any(
            sel_ns == ns and all(labels.get(k) == v for k, v in match.items()) for sel_ns, match in selectors
        )
        if problem := route_auth_problem(f"{ns}/{name}", covered, allow):
            report(problem, res.urn)


def image_digests_in_prod(args: StackValidationArgs, report: Report) -> None:
    if environment(args.resources, args.get_config()) != "prod":
        return
    for res in args.resources:
        if not res.resource_type.startswith("kubernetes:"):
            continue
        for container in containers(res.props):
            image = container.get("image")
            if isinstance(image, str) and (problem := image_digest_problem(image)):
                report(f"{_ident(res.props, res.name)}: {problem}", res.urn)


def planner_owned(props: Mapping[str, Any]) -> list[str]:
    """The scaling adapters a DynamoGraphDeployment's own planner scales: with a `planner` component, the
    planner patches the DGDSA of every component that has one (stacks/resolved.py scaling_adapter_name), which
    KEDA's and the HPA's admission checks never see."""
    spec = _spec(props)
    components = spec.get("components") or []
    if not isinstance(components, list) or not any(
        isinstance(c, dict) and c.get("type") == "planner" for c in components
    ):
        return []
    graph = _meta(props).get("name")
    return [
        scaling_adapter_name(str(graph), str(c.get("name", "")))
        for c in components
        if isinstance(c, dict) and "scalingAdapter" in c and c.get("type") != "planner"
    ]


def one_scaler_owner(args: StackValidationArgs, report: Report) -> None:
    owners: dict[str, list[str]] = {}
    for res in args.resources:
        if res.resource_type == DYNAMO_GRAPH:
            ns = _meta(res.props).get("namespace") or "default"
            for adapter in planner_owned(res.props):
                owners.setdefault(f"{ns}/DynamoGraphDeploymentScalingAdapter/{adapter}", []).append(
                    f"the Dynamo planner of {_meta(res.props).get('name')}"
                )
        kind = SCALERS.get(res.resource_type)
        if kind is None:
            continue
        ref = _spec(res.props).get("scaleTargetRef") or {}
        ns = _meta(res.props).get("namespace") or "default"
        target = f"{ns}/{ref.get('kind') or 'Deployment'}/{ref.get('name')}"
        owners.setdefault(target, []).append(f"{kind} {_meta(res.props).get('name') or res.name}")
    for problem in scaler_owner_problems(owners):
        report(problem, None)


MANDATORY = EnforcementLevel.MANDATORY

ENVIRONMENT = PolicyConfigSchema(properties={"environment": {"type": "string", "enum": ["dev", "staging", "prod"]}})
OPEN_ROUTES = PolicyConfigSchema(properties={"allowUnauthenticated": {"type": "boolean"}})

POLICIES: list[Policy] = [
    ResourceValidationPolicy(
        name="pinned-chart-versions",
        description="Every Helm release installs an exact chart version.",
        validate=pinned_chart_versions,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="tainted-accelerator-pools",
        description="GPU and Neuron NodePools carry their NoSchedule taint.",
        validate=tainted_accelerator_pools,
        enforcement_level=MANDATORY,
    ),
    ResourceValidationPolicy(
        name="protected-stateful-resources",
        description="Model bucket and file systems are protected from deletion in prod.",
        validate=protected_stateful_resources,
        enforcement_level=MANDATORY,
        config_schema=ENVIRONMENT,
    ),
    StackValidationPolicy(
        name="schedulable-replicas",
        description="Every serving replica fits at least one instance type of its NodePool.",
        validate=schedulable_replicas,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="replicas-within-team-quota",
        description="A team namespace's ResourceQuota admits at least one pod of each of its workloads, Jobs "
        "and CronJobs.",
        validate=replicas_within_team_quota,
        enforcement_level=MANDATORY,
    ),
    StackValidationPolicy(
        name="authenticated-routes",
        description="Every HTTPRoute is covered by an authenticating SecurityPolicy.",
        validate=authenticated_routes,
        enforcement_level=MANDATORY,
        config_schema=OPEN_ROUTES,
    ),
    StackValidationPolicy(
        name="image-digests-in-prod",
        description="In prod, every container image is pinned by digest.",
        validate=image_digests_in_prod,
        enforcement_level=MANDATORY,
        config_schema=ENVIRONMENT,
    ),
    StackValidationPolicy(
        name="one-scaler-owner",
        description="Each workload has at most one autoscaler.",
        validate=one_scaler_owner,
        enforcement_level=MANDATORY,
    ),
]
