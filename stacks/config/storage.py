"""The `storage` section: where model weights live and how nodes reach them."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from .base import DNS_SUBDOMAIN, BucketName, S3Url, Strict


class Efs(Strict):
    """`modelCache: efs`: an encrypted EFS file system shared by every replica, one access point and
    directory per claim."""

    throughput_mode: Literal["elastic", "bursting", "provisioned"] = Field(
        default="elastic",
        description="EFS throughput mode: `elastic` follows demand; `bursting` scales with size; `provisioned` "
        "is what `provisionedThroughputMiBps` buys.",
    )
    provisioned_throughput_mibps: int | None = Field(
        default=None,
        ge=1,
        le=10240,
        description="Provisioned throughput in MiB/s; required with `throughputMode: provisioned` and refused "
        "otherwise.",
    )
    cache_size_gib: int = Field(
        default=500,
        ge=1,
        le=1_000_000,
        description="Requested size in GiB of each `model-cache` claim (a model namespace's, or a team's); EFS "
        "itself grows with use.",
    )

    @model_validator(mode="after")
    def _provisioned(self) -> Self:
        if (self.throughput_mode == "provisioned") != (self.provisioned_throughput_mibps is not None):
            raise ValueError(
                "provisionedThroughputMiBps is required with throughputMode: provisioned and only allowed with it"
            )
        return self


# What FSx for Lustre PERSISTENT_2 accepts (AWS FSx API reference, CreateFileSystemLustreConfiguration).
FSX_THROUGHPUT_PER_TIB = (125, 250, 500, 1000)
# CreateFileSystem StorageCapacity is an int32 (the API's own bound), and a whole multiple of 2400
# above 1200; the account's own limit is the Service Quota L-8F1B9C74 "Lustre Persistent_2 storage
# capacity", 100,800 GiB by default and adjustable (stacks/rules/storage.py warns above it).
FSX_API_MAX_GIB = 2_147_481_600  # the largest multiple of 2400 in an int32
FSX_DEFAULT_QUOTA_GIB = 100_800


class Fsx(Strict):
    """`modelCache: fsx`: an FSx for Lustre PERSISTENT_2 SSD file system linked to the model bucket."""

    storage_capacity_gib: int = Field(
        default=1200,
        ge=1200,
        le=FSX_API_MAX_GIB,
        description="File system capacity in GiB: 1200 or a multiple of 2400 (what PERSISTENT_2 SSD accepts); above "
        "the account's default quota of 100800 GiB (Service Quota L-8F1B9C74, adjustable) a warning asks to "
        "check it was raised.",
    )
    throughput_per_tib: Literal[FSX_THROUGHPUT_PER_TIB] = Field(  # type: ignore[valid-type]
        default=250,
        description="Provisioned throughput in MB/s per TiB of capacity: 125, 250, 500 or 1000.",
    )
    import_path: S3Url | None = Field(
        default=None,
        description="S3 URL the data repository association links to the file system's root; unset: the model "
        "bucket. Only with `modelCache: fsx`.",
    )
    data_compression: Literal["NONE", "LZ4"] = Field(
        default="LZ4", description="Lustre data compression of the file system: `LZ4` or `NONE`."
    )

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


class ModelBucketSettings(Strict):
    """Create the model bucket (`create: true`) or adopt an existing one by `name`."""

    create: bool = Field(
        default=True,
        description="Create the bucket (encrypted, versioned, public access blocked, TLS only); `false` adopts "
        "the bucket named by `name`.",
    )
    name: BucketName | None = Field(
        default=None,
        description="S3 bucket name: required with `create: false`; with `create: true`, unset generates a "
        "unique name from the cluster's.",
    )

    @model_validator(mode="after")
    def _adopt_needs_name(self) -> Self:
        if not self.create and self.name is None:
            raise ValueError("adopting a bucket (create: false) needs its name")
        return self


class Local(Strict):
    """Node-local caches: with `modelCache: local` (on the RAID0 instance store), or `none` without
    `existingClaim` (on the root volume), each pod's cache is an emptyDir sized from the weights."""

    # Room above the weights for tokenizer files, partial downloads and compiled Neuron artifacts.
    headroom_percent: int = Field(
        default=25,
        ge=0,
        le=400,
        description="Percent added to the weights' size (`parameters` x `dtype`) when sizing a node-local cache "
        "volume (`local`, or `none` without `existingClaim`) and the pod's ephemeral-storage request.",
    )


class Preparation(Strict):
    """How the cache is filled: bounded attempts, and how long a filler's lock is trusted."""

    attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Download attempts (with growing backoff) before a preparation init container fails.",
    )
    lock_timeout_seconds: int = Field(
        default=3600,
        ge=60,
        le=86400,
        description="Seconds a filler's cache lock is trusted; a lock held longer is taken over.",
    )


ClaimName = Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN, max_length=253)]


class ExistingClaim(Strict):
    """An existing PersistentVolumeClaim (same name in every model namespace) used as the cache
    with `modelCache: none`; its access mode decides how many replicas may share it."""

    name: ClaimName = Field(description="Name of the PersistentVolumeClaim, which must exist in every model namespace.")
    access_mode: Literal["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany", "ReadOnlyMany"] = Field(
        description="The claim's access mode; with `ReadWriteOnce` or `ReadWriteOncePod` a model may run only one "
        "replica."
    )


class StorageSection(Strict):
    """`inference-platform:storage`: where model weights live (the model bucket) and how serving pods
    reach them (the model cache)."""

    model_cache: Literal["efs", "fsx", "local", "none"] = Field(
        default="none",
        description="The cache serving pods load weights from: shared `efs` or `fsx`, `local` (RAID0 instance "
        "store, a copy per pod) or `none` (an emptyDir on the root volume, or `existingClaim`).",
    )
    efs: Efs = Field(default_factory=Efs, description="EFS settings, read with `modelCache: efs`.")
    fsx: Fsx = Field(default_factory=Fsx, description="FSx for Lustre settings, read with `modelCache: fsx`.")
    local: Local = Field(default_factory=Local, description="Sizing of node-local cache volumes.")
    preparation: Preparation = Field(
        default_factory=Preparation, description="How the preparation init containers fill the cache."
    )
    existing_claim: ExistingClaim | None = Field(
        default=None, description="An existing claim as the cache; only with `modelCache: none`."
    )
    model_bucket: ModelBucketSettings = Field(
        default_factory=ModelBucketSettings,
        description="The S3 bucket weights are kept in: the platform's models under `platform/<model>/<revision>/`, "
        "each team's under `teams/<team>/<model>/<revision>/`, each owner's role reading its own prefix only.",
    )
    protect: bool = Field(
        default=True,
        description="Protect the model bucket (with its settings) and the EFS file system: `pulumi destroy` stops "
        "at them and removing them from the stack leaves them in the account (EFS without its mount targets, "
        "which go with the VPC). The FSx for Lustre cache is never protected or retained: the bucket is the "
        "retained copy. Refused `false` in `environment: prod`.",
    )

    @model_validator(mode="after")
    def _claim_only_without_cache(self) -> Self:
        if self.existing_claim is not None and self.model_cache != "none":
            raise ValueError(
                f"existingClaim is used only with modelCache: none (modelCache is {self.model_cache}, "
                f"which brings its own volume); remove existingClaim or set modelCache: none"
            )
        return self
