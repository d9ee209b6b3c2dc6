"""`python -m stacks plan`: per pool the allowed types and their allocatable, per model where it fits."""

from __future__ import annotations

import yaml

from stacks.__main__ import main
from stacks.load import ROOT


def test_plan_lists_each_pools_types_with_allocatable_and_where_each_model_fits(capsys):
    assert main(["plan", "dev"]) == 0
    out = capsys.readouterr().out
    assert "pool gpu: accelerator nvidia" in out and "pool inferentia: accelerator neuron" in out
    inf2 = next(line.split() for line in out.splitlines() if line.strip().startswith("inf2.xlarge"))
    # facts: 3920m / 14162Mi, less aws-node, kube-proxy, ebs-csi-node, the Neuron problem detector and,
    # with monitoring on, neuron-monitor (256m / 128Mi, AWS's own DaemonSet); the EFS CSI node requests nothing.
    assert inf2[1:3] == ["3519m", "13914Mi"] and inf2[5:8] == ["1", "2", "58"], inf2
    assert "model llama-3-8b-neuron on pool inferentia" in out and "fits inf2.24xlarge" in out
    assert "model qwen3-8b on pool gpu" in out and "fits g6.xlarge, g6.12xlarge" in out


def test_plan_of_a_stack_whose_model_fits_nowhere_prints_the_refusal_not_a_traceback(tmp_path, capsys):
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["inference-platform:models"][1]["acceleratorsPerReplica"] = 24
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert "inference-platform:models[1].acceleratorsPerReplica" in err and "inf2.24xlarge" in err
