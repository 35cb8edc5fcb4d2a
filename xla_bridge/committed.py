"""Committed arrays: where a computation on them runs, and the error when they disagree.

Layer: xla_bridge. Imports numpy and the funcgrad kernel's ``Array``, ``hooks`` and ``ir`` only
(never jaxlib: the buffers' own ``_committed`` flags and shardings are read as attributes). Used by every call
route (``execute``'s compiled and eager routes, ``dispatch``'s native and staged ones, the SPMD
route) to choose the device of a call and the committed flag of its results.

# NOTE: [committed arrays]
# JAX's ``Array.committed``: an array placed on a device on purpose (``device_put(x, device)``, a
# sharding, ``make_array_from_*``, a shard's data) is *committed* to it; one made without a
# placement (``jnp.ones``, a NumPy argument, ``device_put(x)`` without a device) is not, and lives
# on the default device. Computation follows committed data: an eager operation or a jitted call
# whose arguments include committed arrays runs on their devices, and its results are committed
# there; uncommitted arguments follow them. Committed arguments on different devices meet only in
# an error (``IncompatibleDevices``: JAX's "Received incompatible devices for jitted computation").
# The flag is the device buffer's own (jaxlib's ``ArrayImpl._committed``), so it travels with the
# value through every route without a field on ``Array``: a host-backed Array is uncommitted, and
# the buffer a call makes of it (cached on it, NOTE: [argument buffers]) is made uncommitted;
# results of a one-device program are uncommitted (``Executable``'s result handlers) unless an
# argument was committed (``commit`` re-wraps them), and the native dispatcher is told which in its
# fast-path record (``out_committed``); jaxlib's dispatcher keys its cache on the arguments'
# committed flags, so both kinds of call have their own entry. Programs over several devices (a
# sharding was asked for, or an argument is sharded) give committed results, as in JAX.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel.array import Array
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import backward_dependencies

__all__ = [
    "IncompatibleDevices",
    "commit",
    "committed_devices",
    "incompatible_devices_message",
    "memory_kind",
    "read_inputs",
]


def incompatible_devices_message(*parts) -> str:
    """JAX's message for a computation whose values sit on different devices, from ``(what, device
    ids, platform)`` parts: ``what`` names a value as JAX's message does ("argument x of f with
    shape f32[8] and", "sharding_constraint inside jit", "jit's context mesh").

    >>> message = incompatible_devices_message(("ARG_SHARDING", [0], "cpu"), ("the mesh", [1], "cpu"))
    >>> message.split(". Got ")[1].split(" and ")
    ['ARG_SHARDING with device ids [0] on platform CPU', 'the mesh with device ids [1] on platform CPU']
    """
    described = [
        f"{what} with device ids {list(ids)} on platform {platform.upper()}" for what, ids, platform in parts
    ]
    return "Received incompatible devices for jitted computation. Got " + " and ".join(described)


class IncompatibleDevices(ValueError):
    """Committed arguments of one computation on different devices (JAX's message). ``first``
    and ``second``: the positions of the two arguments among the flat arguments; ``worded(names)``
    words it again with the arguments' names (a jitted function's parameters)."""

    def __init__(self, fun: str, first: int, second: int, infos):
        self.fun, self.first, self.second, self.infos = fun, first, second, infos
        super().__init__(
            self._text([f"args[{i}]" if i is not None and i >= 0 else None for i in (first, second)])
        )

    def _text(self, labels) -> str:
        parts = []
        for label, (shape, ids, platform) in zip(labels, self.infos):
            if shape is None:  # (``second`` is None: the mesh set, NOTE: [placement in context])
                what = "jit's context mesh"
            elif label is None:  # (a mesh inside the program: a sharding constraint's, JAX's words)
                what = "sharding_constraint inside jit"
            else:
                what = f"argument {label} of {self.fun} with shape {shape} and"
            parts.append((what, ids, platform))
        return incompatible_devices_message(*parts)

    def worded(self, names=None, fun: str | None = None) -> ValueError:
        """The error to raise: JAX's ``ValueError`` (this class is the bridge's own, caught to be
        worded), naming the arguments by ``names`` (one per flat argument) and the function by
        ``fun`` (JAX names a jitted function by its ``__qualname__``)."""
        err = IncompatibleDevices(fun or self.fun, self.first, self.second, self.infos)
        positions = [i for i in (self.first, self.second) if i is not None and i >= 0]
        if names is not None and max(positions) < len(names):
            return ValueError(
                err._text([names[i] if i is not None and i >= 0 else None for i in (self.first, self.second)])
            )
        return ValueError(str(err))


def _dim(n, axes) -> str:
    # JAX's short form of a sharded dimension: 8@x, 8@(x,y)
    if not axes:
        return str(n)
    return f"{n}@{axes[0]}" if len(axes) == 1 else f"{n}@({','.join(axes)})"


def _info(buf):
    aval = buf.aval
    spec = getattr(buf._sharding, "_fg_spec", None) or ((),) * len(aval.shape)
    dims = ",".join(_dim(n, tuple(axes or ())) for n, axes in zip(aval.shape, spec))
    shape = f"{np.dtype(aval.dtype).name}[{dims}]"
    devs = buf._sharding._fg_devs
    return shape, tuple(d.id for d in devs), devs[0].platform


# NOTE: [unread arguments choose no devices]
# JAX's jit prunes the arguments its program never reads (``keep_unused=False``, the default)
# before it assigns devices: a committed or sharded argument the program does not read neither
# chooses where the call runs (an otherwise argument-free program runs on the default device, its
# results uncommitted) nor meets the others in "incompatible devices". The dispatcher
# (xla_bridge/dispatch.py) asks ``committed_devices`` and ``needs_spmd`` about the read ones
# only (``read_inputs``, once per staged program); such an argument is still handed to the program,
# moved to its devices. ``jit(keep_unused=True)`` keeps them all, as JAX's.


def read_inputs(jaxpr) -> tuple[bool, ...]:
    """Which of ``jaxpr``'s inputs its live equations (effects included) or results read."""
    needed = backward_dependencies(jaxpr.eqns, jaxpr.outvars, effects=True, refused=False)[0]
    return tuple(v in needed for v in jaxpr.invars)


