"""The dev stack under mocks: network, EKS cluster, add-ons, system nodes and the provider."""

from __future__ import annotations

import json

from stacks.mocks import RecordingMocks


def records(dev_render) -> RecordingMocks:
    return dev_render.mocks


def test_the_cluster_uses_api_authentication_with_admin_access_entries(dev_render):
    cluster = records(dev_render).of_type("eks:index:Cluster")[0].inputs
    assert cluster["authenticationMode"] == "API"
    entry = cluster["accessEntries"]["admin-0"]
    assert entry["principalArn"] == "arn:aws:iam::111122223333:role/platform-admins"
    assert entry["accessPolicies"]["cluster-admin"]["policyArn"].endswith("AmazonEKSClusterAdminPolicy")


def test_the_cluster_is_pinned_logged_encrypted_and_has_no_default_node_group(dev_render):
    cluster = records(dev_render).of_type("eks:index:Cluster")[0].inputs
    kms = records(dev_render).of_type("aws:kms/key:Key")[0]
    assert cluster["version"] == "1.34"
    assert cluster["skipDefaultNodeGroup"] is True
    assert cluster["createOidcProvider"] is True
    assert set(cluster["enabledClusterLogTypes"]) == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    assert cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    assert cluster["encryptionConfigKeyArn"].startswith("arn:aws:kms:"), "secrets must be KMS-encrypted"
    assert kms.inputs["enableKeyRotation"] is True
    assert cluster["endpointPrivateAccess"] is True
    assert cluster["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_the_six_eks_addons_are_managed_and_ebs_csi_has_its_own_role(dev_render):
    # The cluster's own add-ons; storage adds its CSI drivers (tests/test_storage_*.py).
    addons = {
        r.inputs["addonName"]: r
        for r in records(dev_render).of_type("aws:eks/addon:Addon")
        if r.name.startswith("platform-cluster-")
    }
    assert set(addons) == {
        "vpc-cni",
        "coredns",
        "kube-proxy",
        "eks-pod-identity-agent",
        "aws-ebs-csi-driver",
        "eks-node-monitoring-agent",
    }
    assoc = addons["aws-ebs-csi-driver"].inputs["podIdentityAssociations"][0]
    assert assoc["serviceAccount"] == "ebs-csi-controller-sa"
    role = records(dev_render).named("aws:iam/role:Role", "platform-cluster-ebs-csi")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert all(a.inputs["addonVersion"] for a in addons.values()), "every add-on version is pinned or resolved"


def test_the_system_node_group_is_al2023_and_waits_for_networking(dev_render):
    rec = records(dev_render)
    group = rec.of_type("aws:eks/nodeGroup:NodeGroup")[0]
    assert group.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert group.inputs["instanceTypes"] == ["m7i.large"]
    assert group.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 4, "desiredSize": 2}
    cni = rec.named("aws:eks/addon:Addon", "platform-cluster-vpc-cni")
    assert cni.urn in group.depends_on, "nodes need the CNI to become Ready"
    coredns = rec.named("aws:eks/addon:Addon", "platform-cluster-coredns")
    assert group.urn in coredns.depends_on, "CoreDNS pods need nodes to run on"


