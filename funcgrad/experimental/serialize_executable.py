"""Pickling support for precompiled binaries (``jax.experimental.serialize_executable``):
``serialize(compiled)`` turns a ``jit(f).lower(...).compile()`` into bytes, and
``deserialize_and_load(bytes, in_tree, out_tree)`` makes a callable ``Compiled`` of them again
without tracing or compiling (XLA's serialized executable, loaded onto a device).

Layer: surface. Imports funcgrad's stages (``CompiledCall``), the device list, the tree utilities
and the bridge's ``serialization`` (funcgrad/xla_bridge/serialization.py), which holds the jaxlib
calls.

As JAX's, the pytree structures of the arguments and results are returned beside the bytes, not
inside them (a tree may hold user classes), and loading bytes runs what they hold: never load
untrusted data. A program's hoisted constants travel with it (JAX refuses those programs);
programs compiled for several devices, or calling back into Python, are refused with a
``ValueError``.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence

from funcgrad import tree_util as tu
from funcgrad._devices import devices as _devices
from funcgrad.jitting import CompiledCall
from funcgrad.xla_bridge import serialization
from funcgrad.xla_bridge.dispatch import Staged

__all__ = ["deserialize_and_load", "serialize"]


def serialize(compiled: CompiledCall):
    """Serialize a compiled function: returns ``(bytes, in_tree, out_tree)``, the pytree
    structures kept apart because pytrees are not serializable.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> compiled = funcgrad.jit(lambda x: x * 2).lower(fnp.ones(3)).compile()
    >>> payload, in_tree, out_tree = serialize(compiled)
    >>> deserialize_and_load(payload, in_tree, out_tree)(fnp.arange(3.0)).tolist()
    [0.0, 2.0, 4.0]
    """
    if not isinstance(compiled, CompiledCall):
        raise TypeError(
            f"serialize: expected a compiled function (jit(f).lower(...).compile()), got {type(compiled)}"
        )
    staged = compiled._staged
    if getattr(staged, "plan", None) is not None:
        raise ValueError("can't serialize with a closed-over mutable array ref")
    if staged.hoisted:
        raise ValueError("Compilation does not support serialization: the program closes over tracers")
    record = serialization.save(compiled._compiled)
    args_info_flat, in_tree = tu.tree_flatten(compiled.args_info)
    record["args_info"] = args_info_flat
    record["donated"] = tuple(compiled._donated)
    record["name"] = compiled._fun._name
    record["arg_names"] = staged.arg_names
    record["result_names"] = staged.result_names
    return pickle.dumps(record), in_tree, staged.out_tree


class _Named:
    """What a loaded ``Compiled`` knows of the function it was compiled from: its name."""

    def __init__(self, name: str):
        self._name = name


def deserialize_and_load(
    serialized, in_tree, out_tree, backend=None, execution_devices: Sequence | None = None
) -> CompiledCall:
    """A ``Compiled`` made from ``serialize``'s bytes and trees, loaded on ``execution_devices``
    (by default the devices of ``backend``: a platform name, a client, or the default backend);
    the device it was compiled for is taken if among them, else the first.

    .. warning::
       Loading a serialized executable may run arbitrary code: never call this with untrusted
       input.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> payload, i, o = serialize(funcgrad.jit(fnp.sin).lower(1.0).compile())
    >>> float(deserialize_and_load(payload, i, o, backend="cpu")(0.0))
    0.0
    """
    if backend is None or isinstance(backend, str):
        backend = _devices(backend)[0].client
    if execution_devices is None:
        execution_devices = backend.devices()
    else:
        device_backend = execution_devices[0].client
        if device_backend != backend:
            raise ValueError(
                "Execution devices belong to a client other than `backend`. Got backend client: "
                f"{(backend.platform, backend.platform_version)} and execution devices client: "
                f"{(device_backend.platform, device_backend.platform_version)}"
            )
    record = pickle.loads(serialized)
    by_id = {d.id: d for d in execution_devices}
    device = by_id.get(record["device_id"], list(execution_devices)[0])
    program, signature = serialization.load(record, device)
    staged = Staged(signature, out_tree)
    staged.arg_names, staged.result_names = record["arg_names"], record["result_names"]
    out = CompiledCall(_Named(record["name"]), staged, program)
    out.args_info = tu.tree_unflatten(in_tree, record["args_info"])
    out._donated = record["donated"]
    return out
