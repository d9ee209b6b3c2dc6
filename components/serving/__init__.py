"""Serving platforms: NVIDIA Dynamo, AIBrix, Ray Serve on KubeRay, the NIM Operator and LiteLLM.

`platforms.py` installs them (one component) and adds the per-model AIBrix objects (another);
`dynamo.py` and `rayservice.py` are engine modules (`manifests(spec)`, registered in
components/engines ENGINE_MODULES); `aibrix.py` and `litellm.py` build their objects.

`ENGINE_INSTALLER` names, for each engine whose objects are custom resources of a serving
platform, the `wiring.installers` key of the release that installs the CRD: the Models component
makes those objects depend on it.
"""

from __future__ import annotations

ENGINE_INSTALLER: dict[str, str] = {"dynamo": "dynamo", "ray-serve": "kuberay"}
# NIMServices (engine: nim, components/engines/nim.py) depend on wiring.installers["nim-operator"].

__all__ = ["ENGINE_INSTALLER"]
