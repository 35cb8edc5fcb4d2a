"""Cluster detection for ``funcgrad.distributed.initialize()`` without arguments, as JAX's
``jax._src.clusters``: which process of how many this is, and where the coordinator runs, read
from the environment a cluster manager sets.

Layer: surface. Imports the standard library only (``mpi4py`` on first use, when asked for).

Environments, tried in this order (``cluster_detection_method=`` picks one by name):

- ``"slurm"``: ``SLURM_JOB_ID``, ``SLURM_STEP_NODELIST``, ``SLURM_NTASKS``, ``SLURM_PROCID``,
  ``SLURM_LOCALID``; the coordinator is the step's first node, on a port derived from the job id;
- ``"ompi"`` (Open MPI's ``mpirun``): ``OMPI_MCA_orte_hnp_uri`` (the launcher's address and the
  job id), ``OMPI_COMM_WORLD_SIZE``, ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_LOCAL_RANK``;
- ``"k8s"`` (a Kubernetes Indexed Job): ``KUBERNETES_SERVICE_HOST`` and ``JOB_COMPLETION_INDEX``
  (the process id); the coordinator comes from ``JAX_COORDINATOR_ADDRESS`` and the process count
  from ``JAX_NUM_PROCESSES`` (JAX asks the Kubernetes API for both; funcgrad reads what the Job's
  spec passes down);
- ``"mpi4py"`` (only when asked for, as in JAX): rank 0's host name broadcast with mpi4py.

``JAX_COORDINATOR_ADDRESS`` (and ``JAX_COORDINATOR_PORT``, the port of a detected coordinator)
override what is detected, as in JAX.
"""

from __future__ import annotations

import os
import re
import socket

__all__ = ["ClusterEnv", "detect"]


class ClusterEnv:
    """One kind of cluster environment (subclasses register themselves)."""

    name = ""
    opt_in_only = False
    kinds: list[type[ClusterEnv]] = []

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        ClusterEnv.kinds.append(cls)

    @classmethod
    def is_env_present(cls) -> bool:
        raise NotImplementedError

    @classmethod
    def coordinator_address(cls, port: str | None) -> str:
        raise NotImplementedError

    @classmethod
    def process_count(cls) -> int:
        raise NotImplementedError

    @classmethod
    def process_id(cls) -> int:
        raise NotImplementedError


def _ephemeral_port(job_id: int) -> str:
    # JAX's choice: one of the last 2**12 ports, by job id, so every process computes the same.
    return str(job_id % 2**12 + (65535 - 2**12 + 1))


class SlurmCluster(ClusterEnv):
    name = "slurm"
    _vars = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")

    @classmethod
    def is_env_present(cls) -> bool:
        return all(v in os.environ for v in cls._vars)

    @classmethod
    def coordinator_address(cls, port):
        port = port or _ephemeral_port(int(os.environ["SLURM_JOB_ID"]))
        return f"{first_node(os.environ['SLURM_STEP_NODELIST'])}:{port}"

    @classmethod
    def process_count(cls):
        return int(os.environ["SLURM_NTASKS"])

    @classmethod
    def process_id(cls):
        return int(os.environ["SLURM_PROCID"])


def first_node(node_list: str) -> str:
    """The first host of a SLURM node list (``node[001-015],x`` -> ``node001``).

    >>> first_node("node[007,009-011],gpu1"), first_node("host2,host3"), first_node("solo")
    ('node007', 'host2', 'solo')
    """
    m = re.match(r"([^,\[]*)(?:\[([^,\-\]]+))?", node_list)
    return m.group(1) + (m.group(2) or "")


