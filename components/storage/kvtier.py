"""The KV-cache file tier's cleanup (`kvCacheOffload.shared`): a pruning CronJob per workload. Pure builder.

The engines bound the live directory themselves: every SGLang writer rank of every pod that can share a
revision's directory caps its files at `sizeGiB` over all of them (stacks/offload.py kv_writers), and
evicts its least-recently-accessed pages past it (srt/mem_cache/storage/file/lru_file_evictor.py). What
no engine counts is what pods that are gone left behind (a replica scaled in, a restarted pod's files
until some rank adopts them) and whole directories of revisions no workload serves any more. Every
PRUNE_SCHEDULE this CronJob, mounted at the model's directory `_kvcache/<owner prefix>/<name>`:
- deletes every revision directory there that is not in KV_LIVE (the model's live revisions: its own and
  its canary's, ResolvedModel.cache.kv_live) and has not changed for an hour (a directory a new revision's
  pod has just started writing, before this CronJob learns of it, is left alone);
- in its own revision's directory, removes write leftovers (`<page>.bin.tmp.<pid>...`, which a crashed
  write leaves) older than an hour, and, only when the pages there exceed `sizeGiB`, deletes the
  oldest-written beyond the bound. mtime is the only order on disk: HiCacheFile's access order lives in
  its memory (a read touches its LRU, not the file), so the oldest-written is often a hot page (a system
  prompt) written first; with the engines keeping within the bound this only trims after gone pods.
  Access times are not used: Linux's default `relatime` updates them at most once a day after a write,
  and neither EFS nor FSx for Lustre documents them exact enough to order pages by.

It streams: one pass sums bytes per minute of mtime (memory grows with the minutes spanned, not the
files), a second deletes the files older than the minute that brings the directory within the bound, so
a directory of hundreds of thousands of pages needs no sort in memory (its 256Mi are not at risk).

Deleting a page under a running engine is what SGLang's own evictors already do to each other on a shared
directory: a later read of it is a miss (`HiCacheFile.get` answers FileNotFoundError with None) and the
prefix is computed again. The pod mounts the cache claim at the model's directory only (subPath), runs
busybox as a non-root user in the engine's group (on FSx the model's directory and each revision's are
the engine group's, set-gid rwx: components/engines/workload.py; an EFS access point maps every user to its
own identity), with no service-account token, no capabilities and a read-only root. It needs no network:
the file system is mounted by the node, so the namespace's default-deny NetworkPolicy stays whole.
Destroying the model removes the CronJob, not the directory: the operator guide names the path.
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

# busybox 1.37 sh, find, stat and awk (awk's numbers are doubles: exact to 2^53 bytes). Names are the
# engine's (`<hash>_<model>_<rank>_<size>.bin`) and revisions (40 hex, `latest`): no blanks.
PRUNE = r"""set -eu
cd "$KV_MOUNT"
for d in */; do
  d=${d%/}
  [ -d "$d" ] || continue
  case " $KV_LIVE " in *" $d "*) continue ;; esac
  if [ -n "$(find "$d" -maxdepth 0 -mmin +60)" ]; then
    echo "kv-tier: removing $d, a revision no workload serves" >&2
    rm -rf -- "$d"
  fi
done
[ -d "$KV_REVISION" ] || exit 0
cd "$KV_REVISION"
find . -maxdepth 1 -type f -name '*.bin.tmp.*' -mmin +60 -exec rm -f -- {} +
plan=$(find . -maxdepth 1 -type f -name '*.bin' -exec stat -c '%Y %s' -- {} + | awk -v cap="$KV_BYTES" '
  { m = int($1 / 60); bytes[m] += $2; total += $2; n++; if (n == 1 || m < lo) lo = m; if (m > hi) hi = m }
  END {
    printf "kv-tier: %d files, %.0f bytes, cap %.0f\n", n, total, cap > "/dev/stderr"
    over = total - cap
    if (over <= 0) { print "none"; exit }
    for (m = lo; m <= hi; m++) { if (over <= bytes[m]) break; over -= bytes[m] }
    printf "%d %.0f\n", m, over
  }')
[ "$plan" = none ] && exit 0
set -- $plan
find . -maxdepth 1 -type f -name '*.bin' -exec stat -c '%Y %s %n' -- {} + | awk -v cut="$1" -v need="$2" '
  { m = int($1 / 60) }
  m < cut || (m == cut && need > 0) { print $3; freed += $2; if (m == cut) need -= $2 }
  END { printf "kv-tier: deleting %.0f bytes\n", freed > "/dev/stderr" }' | xargs -r rm -f --
"""


def cron_job_name(workload: str) -> str:
    """`<workload>-kv-prune`: one per workload, so a canary revision's directory has its own."""
    return physical(f"{workload}-kv-prune", limit=CRON_JOB_NAME_LIMIT)


def prune_container(*, kv_dir: str, kv_gib: int, kv_live: tuple[str, ...], images: ImageTable) -> dict[str, Any]:
    """The pruning container, mounted at the model's directory above `kv_dir` (every revision of it)."""
    model_dir, revision = kv_dir.removeprefix(f"{CACHE_ROOT}/").rsplit("/", 1)
    return {
        "name": "prune",
        "image": images["busybox"].ref,
        "command": ["/bin/sh", "-c", PRUNE],
        "env": [
            {"name": "KV_MOUNT", "value": MOUNT},
            {"name": "KV_REVISION", "value": revision},
            {"name": "KV_LIVE", "value": " ".join(kv_live)},
            {"name": "KV_BYTES", "value": str(kv_gib * 2**30)},
        ],
        "volumeMounts": [{"name": "kv-cache", "mountPath": MOUNT, "subPath": model_dir}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "resources": rendered(KV_PRUNE),
    }


def pruner_cron_job(
    *,
    workload: str,
    namespace: str,
    kv_dir: str,
    kv_gib: int,
    kv_live: tuple[str, ...],
    group: int,
    images: ImageTable,
) -> dict[str, Any]:
    """The CronJob that removes the model's revision directories beside `kv_dir` that are not in `kv_live`
    and trims `kv_dir` (under CACHE_ROOT on the namespace's cache claim) to `kv_gib` GiB."""
    labels = {**MANAGED_BY, "app.kubernetes.io/name": "kv-tier-pruner", PRUNER_LABEL: workload}
    container = prune_container(kv_dir=kv_dir, kv_gib=kv_gib, kv_live=kv_live, images=images)
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
