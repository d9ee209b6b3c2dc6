#!/usr/bin/env bash
# Kubernetes security scan of rendered stacks (`make scan`): checkov with .checkov.yaml (whose skips each
# carry their reason) over each RENDER_DIR/<stack>/manifests (the program's own objects, as `make
# render-all` writes them) and RENDER_DIR/<stack>/charts (every Helm release templated with its pinned
# chart, as `make charts` writes them, with the waivers of stacks/chart_waivers.py as annotations).
#
#   scripts/scan.sh RENDER_DIR STACK...      (CHECKOV: the checkov to run, default .venv-scan/bin/checkov)
#
# One checkov per directory: checkov 3.3.30 given several -d directories missed the findings of the second
# (tried with a privileged Pod there: exit 0) and so is not trusted with more than one. CRD files
# (CustomResourceDefinition-*.yaml) are left out: no Checkov Kubernetes check applies to that kind, and
# parsing their megabytes of schema took 80 of the 86 seconds of a stack's chart scan. Offline and the
# same everywhere: --skip-download (no Prisma Cloud guidelines; .checkov.yaml uses no BC_* ids) and no
# PyPI version check. Every stack is scanned; the exit status is 1 if any had a finding or is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
checkov="${CHECKOV:-$root/.venv-scan/bin/checkov}"
export CKV_SKIP_PACKAGE_UPDATE_CHECK=true
if (($# < 2)); then
  echo "usage: $0 RENDER_DIR STACK..." >&2
  exit 2
fi
out="$1"
shift
failed=()
scan() { # scan STACK DIR WRITER: one checkov over DIR
  local stack="$1" dir="$2" writer="$3"
  if [[ ! -d "$dir" ]]; then
    echo "scan $stack: $dir does not exist ($writer writes it)" >&2
    failed+=("$stack")
  elif [[ -z "$(find "$dir" -type f -name '*.yaml' ! -name 'CustomResourceDefinition-*')" ]]; then
    echo "scan $stack: no Kubernetes objects in $dir"
  else
    echo "scan $stack: $(find "$dir" -type f ! -name 'CustomResourceDefinition-*' | wc -l) objects in $dir"
    "$checkov" --config-file "$root/.checkov.yaml" --skip-download --skip-path 'CustomResourceDefinition-[^/]*$' \
      -d "$dir" || failed+=("$stack")
  fi
}
charts=yes
if [[ -f "$out/charts-skipped" ]]; then # `stacks charts` found no chart directory (a fresh clone)
  echo "scan: the charts' objects are not scanned: $(cat "$out/charts-skipped")"
  charts=no
fi
for stack in "$@"; do
  scan "$stack" "$out/$stack/manifests" "make render-all"
  if [[ $charts == yes ]]; then scan "$stack" "$out/$stack/charts" "make charts"; fi
done
if ((${#failed[@]})); then
  echo "scan: failed for ${failed[*]}" >&2
  exit 1
fi
echo "scan: ${#} stacks ($([[ $charts == yes ]] && echo "manifests and charts" || echo "manifests")), no findings"
