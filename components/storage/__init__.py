"""Model storage: the model bucket, EFS, FSx for Lustre, the local NVMe cache and model preparation.

`ModelStorage` (component.py) builds the AWS and Kubernetes side; `cache_mount` (cache.py) is the
pure contract engines use to put the cache into their pods.
"""
