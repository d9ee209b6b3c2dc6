"""Serving platforms: NVIDIA Dynamo, AIBrix, Ray Serve on KubeRay, the NIM Operator and LiteLLM.

`platforms.py` installs them (one component) and adds the per-model AIBrix objects (another);
`aibrix.py` and `litellm.py` build their objects and `values.py` the charts' values. The engines
these platforms run (Dynamo graphs, RayServices, NIMServices) are engine modules in
components/engines, whose facts name the add-on that installs their CRDs (`FACTS.controller`).
"""
