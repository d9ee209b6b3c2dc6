"""Fill a charts directory for `make charts` outside CI: every chart the catalog pins
(stacks/versions.py CHARTS), pulled with the pinned helm into DIR/<chart>-<version>/, the layout
`stacks charts` reads (INFERENCE_PLATFORM_CHARTS). A packaged chart carries its subcharts.

    .venv/bin/python scripts/pull-charts.py DIR     (then: export INFERENCE_PLATFORM_CHARTS=DIR)

Charts published only in git (AIBrix) are copied from scripts/vendor-charts.sh's charts/vendor/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.k8s import VENDOR_DIR
from stacks.charts import helm
from stacks.versions import CHARTS


def main(dest: Path) -> int:
    binary = str(helm())
    dest.mkdir(parents=True, exist_ok=True)
    failed = []
    for key, pinned in sorted(CHARTS.items()):
        target = dest / f"{pinned.chart}-{pinned.version}"
        if (target / "Chart.yaml").is_file():
            print(f"{target}: already there")
            continue
        if not pinned.repo:
            vendored = Path(VENDOR_DIR) / f"{key}-{pinned.version}" / pinned.chart
            if not (vendored / "Chart.yaml").is_file():
                print(f"{key}: published only in git: run scripts/vendor-charts.sh first", file=sys.stderr)
                failed.append(key)
                continue
            shutil.copytree(vendored, target)
            print(f"{target}: copied from {vendored}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            if pinned.repo.startswith("oci://"):
                args = [binary, "pull", f"{pinned.repo}/{pinned.chart}"]
            else:
                args = [binary, "pull", pinned.chart, "--repo", pinned.repo]
            args += ["--version", pinned.version, "--untar", "--untardir", tmp]
            if subprocess.run(args, check=False).returncode != 0:
                failed.append(key)
                continue
            shutil.move(str(Path(tmp) / pinned.chart), target)
            print(f"{target}: pulled")
    if failed:
        print(f"not pulled: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
