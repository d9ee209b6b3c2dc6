"""Model storage: the model bucket, EFS, FSx for Lustre, the local NVMe cache and model preparation."""
