"""Assemble the policy pack; all logic lives in policypack.validators (importable, unit-tested)."""

import sys
from pathlib import Path

# The pack runs from policies/; the shared checks live in the project beside it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policypack.validators import POLICIES

PolicyPack(name="inference-platform", policies=POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
