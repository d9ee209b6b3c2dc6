"""CrossGuard policy pack for inference-platform stacks (run at preview: `--policy-pack policies`).

Validators live in `policypack.validators` and reuse the checks `stacks validate` runs
(stacks/guards.py, stacks/fit.py), applied here to resource properties (camelCase, as the
engine sends them). `policies/__main__.py` only assembles the pack: constructing a PolicyPack starts
a gRPC server, so tests import the validators, never that file.
"""
