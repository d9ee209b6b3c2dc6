"""One ComponentResource per concern; each builds its manifests and values with pure functions."""