def test_the_network_spans_three_zones_with_tagged_subnets(dev_render):
    subnets = records(dev_render).of_type("aws:ec2/subnet:Subnet")
    private = [s for s in subnets if "private" in s.name]
    public = [s for s in subnets if "public" in s.name]
    assert len(private) == 3 and len(public) == 3
    assert all(s.inputs["tags"]["karpenter.sh/discovery"] == "inference-dev" for s in private)
    assert all(s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1" for s in private)
    assert all(s.inputs["tags"]["kubernetes.io/role/elb"] == "1" for s in public)
    assert len({s.inputs["availabilityZone"] for s in private}) == 3
    assert records(dev_render).of_type("aws:ec2/natGateway:NatGateway"), "private subnets need NAT"


def test_the_cluster_security_group_is_tagged_for_karpenter(dev_render):
    tag = records(dev_render).named("aws:ec2/tag:Tag", "platform-cluster-sg-discovery")
    assert tag.inputs["key"] == "karpenter.sh/discovery" and tag.inputs["value"] == "inference-dev"


def test_there_is_one_explicit_kubernetes_provider_from_the_cluster_kubeconfig(dev_render):
    providers = records(dev_render).of_type("pulumi:providers:kubernetes")
    assert len(providers) == 1
    assert "inference-dev" in json.dumps(providers[0].inputs["kubeconfig"])


def test_every_kubernetes_object_uses_the_cluster_provider(dev_render):
    provider = records(dev_render).of_type("pulumi:providers:kubernetes")[0]
    for obj in records(dev_render).records:
        if obj.type.startswith("kubernetes:"):
            assert obj.provider.startswith(provider.urn), f"{obj.type} {obj.name} uses {obj.provider}"


def test_outputs_carry_plain_cluster_values_and_a_secret_kubeconfig(dev_render):
    out = dev_render.outputs
    assert out["clusterName"] == "inference-dev"
    assert out["clusterEndpoint"].startswith("https://")
    assert out["oidcProviderArn"].startswith("arn:aws:iam::")
    assert out["kubeconfig"] == "[secret]", "the kubeconfig output must be a Pulumi secret"


def test_eks_addon_versions_from_the_stack_file_are_used_and_exported(dev_render, dev, mocks):
    import pulumi

    from components.cluster import Cluster, ClusterArgs
    from tests.builders import resolved_stack

    dev["cluster"]["addonVersions"] = {"vpc-cni": "v1.20.4-eksbuild.1"}
    stack = resolved_stack(dev)
    assert stack.cluster is not None
    versions: list[dict[str, str]] = []

    @pulumi.runtime.test
    def build():
        cluster = Cluster(
            "platform-cluster",
            ClusterArgs(
                config=stack.cluster,
                prod=stack.prod,
                vpc_id="vpc-0test",
                private_subnet_ids=["subnet-0a", "subnet-0b", "subnet-0c"],
                public_subnet_ids=["subnet-0d", "subnet-0e", "subnet-0f"],
                tags={},
            ),
        )
        return cluster.addon_versions.apply(versions.append)

    build()
    cni = mocks.named("aws:eks/addon:Addon", "platform-cluster-vpc-cni")
    assert cni.inputs["addonVersion"] == "v1.20.4-eksbuild.1", "the stack file's pin wins over the default"
    assert versions[0]["vpc-cni"] == "v1.20.4-eksbuild.1", "the cluster reports the version it installed"
    expected = {"vpc-cni", "kube-proxy", "eks-pod-identity-agent", "coredns", "aws-ebs-csi-driver"}
    assert set(versions[0]) == expected, "one version per managed add-on"
    # The dev stack also runs the node monitoring agent (addons.nodeMonitoringAgent, on by default).
    exported = expected | {"eks-node-monitoring-agent"}
    assert set(dev_render.outputs["eksAddonVersions"]) == exported, "and the stack exports what the cluster reports"


def test_an_adopted_vpc_creates_no_network_and_tags_its_subnets(dev):
    from tests.conftest import render_sections

    dev["cluster"]["vpc"] = {
        "id": "vpc-0abc12345678",
        "privateSubnetIds": ["subnet-0aaa11111111", "subnet-0aaa22222222"],
        "publicSubnetIds": ["subnet-0bbb11111111"],
    }
    rendered = render_sections(dev)
    assert not rendered.mocks.of_type("aws:ec2/vpc:Vpc"), "an adopted VPC is not created"
    assert not rendered.mocks.of_type("aws:ec2/subnet:Subnet")
    tags = {(t.inputs["resourceId"], t.inputs["key"]) for t in rendered.mocks.of_type("aws:ec2/tag:Tag")}
    assert ("subnet-0aaa11111111", "karpenter.sh/discovery") in tags
    assert ("subnet-0aaa22222222", "kubernetes.io/role/internal-elb") in tags
    assert ("subnet-0bbb11111111", "kubernetes.io/role/elb") in tags
    cluster = rendered.mocks.of_type("eks:index:Cluster")[0].inputs
    assert cluster["vpcId"] == "vpc-0abc12345678"
    assert cluster["privateSubnetIds"] == ["subnet-0aaa11111111", "subnet-0aaa22222222"]
