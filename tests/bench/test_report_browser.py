"""The HTML gap report in a real headless browser: plots decode, no console errors.

Chromium renders a copy of the report with a small probe script appended that records,
after the page loaded, how many images decoded (``naturalWidth > 0``) and any error
raised on the page. The report itself has no scripts. Skips when Chromium is absent.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from energyopt.bench import demo

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
PROBE = """
<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = 'images=' + imgs.length + ' decoded=' + ok +
                    ' errors=' + window.__errors.length;
  document.body.appendChild(out);
});
</script>
"""


def render(html_path: Path, tmp_path: Path) -> tuple[str, str]:
    """(DOM after load, Chromium's console log) of ``html_path`` with the probe."""
    probed = tmp_path / "probed.html"
    probed.write_text(html_path.read_text().replace("<body>", "<body>" + PROBE, 1))
    flags = (
        "--headless --no-sandbox --disable-gpu --disable-background-networking "
        "--disable-component-update --disable-sync --no-first-run --enable-logging=stderr "
        "--v=0 --virtual-time-budget=5000 --dump-dom"
    ).split()
    proc = subprocess.run(
        [CHROMIUM, *flags, f"--user-data-dir={tmp_path / 'chromium-profile'}", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed")
def test_demo_report_renders_in_chromium(tmp_path):
    # The report of `energyopt demo` (= `make demo`): the smoke suite of every family.
    out = demo.run(tmp_path / "demo", jobs=2, progress=False)
    report = out["report_data"]
    families = {"pipeline", "capacity", "powercap", "tuning"}
    assert families <= set(report.plot_families.values())
    dom, log = render(out["report"], tmp_path)
    probe = re.search(r"images=(\d+) decoded=(\d+) errors=(\d+)", dom)
    assert probe, dom[-2000:]
    images, decoded, errors = map(int, probe.groups())
    assert images == len(report.plots) and images >= 8
    assert decoded == images
    assert errors == 0
    assert not re.findall(r"CONSOLE.*", log), log
    for fam in families:
        assert f'id="family-{fam}"' in dom
