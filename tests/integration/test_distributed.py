"""Several processes: 2 processes x 4 CPU devices on localhost run one program (an 8-way psum and a
data-parallel training step) with jaxlib's distributed runtime and Gloo collectives; the results
equal the single-process ones. Bounded in time: the workers have their own timeouts and are
killed if they outlive the test's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
from _distributed_common import batch, init_params, train_step

import funcgrad

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_run_one_program():
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, HERE])
    procs = [
        subprocess.Popen(
            [sys.executable, os.path.join(HERE, "_distributed_worker.py"), str(pid), str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for pid in (0, 1)
    ]
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, f"worker failed (rc {p.returncode}):\n{err[-4000:]}"
            outputs.append(json.loads([line for line in out.splitlines() if line.startswith("{")][-1]))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the 2-process program did not finish within {TIMEOUT} s")
    finally:
        for p in procs:  # only the processes this test started
            if p.poll() is None:
                p.kill()
                p.wait()
    x = np.arange(8 * 3.0).reshape(8, 3)
    want_params, want_loss = train_step(init_params(), *batch())
    for pid, out in enumerate(outputs):
        assert (out["devices"], out["local"], out["index"], out["count"]) == (8, 4, pid, 2)
        np.testing.assert_allclose(out["psum"], x.sum(0, keepdims=True))
        np.testing.assert_allclose(out["loss"], float(want_loss), rtol=1e-12)
        for got, want in zip(out["params"], funcgrad.tree_util.tree_leaves(want_params)):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        # funcgrad.experimental.multihost_utils (tests/integration/_distributed_worker.py: multihost)
        assert out["allgather"] == [[0.0, 0.0], [1.0, 10.0]]
        assert out["allgather_tiled"] == [0.0, 0.0, 1.0, 1.0]
        assert out["broadcast"] == [5.0] and out["broadcast_from_1"] == 8.0
        assert out["assert_differs"].startswith("differs")
        assert out["global_shape"] == [8, 3] and out["global_whole"] == x.tolist()
        assert out["local_back"] == x[4 * pid : 4 * pid + 4].tolist() and out["local_devices"] == 4
        assert out["partial"] == [[0.0, 0.0], [1.0, 10.0]]
