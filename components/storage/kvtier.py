"""The bound of a model's KV-cache file tier (`kvCacheOffload.shared`): a pruning CronJob. Pure builder.

SGLang 0.5.19's HiCacheFile evicts only what one rank of one process tracks (the files it wrote, read or
found when it started: srt/mem_cache/storage/file/lru_file_evictor.py), so each pod keeps within its cap
(stacks/offload.py), but the directory every replica shares is bounded by nobody: two replicas write
pages the other does not count, and a pod scaled in or restarted leaves its files to no one until some
pod starts again. Every PRUNE_SCHEDULE this CronJob sums the model's page files and deletes the
oldest-written (mtime; the engine's own LRU order lives only in its memory) until the directory holds
`sizeGiB` or less, and removes write leftovers (`<page>.bin.tmp.<pid>...`, which a crashed write leaves)
older than an hour.

Deleting a page under a running engine is what SGLang's own evictors already do to each other on a shared
directory: a later read of it is a miss (`HiCacheFile.get` answers FileNotFoundError with None) and the
prefix is computed again. The pod mounts the cache claim at the model's directory only (subPath), runs
busybox as a non-root user in the engine's group (on FSx the directory is the engine group's, set-gid
rwx: components/engines/workload.py; an EFS access point maps every user to its own identity), with
no service-account token, no capabilities and a read-only root. It needs no network: the file system is
mounted by the node, so the namespace's default-deny NetworkPolicy stays whole.
"""

from __future__ import annotations

from typing import Any

from stacks.helper_pods import KV_PRUNE, rendered
from stacks.naming import MANAGED_BY, SYSTEM_NODE_LABEL, physical
from stacks.resolved import CACHE_CLAIM, CACHE_ROOT, ImageTable

PRUNE_SCHEDULE = "*/10 * * * *"
# A run still listing a large directory skips the next tick (Forbid); one that outlasts this is stopped.
DEADLINE_SECONDS = 3000
STARTING_DEADLINE_SECONDS = 300
# Non-root and >= 10000 (no uid of the host's); the engine's group gives it the FSx directory.
PRUNER_UID = 10001
PRUNER_LABEL = "inference-platform.io/kv-tier-pruner"
MOUNT = "/kv"
CRON_JOB_NAME_LIMIT = 52  # the API server's limit for a CronJob (its Jobs' names add 11)

# busybox 1.37 sh, find, stat, sort and awk (awk's numbers are doubles: exact to 2^53 bytes).
PRUNE = r"""set -eu
cd "$KV_MOUNT"
find . -maxdepth 1 -type f -name '*.bin.tmp.*' -mmin +60 -exec rm -f -- {} +
find . -maxdepth 1 -type f -name '*.bin' -exec stat -c '%Y %s %n' -- {} + | sort -n | awk -v cap="$KV_BYTES" '
  { n++; size[n] = $2; name[n] = $3; total += $2 }
  END {
    over = total - cap
    for (i = 1; i <= n && over > 0; i++) { print name[i]; over -= size[i]; freed += size[i] }
    printf "kv-tier: %d files, %.0f bytes, cap %.0f, deleting %.0f bytes\n", n, total, cap, freed > "/dev/stderr"
  }' | xargs -r rm -f --
"""


def cron_job_name(workload: str) -> str:
    """`<workload>-kv-prune`: one per workload, so a canary revision's directory has its own."""
    return physical(f"{workload}-kv-prune", limit=CRON_JOB_NAME_LIMIT)


def pruner_cron_job(
    *, workload: str, namespace: str, kv_dir: str, kv_gib: int, group: int, images: ImageTable
) -> dict[str, Any]:
    """The CronJob that keeps `kv_dir` (under CACHE_ROOT on the namespace's cache claim) at `kv_gib` GiB."""
    labels = {**MANAGED_BY, "app.kubernetes.io/name": "kv-tier-pruner", PRUNER_LABEL: workload}
    container = {
        "name": "prune",
        "image": images["busybox"].ref,
        "command": ["/bin/sh", "-c", PRUNE],
        "env": [{"name": "KV_MOUNT", "value": MOUNT}, {"name": "KV_BYTES", "value": str(kv_gib * 2**30)}],
        "volumeMounts": [{"name": "kv-cache", "mountPath": MOUNT, "subPath": kv_dir.removeprefix(f"{CACHE_ROOT}/")}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "resources": rendered(KV_PRUNE),
    }
    pod = {
        "restartPolicy": "Never",
        # It never calls the Kubernetes API.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": PRUNER_UID,
            "runAsGroup": group,
            "supplementalGroups": [group],
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        # A small periodic job: on the system nodes, which are always there, never a reason for Karpenter
        # to launch a node of a CPU pool every ten minutes.
        "nodeSelector": dict(SYSTEM_NODE_LABEL),
        "volumes": [{"name": "kv-cache", "persistentVolumeClaim": {"claimName": CACHE_CLAIM}}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": cron_job_name(workload), "namespace": namespace, "labels": labels},
        "spec": {
            "schedule": PRUNE_SCHEDULE,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": DEADLINE_SECONDS,
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            },
        },
    }
