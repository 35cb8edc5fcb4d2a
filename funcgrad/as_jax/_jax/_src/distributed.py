"""``jax._src.distributed`` under the alias: ``global_state``, which orbax reads as if public
(``global_state.process_id``, ``.num_processes``, ``.client`` to find out whether and how the
processes of a program are joined).

It reads funcgrad's own state, live: ``funcgrad.distributed.initialize`` fills it, ``shutdown``
empties it; before that it is JAX's default (process 0 of 1, no client, no service).
"""

from funcgrad import xla_bridge as _xb

__all__ = ["global_state"]


class _State:
    """JAX's ``distributed.State``, read-only, over ``funcgrad.xla_bridge.distributed``'s state."""

    preemption_sync_manager = None  # funcgrad has no preemption notices to sync on
    partition_index = None

    @staticmethod
    def _get(key, default):
        return _xb.distributed._state.get(key, default)

    process_id = property(lambda self: self._get("process_id", 0))
    num_processes = property(lambda self: self._get("num_processes", 1))
    client = property(lambda self: self._get("client", None))
    service = property(lambda self: self._get("service", None))
    coordinator_address = property(lambda self: self._get("coordinator_address", None))

    def __repr__(self):
        return f"State(process_id={self.process_id}, num_processes={self.num_processes})"


global_state = _State()
