"""Recording Pulumi mocks: run the real program with no CLI, no cloud and no credentials.

`RecordingMocks` keeps every registered resource (type, name, parent, provider, dependencies,
inputs) in registration order and answers with realistic outputs (ARNs, ids, endpoints) for the
types whose outputs the program reads, and answers every invoke the program makes. The offline
render (`stacks/render.py`) and the tests share it. Under mocks a resource's outputs are only what
`new_resource` returns, and a component of another language (`eks.Cluster`) is one record without
children, so every output the program reads is answered here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

from .errors import ConfigError, Problem, key_path
from .exports import SECRET_KEYS
from .naming import deploy_role_purpose, iam_role_name
from .pipeline import exports_from_file, platform_stack_file
from .regions import region as aws_region

ACCOUNT = "123456789012"
REGION = "us-west-2"  # when the program's config names no aws:region (the stack's own is used otherwise)
PARTITION = "aws"


@dataclass
class Record:
    type: str
    name: str
    urn: str
    parent: str
    provider: str
    depends_on: list[str]
    inputs: dict[str, Any]
    custom: bool
    outputs: dict[str, Any] = field(default_factory=dict)
    # Resource options the engine would honour: protect and retainOnDelete.
    protect: bool = False
    retain_on_delete: bool = False
    # A component the engine constructs (a multi-language component such as eks:index:Cluster).
    remote: bool = False
    # The URNs its `aliases=` option names (in the mocks' URN form): the resource it was before a
    # rename, which `pulumi up` updates in place instead of replacing.
    aliases: list[str] = field(default_factory=list)
    # Options the engine applies on create, update, replace and delete, as the SDK sent them:
    # customTimeouts ({"create": "30m", ...}), deleteBeforeReplace and replaceOnChanges. The
    # lifecycle model (stacks/lifecycle.py) reads them; goldens and resources.json leave them out.
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    delete_before_replace: bool = False
    replace_on_changes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "parent": self.parent or None,
            "provider": self.provider or None,
            "dependsOn": self.depends_on,
            "inputs": self.inputs,
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            **({"aliases": self.aliases} if self.aliases else {}),
        }


@dataclass
class _Registration:
    """What RegisterResource carried for one resource, kept until the mock's new_resource runs."""

    parent: str = ""
    urn: str = ""
    depends_on: list[str] = field(default_factory=list)
    provider: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    remote: bool = False
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    delete_before_replace: bool = False
    replace_on_changes: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


def _hex(seed: str, n: int = 17) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def stack_region() -> str:
    """The Region of the stack the program runs for: its aws:region, as the AWS provider reads it."""
    from pulumi.runtime.config import get_config

    value = get_config("aws:region")
    return value if isinstance(value, str) and aws_region(value) is not None else REGION


def _arn(service: str, resource: str, region: str | None = None) -> str:
    return f"arn:{PARTITION}:{service}:{region or stack_region()}:{ACCOUNT}:{resource}"


def _kubeconfig(name: str, region: str | None = None) -> dict[str, Any]:
    server = f"https://{_hex(name, 32).upper()}.gr7.{region or stack_region()}.eks.amazonaws.com"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": "bW9jaw=="}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", name, "--output", "json"],
                    }
                },
            }
        ],
    }


