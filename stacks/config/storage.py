"""The `storage` section: where model weights live and how nodes reach them."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from .base import Strict

S3Url = Annotated[str, StringConstraints(pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")]
BucketName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]


class Efs(Strict):
    throughput_mode: Literal["elastic", "bursting", "provisioned"] = "elastic"
    provisioned_throughput_mibps: int | None = Field(default=None, ge=1, le=10240)
    cache_size_gib: int = Field(default=500, ge=1, le=1_000_000)

    @model_validator(mode="after")
    def _provisioned(self) -> Self:
        if (self.throughput_mode == "provisioned") != (self.provisioned_throughput_mibps is not None):
            raise ValueError(
                "provisionedThroughputMiBps is required with throughputMode: provisioned and only allowed with it"
            )
        return self


# What FSx for Lustre PERSISTENT_2 accepts (AWS FSx API reference, CreateFileSystemLustreConfiguration).
FSX_THROUGHPUT_PER_TIB = (125, 250, 500, 1000)


class Fsx(Strict):
    storage_capacity_gib: int = Field(default=1200, ge=1200)
    throughput_per_tib: Literal[FSX_THROUGHPUT_PER_TIB] = 250  # type: ignore[valid-type]
    import_path: S3Url | None = None
    data_compression: Literal["NONE", "LZ4"] = "LZ4"

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity_steps(cls, cap: int) -> int:
        # PERSISTENT_2 SSD takes 1200 GiB or a multiple of 2400 GiB (FSx API reference,
        # CreateFileSystem StorageCapacity; UpdateFileSystem grows in 2400 GiB steps).
        if cap != 1200 and cap % 2400 != 0:
            lower = max(1200, cap // 2400 * 2400)
            raise ValueError(
                f"storageCapacityGiB {cap} is not a size FSx for Lustre PERSISTENT_2 accepts: use "
                f"1200 or a multiple of 2400 (e.g. {lower} or {lower + 2400 if lower > 1200 else 2400})"
            )
        return cap


class ModelBucket(Strict):
    """Create the model bucket (`create: true`) or adopt an existing one by `name`."""

    create: bool = True
    name: BucketName | None = None

    @model_validator(mode="after")
    def _adopt_needs_name(self) -> Self:
        if not self.create and self.name is None:
            raise ValueError("adopting a bucket (create: false) needs its name")
        return self


class Local(Strict):
    """`modelCache: local`: each pod's cache is an emptyDir on the node's RAID0 instance store."""

    # Room above the weights for tokenizer files, partial downloads and compiled Neuron artifacts.
    headroom_percent: int = Field(default=25, ge=0, le=400)


class Preparation(Strict):
    """How the cache is filled: bounded attempts, and how long a filler's lock is trusted."""

    attempts: int = Field(default=3, ge=1, le=10)
    lock_timeout_seconds: int = Field(default=3600, ge=60, le=86400)


ClaimName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)]


class ExistingClaim(Strict):
    """An existing PersistentVolumeClaim (same name in every model namespace) used as the cache
    with `modelCache: none`; its access mode decides how many replicas may share it."""

    name: ClaimName
    access_mode: Literal["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany", "ReadOnlyMany"]


class StorageSection(Strict):
    """`inference-platform:storage`."""

    model_cache: Literal["efs", "fsx", "local", "none"] = "none"
    efs: Efs = Field(default_factory=Efs)
    fsx: Fsx = Field(default_factory=Fsx)
    local: Local = Field(default_factory=Local)
    preparation: Preparation = Field(default_factory=Preparation)
    existing_claim: ExistingClaim | None = None
    model_bucket: ModelBucket = Field(default_factory=ModelBucket)
    # Stateful resources (bucket, file systems) survive `pulumi destroy` unless this is false.
    protect: bool = True

    @model_validator(mode="after")
    def _claim_only_without_cache(self) -> Self:
        if self.existing_claim is not None and self.model_cache != "none":
            raise ValueError(
                f"existingClaim is used only with modelCache: none (modelCache is {self.model_cache}, "
                f"which brings its own volume); remove existingClaim or set modelCache: none"
            )
        return self
