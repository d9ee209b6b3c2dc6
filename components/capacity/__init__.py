"""Accelerator capacity: Karpenter, the node pools and the device plugins they need.

`Capacity` (component.py) wires them; `karpenter.py` builds the AWS side of Karpenter,
`karpenter_iam.py` its IAM documents and AWS names, `nodepools.py` and `plugins.py` the pure
manifests and chart values. This file imports nothing, so the validating side (stacks/) can read
those pure modules without loading the Pulumi SDK.
"""
