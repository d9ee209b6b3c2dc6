"""Autoscaling on LLM signals: KEDA's install values and each KEDA-scaled model's objects."""
