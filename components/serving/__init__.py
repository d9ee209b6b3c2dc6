"""Serving platforms: NVIDIA Dynamo, AIBrix, Ray Serve on KubeRay, the NIM Operator and LiteLLM.

`platforms.py` installs them (one component) and adds the per-model AIBrix objects (another);
`dynamo.py` and `rayservice.py` are engine modules (`manifests(spec)`, registered in
components/engines ENGINE_MODULES); `aibrix.py` and `litellm.py` build their objects.

`ENGINE_INSTALLER` names, for each engine whose objects are custom resources of a serving
platform, the `wiring.installers` key of the release that installs the CRD: the Models component
makes those objects depend on it (NIM's objects are custom resources only with the NIM Operator on;
otherwise they are core objects and need no installer).
"""

from __future__ import annotations

ENGINE_INSTALLER: dict[str, str] = {"dynamo": "dynamo", "ray-serve": "kuberay", "nim": "nim-operator"}

__all__ = ["ENGINE_INSTALLER"]
