"""The front door: Envoy Gateway, the authenticated HTTPS Gateway, the model routes and isolation.

`GatewayController` and `FrontDoor` (component.py) wire them; `routing.py` and `isolation.py` are
the pure builders. This file imports nothing, so stacks/ reads those builders' names without the
Pulumi SDK.
"""
