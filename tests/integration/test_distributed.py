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


def _run_two(commands, envs, what: str) -> list[dict]:
    """Start the two processes (``commands[i]`` with ``envs[i]``), wait for both within
    ``TIMEOUT`` and return the last JSON line each printed; kill only what this test started."""
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd, env in zip(commands, envs, strict=True)
    ]
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, f"worker failed (rc {p.returncode}):\n{err[-4000:]}"
            outputs.append(json.loads([line for line in out.splitlines() if line.startswith("{")][-1]))
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not finish within {TIMEOUT} s")
    finally:
        for p in procs:  # only the processes this test started
            if p.poll() is None:
                p.kill()
                p.wait()
    return outputs


def test_two_processes_run_one_program():
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, HERE])
    outputs = _run_two(
        [
            [sys.executable, os.path.join(HERE, "_distributed_worker.py"), str(pid), str(port)]
            for pid in (0, 1)
        ],
        [env, env],
        "the 2-process program",
    )
    x = np.arange(8 * 3.0).reshape(8, 3)
    want_params, want_loss = train_step(init_params(), *batch())
    for pid, out in enumerate(outputs):
        assert (out["devices"], out["local"], out["index"], out["count"]) == (8, 4, pid, 2)
        np.testing.assert_allclose(out["psum"], x.sum(0, keepdims=True))
        # an explicit-sharding step (sharding in types) on two processes equals the one-process step
        assert out["types"] == ["(Explicit,)", "float64[64@x,5]", "float64[5,16]"]
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


# A process of test_initialize_detects_a_slurm_step: initialize() with no arguments, then a psum
# over the 4 devices of both processes (2 each).
_SLURM_WORKER = """
import json, numpy as np, funcgrad
funcgrad.distributed.initialize(initialization_timeout=60, heartbeat_timeout_seconds=10,
                                shutdown_timeout_seconds=30)
from funcgrad import lax
from funcgrad.sharding import AxisType, P, make_mesh
mesh = make_mesh((4,), ("x",), (AxisType.Auto,))
f = funcgrad.jit(funcgrad.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))
x = funcgrad.make_array_from_process_local_data(
    funcgrad.sharding.NamedSharding(mesh, P("x")), np.arange(2.0) + 2 * funcgrad.process_index()
)
out = np.asarray(f(x).addressable_shards[0].data).tolist()
print(json.dumps({"index": funcgrad.process_index(), "count": funcgrad.process_count(),
                  "devices": funcgrad.device_count(), "psum": out}))
"""


def test_initialize_detects_a_slurm_step():
    # The variables SLURM sets for a 2-task step on one node; the coordinator port is forced free.
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS" and not k.startswith("SLURM_")}
    base["PYTHONPATH"] = ROOT
    base["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    base.update(SLURM_JOB_ID="4242", SLURM_STEP_NODELIST="127.0.0.1", SLURM_NTASKS="2")
    base["JAX_COORDINATOR_PORT"] = str(port)
    outputs = _run_two(
        [[sys.executable, "-c", _SLURM_WORKER]] * 2,
        [{**base, "SLURM_PROCID": str(pid), "SLURM_LOCALID": str(pid)} for pid in (0, 1)],
        "the 2-process SLURM-style program",
    )
    for pid, out in enumerate(outputs):
        assert (out["index"], out["count"], out["devices"]) == (pid, 2, 4)
        assert out["psum"] == [0.0 + 1.0 + 2.0 + 3.0]
