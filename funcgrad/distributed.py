"""``funcgrad.distributed``: run one program on several processes (hosts), as
``jax.distributed``.

Layer: surface. Imports ``xla_bridge`` (``xla_bridge.distributed``: jaxlib's distributed runtime
and Gloo collectives) and ``funcgrad._clusters`` (cluster detection from the environment).

Call ``initialize(coordinator_address="host:port", num_processes=P, process_id=i)`` first thing in
every process (the coordinator runs in process 0, at that address); under SLURM, Open MPI's
``mpirun`` or a Kubernetes Indexed Job, ``initialize()`` reads them from the environment. Afterwards
``funcgrad.devices()`` lists the devices of all processes and ``funcgrad.local_devices()`` this
one's; a mesh over all devices (``make_mesh``) spans the processes; every process runs the same
jitted (or shard_map) program on its own shards -- ``make_array_from_process_local_data`` builds a
global array from each process's part of a batch -- and XLA's collectives (Gloo over TCP on CPU)
cross the processes. ``shutdown()`` (also run at exit) leaves cleanly; a process that dies takes
the others down after the heartbeat timeout (the coordination service's design).

On CPU, ``local_device_ids`` (or ``funcgrad.config.update("jax_num_cpu_devices", k)``, or
``XLA_FLAGS=--xla_force_host_platform_device_count=k``) gives each process ``k`` devices.

>>> import funcgrad.distributed
>>> funcgrad.distributed.is_initialized()
False
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from funcgrad import _clusters, xla_bridge

__all__ = ["initialize", "is_initialized", "shutdown"]


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: int | Sequence[int] | None = None,
    cluster_detection_method: str | None = None,
    initialization_timeout: int = 300,
    coordinator_bind_address: str | None = None,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    partition_index: int | None = None,
) -> None:
    """Join the processes of one program; before any computation. ``coordinator_address``
    ("host:port") is where process 0 runs the coordination service; ``num_processes`` and
    ``process_id`` (0 to ``num_processes - 1``) say who is who. ``local_device_ids``: the local
    devices this process uses (on CPU, how many it has: ``range(k)`` or ``k``).

    What is left out is read from the environment, as JAX does (``funcgrad/_clusters.py``):
    ``JAX_COORDINATOR_ADDRESS``, ``JAX_LOCAL_DEVICE_IDS``, and a SLURM job step, an Open MPI
    ``mpirun``, a Kubernetes Indexed Job, or mpi4py (``cluster_detection_method="mpi4py"``;
    ``"deactivate"`` turns detection off). ``partition_index`` is accepted for JAX's signature
    (one partition)."""
    del partition_index
    if local_device_ids is None and (env_ids := os.environ.get("JAX_LOCAL_DEVICE_IDS")):
        local_device_ids = [int(i) for i in env_ids.split(",")]
    coordinator_address, num_processes, process_id = _clusters.detect(
        coordinator_address, num_processes, process_id, cluster_detection_method
    )
    missing = [
        name
        for name, v in (
            ("coordinator_address", coordinator_address),
            ("num_processes", num_processes),
            ("process_id", process_id),
        )
        if v is None
    ]
    if missing:
        raise ValueError(
            f"funcgrad.distributed.initialize: {', '.join(missing)} not given and no cluster environment "
            "found to read them from (looked for SLURM: SLURM_JOB_ID/SLURM_STEP_NODELIST/SLURM_NTASKS/"
            "SLURM_PROCID/SLURM_LOCALID; Open MPI: OMPI_MCA_orte_hnp_uri; a Kubernetes Indexed Job: "
            "JOB_COMPLETION_INDEX; and JAX_COORDINATOR_ADDRESS). Pass "
            "initialize(coordinator_address='host:port', num_processes=N, process_id=i), or run under one "
            "of those launchers"
        )
    coordinator_bind_address = coordinator_bind_address or os.environ.get("JAX_COORDINATOR_BIND_ADDRESS")
    if not isinstance(coordinator_address, str) or ":" not in coordinator_address:
        raise ValueError(f"coordinator_address must be 'host:port', got {coordinator_address!r}")
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be a positive int, got {num_processes!r}")
    if not isinstance(process_id, int) or not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in [0, {num_processes}), got {process_id!r}")
    n_local = None
    if local_device_ids is not None:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
        n_local = ids[0] if isinstance(local_device_ids, int) else len(ids)
        if n_local < 1:
            raise ValueError(f"local_device_ids must name at least one device, got {local_device_ids!r}")
    xla_bridge.distributed.initialize(
        coordinator_address,
        num_processes,
        process_id,
        num_local_devices=n_local,
        initialization_timeout=initialization_timeout,
        heartbeat_timeout=heartbeat_timeout_seconds,
        shutdown_timeout=shutdown_timeout_seconds,
        coordinator_bind_address=coordinator_bind_address,
    )


def is_initialized() -> bool:
    """Whether ``initialize`` ran in this process."""
    return xla_bridge.distributed.is_initialized()


def shutdown() -> None:
    """Leave the program (process 0 also stops the coordination service)."""
    xla_bridge.distributed.shutdown()
