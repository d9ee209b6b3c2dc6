"""Issue 13, the names and types part: names checked by the rule of what they become, reserved
namespaces, identifiers that become paths or arguments, values used byte for byte, the bounds of
the rendered objects' schemas, and every list of named things unique. Each test uses the issue's
own example where it has one, and names the exact key path the refusal must carry."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stacks.config import StackConfig
from stacks.pipeline import check_sections
from tests.conftest import ALL_STACKS, DEV, EXAMPLES, rendered_stack, sections_of
from tests.guard_support import problems_of, refused

P = "inference-platform:"
SERVING = next(p for p in EXAMPLES if p.name == "Pulumi.serving.yaml")
ENGINES = next(p for p in EXAMPLES if p.name == "Pulumi.engines.yaml")
TEAM = next(p for p in EXAMPLES if p.name == "Pulumi.team-search.yaml")


def dev() -> dict[str, Any]:
    return sections_of(DEV)


def model(sections: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    i = next(i for i, m in enumerate(sections["models"]) if m["name"] == name)
    return i, sections["models"][i]


# ---- values as written: control characters, whitespace, empty strings -------------------------------


def test_a_nul_character_in_engine_args_env_or_a_jwt_audience_is_refused_at_its_key():
    s = dev()
    s["models"][0]["engineArgs"] = ["--max-num-seqs", "16\x00"]
    s["gateway"] = {
        **s["gateway"],
        "auth": "jwt",
        "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks", "audiences": ["api\x00"]},
    }
    refused(s, "models[0].engineArgs[1]", "control character (U+0000)")
    refused(s, "gateway.jwt.audiences[0]", "control character")


def test_bidirectional_overrides_and_zero_width_characters_are_refused():
    s = dev()
    s["cluster"]["admins"] = ["arn:aws:iam::111122223333:role/platform\u202eadmins"]
    s["models"][0]["engineArgs"] = ["--served\u200b-model"]
    refused(s, "cluster.admins[0]", "invisible formatting character (U+202E)")
    refused(s, "models[0].engineArgs[0]", "U+200B")


def test_the_fast_path_of_the_character_check_skips_no_refused_character():
    """text_problem scans character by character only when str.isprintable() is False: that holds
    for every character of a refused category (checked over the Basic Multilingual Plane, and for the
    planes' private-use and format characters), so a printable value cannot hide one."""
    import sys
    import unicodedata

    from stacks.config.base import _REFUSED_CATEGORIES, text_problem

    chars = [*map(chr, range(0x10000)), "\U000e0001", "\U000f0000", "\U0010fffd"]
    refused = [c for c in chars if unicodedata.category(c) in _REFUSED_CATEGORIES]
    assert {unicodedata.category(c) for c in refused} == set(_REFUSED_CATEGORIES)
    assert not [c for c in refused if c.isprintable()]
    assert all(text_problem(f"a{c}b") for c in refused[:: max(1, len(refused) // 200)])
    assert text_problem("x" * 5_000_000) is None and sys.maxunicode >= 0x10FFFD


def test_leading_or_trailing_whitespace_is_refused_never_stripped():
    s = dev()
    s["gateway"]["hostname"] = "inference.dev.example.com "
    s["cluster"]["name"] = " inference-dev"
    refused(s, "gateway.hostname", "leading or trailing whitespace", "never trimmed")
    refused(s, "cluster.name", "leading or trailing whitespace")


def test_an_empty_string_in_a_list_is_refused():
    s = dev()
    s["cluster"]["admins"] = ["arn:aws:iam::111122223333:role/platform-admins", ""]
    s["models"][0]["engineArgs"] = [""]
    refused(s, "cluster.admins[1]", "empty string")
    refused(s, "models[0].engineArgs[0]", "empty string")


def test_a_control_character_in_a_map_key_is_refused():
    s = sections_of(SERVING)
    s["addons"]["litellm"]["fallbacks"] = {"qwen3-8b-lora\x1b": ["gpt-4o-mini"]}
    found = problems_of(s)
    assert any("fallbacks" in p and "(the key)" in p and "U+001B" in p for p in found), found


def test_text_problems_come_with_the_other_problems_of_the_file():
    s = dev()
    s["models"][0]["engineArgs"] = ["\x00"]
    s["models"][1]["bogusKey"] = 1
    found = problems_of(s)
    assert any(p.startswith(f"{P}models[0].engineArgs[0]:") for p in found), found
    assert any(p.startswith(f"{P}models[1].bogusKey:") and "unknown key" in p for p in found), found


# ---- ASCII only: ARNs, account ids -------------------------------------------------------------------


def test_unicode_letters_and_digits_do_not_pass_the_iam_and_acm_arn_patterns():
    s = dev()
    s["cluster"]["admins"] = ["arn:aws:iam::111122223333:role/ädmins", "arn:aws:iam::١١١١٢٢٢٢٣٣٣٣:role/admins"]
    s["gateway"]["tls"] = {"certificateArn": "arn:aws:acm:us-west-2:١١١١٢٢٢٢٣٣٣٣:certificate/0f1e2d3c-4b5a"}
    refused(s, "cluster.admins[0]", "pattern")
    refused(s, "cluster.admins[1]", "pattern")
    refused(s, "gateway.tls.certificateArn", "pattern")


# ---- S3 bucket names and the cluster name as a bucket prefix -----------------------------------------


@pytest.mark.parametrize(
    ("bucket", "why"),
    [
        ("acme..models", "two adjacent dots"),
        ("192.168.10.20", "IP address"),
        ("xn--models", "xn--"),
        ("sthree-models", "sthree-"),
        ("amzn-s3-demo-models", "amzn-s3-demo-"),
        ("models-s3alias", "-s3alias"),
        ("models--ol-s3", "--ol-s3"),
        ("models.mrap", ".mrap"),
        ("models--x-s3", "--x-s3"),
        ("ab", "3 to 63"),
        ("Acme-Models", "lower-case"),
    ],
)
def test_s3_bucket_names_follow_the_aws_naming_rules(bucket, why):
    s = dev()
    s["storage"]["modelBucket"] = {"create": False, "name": bucket}
    refused(s, "storage.modelBucket.name", why)


def test_an_fsx_import_path_and_an_adapter_url_are_held_to_the_bucket_rules_and_a_safe_prefix():
    s = sections_of(next(p for p in EXAMPLES if p.name == "Pulumi.storage-fsx.yaml"))
    s["storage"]["fsx"]["importPath"] = "s3://acme..models/weights/"
    refused(s, "storage.fsx.importPath", "two adjacent dots")
    s = sections_of(SERVING)
    i, m = model(s, "qwen3-8b-lora")
    m["adapters"][0]["artifactURL"] = "s3://acme-models/adapters/../../other-team/"
    refused(s, f"models[{i}].adapters[0].artifactURL", "`..` segment")


def test_a_cluster_name_with_an_underscore_is_refused_when_it_prefixes_the_model_bucket():
    s = dev()
    s["cluster"]["name"] = "inference_dev"
    refused(s, "cluster.name", "model bucket", "inference_dev-models-")
    s["storage"]["modelBucket"] = {"create": True, "name": "acme-inference-models"}
    assert not any(p.startswith(f"{P}cluster.name:") for p in problems_of(s)), "a named bucket takes no prefix"


def test_a_cluster_name_that_starts_a_reserved_bucket_prefix_is_refused():
    s = dev()
    s["cluster"]["name"] = "xn--cluster"
    refused(s, "cluster.name", "xn--")


def test_every_name_derived_from_a_long_cluster_name_satisfies_iam_sqs_and_eventbridge():
    from stacks.names import aws_names

    for name, what, pattern in aws_names("a" * 82):
        assert pattern.match(name), (what, name)


def test_the_role_purposes_checked_are_the_roles_the_render_creates():
    from stacks.names import ROLE_PURPOSES, aws_names

    shipped = [next(p for p in EXAMPLES if p.name == f"Pulumi.{n}.yaml") for n in ("storage-fsx", "platform")]
    for path in (DEV, *shipped):
        sections = sections_of(path)
        cluster, teams = sections["cluster"]["name"], [t["name"] for t in sections.get("teams", [])]
        rendered = {r.inputs.get("name") for r in rendered_stack(path).resources if r.type == "aws:iam/role:Role"}
        checked = {n for n, what, _ in aws_names(cluster, teams) if what.startswith("IAM role")}
        assert rendered <= checked, (rendered - checked, ROLE_PURPOSES)
    assert teams, "the platform example declares teams, whose reader and deploy roles are checked"


def test_a_team_whose_role_names_run_long_still_gets_valid_distinct_role_names():
    from stacks.names import IAM_ROLE, aws_names

    long_team = "t" * 40
    roles = [n for n, what, _ in aws_names("c" * 60, [long_team, long_team[:-1] + "u"]) if what.startswith("IAM role")]
    assert all(IAM_ROLE.match(n) for n in roles), roles
    assert len(set(roles)) == len(roles), "cut to 64 with a digest, every role keeps a name of its own"


# ---- hostnames -------------------------------------------------------------------------------------


def test_a_70_character_dns_label_is_refused_as_a_hostname():
    s = dev()
    s["gateway"]["hostname"] = f"{'a' * 70}.example.com"
    refused(s, "gateway.hostname", "label of 70 characters", "at most 63")


def test_a_hostname_over_253_characters_is_refused():
    s = dev()
    s["gateway"]["hostname"] = ".".join(["a" * 60] * 5) + ".com"
    refused(s, "gateway.hostname", "at most 253")


def test_egress_hosts_must_be_dns_names():
    s = sections_of(SERVING)
    s["addons"]["litellm"]["externalProviders"][0]["egressHosts"] = ["api.openai.com/v1", "*.openai.azure.com"]
    refused(s, "addons.litellm.externalProviders[0].egressHosts[0]", "not a DNS name")
    assert not any("egressHosts[1]" in p for p in problems_of(s)), "a leading *. is a host pattern"


# ---- Kubernetes names: what a model's name becomes --------------------------------------------------


def test_a_model_name_starting_with_a_digit_is_refused_since_it_names_a_service():
    s = dev()
    s["models"][0]["name"] = "8b-qwen"
    refused(s, "models[0].name", "pattern")


def test_the_longest_name_derived_from_a_model_fits_its_kubernetes_limit():
    from stacks.names import Derived, model_names, name_problem
    from stacks.resolve.models import model_entry

    s = sections_of(SERVING)
    stack = check_sections(s, "us-west-2")
    for entry in stack.entries:
        longest = max(model_names(entry), key=lambda d: len(d.name) - d.limit)
        assert name_problem(longest) is None, longest
    # Beyond the model-name cap the rule names what the name would become.
    ray = next(e.config for e in stack.entries if e.config.engine == "ray-serve")

    def renamed(length: int) -> list[Derived]:
        return model_names(model_entry(0, ray.model_copy(update={"name": "r" * length}), stack.platform.addons, None))

    assert any("RayService" in (name_problem(d) or "") for d in renamed(48))
    assert any("-serve-svc" in (name_problem(d) or "") for d in renamed(54))


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_object_name_the_render_derives_from_a_model_is_in_the_derivation_table(path):
    """A builder that starts naming an object `<model>-<something>` must add that suffix to
    stacks/names.py, so the rule checks what the name really becomes."""
    from stacks.names import PLATFORM_SUFFIXES, model_names
    from stacks.resolved import CANARY_SUFFIX

    stack = check_sections(sections_of(path), "us-west-2")
    models = {e.name for e in stack.entries}
    # Every suffix a model may get (a canary's too), and the names the engines' operators derive.
    suffixes = set(PLATFORM_SUFFIXES) | {CANARY_SUFFIX}
    known = {e.name: {d.name for d in model_names(e)} for e in stack.entries}
    for obj in rendered_stack(path).manifests():
        name = (obj.get("metadata") or {}).get("name") or ""
        for m in models:
            listed = name[len(m) :] in suffixes or name in known[m]
            derived = name.startswith(f"{m}-") and not listed and name[len(m) + 1 :] not in models
            if derived and not any(other != m and name.startswith(other) for other in models):
                pytest.fail(f"{obj['kind']} {name} is derived from model {m} with an unlisted suffix")


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_every_rendered_kubernetes_name_and_label_value_is_within_its_limit(path):
    label = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
    for obj in rendered_stack(path).manifests():
        meta = obj.get("metadata") or {}
        assert len(meta.get("name", "")) <= 253, meta.get("name")
        if obj.get("kind") in ("Service", "Namespace"):
            assert re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", meta["name"]) and len(meta["name"]) <= 63, meta["name"]
        for value in (meta.get("labels") or {}).values():
            assert len(str(value)) <= 63 and label.match(str(value)), value


@pytest.mark.parametrize("path", ALL_STACKS, ids=lambda p: p.name)
def test_helm_release_names_fit_53_characters(path):
    for release in rendered_stack(path).releases():
        assert len(release["name"]) <= 53 and re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", release["name"]), release


# ---- reserved namespaces ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "namespace",
    [
        "kube-system",
        "default",
        "kube-public",
        "kube-node-lease",
        "kube-anything",
        "monitoring",
        "inference-gateway",
        "envoy-gateway-system",
        "litellm",
        "dynamo-system",
        "aibrix-system",
        "kuberay-system",
        "nim-operator",
    ],
)
def test_a_model_namespace_the_platform_or_kubernetes_owns_is_refused(namespace):
    s = dev()
    s["models"][0]["namespace"] = namespace
    refused(s, "models[0].namespace", namespace)


@pytest.mark.parametrize("team", ["kube-system", "default", "monitoring", "inference-gateway", "inference"])
def test_a_team_named_after_a_reserved_namespace_is_refused(team):
    s = sections_of(TEAM)
    s["stack"]["team"] = team
    for m in s["models"]:
        m.pop("namespace", None)
    refused(s, "stack.team", team)


def test_the_reserved_namespaces_include_every_namespace_the_render_creates_or_installs_into():
    from stacks.names import KUBERNETES_NAMESPACES, platform_namespaces
    from stacks.resolved import DEFAULT_NAMESPACE

    reserved = set(platform_namespaces()) | set(KUBERNETES_NAMESPACES)
    for path in ALL_STACKS:
        rendered = rendered_stack(path)
        config = check_sections(sections_of(path), "us-west-2").config
        own = {m.namespace or DEFAULT_NAMESPACE for m in config.models} | {config.stack.team}
        own |= {ns for team in config.teams for ns in team.all_namespaces}  # a platform creates its teams'
        spaces = {r["namespace"] for r in rendered.releases()} | {
            o["metadata"]["name"] for o in rendered.manifests() if o["kind"] == "Namespace"
        }
        assert spaces - own <= reserved, spaces - own - reserved


# ---- identifiers that become paths or arguments -----------------------------------------------------


def test_a_path_like_revision_is_refused_in_every_environment():
    s = dev()
    assert s["stack"]["environment"] == "dev"
    s["models"][0]["revision"] = "../llama-3-8b-neuron/0e9e39f249a16976918f6564b8830bc894c89659"
    refused(s, "models[0].revision", "not a revision", "no '/'")


@pytest.mark.parametrize("revision", ["main/../x", "v1 .0", "refs/pr/1", "..", "a..b", "x.lock"])
def test_a_revision_is_a_commit_or_a_ref_of_one_safe_segment(revision):
    s = dev()
    s["models"][0]["revision"] = revision
    refused(s, "models[0].revision", "not a revision")


def test_a_disaggregated_prefill_revision_is_held_to_the_same_rule():
    s = sections_of(SERVING)
    i, m = model(s, "qwen3-32b-disagg")
    m["dynamo"]["prefillRevision"] = "../x"
    refused(s, f"models[{i}].dynamo.prefillRevision", "not a revision")


@pytest.mark.parametrize(
    "repo", ["Qwen", "Qwen/Qwen3-8B/extra", "../Qwen3-8B", "Qwen/Qwen3--8B", "Qwen/ Qwen3", "-x/y"]
)
def test_a_hub_model_is_an_org_and_name_of_safe_characters(repo):
    s = dev()
    s["models"][0]["model"] = repo
    refused(s, "models[0].model", "not a Hugging Face repo id")


def test_ollama_names_and_pulls_cannot_walk_paths():
    s = sections_of(ENGINES)
    i, m = model(s, next(x["name"] for x in s["models"] if x["engine"] == "ollama"))
    m["ollama"] = {"pull": ["qwen3:8b", "library/../../etc:latest"]}
    refused(s, f"models[{i}].ollama.pull[1]", "not an Ollama model name")
    m["ollama"] = {"pull": ["qwen3:8b"]}
    m["model"] = "../qwen3:8b"
    refused(s, f"models[{i}].model", "not an Ollama model name")


def test_a_nim_model_path_is_normalized_and_stays_inside_the_cache_mount():
    s = sections_of(ENGINES)
    i, m = model(s, next(x["name"] for x in s["models"] if x["engine"] == "nim"))
    m["nim"]["modelPath"] = "/models/../etc/prepared"
    refused(s, f"models[{i}].nim.modelPath", "not a normalized absolute path")
    m["nim"]["modelPath"] = "/etc/prepared"
    refused(s, f"models[{i}].nim.modelPath", "outside /models")
    m["nim"]["modelPath"] = "/models/llama/prepared"
    assert not any("modelPath" in p for p in problems_of(s))


@pytest.mark.parametrize(
    "requirement",
    ["--extra-index-url=https://evil.example.com", "-e git+https://x/y", "pkg @ https://x/y.whl", "./local", "a b"],
)
def test_ray_serve_pip_entries_are_package_requirements_not_pip_options_or_urls(requirement):
    s = sections_of(SERVING)
    i, m = model(s, "qwen3-4b-ray")
    m["rayServe"]["pip"] = ["vllm-extras==0.1.0", requirement]
    refused(s, f"models[{i}].rayServe.pip[1]", "not a package requirement")


def test_adapter_names_are_unique_in_the_stack_and_never_a_models_name():
    s = sections_of(SERVING)
    i, m = model(s, "qwen3-8b-lora")
    m["adapters"][1]["name"] = m["adapters"][0]["name"]
    refused(s, f"models[{i}].adapters[1].name", "already listed at", "adapter name is listed once")
    m["adapters"][1]["name"] = "qwen3-4b-ray"
    refused(s, f"models[{i}].adapters[1].name", "has the name of models[")


# ---- values reaching their consumer byte for byte, and the rendered schemas' bounds -----------------


def test_jwt_issuer_and_audiences_reach_the_security_policy_exactly_as_written():
    s = dev()
    s["gateway"] = {
        "enabled": True,
        "hostname": "inference.dev.example.com",
        "auth": "jwt",
        "jwt": {
            "issuer": "https://Login.Example.com",
            "jwksUri": "https://login.example.com/keys?v=2",
            "audiences": ["api://Inference"],
        },
        "tls": s["gateway"]["tls"],
    }
    config = check_sections(s, "us-west-2").config
    assert config.gateway.jwt is not None
    assert config.gateway.jwt.issuer == "https://Login.Example.com", "no trailing slash added, nothing lower-cased"
    from components.gateway.routing import Admits, security_policy

    policy = security_policy(config.gateway, "x", "inference", ("HTTPRoute", "x", None), Admits(("platform",), ()))
    provider = policy["spec"]["jwt"]["providers"][0]
    assert provider["issuer"] == "https://Login.Example.com"
    assert provider["remoteJWKS"]["uri"] == "https://login.example.com/keys?v=2"
    assert provider["audiences"] == ["api://Inference"]


def test_jwt_urls_and_audiences_are_bounded_as_the_security_policy_schema_bounds_them():
    s = dev()
    jwt = {
        "issuer": "https://id.example.com/" + "a" * 250,
        "jwksUri": "https://u@id.example.com/jwks",
        "audiences": [f"aud-{i}" for i in range(9)],
    }
    s["gateway"] = {**s["gateway"], "auth": "jwt", "jwt": jwt}
    refused(s, "gateway.jwt.issuer", "at most 253")
    refused(s, "gateway.jwt.jwksUri", "user information")
    refused(s, "gateway.jwt.audiences", "at most 8")


def test_an_image_repository_with_a_registry_port_has_no_tag():
    s = dev()
    s["models"][0]["image"] = {"repository": "registry:5000/vllm/vllm-openai"}
    config = check_sections(s, "us-west-2").config
    assert config.models[0].image.repository == "registry:5000/vllm/vllm-openai"
    assert config.models[0].image.tag is None, "the :5000 is the registry's port"
    s["models"][0]["image"] = {"repository": "vllm/vllm-openai:v0.9.1"}
    refused(s, "models[0].image.repository", "names a tag", "image.tag")
    s["models"][0]["image"] = {"repository": "Registry.Example.com:5000/Team/vllm"}
    refused(s, "models[0].image.repository", "not an image name")


def test_a_disruption_budget_duration_karpenter_refuses_is_refused_at_validate_time():
    s = dev()
    s["nodePools"][0]["disruptionBudgets"] = [{"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "90s"}]
    refused(s, "nodePools[0].disruptionBudgets[0].duration", "pattern")
    s["nodePools"][0]["disruptionBudgets"] = [{"nodes": "0", "schedule": "at nine", "duration": "9h"}]
    refused(s, "nodePools[0].disruptionBudgets[0].schedule", "pattern")


def test_version_keys_take_only_exact_versions():
    for version in ("latest", "^1.2", ">=1", "1.x", "~1.2", "1.2", "*"):
        s = dev()
        s["addons"]["monitoring"] = {"enabled": True, "adapterVersion": version, "version": version}
        refused(s, "addons.monitoring.adapterVersion", "not an exact version")
        refused(s, "addons.monitoring.version", "not an exact version")
    s = dev()
    s["addons"]["monitoring"] = {"enabled": True, "version": "77.0.1", "dcgmExporterVersion": "v4.2.3-rc.1"}
    assert not any("version" in p.lower() for p in problems_of(s))


# ---- every list of named things has unique names; item 9's config part -----------------------------


def test_the_same_admin_arn_twice_is_refused():
    s = dev()
    s["cluster"]["admins"] = ["arn:aws:iam::111122223333:role/platform-admins"] * 2
    refused(s, "cluster.admins[1]", "already listed at", "one access entry per principal")


@pytest.mark.parametrize(
    ("where", "mutate"),
    [
        ("nodePools[1].name", lambda s: s["nodePools"][1].update(name=s["nodePools"][0]["name"])),
        ("cluster.logTypes[1]", lambda s: s["cluster"].update(logTypes=["api", "api"])),
        ("nodePools[0].instanceTypes[1]", lambda s: s["nodePools"][0].update(instanceTypes=["g6.xlarge", "g6.xlarge"])),
        (
            "cluster.endpoint.publicAccessCidrs[1]",
            lambda s: s["cluster"]["endpoint"].update(publicAccessCidrs=["203.0.113.0/24", "203.0.113.0/24"]),
        ),
    ],
)
def test_every_list_of_named_things_names_each_once(where, mutate):
    s = dev()
    mutate(s)
    refused(s, where, "already listed at")


def test_providers_and_their_models_are_listed_once():
    s = sections_of(SERVING)
    provider = s["addons"]["litellm"]["externalProviders"][0]
    s["addons"]["litellm"]["externalProviders"] = [provider, {**provider, "models": ["gpt-4.1"]}]
    refused(s, "addons.litellm.externalProviders[1].name", "already listed at")


def test_each_adopted_subnet_is_listed_once_and_private_or_public():
    s = dev()
    s["cluster"]["vpc"] = {
        "id": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        "publicSubnetIds": ["subnet-0aaaaaaaaaaaaaaa2"],
    }
    refused(s, "cluster.vpc.privateSubnetIds[1]", "already listed at")
    refused(s, "cluster.vpc.publicSubnetIds[0]", "also listed in privateSubnetIds")


def test_a_cpu_pool_cannot_select_accelerator_families_or_types():
    s = dev()
    s["nodePools"].append({"name": "cpu", "accelerator": "none", "instanceFamilies": ["g6"]})
    refused(s, "nodePools[2].instanceFamilies[0]", "family g6 carries nvidia accelerators")
    s["nodePools"][2] = {"name": "cpu", "accelerator": "none", "instanceFamilies": ["g4dn"]}
    refused(s, "nodePools[2].instanceFamilies[0]", "accelerated computing family")
    s["nodePools"][2] = {"name": "cpu", "accelerator": "none", "instanceTypes": ["p3.2xlarge"]}
    refused(s, "nodePools[2].instanceTypes[0]", "accelerated computing type")


def test_system_node_types_must_be_known_cpu_types():
    s = dev()
    s["cluster"]["systemNodes"]["instanceTypes"] = ["m7i.large", "m9z.large", "g6.xlarge"]
    refused(s, "cluster.systemNodes.instanceTypes[1]", "not in the hardware catalog")
    refused(s, "cluster.systemNodes.instanceTypes[2]", "not an x86_64 CPU type")


def test_fsx_capacity_stays_within_what_persistent_2_accepts():
    s = sections_of(next(p for p in EXAMPLES if p.name == "Pulumi.storage-fsx.yaml"))
    s["storage"]["fsx"]["storageCapacityGiB"] = 999_999_999_999
    refused(s, "storage.fsx.storageCapacityGiB", "less than or equal")
    s["storage"]["fsx"]["storageCapacityGiB"] = 3000
    refused(s, "storage.fsx.storageCapacityGiB", "multiple of 2400")


def test_fsx_capacity_above_the_default_account_quota_is_warned_about():
    from stacks.pipeline import stack_warnings

    s = sections_of(next(p for p in EXAMPLES if p.name == "Pulumi.storage-fsx.yaml"))
    s["storage"]["fsx"]["storageCapacityGiB"] = 2400 * 50
    config = check_sections(s, "us-west-2")
    assert any("L-8F1B9C74" in str(w) for w in stack_warnings(config))


def test_the_shipped_stacks_still_validate():
    for path in ALL_STACKS:
        assert isinstance(check_sections(sections_of(path), "us-west-2").config, StackConfig)


def test_an_ipv6_block_for_the_ipv4_clusters_public_endpoint_is_refused():
    s = dev()
    s["cluster"]["endpoint"]["publicAccessCidrs"] = ["203.0.113.0/24", "2001:db8::/32"]
    refused(s, "cluster.endpoint.publicAccessCidrs[1]", "IPv6", "IPv4")


def test_a_cidr_not_written_as_its_network_is_refused_rather_than_rewritten():
    s = dev()
    s["cluster"]["vpc"]["cidr"] = "10.42.0.0/255.255.0.0"
    refused(s, "cluster.vpc.cidr", "write 10.42.0.0/16")


def test_more_disruption_budgets_than_the_nodepool_schema_takes_are_refused():
    s = dev()
    s["nodePools"][0]["disruptionBudgets"] = [{"nodes": "10%"}] * 51
    refused(s, "nodePools[0].disruptionBudgets", "at most 50")