def committed_devices(args, fun: str, read=None, meshes=()):
    """The devices (a tuple) the committed Arrays among ``args`` (those ``read`` flags, when
    given: NOTE: [unread arguments choose no devices]) live on, or ``None`` when none is
    committed; raises ``IncompatibleDevices`` when two of them disagree (NOTE: [committed
    arrays]), or when they are not the devices of one of ``meshes`` (those of the program's
    sharding constraints and shard_maps: JAX does not move committed data onto them).

    >>> committed_devices([1.0, np.ones(2)], "f") is None
    True
    """
    found = None
    for i, x in enumerate(args):
        if type(x) is not Array or (read is not None and not read[i]):
            continue
        b = x._buffer
        if b is None or not b._committed:
            continue
        devs = b._sharding._fg_devs
        if found is None:
            found, first, first_buf = devs, i, b
        elif devs != found and set(devs) != set(found):
            raise IncompatibleDevices(fun, first, i, [_info(first_buf), _info(b)])
    for mesh in meshes if found is not None else ():
        if set(found) != set(mesh._flat):
            ids = tuple(d.id for d in mesh._flat)
            raise IncompatibleDevices(fun, first, -1, [_info(first_buf), ("", ids, mesh._flat[0].platform)])
    if found is not None and hooks.context_mesh is not None:
        mesh = hooks.context_mesh()  # NOTE: [placement in context]: committed data must be on it
        if mesh is not None and set(found) != set(mesh._flat):
            ids = tuple(d.id for d in mesh._flat)
            raise IncompatibleDevices(
                fun, first, None, [_info(first_buf), (None, ids, mesh._flat[0].platform)]
            )
    return found


def _kind(x: Array):
    b = x._buffer
    return None if b is None else b._sharding._fg_kind


def memory_kind(args, fun: str | None = None):
    """The memory kind (``None``: the devices' own) the device-backed Arrays among ``args`` share;
    with ``fun`` (an eager primitive's name), operands in different memories raise JAX's
    ValueError, else the kind is ``None`` when they differ (a jitted call's results stay in the
    devices' own memory)."""
    kinds = []
    for x in args:
        # (a 0-d value on the host, a Python scalar's, goes wherever the others are)
        if type(x) is Array and not (x._buffer is None and not x.shape):
            k = _kind(x)
            if k not in kinds:
                kinds.append(k)
    if len(kinds) <= 1:
        return kinds[0] if kinds else None
    if fun is None:
        return None
    shown = []
    for k in kinds[:2]:
        x = next(
            a for a in args if type(a) is Array and not (a._buffer is None and not a.shape) and _kind(a) == k
        )
        space = "<host>" if k == "pinned_host" else ""
        shown.append(f"{np.dtype(x.dtype).name}{space}[{','.join(map(str, x.shape))}]")
    raise ValueError(
        f"memory_space of all inputs passed to `{fun}` must be the same. Got one operand with type: "
        f"{shown[0]} and another operand with type: {shown[1]}"
    )


def commit(buffers) -> list:
    """``buffers`` (one-device jaxlib ArrayImpls) marked committed: results of a call whose
    arguments were committed (NOTE: [committed arrays]). A committed buffer is kept as it is."""
    out = []
    for b in buffers:
        if not b._committed:
            b = type(b)(b.aval, b._sharding, [b], True, True)
        out.append(b)
    return out
