"""Tests on 8 CPU devices (the multi-device half of issue 14).

They are collected only in a process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``: tests/integration/test_spmd.py starts one (the rest
of the suite runs in one process with one device). Run them directly with::

    XLA_FLAGS=--xla_force_host_platform_device_count=8 CI=true \
        python -m pytest -p no:randomly tests/surface/spmd
"""

from __future__ import annotations

import os

N_DEVICES = 8
FLAG = f"--xla_force_host_platform_device_count={N_DEVICES}"

if FLAG not in os.environ.get("XLA_FLAGS", ""):
    collect_ignore_glob = ["*.py"]
