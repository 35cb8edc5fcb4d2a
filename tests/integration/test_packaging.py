"""What a wheel of funcgrad installs: one top-level name, ``funcgrad`` (design.md, one namespace).

The repository keeps ``primitives/`` and ``xla_bridge/`` at its top (the fixed layout); setup.py maps
them to ``funcgrad.primitives`` and ``funcgrad.xla_bridge``. This builds the wheel, installs it into
a fresh virtual environment and lists what appeared in site-packages.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(*cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def _site_packages(venv: pathlib.Path) -> pathlib.Path:
    (site,) = (venv / "lib").glob("python*/site-packages")
    return site


def test_the_wheel_installs_only_funcgrad(tmp_path):
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT))
    (wheel,) = wheels.glob("funcgrad-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"funcgrad"}, tops

    # A fresh virtual environment without pip (ensurepip's copy of it took 3.8 of the test's 12.5 s
    # of CPU); this interpreter's pip installs into it (``--python``, pip >= 22.3).
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    before = {p.name for p in _site_packages(venv).iterdir()}
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(venv / "bin" / "python"),
        "install",
        "-q",
        "--no-deps",
        str(wheel),
    )
    added = {p.name for p in _site_packages(venv).iterdir()} - before
    assert {a for a in added if not a.endswith(".dist-info")} == {"funcgrad"}, added
    package = _site_packages(venv) / "funcgrad"
    for layer in ("kernel", "primitives", "xla_bridge", "xla_bridge/rules"):
        assert (package / layer / "__init__.py").exists(), layer
