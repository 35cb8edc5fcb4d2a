"""``funcgrad.distributed.initialize()`` without arguments reads the cluster from the environment
as jax 0.10.2 does (SLURM, Open MPI; the oracle is jax's own detection, run on the same variables),
plus Kubernetes Indexed Jobs and the clear error when nothing is found. Nothing here starts a
process or a coordinator (tests/integration/test_distributed.py runs two processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import funcgrad
from funcgrad import _clusters

SLURM = {
    "SLURM_JOB_ID": "123456",
    "SLURM_STEP_NODELIST": "node[007,009-011],gpu1",
    "SLURM_NTASKS": "4",
    "SLURM_PROCID": "2",
    "SLURM_LOCALID": "0",
}
OMPI = {
    "OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1,10.148.0.1,10.108.0.1:34911",
    "OMPI_COMM_WORLD_SIZE": "8",
    "OMPI_COMM_WORLD_RANK": "5",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
}
ALL = {*SLURM, *OMPI, "KUBERNETES_SERVICE_HOST", "JOB_COMPLETION_INDEX", "JAX_NUM_PROCESSES"}
ALL |= {"JAX_COORDINATOR_ADDRESS", "JAX_COORDINATOR_PORT", "JAX_LOCAL_DEVICE_IDS"}


@pytest.fixture
def env(monkeypatch):
    for k in ALL:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


ENVS = [
    {**variables, **({"JAX_COORDINATOR_PORT": port} if port else {})}
    for variables in (SLURM, OMPI, {**SLURM, "SLURM_STEP_NODELIST": "solo"})
    for port in (None, "4321")
]
# jax's own detection on each environment, in a fresh interpreter (this process may have
# funcgrad.as_jax standing in for jax).
ORACLE = """
import json, os, sys
from jax._src import clusters
out = []
for env in json.loads(sys.argv[1]):
    for k in list(os.environ):
        if k.startswith(("SLURM_", "OMPI_", "JAX_")):
            del os.environ[k]
    os.environ.update(env)
    detect = clusters.ClusterEnv.auto_detect_unset_distributed_params
    addr, n, pid, _ = detect(None, None, None, None, None, 10)
    out.append([addr, n, pid])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_detected():
    clean = {k: v for k, v in os.environ.items() if k not in ALL and not k.startswith("SLURM_")}
    done = subprocess.run(
        [sys.executable, "-c", ORACLE, json.dumps(ENVS)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [tuple(r) for r in json.loads(done.stdout.splitlines()[-1])]


@pytest.mark.parametrize("k", range(len(ENVS)))
def test_detection_equals_jax(env, jax_detected, k):
    for name, v in ENVS[k].items():
        env.setenv(name, v)
    assert _clusters.detect(None, None, None) == jax_detected[k]


def test_arguments_and_jax_coordinator_address_win(env):
    for k, v in SLURM.items():
        env.setenv(k, v)
    env.setenv("JAX_COORDINATOR_ADDRESS", "head:1234")
    assert _clusters.detect(None, None, None) == ("head:1234", 4, 2)
    assert _clusters.detect("me:1", 2, 1) == ("me:1", 2, 1)
    assert _clusters.detect(None, None, None, "deactivate") == ("head:1234", None, None)


def test_kubernetes_indexed_job(env):
    env.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    env.setenv("JOB_COMPLETION_INDEX", "3")
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES"):
        _clusters.detect("svc-0:1234", None, None)
    env.setenv("JAX_NUM_PROCESSES", "4")
    with pytest.raises(ValueError, match="JAX_COORDINATOR_ADDRESS"):
        _clusters.detect(None, None, None)
    env.setenv("JAX_COORDINATOR_ADDRESS", "svc-0:1234")
    assert _clusters.detect(None, None, None) == ("svc-0:1234", 4, 3)


def test_nothing_detected_is_a_clear_error(env):
    with pytest.raises(ValueError, match=r"coordinator_address, num_processes, process_id not given.*SLURM"):
        funcgrad.distributed.initialize()
    with pytest.raises(ValueError, match="not one of"):
        funcgrad.distributed.initialize(cluster_detection_method="pbs")
    with pytest.raises(ValueError, match="not present"):
        funcgrad.distributed.initialize(cluster_detection_method="slurm")
    assert not funcgrad.distributed.is_initialized()
