"""The front door: Envoy Gateway, the authenticated HTTPS Gateway, the model routes and isolation.

`GatewayController` and `FrontDoor` (component.py) wire them; `routing.py`, `picker.py` (the
endpoint picker of `models[].routing`) and `isolation.py` are the pure builders. This file imports
nothing, so stacks/ reads those builders' names without the Pulumi SDK.
"""
