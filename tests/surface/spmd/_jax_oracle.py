"""Run a script under jax 0.10.2 in a subprocess on 8 CPU devices and return what it prints as
JSON: the oracle of the spmd tests, kept out of the test process (test_sharded_arrays checks that
funcgrad never imports jax, and these tests share its process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

TIMEOUT = 240


def run_jax(script: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_ENABLE_X64"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.abspath(__file__)), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    if done.returncode != 0:
        raise RuntimeError(f"the jax oracle failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])
