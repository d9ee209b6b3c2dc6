#!/usr/bin/env bash
# Vendor the Helm charts that are published only in git, at the versions pinned in
# stacks/versions.py, into charts/vendor/<key>-<version>/<chart> (where components/serving
# installs them from). Run once before `pulumi up` when addons.aibrix is enabled.
#
# AIBrix: vllm-project/aibrix publishes its chart only as dist/chart at each release tag (no Helm
# repository, no OCI artifact); its CRDs are in the chart's crds/ directory, which Helm installs
# on first install and never upgrades (upgrade CRDs with `kubectl apply --server-side -f
# charts/vendor/aibrix-<version>/aibrix/crds/` before raising the version).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
version=$("$PY" -c 'import sys; from stacks.versions import chart; print(chart("aibrix", sys.argv[1] or None).version)' "${AIBRIX_VERSION:-}")
dest="charts/vendor/aibrix-${version}/aibrix"
if [[ -f "$dest/Chart.yaml" ]]; then
  echo "already vendored: $dest"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --depth 1 --branch "v${version}" https://github.com/vllm-project/aibrix "$tmp/aibrix"
grep -q "^version: ${version}$" "$tmp/aibrix/dist/chart/Chart.yaml" || {
  echo "dist/chart at v${version} does not declare version ${version}" >&2
  exit 1
}
mkdir -p "$(dirname "$dest")"
cp -R "$tmp/aibrix/dist/chart" "$dest"
echo "vendored $dest"
