"""Several processes: jaxlib's distributed runtime (coordination service and client) and Gloo
collectives across processes on CPU.

Layer: xla_bridge (runtime half). May import stdlib, jaxlib and its sibling ``runtime``. Never
jax, never funcgrad.

``initialize`` (shared/notes/jaxlib-spmd-facts.md, D) starts the coordination service on process
0, connects every process's client to it, and hands the runtime the options of the CPU client it
will create: the distributed client, this process's id, the process count and the Gloo TCP
collectives (without them a program over several processes fails to compile). The CPU client then
lists every process's devices (``devices()``; ids of later processes are not ``0..N-1``) and this
process's own (``local_devices()``); the same SPMD program runs on every process, each putting
and reading only its own devices' shards. The service aborts the survivors when a process dies
(its heartbeats): ``shutdown`` at the end (registered with ``atexit``) ends them all cleanly.
"""

from __future__ import annotations

import atexit
import threading

from jaxlib import _jax

from . import runtime

__all__ = ["client", "initialize", "is_initialized", "shutdown"]

_lock = threading.Lock()
_state: dict = {}


def initialize(
    coordinator_address: str,
    num_processes: int,
    process_id: int,
    *,
    num_local_devices: int | None = None,
    initialization_timeout: int = 300,
    heartbeat_timeout: int = 100,
    shutdown_timeout: int = 300,
    coordinator_bind_address: str | None = None,
) -> None:
    """Join the processes of one program (see the module docstring); before any computation."""
    with _lock:
        if _state:
            raise RuntimeError("funcgrad.distributed.initialize was already called in this process")
        if runtime.backend_started("cpu"):
            raise RuntimeError(
                "funcgrad.distributed.initialize must run before any computation (the CPU backend already "
                "started): call it first thing in the program"
            )
        port = coordinator_address.rsplit(":", 1)[-1]
        service = None
        if process_id == 0:
            service = _jax.get_distributed_runtime_service(
                coordinator_bind_address or f"[::]:{port}",
                num_processes,
                heartbeat_timeout=heartbeat_timeout,
                shutdown_timeout=shutdown_timeout,
            )
        dc = _jax.get_distributed_runtime_client(
            coordinator_address,
            process_id,
            init_timeout=initialization_timeout,
            heartbeat_timeout=heartbeat_timeout,
            shutdown_timeout=shutdown_timeout,
            use_compression=True,
        )
        try:
            dc.connect()
        except _jax.JaxRuntimeError as e:
            if service is not None:
                service.shutdown()
            raise runtime.XlaBridgeError(
                f"process {process_id} could not reach the coordinator at {coordinator_address} within "
                f"{initialization_timeout} s: {e}"
            ) from None
        collectives = _jax.make_gloo_tcp_collectives(distributed_client=dc)
        options = dict(
            distributed_client=dc, node_id=process_id, num_nodes=num_processes, collectives=collectives
        )
        if num_local_devices is not None:
            options["num_devices"] = num_local_devices
        runtime.configure_cpu_client(**options)
        _state.update(service=service, client=dc, process_id=process_id, num_processes=num_processes)
    atexit.register(shutdown)


def is_initialized() -> bool:
    return bool(_state)


def client():
    """This process's distributed-runtime client (key-value store, barriers), or ``None``."""
    return _state.get("client")


def shutdown() -> None:
    """Leave the program: a barrier-free disconnect of this process (and, on process 0, the
    service's shutdown, which waits for the others)."""
    with _lock:
        if not _state:
            return
        dc, service = _state["client"], _state["service"]
        _state.clear()
    try:
        dc.shutdown()
    finally:
        if service is not None:
            service.shutdown()
