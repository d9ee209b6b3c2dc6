"""The eyes: Prometheus, the accelerator exporters, PodMonitors, dashboards and SLO alerts.

`Monitoring` (component.py) wires them; `collection.py` and `dashboards.py` are the pure builders.
This file imports nothing, so stacks/ reads those builders' names without the Pulumi SDK.
"""