class OmpiCluster(ClusterEnv):
    name = "ompi"

    @classmethod
    def is_env_present(cls) -> bool:
        return "OMPI_MCA_orte_hnp_uri" in os.environ

    @classmethod
    def coordinator_address(cls, port):
        uri = os.environ["OMPI_MCA_orte_hnp_uri"]  # e.g. 1531576320.0;tcp://10.96.0.1,10.148.0.1:34911
        port = port or _ephemeral_port(int(uri.split(".", 1)[0]) // 2**12)
        m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
        if m is None:
            raise RuntimeError(f"could not read the launcher's address from OMPI_MCA_orte_hnp_uri={uri!r}")
        return f"{next(g for g in m.groups() if g is not None)}:{port}"

    @classmethod
    def process_count(cls):
        return int(os.environ["OMPI_COMM_WORLD_SIZE"])

    @classmethod
    def process_id(cls):
        return int(os.environ["OMPI_COMM_WORLD_RANK"])


class K8sCluster(ClusterEnv):
    name = "k8s"

    @classmethod
    def is_env_present(cls) -> bool:
        return "KUBERNETES_SERVICE_HOST" in os.environ and "JOB_COMPLETION_INDEX" in os.environ

    @classmethod
    def coordinator_address(cls, port):
        raise ValueError(
            "a Kubernetes Indexed Job was detected (JOB_COMPLETION_INDEX) but no coordinator: set "
            "JAX_COORDINATOR_ADDRESS=host:port (e.g. the headless service name of index 0's pod) in the "
            "Job's spec, or pass coordinator_address="
        )

    @classmethod
    def process_count(cls):
        n = os.environ.get("JAX_NUM_PROCESSES")
        if n is None:
            raise ValueError(
                "a Kubernetes Indexed Job was detected but not its size: set JAX_NUM_PROCESSES (the Job's "
                "completions) in its spec, or pass num_processes="
            )
        return int(n)

    @classmethod
    def process_id(cls):
        return int(os.environ["JOB_COMPLETION_INDEX"])


class Mpi4pyCluster(ClusterEnv):
    name = "mpi4py"
    opt_in_only = True

    @classmethod
    def is_env_present(cls) -> bool:
        import importlib.util  # noqa: PLC0415 - only when asked for

        return importlib.util.find_spec("mpi4py") is not None

    @classmethod
    def _comm(cls):
        from mpi4py import MPI  # noqa: PLC0415 - an optional dependency, asked for by name

        return MPI.COMM_WORLD

    @classmethod
    def coordinator_address(cls, port):
        comm = cls._comm()
        host = socket.gethostname() if comm.Get_rank() == 0 else None
        return f"{comm.bcast(host, root=0)}:{port or 64785}"

    @classmethod
    def process_count(cls):
        return cls._comm().Get_size()

    @classmethod
    def process_id(cls):
        return cls._comm().Get_rank()


def detect(coordinator_address, num_processes, process_id, method=None):
    """Fill in what is ``None`` of ``(coordinator_address, num_processes, process_id)`` from the
    environment (the module docstring); ``method``: one environment's name, ``"deactivate"``: none.

    >>> detect("h:1", 2, 0)
    ('h:1', 2, 0)
    """
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if method == "deactivate" or None not in (coordinator_address, num_processes, process_id):
        return coordinator_address, num_processes, process_id
    if method is not None:
        env = next((k for k in ClusterEnv.kinds if k.name == method), None)
        if env is None:
            raise ValueError(
                f"cluster_detection_method={method!r} is not one of "
                f"{[k.name for k in ClusterEnv.kinds]} (or 'deactivate')"
            )
        if not env.is_env_present():
            raise ValueError(f"cluster_detection_method={method!r}: that environment is not present here")
    else:
        env = next((k for k in ClusterEnv.kinds if not k.opt_in_only and k.is_env_present()), None)
    if env is not None:
        if num_processes is None:
            num_processes = env.process_count()
        if process_id is None:
            process_id = env.process_id()
        if coordinator_address is None:
            coordinator_address = env.coordinator_address(os.environ.get("JAX_COORDINATOR_PORT"))
    return coordinator_address, num_processes, process_id
