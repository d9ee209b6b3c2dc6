"""The load step against hostile stack files (issue 13): read as Pulumi reads them, refused with the
deepest key path and never a traceback, in `validate`, `render`, `plan` and the program itself.

The corpus is tests/hostile/ (small text files, one mutation each) plus the files below that are
not text or not small (binary, UTF-16, gzip, 5 MB, deeply nested), written at test time.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from stacks import load, pipeline
from stacks.__main__ import main
from stacks.errors import ConfigError, Problem, short
from stacks.load import AWS_PROVIDER_KEYS, ROOT, read_stack, sections_to_pulumi_config
from stacks.pipeline import check_file, check_sections
from stacks.regions import regions
from stacks.render import mocks, refuse_what_the_engine_would, render_file, run_program
from tests.builders import sourced
from tests.conftest import DEV, sections_of

HOSTILE = Path(__file__).resolve().parent / "hostile"
# The default gateway's client keys and certificate come from Pulumi secrets (placeholders here).
SOURCES = (
    "  inference-platform:secrets:\n"
    "    inference-api-keys: {fromConfig: {default: gatewayKeyDefault}}\n"
    "    inference-tls: {fromConfig: {tls.crt: tlsCertificate, tls.key: tlsPrivateKey}}\n"
    + "".join(
        f"  inference-platform:{k}:\n    secure: v1:placeholder\n"
        for k in ("gatewayKeyDefault", "tlsCertificate", "tlsPrivateKey")
    )
)
MINIMAL = "config:\n  aws:region: us-west-2\n  inference-platform:cluster:\n    name: hostile\n" + SOURCES

# What each corpus file is refused for: (the key path, a part of the message).
EXPECTED = {
    "alias-cycle": ("inference-platform:models[0]", "a cycle"),
    "aws-prefix-typo": ("asw:region", "did you mean aws:region?"),
    "binary-tag": ("inference-platform:cluster.name", "explicit YAML tag !!binary"),
    "certificate-region": ("inference-platform:gateway.tls.certificateArn", "certificate in us-east-1"),
    "config-is-a-list": ("config", "must be a map of config keys"),
    "custom-tag": ("aws:region", "explicit YAML tag !env"),
    "duplicate-keys": ("inference-platform:cluster", "on line 3 and on line 5"),
    "duplicate-legacy-key": ("inference-platform:cluster", "'inference-platform:config:cluster' (line 5)"),
    "duplicate-nested-keys": ("inference-platform:cluster.name", "on line 4 and on line 5"),
    "duplicate-unqualified-key": ("inference-platform:cluster", "as 'cluster' (line 5)"),
    "five-zones": ("inference-platform:cluster.vpc.availabilityZones", "us-west-2 (US West (Oregon)) has 4"),
    "hostile-broken-platform": ("inference-platform:cluster", "given twice"),
    "interpolation": ("inference-platform:gateway.hostname", "does not interpolate"),
    "list-top-level": ("config", "must be a YAML map"),
    "misplaced-config-key": ("inference-platform:models", "belongs under `config:`"),
    "non-string-key": ("inference-platform:cluster", "reads as a number"),
    "platform-is-a-team-stack": ("inference-platform:stack.platformStack", ""),
    "platform-unreadable": ("inference-platform:stack.platformStack", "is invalid"),
    "prefix-separator": ("inference_platform:gateway", "did you mean inference-platform:gateway?"),
    "prefix-typo": ("inference-platfrom:gateway", "did you mean inference-platform:gateway?"),
    "region-empty": ("aws:region", "is empty"),
    "region-list": ("aws:region", "must be a string"),
    "region-mars": ("aws:region", "'mars-north-9' is not an AWS Region"),
    "region-missing": ("aws:region", "is required"),
    "region-number": ("aws:region", "must be a string"),
    "secret-value": ("inference-platform:gateway.hostname", "is a Pulumi secret"),
    "section-case": ("inference-platform:Gateway", "did you mean inference-platform:gateway?"),
    "section-snake-case": ("inference-platform:node_pools", "did you mean inference-platform:nodePools?"),
    "set-tag": ("inference-platform:models", "explicit YAML tag !!set"),
    "string-top-level": ("config", "must be a YAML map"),
    "timestamp": ("inference-platform:stack.team", "YAML timestamp"),
    "too-many-colons": ("config.inference-platform:gateway:enabled", "not a Pulumi config key"),
    "two-documents": ("config", "more than one YAML document"),
    "unknown-aws-key": ("aws:region", "is required"),
    # written at test time
    "binary": ("config", "NUL bytes"),
    "utf16": ("config", "UTF-16"),
    "gzip": ("config", "gzip-compressed"),
    "five-megabytes": ("config", "over the 1048576-byte limit"),
    "deep-nesting": ("inference-platform:addons[0][0][0]", "more than 32 levels deep"),
    "long-value": ("inference-platform:stack.environment", "(500000 characters)"),
}
# `<file>: <key path>: <message>`; a key path is `config...`, `aws:...`, `<namespace>:...` or `render`.
LINE = re.compile(r"^(?P<file>\S+\.yaml): (warning: )?(?P<path>config\b\S*|render|[A-Za-z0-9_.-]+:\S+): (?P<msg>.+)$")


def _corpus(tmp_path: Path) -> dict[str, Path]:
    """Every hostile file: the committed ones, their team stacks pointing at tests/hostile, and the
    generated ones."""
    files = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p for p in sorted(HOSTILE.glob("Pulumi.*.yaml"))}
    dev = DEV.read_bytes()
    generated = {
        "binary": bytes(range(256)) * 8,
        "utf16": dev.decode().encode("utf-16"),
        "gzip": gzip.compress(dev),
        "five-megabytes": MINIMAL.replace("name: hostile", "name: " + "a" * 5_000_000).encode(),
        "deep-nesting": (MINIMAL + "  inference-platform:addons: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
        "long-value": (MINIMAL + "  inference-platform:stack:\n    environment: " + "x" * 500_000 + "\n").encode(),
    }
    for name, data in generated.items():
        path = tmp_path / f"Pulumi.{name}.yaml"
        path.write_bytes(data)
        files[name] = path
    return files


@pytest.fixture
def hostile_root(monkeypatch):
    """Platform stacks are looked up beside the hostile files (as if they were the project root)."""
    monkeypatch.setattr(pipeline, "ROOT", HOSTILE)
    pipeline._exports_cached.cache_clear()
    yield HOSTILE
    pipeline._exports_cached.cache_clear()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _assert_refused(name: str, path: Path, out: str) -> None:
    assert "Traceback" not in out, out
    lines = _lines(out)
    assert lines, f"{name}: nothing said"
    for line in lines:
        found = LINE.match(line)
        assert found, f"{name}: a line without a key path: {line[:300]}"
        assert found["path"] != "inference-platform", f"{name}: a bare namespace: {line[:300]}"
        assert len(line) < 1200, f"{name}: a line of {len(line)} characters echoes a value whole"
    key, part = EXPECTED[name]
    assert any((m := LINE.match(line)) and m["path"].startswith(key) and part in m["msg"] for line in lines), (
        f"{name}: expected {key}: ...{part}..., got\n{out[:2000]}"
    )


def test_every_hostile_file_is_refused_by_validate_with_exit_1_and_a_key_path_on_every_line(
    tmp_path, hostile_root, capsys
):
    files = _corpus(tmp_path)
    assert set(files) == set(EXPECTED), "every corpus file has its expectation"
    for name, path in files.items():
        assert main(["validate", str(path)]) == 1, name
        captured = capsys.readouterr()
        _assert_refused(name, path, captured.err + captured.out.replace(f"{path}: ok", ""))


def test_every_hostile_file_is_refused_by_render_and_plan_and_nothing_is_written(tmp_path, hostile_root, capsys):
    for name, path in _corpus(tmp_path).items():
        out = tmp_path / f"out-{name}"
        assert main(["render", str(path), "--out", str(out)]) == 1, name
        _assert_refused(name, path, capsys.readouterr().err)
        assert not out.exists(), f"{name}: a refused stack writes nothing"
        assert main(["plan", str(path)]) == 1, name
        _assert_refused(name, path, capsys.readouterr().err)


def test_the_cli_refuses_the_corpus_in_one_process_without_a_traceback(tmp_path):
    files = _corpus(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "stacks", "validate", *map(str, files.values())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    refused = {m["file"] for line in _lines(result.stderr) if (m := LINE.match(line))}
    # Outside tests/hostile as the root, a team stack's platform is not in the repository: a warning.
    expected = {str(p) for n, p in files.items() if not n.startswith("platform-")}
    assert expected <= refused


# ---- keys as Pulumi reads them ----------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "probe") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text)
    return path


def test_an_unqualified_key_is_read_as_the_projects_and_validated(tmp_path):
    path = _write(tmp_path, MINIMAL + "  gateway:\n    bogus: 1\n")
    with pytest.raises(ConfigError) as exc:
        check_file(path)
    assert str(exc.value.problems[0]).startswith("inference-platform:gateway.bogus: unknown key")


def test_an_unqualified_key_renders_as_the_projects(tmp_path):
    path = _write(tmp_path, MINIMAL + "  gateway:\n    enabled: false\n")
    assert read_stack(path).sections["gateway"] == {"enabled": False}


def test_the_legacy_config_spelling_of_a_key_is_read_as_the_key(tmp_path):
    path = _write(tmp_path, MINIMAL + "  inference-platform:config:gateway:\n    enabled: false\n")
    assert read_stack(path).sections["gateway"] == {"enabled": False}


def test_a_key_differing_only_by_case_or_separators_is_refused_naming_the_known_key():
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "x"}, "Gateway": {}, "node_pools": []}, "us-west-2")
    text = "\n".join(map(str, exc.value.problems))
    assert "inference-platform:Gateway: unknown section; did you mean inference-platform:gateway?" in text
    assert "inference-platform:node_pools: unknown section; did you mean inference-platform:nodePools?" in text


def test_a_nested_key_differing_only_by_case_is_refused_naming_the_known_key(tmp_path):
    path = _write(tmp_path, MINIMAL + "  inference-platform:gateway:\n    HostName: x.example.com\n")
    with pytest.raises(ConfigError) as exc:
        check_file(path)
    assert "inference-platform:gateway.HostName: unknown key; did you mean hostname?" in str(exc.value.problems[0])


def test_yaml_scalars_are_read_as_pulumi_reads_them_not_as_yaml_1_1(tmp_path):
    # yaml.v3: `yes`/`on` are strings, `1:30` is not sexagesimal, `0o17` is octal, `010` is 8.
    path = _write(tmp_path, MINIMAL + "  inference-platform:stack:\n    team: on\n")
    assert read_stack(path).sections["stack"] == {"team": "on"}
    from stacks.yamlread import parse

    assert parse("a: yes\nb: 1:30\nc: 0o17\nd: 010\ne: 0x1F\nf: 1_000\n").value == {
        "a": "yes",
        "b": "1:30",
        "c": 15,
        "d": 8,
        "e": 31,
        "f": 1000,
    }


def test_a_byte_order_mark_is_dropped_as_pulumi_drops_it(tmp_path):
    path = tmp_path / "Pulumi.bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert check_file(path).stack.cluster is not None


def test_an_unknown_aws_key_is_a_warning_naming_the_likely_key(tmp_path):
    path = _write(tmp_path, MINIMAL + "  aws:profle: ops\n")
    warnings = check_file(path).warnings
    assert "aws:profle: is not a config key of the AWS provider, which ignores it; did you mean aws:profile?" in [
        str(w) for w in warnings
    ]


def test_the_aws_provider_keys_are_the_installed_providers():
    vars_py = Path(pulumi.__file__).parent.parent / "pulumi_aws" / "config" / "vars.py"
    found = set(re.findall(r"__config__\.get(?:_bool|_int|_object)?\('([A-Za-z0-9]+)'\)", vars_py.read_text()))
    assert found == AWS_PROVIDER_KEYS


# ---- values -----------------------------------------------------------------------------------------


def test_a_5_mb_value_is_echoed_as_a_short_prefix_with_its_length():
    huge = "x" * 5_000_000
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "hostile"}, "stack": {"environment": huge}}, "us-west-2")
    line = str(exc.value.problems[0])
    assert "(5000000 characters)" in line and len(line) < 300, line[:400]


def test_a_long_value_interpolated_into_any_message_is_cut():
    problem = Problem("inference-platform:models[0].name", f"{'y' * 100_000!r} is not a name")
    assert len(problem.message) < 200 and "(100002 characters)" in problem.message
    assert short("z" * 61) == f"{'z' * 60!r}… (61 characters)"


def test_a_root_model_refusal_names_its_section_never_the_bare_namespace():
    with pytest.raises(ConfigError) as exc:
        check_sections({"stack": {"role": "platform"}, "cluster": {"name": "x"}, "models": [{}]}, "us-west-2")
    assert all(p.path != "inference-platform" for p in exc.value.problems)
    with pytest.raises(ConfigError) as exc:
        check_sections({"stack": {"role": "platform"}}, "us-west-2")
    assert [p.path for p in exc.value.problems] == ["inference-platform:cluster"]


def test_a_pulumi_secret_anywhere_in_a_section_is_refused():
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "x"}, "gateway": {"hostname": {"secure": "AAAB"}}}, "us-west-2")
    assert [p.path for p in exc.value.problems] == ["inference-platform:gateway.hostname"]


def test_an_interpolation_is_refused_in_any_string():
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "x", "admins": ["arn:aws:iam::${ACCOUNT}:role/a"]}}, "us-west-2")
    assert "inference-platform:cluster.admins[0]" in [p.path for p in exc.value.problems]


# ---- region -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "part"),
    [
        (5, "must be a string"),
        (["us-west-2"], "must be a string"),
        ("mars-north-9", "is not an AWS Region"),
        ("", "is empty"),
        (None, "is required"),
        ("US-WEST-2", "did you mean us-west-2?"),
        ("us-west-2 ", "did you mean us-west-2?"),
    ],
)
def test_aws_region_must_be_a_string_naming_a_real_region_never_a_default(region, part):
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "x"}}, region)
    assert any(p.path == "aws:region" and part in p.message for p in exc.value.problems), exc.value.problems


def test_the_program_refuses_a_bad_region_from_the_engine_as_validate_does():
    config = sections_to_pulumi_config({"cluster": {"name": "x"}}, None)
    config["aws:region"] = "mars-north-9"
    with pytest.raises(ConfigError) as exc:
        run_program(config)
    assert [p.path for p in exc.value.problems] == ["aws:region"]


def test_an_acm_certificate_in_another_region_is_refused():
    gateway = {
        "hostname": "x.example.com",
        "tls": {"certificateArn": "arn:aws:acm:us-east-1:111122223333:certificate/ab-12"},
    }
    stack = sourced({"cluster": {"name": "x"}, "gateway": gateway}, "us-east-1")
    with pytest.raises(ConfigError) as exc:
        check_sections(stack, "us-west-2")
    assert [p.path for p in exc.value.problems] == ["inference-platform:gateway.tls.certificateArn"]
    check_sections(stack, "us-east-1")


def test_the_capacity_example_certificate_is_in_its_stacks_region():
    found = read_stack(ROOT / "stacks" / "examples" / "Pulumi.capacity.yaml")
    arn = found.sections["gateway"]["tls"]["certificateArn"]
    assert arn.split(":")[3] == found.region


def test_availability_zones_are_refused_above_the_regions_real_count():
    with pytest.raises(ConfigError) as exc:
        check_sections(sourced({"cluster": {"name": "x", "vpc": {"availabilityZones": 5}}}, "us-east-1"), "us-west-2")
    assert "has 4 availability zones" in str(exc.value.problems[0])
    with pytest.raises(ConfigError):
        check_sections(sourced({"cluster": {"name": "x", "vpc": {"availabilityZones": 3}}}), "us-west-1")
    check_sections(sourced({"cluster": {"name": "x", "vpc": {"availabilityZones": 6}}}, "us-east-1"), "us-east-1")


def test_the_render_spans_the_regions_real_zones():
    sections = sourced({"cluster": {"name": "east", "vpc": {"availabilityZones": 6}}}, "us-east-1")
    rendered = run_program(sections_to_pulumi_config(sections, "us-east-1"))
    zones = [r.inputs["availabilityZone"] for r in rendered.resources if r.type == "aws:ec2/subnet:Subnet"]
    assert sorted(set(zones)) == [f"us-east-1{z}" for z in "abcdef"]


def test_every_region_of_the_table_validates_up_to_its_zone_count():
    for code, found in regions().items():
        check_sections(sourced({"cluster": {"name": "x", "vpc": {"availabilityZones": len(found.zones)}}}, code), code)


def test_the_region_table_holds_exactly_the_commercial_regions_the_aws_provider_knows():
    enums = (Path(pulumi.__file__).parent.parent / "pulumi_aws" / "_enums.py").read_text()
    block = enums[enums.index("class Region(") :]
    block = block[: block.find("\nclass ", 1)] if "\nclass " in block[1:] else block
    known = set(re.findall(r'= "([a-z0-9-]+)"', block))
    commercial = {r for r in known if not r.startswith(("cn-", "us-gov-", "us-iso", "eu-iso", "eusc-"))}
    assert set(regions()) == commercial
    table = json.loads((ROOT / "stacks" / "data" / "regions.json").read_text())
    assert table["source"] and all(2 <= len(r["zones"]) <= len(r["zoneIds"]) for r in table["regions"].values())


# ---- the platform stack -----------------------------------------------------------------------------


def test_an_unreadable_platform_stack_is_a_clean_error_naming_platform_stack(hostile_root):
    with pytest.raises(ConfigError) as exc:
        check_file(HOSTILE / "Pulumi.platform-unreadable.yaml")
    assert [p.path for p in exc.value.problems] == ["inference-platform:stack.platformStack"]


def test_a_platform_stack_that_refers_to_itself_is_a_clean_error(hostile_root):
    with pytest.raises(ConfigError) as exc:
        check_file(HOSTILE / "Pulumi.platform-is-a-team-stack.yaml")
    assert [p.path for p in exc.value.problems] == ["inference-platform:stack.platformStack"]


def test_a_platform_stack_outside_the_repository_is_a_clean_render_error():
    team = sections_of(ROOT / "stacks" / "examples" / "Pulumi.team-search.yaml")
    team["stack"]["platformStack"] = "acme/other-project/platform"
    check_sections(team, "us-west-2")  # validate accepts it with a warning: checked at preview
    with pytest.raises(ConfigError) as exc:
        run_program(sections_to_pulumi_config(team, "us-west-2"))
    assert [p.path for p in exc.value.problems] == ["inference-platform:stack.platformStack"]


def test_a_platform_stack_with_no_outputs_or_foreign_outputs_is_refused_by_the_program(monkeypatch):
    from components import platform_stack

    for outputs in ({}, {"pools": "not a list", "exportsVersion": "x", "storage": [1]}):

        class Ref:
            answer = outputs

            def __init__(self, *args, **kwargs) -> None:
                self.outputs = pulumi.Output.from_input(self.answer)

        monkeypatch.setattr(platform_stack.pulumi, "StackReference", Ref)
        with pytest.raises(ConfigError) as exc:
            mocks().reset()

            @pulumi.runtime.test
            def program():
                platform_stack.read_platform_stack("acme/inference-platform/gone")

            program()
        assert [p.path for p in exc.value.problems] == ["inference-platform:stack.platformStack"]


# ---- the mocks refuse what the engine refuses -------------------------------------------------------


def test_two_resources_with_one_urn_fail_the_render():
    recording = mocks()
    recording.reset()

    @pulumi.runtime.test
    def program():
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        for _ in range(2):
            pulumi.CustomResource("test:index:Thing", "same", {}, opts=pulumi.ResourceOptions(parent=parent))

    program()
    with pytest.raises(ConfigError) as exc:
        refuse_what_the_engine_would(recording)
    assert (
        "two resources have the URN urn:pulumi:render::inference-platform::test:index:Parent$test:index:Thing::same"
        in (exc.value.problems[0].message)
    )


def test_urns_are_formed_as_the_engine_forms_them_from_the_whole_parent_chain():
    recording = mocks()
    recording.reset()

    @pulumi.runtime.test
    def program():
        # Same type and name under parents of one type but different grandparents: distinct URNs.
        for top in ("test:index:A", "test:index:B"):
            mid = pulumi.ComponentResource(
                "test:index:Mid",
                f"mid-{top[-1]}",
                opts=pulumi.ResourceOptions(parent=pulumi.ComponentResource(top, f"top-{top[-1]}")),
            )
            pulumi.CustomResource("test:index:Thing", "same", {}, opts=pulumi.ResourceOptions(parent=mid))

    program()
    refuse_what_the_engine_would(recording)


def test_two_kubernetes_objects_of_one_kind_namespace_and_name_fail_the_render():
    recording = mocks()
    recording.reset()

    @pulumi.runtime.test
    def program():
        for name in ("config-a", "config-b"):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared", "namespace": "inference"}}
            pulumi.CustomResource("kubernetes:core/v1:ConfigMap", name, body)

    program()
    with pytest.raises(ConfigError) as exc:
        refuse_what_the_engine_would(recording)
    assert "the v1 ConfigMap shared in namespace inference (config-a and config-b)" in exc.value.problems[0].message


def test_two_adapters_with_one_name_fail_the_render_as_pulumi_up_would(tmp_path):
    text = (ROOT / "stacks" / "examples" / "Pulumi.serving.yaml").read_text()
    path = _write(tmp_path, text.replace("- name: sql-lora", "- name: support-lora"), "serving")
    with pytest.raises(ConfigError) as exc:
        render_file(path)
    assert any(p.path.startswith(("render", "inference-platform:models")) for p in exc.value.problems)


# ---- the safety net ---------------------------------------------------------------------------------


def test_an_unexpected_error_is_one_line_naming_the_file_and_the_next_file_is_still_checked(monkeypatch, capsys):
    real = check_file

    def broken(path):
        if path.name == "Pulumi.dev.yaml":
            raise RuntimeError("boom\nsecond line")
        return real(path)

    monkeypatch.setattr("stacks.__main__.check_file", broken)
    capsys.readouterr()
    assert main(["validate", str(DEV), str(ROOT / "stacks" / "examples" / "Pulumi.platform.yaml")]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "Pulumi.dev.yaml" in line]
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "Traceback" not in captured.err
    assert "Pulumi.platform.yaml: ok" in captured.out


def test_the_program_turns_an_unexpected_error_into_one_run_error(monkeypatch):
    def broken():
        raise RuntimeError("boom")

    monkeypatch.setattr(load, "pulumi_stack_config", broken)
    with pytest.raises(pulumi.RunError) as exc:
        run_program(sections_to_pulumi_config({"cluster": {"name": "x"}}, "us-west-2"))
    assert "\n" not in str(exc.value) and "RuntimeError: boom" in str(exc.value)


def test_validate_reports_every_file_even_after_one_that_does_not_exist(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "Pulumi.gone.yaml"), str(tmp_path), str(DEV)]) == 1
    captured = capsys.readouterr()
    assert "Pulumi.gone.yaml: config: cannot be read" in captured.err
    assert f"{tmp_path}: stack: no such stack" in captured.err
    assert f"{DEV}: ok" in captured.out


def test_a_section_without_a_value_is_a_warning_not_silence(tmp_path):
    warnings = check_file(_write(tmp_path, MINIMAL + "  inference-platform:gateway:\n")).warnings
    assert "inference-platform:gateway: has no value (Pulumi warns too); the section's defaults apply" in [
        str(w) for w in warnings
    ]


def test_a_key_that_cannot_be_written_bare_is_shown_quoted_in_its_key_path():
    from stacks.errors import key_path

    assert key_path(["models", 0, "labels", "a b"]) == "inference-platform:models[0].labels['a b']"
    assert key_path(["cluster", "a\x07b"]) == "inference-platform:cluster['a\\x07b']"
    assert key_path([""]) == "inference-platform:['']" and key_path(["gateway"]) == "inference-platform:gateway"
    assert key_path(["models", 0, "labels", "app.kubernetes.io/name"]).endswith(".labels.app.kubernetes.io/name")


def test_an_empty_key_is_refused_by_its_place_never_as_the_bare_namespace(tmp_path):
    top = _write(tmp_path, '"": x\n' + MINIMAL, "top")
    with pytest.raises(ConfigError) as exc:
        check_file(top)
    assert [p.path for p in exc.value.problems] == ["['']"]
    for key in ('""', '"aws:"', '"inference-platform:"'):
        nested = _write(tmp_path, MINIMAL + f"  {key}: 1\n", "nested")
        with pytest.raises(ConfigError) as exc:
            check_file(nested)
        paths = [p.path for p in exc.value.problems]
        assert paths and all(p.startswith("config") for p in paths), (key, paths)
        assert "empty name" in str(exc.value)


# ---- YAML 1.1 spellings where a boolean or a number is expected ---------------------------------------


@pytest.mark.parametrize("spelling", ["on", "yes", "off", "no", "y", "n", "'true'", "1"])
def test_a_yaml_1_1_boolean_spelling_in_a_boolean_key_is_refused_naming_the_key_and_true_or_false(tmp_path, spelling):
    # Pulumi passes `on` on as the string "on"; pydantic's lax mode would have read it as true.
    path = _write(tmp_path, MINIMAL + f"  inference-platform:gateway:\n    enabled: {spelling}\n")
    with pytest.raises(ConfigError) as exc:
        check_file(path)
    text = str(exc.value.problems[0])
    assert text.startswith("inference-platform:gateway.enabled:"), text
    assert "is not a boolean" in text and "write true or false" in text, text


def test_a_yaml_1_1_boolean_spelling_in_a_nested_model_names_its_full_key_path():
    with pytest.raises(ConfigError) as exc:
        check_sections({"cluster": {"name": "x"}, "addons": {"keda": {"enabled": "off"}}}, "us-west-2")
    text = "\n".join(map(str, exc.value.problems))
    assert "inference-platform:addons.keda.enabled: 'off' is not a boolean" in text, text


def test_a_base_60_number_in_a_numeric_key_is_refused_saying_pulumi_reads_a_string(tmp_path):
    path = _write(tmp_path, MINIMAL + "  inference-platform:gateway:\n    rateLimit:\n      requestsPerMinute: 1:30\n")
    with pytest.raises(ConfigError) as exc:
        check_file(path)
    text = "\n".join(map(str, exc.value.problems))
    assert "inference-platform:gateway.rateLimit.requestsPerMinute: '1:30' is a string as Pulumi reads it" in text
    assert "write the number itself" in text, text
