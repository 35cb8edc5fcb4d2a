"""The tests on 8 CPU devices (tests/surface/spmd/): run in a process of their own, started with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (the rest of the suite runs in one process
with one device; the device count is fixed when the CPU client starts)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_spmd_suite_on_8_cpu_devices():
    # Device settings that earlier tests put in this process's environment (funcgrad.config
    # records jax_num_cpu_devices and the platform there) must not reach the 8-device process.
    inherited = {
        k: v for k, v in os.environ.items() if k not in ("FUNCGRAD_NUM_CPU_DEVICES", "FUNCGRAD_PLATFORM")
    }
    env = {
        **inherited,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        "CI": "true",
        "PYTHONPATH": ROOT,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "0", "tests/surface/spmd"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-4000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1]
