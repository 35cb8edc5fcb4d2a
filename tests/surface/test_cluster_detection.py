"""``funcgrad.distributed.initialize()`` without arguments reads the cluster from the environment
as jax 0.10.2 does (SLURM, Open MPI; the oracle is jax's own detection, run on the same variables),
plus Kubernetes Indexed Jobs and the clear error when nothing is found. Nothing here starts a
process or a coordinator (tests/integration/test_distributed.py runs two processes)."""

from __future__ import annotations

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


def _jax_detect():
    from jax._src import clusters  # noqa: PLC0415 - the oracle, imported only here

    addr, n, pid, _ = clusters.ClusterEnv.auto_detect_unset_distributed_params(
        None, None, None, None, None, 10
    )
    return addr, n, pid


@pytest.mark.parametrize("variables", [SLURM, OMPI, {**SLURM, "SLURM_STEP_NODELIST": "solo"}])
@pytest.mark.parametrize("port", [None, "4321"])
def test_detection_equals_jax(env, variables, port):
    for k, v in variables.items():
        env.setenv(k, v)
    if port:
        env.setenv("JAX_COORDINATOR_PORT", port)
    assert _clusters.detect(None, None, None) == _jax_detect()


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
