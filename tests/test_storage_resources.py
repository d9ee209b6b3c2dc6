"""Model storage as rendered from the example stacks: the bucket, its readers, EFS, FSx for Lustre,
the CSI add-ons with Pod Identity, and the Kubernetes objects each cache choice creates. The shipped
examples are read from their session-cached renders; a modified stack file builds only the storage
concern (ModelStorage) for its resolved stack, under the mocks."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.storage.cache import streamed_prefixes
from components.storage.component import ModelStorage, ModelStorageArgs
from stacks.load import ROOT
from stacks.mocks import Record, RecordingMocks
from stacks.render import manifest
from tests.builders import resolved_stack
from tests.conftest import rendered_stack, sections_of

EXAMPLES = ROOT / "stacks" / "examples"


def rendered(name: str) -> list[Record]:
    return rendered_stack(EXAMPLES / f"Pulumi.{name}.yaml").resources


def storage_records(mocks: RecordingMocks, sections: dict[str, Any]) -> list[Record]:
    """What the storage concern registers for this stack file, named and wired as the Platform does
    (one Namespace per model namespace, the cluster's provider), without the rest of the program."""
    stack = resolved_stack(sections)
    assert stack.cluster is not None, "a stack that creates its storage"
    zones = stack.cluster.vpc.availability_zones

    @pulumi.runtime.test
    def build():
        provider = k8s.Provider("platform-k8s", kubeconfig="{}")
        namespaces = {
            ns: k8s.core.v1.Namespace(
                f"platform-ns-{ns}", metadata={"name": ns}, opts=pulumi.ResourceOptions(provider=provider)
            )
            for ns in stack.namespaces
        }
        ModelStorage(
            "platform-storage",
            ModelStorageArgs(
                storage=stack.platform.storage,
                cluster=stack.cluster,
                cluster_name=stack.platform.cluster_name,
                vpc_id="vpc-0test",
                private_subnet_ids=[f"subnet-0test{i}" for i in range(zones)],
                cluster_security_group_id="sg-0test",
                namespaces=namespaces,
                provider=provider,
                tags={},
                region=stack.region,
                streamed_prefixes=streamed_prefixes(stack.models),
            ),
        )

    build()
    return list(mocks.records)


def of_type(name: str, typ: str) -> list[Record]:
    return [r for r in rendered(name) if r.type == typ]


def one(name: str, typ: str) -> Record:
    found = of_type(name, typ)
    assert len(found) == 1, f"expected one {typ} in {name}, found {[r.name for r in found]}"
    return found[0]


def k8s_objects(name: str, kind: str) -> list[dict]:
    return [manifest(r) for r in rendered(name) if r.type.startswith("kubernetes:") and r.type.endswith(f":{kind}")]


# --- the model bucket -------------------------------------------------------------------------------


def test_the_created_model_bucket_is_encrypted_versioned_private_and_tls_only():
    bucket = one("storage-efs", "aws:s3/bucket:Bucket")
    assert bucket.inputs.get("forceDestroy") is False, "deleting the stack must never empty the weights bucket"
    sse = one("storage-efs", "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    versioning = one("storage-efs", "aws:s3/bucketVersioning:BucketVersioning")
    assert versioning.inputs["versioningConfiguration"]["status"] == "Enabled", "an overwritten model can be restored"
    block = one("storage-efs", "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    for key in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"):
        assert block.inputs[key] is True, f"{key} keeps model weights from ever being public"
    policy = json.loads(one("storage-efs", "aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    deny = policy["Statement"][0]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert any(r.endswith("/*") for r in deny["Resource"]), "objects, not just the bucket, refuse plain HTTP"
    assert block.urn in one("storage-efs", "aws:s3/bucketPolicy:BucketPolicy").depends_on


def test_stateful_storage_is_protected_and_retained_by_default():
    for example, typ in (
        ("storage-efs", "aws:s3/bucket:Bucket"),
        ("storage-efs", "aws:efs/fileSystem:FileSystem"),
    ):
        record = one(example, typ)
        assert record.protect, f"{typ} must not be deleted by a stray `pulumi destroy`"
        assert record.retain_on_delete, f"{typ} survives being removed from the program"
    # The FSx cache is not state: the bucket above is the retained copy, and a retained file system's
    # network interfaces would fail the VPC's deletion (tests/test_destroy.py).
    fsx = one("storage-fsx", "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert not fsx.protect and not fsx.retain_on_delete, "the FSx cache is deleted with its VPC"


def test_switching_protect_off_leaves_stateful_storage_deletable(mocks):
    sections = sections_of(EXAMPLES / "Pulumi.storage-efs.yaml")
    sections["storage"]["protect"] = False
    resources = storage_records(mocks, sections)
    fs = next(r for r in resources if r.type == "aws:efs/fileSystem:FileSystem")
    assert not fs.protect and not fs.retain_on_delete
    claim_class = next(r for r in resources if r.type == "kubernetes:storage.k8s.io/v1:StorageClass")
    assert claim_class.inputs["reclaimPolicy"] == "Delete"


def test_an_adopted_bucket_is_not_created_and_readers_get_its_arn():
    assert not of_type("storage-fsx", "aws:s3/bucket:Bucket"), "adopting must not try to create the bucket"
    (reader,) = [r for r in of_type("storage-fsx", "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-read")]
    policy = json.loads(reader.inputs["policy"])
    resources = [r for s in policy["Statement"] for r in s["Resource"]]
    assert "arn:aws:s3:::acme-models" in resources and "arn:aws:s3:::acme-models/platform/*" in resources


def test_serving_pods_read_the_bucket_through_pod_identity_not_the_node_role():
    role = next(r for r in of_type("storage-efs", "aws:iam/role:Role") if r.name.endswith("readers-role"))
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    policies = {
        r.name.rsplit("-", 1)[1]: json.loads(r.inputs["policy"])
        for r in of_type("storage-efs", "aws:iam/rolePolicy:RolePolicy")
    }
    assert set(policies) == {"read"}
    statements = policies["read"]["Statement"]
    actions = {a for s in statements for a in s["Action"]}
    assert actions == {"s3:ListBucket", "s3:GetBucketLocation", "s3:GetObject", "s3:PutObject"}, "nothing else"
    (write,) = [s for s in statements if "s3:PutObject" in s["Action"]]
    assert write["Action"] == ["s3:PutObject"], "the one write: benchmark results"
    assert all(r.endswith("/platform/_benchmarks/*") for r in write["Resource"]), "never beside the weights"
    readers = [
        a
        for a in of_type("storage-efs", "aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if "storage" in a.name
    ]
    assert len(readers) == 1, readers
    association = readers[0]
    assert association.inputs["namespace"] == "inference"
    assert association.inputs["serviceAccount"] == "model-reader"
    accounts = k8s_objects("storage-efs", "ServiceAccount")
    assert [(a["metadata"]["namespace"], a["metadata"]["name"]) for a in accounts] == [("inference", "model-reader")]


# --- EFS ---------------------------------------------------------------------------------------------


def test_efs_is_encrypted_with_elastic_throughput_and_a_mount_target_per_private_subnet():
    fs = one("storage-efs", "aws:efs/fileSystem:FileSystem")
    assert fs.inputs["encrypted"] is True
    assert fs.inputs["throughputMode"] == "elastic"
    targets = of_type("storage-efs", "aws:efs/mountTarget:MountTarget")
    subnets = [r for r in rendered("storage-efs") if r.type == "aws:ec2/subnet:Subnet" and "private" in r.name]
    assert len(targets) == len(subnets) == 3, "every zone's nodes need a mount target"
    assert len({t.inputs["subnetId"] for t in targets}) == 3, "one mount target per subnet, not three in one"


def test_efs_admits_nfs_only_from_the_cluster_security_group():
    rules = of_type("storage-efs", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert len(rules) == 1, "NFS is the only way in"
    rule = rules[0].inputs
    assert (rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 2049, 2049)
    assert rule["referencedSecurityGroupId"].startswith("sg-") and "cidrIpv4" not in rule, "from the cluster SG only"
    groups = {tuple(t.inputs["securityGroups"]) for t in of_type("storage-efs", "aws:efs/mountTarget:MountTarget")}
    assert groups == {(rule["securityGroupId"],)}, "every mount target sits behind the NFS-only group"


def test_the_efs_csi_driver_is_an_eks_addon_with_a_pod_identity_role():
    addon = next(
        r for r in of_type("storage-efs", "aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-efs-csi-driver"
    )
    assoc = addon.inputs["podIdentityAssociations"]
    assert assoc[0]["serviceAccount"] == "efs-csi-controller-sa"
    attachment = next(
        r for r in of_type("storage-efs", "aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "efs-csi" in r.name
    )
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"


def test_efs_gives_each_namespace_a_readwritemany_claim_from_an_access_point_storage_class():
    [sc] = [c for c in k8s_objects("storage-efs", "StorageClass") if c["provisioner"] == "efs.csi.aws.com"]
    assert sc["parameters"]["provisioningMode"] == "efs-ap"
    assert sc["parameters"]["fileSystemId"].startswith("fs-")
    [claim] = k8s_objects("storage-efs", "PersistentVolumeClaim")
    assert claim["metadata"] == {**claim["metadata"], "name": "model-cache", "namespace": "inference"}
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "replicas on different nodes share it"
    assert claim["spec"]["storageClassName"] == sc["metadata"]["name"]


# --- FSx for Lustre ----------------------------------------------------------------------------------


def test_fsx_is_persistent_2_in_one_private_subnet_with_the_configured_size():
    fs = one("storage-fsx", "aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert fs["deploymentType"] == "PERSISTENT_2"
    assert (fs["storageCapacity"], fs["perUnitStorageThroughput"]) == (2400, 250)
    assert isinstance(fs["subnetIds"], str) and fs["subnetIds"].startswith("subnet-")


def test_fsx_admits_the_lustre_ports_from_the_cluster_and_from_itself():
    sg = one("storage-fsx", "aws:ec2/securityGroup:SecurityGroup")
    rules = of_type("storage-fsx", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    ports = {(r.inputs["fromPort"], r.inputs["toPort"]) for r in rules}
    assert ports == {(988, 988), (1018, 1023)}, "Lustre uses 988 and 1018-1023, nothing else"
    sources = {r.inputs["referencedSecurityGroupId"] for r in rules}
    assert len(sources) == 2, "from the cluster security group and from the file system's own group"
    assert all(r.inputs["ipProtocol"] == "tcp" and "cidrIpv4" not in r.inputs for r in rules)
    assert sg.name.endswith("fsx-sg")
    egress = of_type("storage-fsx", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert {(r.inputs["fromPort"], r.inputs["toPort"]) for r in egress} == ports
    assert {r.inputs["referencedSecurityGroupId"] for r in egress} == sources, "no egress beyond Lustre peers"


def test_fsx_imports_the_model_bucket_path_through_a_data_repository_association():
    dra = one("storage-fsx", "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation").inputs
    assert dra["dataRepositoryPath"] == "s3://acme-models/llm/"
    assert dra["fileSystemPath"] == "/"
    assert dra["batchImportMetaDataOnCreate"] is True
    assert set(dra["s3"]["autoImportPolicy"]["events"]) == {"NEW", "CHANGED", "DELETED"}
    assert dra["deleteDataInFilesystem"] is False


def test_the_fsx_csi_driver_is_an_eks_addon_with_a_pod_identity_role():
    addon = next(
        r for r in of_type("storage-fsx", "aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-fsx-csi-driver"
    )
    assert addon.inputs["podIdentityAssociations"][0]["serviceAccount"] == "fsx-csi-controller-sa"


def test_fsx_is_bound_statically_through_a_persistent_volume_per_namespace():
    [pv] = k8s_objects("storage-fsx", "PersistentVolume")
    [claim] = k8s_objects("storage-fsx", "PersistentVolumeClaim")
    assert pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com"
    attrs = pv["spec"]["csi"]["volumeAttributes"]
    assert attrs["dnsname"].endswith(".amazonaws.com") and attrs["mountname"], "the driver mounts by these"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["claimRef"] == {"namespace": "inference", "name": "model-cache"}
    assert claim["spec"]["volumeName"] == pv["metadata"]["name"]
    assert claim["spec"]["storageClassName"] == "" == pv["spec"]["storageClassName"], "no dynamic provisioning"
    assert claim["spec"]["accessModes"] == pv["spec"]["accessModes"] == ["ReadWriteMany"]


# --- local NVMe ---------------------------------------------------------------------------------------


def test_the_local_cache_creates_no_file_system_or_claim():
    assert not of_type("storage-local", "aws:efs/fileSystem:FileSystem")
    assert not of_type("storage-local", "aws:fsx/lustreFileSystem:LustreFileSystem")
    assert not k8s_objects("storage-local", "PersistentVolumeClaim")
    assert k8s_objects("storage-local", "ServiceAccount"), "pods still read the bucket through Pod Identity"


def test_every_model_namespace_gets_its_reader_and_its_claim_on_the_cluster_provider(mocks):
    sections = sections_of(EXAMPLES / "Pulumi.storage-efs.yaml")
    sections["models"][1]["namespace"] = "neuron-models"
    resources = storage_records(mocks, sections)
    associations = [
        r
        for r in resources
        if r.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation" and "storage-readers" in r.name
    ]
    assert sorted(a.inputs["namespace"] for a in associations) == ["inference", "neuron-models"]
    claims = [r for r in resources if r.type == "kubernetes:core/v1:PersistentVolumeClaim"]
    assert sorted(c.inputs["metadata"]["namespace"] for c in claims) == ["inference", "neuron-models"]
    provider = next(r for r in resources if r.type == "pulumi:providers:kubernetes")
    storage_objects = [r for r in resources if r.type.startswith("kubernetes:") and "storage" in r.name]
    assert storage_objects and all(r.provider.startswith(provider.urn) for r in storage_objects), (
        "storage objects must target the cluster, never an ambient kubeconfig"
    )


def test_a_generated_bucket_name_is_prefixed_by_the_cluster_within_the_s3_limit():
    prefix = one("storage-efs", "aws:s3/bucket:Bucket").inputs["bucketPrefix"]
    assert prefix == "storage-efs-models-" and len(prefix) <= 37, "S3 allows prefixes of at most 37 characters"


def test_no_shared_cache_means_no_file_system_and_no_csi_addon(dev, mocks):
    dev["storage"] = {"modelCache": "none"}
    resources = storage_records(mocks, dev)
    types = {r.type for r in resources}
    assert "aws:efs/fileSystem:FileSystem" not in types and "aws:fsx/lustreFileSystem:LustreFileSystem" not in types
    addons = {r.inputs["addonName"] for r in resources if r.type == "aws:eks/addon:Addon"}
    assert not addons & {"aws-efs-csi-driver", "aws-fsx-csi-driver"}
    assert "aws:s3/bucket:Bucket" in types, "the model bucket exists whatever the cache"