class RecordingMocks(pulumi.runtime.Mocks):
    """Mocks that remember everything the program registers, in order."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.outputs: dict[str, Any] = {}
        self.monitor: RecordingMonitor | None = None
        self._pending: dict[tuple[str, str], _Registration] = {}
        self.urns: set[str] = set()  # as the engine forms them
        self.engine_urns: dict[str, str] = {}  # the mock's URN -> the engine's
        self.duplicate_urns: list[str] = []
        # A test's answer for a platform stack's outputs (by org/project/stack), in place of its stack
        # file's exports: what a live platform stack might export.
        self.platform_exports: dict[str, dict[str, Any]] = {}

    def reset(self) -> None:
        self.records.clear()
        self.outputs.clear()
        self._pending.clear()
        self.urns.clear()
        self.engine_urns.clear()
        self.duplicate_urns.clear()
        self.platform_exports.clear()
        if self.monitor is not None:
            self.monitor.resources.clear()

    # -- what the engine and the API server would refuse -------------------------------------------
    def engine_refusals(self) -> list[str]:
        """What `pulumi up` would fail on although every registration succeeded here: two resources
        with one URN (the engine refuses the second), and two Kubernetes objects with one identity
        (API group, kind, namespace, name: the second would overwrite the first, or fail to create)."""
        found = [
            f"two resources have the URN {urn}: pulumi up refuses the second (duplicate resource URN); "
            f"the stack gives two things the same name"
            for urn in dict.fromkeys(self.duplicate_urns)
        ]
        seen: dict[tuple[str, str, str, str], str] = {}
        for record in self.kubernetes_objects():
            inputs = record.inputs
            meta = inputs.get("metadata") or {}
            name, kind, version = meta.get("name"), inputs.get("kind"), inputs.get("apiVersion")
            if not (isinstance(name, str) and isinstance(kind, str) and isinstance(version, str)):
                continue  # auto-named: unique by construction
            group = version.rpartition("/")[0]
            namespace = meta.get("namespace") or ""
            identity = (group, kind, namespace if isinstance(namespace, str) else "", name)
            if identity in seen:
                where = f"namespace {namespace}" if namespace else "the cluster scope"
                found.append(
                    f"two Kubernetes objects are the {version} {kind} {name} in {where} ({seen[identity]} and "
                    f"{record.name}): the second would replace the first on the API server"
                )
            else:
                seen[identity] = record.name
        return found

    # -- queries used by tests and render --------------------------------------------------------
    def of_type(self, typ: str) -> list[Record]:
        return [r for r in self.records if r.type == typ]

    def named(self, typ: str, name: str) -> Record:
        found = [r for r in self.records if r.type == typ and r.name == name]
        if len(found) != 1:
            have = sorted(r.name for r in self.of_type(typ))
            raise AssertionError(f"expected one {typ} named {name}, found {len(found)}; have {have}")
        return found[0]

    def kubernetes_objects(self) -> list[Record]:
        return [
            r
            for r in self.records
            if r.custom
            and r.type.startswith("kubernetes:")
            and not r.type.startswith("pulumi:providers:")
            and r.type != "kubernetes:helm.sh/v3:Release"
        ]

    # -- pulumi.runtime.Mocks --------------------------------------------------------------------
    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        seen = self._pending.pop((args.typ, args.name), _Registration())
        resource_id, outputs = self._outputs(args)
        self.records.append(
            Record(
                type=args.typ,
                name=args.name,
                urn=seen.urn,
                parent=seen.parent,
                provider=seen.provider or (args.provider or ""),
                depends_on=seen.depends_on,
                inputs=args.inputs,
                custom=bool(args.custom),
                outputs=outputs,
                protect=seen.protect,
                retain_on_delete=seen.retain_on_delete,
                remote=seen.remote,
                custom_timeouts=seen.custom_timeouts,
                delete_before_replace=seen.delete_before_replace,
                replace_on_changes=seen.replace_on_changes,
                aliases=seen.aliases,
            )
        )
        return resource_id, outputs

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        tok, a = args.token, args.args
        if tok == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": ACCOUNT,
                "arn": f"arn:aws:iam::{ACCOUNT}:user/ci",
                "userId": "AIDAMOCK",
                "id": ACCOUNT,
            }, []
        region = stack_region()
        if tok == "aws:index/getRegion:getRegion":
            return {"name": region, "region": region, "id": region, "endpoint": f"ec2.{region}.amazonaws.com"}, []
        if tok == "aws:index/getPartition:getPartition":
            return {"partition": PARTITION, "dnsSuffix": "amazonaws.com", "id": PARTITION}, []
        if tok == "aws:index/getAvailabilityZones:getAvailabilityZones":
            # The Region's real zones (stacks/data/regions.json), as a new account sees them.
            found = aws_region(region)
            assert found is not None
            names = list(found.zones)
            return {"names": names, "zoneIds": list(found.zone_ids[: len(names)]), "id": region}, []
        if tok == "aws:eks/getAddonVersion:getAddonVersion":
            return {
                "addonName": a.get("addonName"),
                "kubernetesVersion": a.get("kubernetesVersion"),
                "version": f"v1.0.0-eksbuild.{len(a.get('addonName', ''))}",
                "id": a.get("addonName"),
            }, []
        if tok == "pulumi:pulumi:readStackOutputs":
            # What a StackReference reads: the platform stack's outputs (components/platform_stack.py).
            return self._stack_reference_outputs(a["name"]), []
        if tok == "aws:iam/getPolicyDocument:getPolicyDocument":
            return {
                "json": json.dumps({"Version": "2012-10-17", "Statement": a.get("statements", [])}),
                "id": "doc",
            }, []
        return {}, []

    # -- realistic outputs ------------------------------------------------------------------------
    def _outputs(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        typ, name, inputs = args.typ, args.name, dict(args.inputs)
        region = stack_region()
        h = _hex(f"{typ}/{name}")
        out: dict[str, Any] = dict(inputs)
        if typ == "pulumi:pulumi:StackReference":
            rid = inputs.get("name") or name
            out.update(self._stack_reference_outputs(rid))
            return rid, out
        if typ == "eks:index:Cluster":
            rid = inputs.get("name") or name
            out.update(self._cluster_outputs(args, rid))
            return rid, out
        for outputs in _AWS_OUTPUTS:
            found = outputs(typ, name, h, inputs, region)
            if found is not None:
                rid, extra = found
                out.update(extra)
                return rid, out
        return f"{name}-{h[:8]}", out

    def _stack_reference_outputs(self, stack_ref: str) -> dict[str, Any]:
        """A platform stack's outputs: its exports computed from its stack file in this repository
        (stacks/exports.py), plus the cloud-only values as the cluster mock would report them."""
        given = self.platform_exports.get(stack_ref)
        path = platform_stack_file(stack_ref)
        if given is None and path is None:
            raise ConfigError(
                [
                    Problem(
                        key_path(["stack", "platformStack"]),
                        f"{stack_ref} has no stack file in this repository (Pulumi.<stack>.yaml at the root or in "
                        f"stacks/examples), so an offline render cannot answer its StackReference; its pools are "
                        f"checked at preview",
                    )
                ]
            )
        exports = dict(given) if given is not None else exports_from_file(path)  # type: ignore[arg-type]
        cluster = exports["clusterName"]
        kubeconfig = _kubeconfig(cluster)
        exports.update(
            clusterEndpoint=kubeconfig["clusters"][0]["cluster"]["server"],
            clusterCertificateAuthority=kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"],
            kubeconfig=json.dumps(kubeconfig),
            oidcProviderArn=f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{stack_region()}.amazonaws.com/id/"
            f"{_hex(cluster, 32).upper()}",
            clusterSecurityGroupId=f"sg-{_hex(cluster + 'cluster')}",
            vpcId=f"vpc-{_hex(cluster + 'vpc')}",
            privateSubnetIds=[f"subnet-{_hex(cluster + str(i))}" for i in range(3)],
            # As the storage component names it: a generated bucket.
            modelBucket=f"{cluster}-models-{_hex(cluster + 'bucket', 8)}",
            # As the tenancy component names them: each declared team's deploy role.
            teamDeployRoleArns={
                t["name"]: f"arn:aws:iam::{ACCOUNT}:role/{iam_role_name(cluster, deploy_role_purpose(t['name']))}"
                for t in exports.get("teams") or []
            },
        )
        return {"name": stack_ref, "outputs": exports, "secretOutputNames": list(SECRET_KEYS)}

    def _cluster_outputs(self, args: MockResourceArgs, cluster_name: str) -> dict[str, Any]:
        h = _hex(cluster_name, 32).upper()
        oidc_url = f"oidc.eks.{stack_region()}.amazonaws.com/id/{h}"
        kubeconfig = _kubeconfig(cluster_name)
        endpoint = kubeconfig["clusters"][0]["cluster"]["server"]
        out: dict[str, Any] = {
            "kubeconfig": kubeconfig,
            "kubeconfigJson": json.dumps(kubeconfig),
            "oidcProviderArn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{oidc_url}",
            "oidcProviderUrl": oidc_url,
            "oidcIssuer": oidc_url,
            "clusterSecurityGroupId": f"sg-{_hex(cluster_name + 'cluster')}",
            "nodeSecurityGroupId": f"sg-{_hex(cluster_name + 'node')}",
        }
        if self.monitor is not None:
            # A resource reference, so `cluster.eks_cluster.<attr>` resolves: a plain dict in its place
            # fails every output of the component ("expected pulumi_aws.eks.cluster.Cluster but got dict").
            urn = (
                f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::"
                f"eks:index:Cluster$aws:eks/cluster:Cluster::{args.name}-eksCluster"
            )
            self.monitor.resources[urn] = MockMonitor.ResourceRegistration(
                urn,
                cluster_name,
                {
                    "name": cluster_name,
                    "arn": _arn("eks", f"cluster/{cluster_name}"),
                    "endpoint": endpoint,
                    "version": args.inputs.get("version"),
                    "certificateAuthority": {"data": "bW9jaw=="},
                    "identities": [{"oidcs": [{"issuer": f"https://{oidc_url}"}]}],
                    "vpcConfig": {"clusterSecurityGroupId": out["clusterSecurityGroupId"]},
                },
            )
            out["eksCluster"] = {rpc._special_sig_key: rpc._special_resource_sig, "urn": urn, "id": cluster_name}
        return out


# ---- realistic outputs of the AWS resources the program reads, by service ---------------------------
# Each takes (type, name, digest of type and name, inputs, region) and returns the resource's id and
# the outputs it adds to its inputs, or None for a type it does not answer.
_Found = tuple[str, dict[str, Any]] | None


def _network_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """VPCs, subnets, security groups, gateways, Elastic IPs and route tables."""
    if typ == "aws:ec2/vpc:Vpc":
        rid = f"vpc-{h}"
        return rid, {"arn": _arn("ec2", f"vpc/{rid}"), "defaultSecurityGroupId": f"sg-{h}"}
    if typ == "aws:ec2/subnet:Subnet":
        rid = f"subnet-{h}"
        return rid, {"arn": _arn("ec2", f"subnet/{rid}")}
    if typ == "aws:ec2/securityGroup:SecurityGroup":
        rid = f"sg-{h}"
        return rid, {"arn": _arn("ec2", f"security-group/{rid}")}
    if typ in (
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/natGateway:NatGateway",
        "aws:ec2/eip:Eip",
        "aws:ec2/routeTable:RouteTable",
    ):
        prefix = {"InternetGateway": "igw", "NatGateway": "nat", "Eip": "eipalloc", "RouteTable": "rtb"}
        rid = f"{prefix[typ.rsplit(':', 1)[1]]}-{h}"
        return rid, ({"allocationId": rid, "publicIp": "198.51.100.10"} if typ.endswith("Eip") else {})
    return None


def _iam_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """Roles, policies and instance profiles, under their given names or generated ones."""
    if typ == "aws:iam/role:Role":
        role = inputs.get("name") or f"{name}-{h[:7]}"
        return role, {"arn": f"arn:aws:iam::{ACCOUNT}:role/{role}", "name": role, "uniqueId": f"AROA{h.upper()}"}
    if typ == "aws:iam/policy:Policy":
        pol = inputs.get("name") or f"{name}-{h[:7]}"
        rid = f"arn:aws:iam::{ACCOUNT}:policy/{pol}"
        return rid, {"arn": rid, "name": pol}
    if typ == "aws:iam/instanceProfile:InstanceProfile":
        rid = inputs.get("name") or name
        return rid, {"arn": f"arn:aws:iam::{ACCOUNT}:instance-profile/{rid}", "name": rid}
    return None


def _key_queue_and_certificate_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """KMS keys, SQS queues, EventBridge rules and ACM certificates."""
    if typ == "aws:kms/key:Key":
        rid = f"{h[:8]}-{h[8:12]}-4{h[12:15]}-8{h[:3]}-{_hex(name, 12)}"
        return rid, {"arn": _arn("kms", f"key/{rid}"), "keyId": rid}
    if typ == "aws:sqs/queue:Queue":
        qname = inputs.get("name") or name
        rid = f"https://sqs.{region}.amazonaws.com/{ACCOUNT}/{qname}"
        return rid, {"arn": _arn("sqs", qname), "url": rid, "name": qname}
    if typ == "aws:cloudwatch/eventRule:EventRule":
        rname = inputs.get("name") or name
        return rname, {"arn": _arn("events", f"rule/{rname}"), "name": rname}
    if typ == "aws:acm/certificate:Certificate":
        rid = _arn("acm", f"certificate/{h[:8]}-{h[8:12]}-{h[12:16]}")
        return rid, {"arn": rid}
    return None


def _storage_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """S3 buckets and EFS and FSx for Lustre file systems."""
    if typ in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"):
        bucket = inputs.get("bucket") or f"{name}-{h[:8]}"
        return bucket, {
            "bucket": bucket,
            "arn": f"arn:aws:s3:::{bucket}",
            "bucketDomainName": f"{bucket}.s3.amazonaws.com",
        }
    if typ == "aws:efs/fileSystem:FileSystem":
        rid = f"fs-{h}"
        return rid, {
            "arn": _arn("elasticfilesystem", f"file-system/{rid}"),
            "dnsName": f"{rid}.efs.{region}.amazonaws.com",
        }
    if typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
        rid = f"fs-{h}"
        return rid, {
            "arn": _arn("fsx", f"file-system/{rid}"),
            "dnsName": f"{rid}.fsx.{region}.amazonaws.com",
            "mountName": h[:8],
        }
    return None


def _eks_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """EKS add-ons, managed node groups and Pod Identity associations."""
    cluster = inputs.get("clusterName")
    if typ == "aws:eks/addon:Addon":
        rid = f"{cluster}:{inputs.get('addonName')}"
        return rid, {"arn": _arn("eks", f"addon/{cluster}/{inputs.get('addonName')}/{h[:8]}")}
    if typ == "aws:eks/nodeGroup:NodeGroup":
        rid = f"{cluster}:{inputs.get('nodeGroupName') or name}"
        return rid, {"arn": _arn("eks", f"nodegroup/{cluster}/{name}/{h[:8]}"), "status": "ACTIVE"}
    if typ == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
        rid = f"a-{h}"
        return rid, {"associationArn": _arn("eks", f"podidentityassociation/{rid}"), "associationId": rid}
    return None


def _random_outputs(typ: str, name: str, h: str, inputs: dict[str, Any], region: str) -> _Found:
    """pulumi-random's RandomPassword: a deterministic fake `result` of the asked length, letters and
    digits only (what `special: false` gives), so renders and goldens are stable offline."""
    if typ == "random:index/randomPassword:RandomPassword":
        length = int(inputs.get("length", 16))
        digest = "".join(_hex(f"{name}/{n}") for n in range(length // 16 + 1))
        return f"{name}-{h[:8]}", {"result": ("mock" + digest)[:length], "bcryptHash": f"$2a$10${h}"}
    return None


_AWS_OUTPUTS = (
    _network_outputs,
    _iam_outputs,
    _key_queue_and_certificate_outputs,
    _storage_outputs,
    _eks_outputs,
    _random_outputs,
)


class RecordingMonitor(MockMonitor):
    """Captures what MockResourceArgs leaves out: parent, dependencies and provider URNs."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks
        mocks.monitor = self

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        if request.type != "pulumi:pulumi:Stack":
            urn = self.make_urn(request.parent, request.type, request.name)
            # The URN the engine would give it (pkg/resource/deploy/deployment.go: the parent's whole
            # qualified type, none for a child of the root stack); the mock's own keeps one level.
            parent = self.recording.engine_urns.get(request.parent, "") if request.parent else ""
            parent_type = parent.split("::")[2] if parent.count("::") >= 3 else ""
            engine_urn = "::".join(
                [
                    f"urn:pulumi:{pulumi.get_stack()}",
                    pulumi.get_project(),
                    f"{parent_type}${request.type}" if parent_type else request.type,
                    request.name,
                ]
            )
            self.recording.engine_urns[urn] = engine_urn
            if engine_urn in self.recording.urns:
                self.recording.duplicate_urns.append(engine_urn)
            self.recording.urns.add(engine_urn)
            timeouts = request.customTimeouts
            self.recording._pending[(request.type, request.name)] = _Registration(
                parent=request.parent,
                urn=urn,
                depends_on=sorted(set(request.dependencies)),
                provider=request.provider,
                protect=bool(request.protect),
                retain_on_delete=bool(getattr(request, "retainOnDelete", False)),
                remote=bool(request.remote),
                custom_timeouts={k: v for k in ("create", "update", "delete") if (v := getattr(timeouts, k, ""))},
                delete_before_replace=bool(request.deleteBeforeReplace),
                replace_on_changes=sorted(request.replaceOnChanges),
                aliases=self.alias_urns(request),
            )
        return super().RegisterResource(request)

    def alias_urns(self, request: Any) -> list[str]:
        """The URNs a registration's aliases name, in the mocks' URN form: a whole URN as given, a spec
        (another name, type or parent) as make_urn would form it."""
        found = list(getattr(request, "aliasURNs", []))
        for alias in getattr(request, "aliases", []):
            if alias.urn:
                found.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            found.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return sorted(set(found))


def without_source_positions() -> None:
    """Stop the SDK walking the whole Python stack on every registration: it does so to send the
    engine each resource's source position (which `pulumi up` shows in its diagnostics), and no mock
    reads it. Under pytest the walk is a fifth of a render. The offline render and the benchmark's
    SDK floor both run this way; a live `pulumi up` never calls it."""
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    if not callable(getattr(resource, "_get_stack_trace", None)):  # tests/test_render_files.py holds it
        raise RuntimeError("pulumi.runtime.resource._get_stack_trace is gone: see stacks/mocks.py")
    resource._get_stack_trace = source_pb2.StackTrace  # type: ignore[attr-defined]  # an empty trace


def install(project: str, stack: str) -> RecordingMocks:
    """Install recording mocks for `project`/`stack` and return them."""
    without_source_positions()
    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    return mocks
