"""Unreduced values (``P(..., unreduced={'y'})``, JAX 0.10): placing them, reducing them and the
contractions that leave them unreduced (NOTE: [unreduced values] below).

Layer: surface. Imports the kernel, ``funcgrad._shardings`` and ``xla_bridge``; the placement
functions (``funcgrad._placement``) call into it, and ``funcgrad.sharding`` registers with them the
two operations that are built on ``shard_map`` (reducing a traced value, a contraction left
unreduced).

>>> unreduced_of(np.ones(2))
frozenset()
"""

from __future__ import annotations

import numpy as np

from funcgrad import xla_bridge
from funcgrad._shardings import Mesh, NamedSharding, PartitionSpec, from_bridge
from funcgrad.kernel import core

__all__ = ["held_blocks", "put_unreduced", "reduced_value", "unreduced_of", "unreduced_type"]


#
# NOTE: [unreduced values]
# ``P(..., unreduced={'y'})`` (JAX 0.10): the logical value is the *sum* over mesh axis 'y' of
# the devices' blocks. funcgrad holds such a value eagerly: its buffer is laid out as the spec
# without the unreduced axes (each device a block of that layout) and carries the unreduced
# NamedSharding (``x.sharding``, and ``{U:y}`` in its type); the devices' blocks differ. Placing
# a value there keeps each element on one device of each unreduced group (the first that held it:
# a whole value on the group's first device, zeros on the others; a value split along an
# unreduced axis keeps each device's own piece, as JAX's parallel-programming tutorial shows);
# ``reshard`` to a sharding without those axes sums the groups. Eagerly nothing else computes on
# an unreduced value (a clear error). Under ``jit`` the type carries the unreduced axes
# (``{U:y}``): JAX's rules (primitives/_unreduced_rules.py ``out_unreduced``) let the linear
# operations keep them (``add`` of two alike, ``mul`` by a reduced value, structural operations,
# ``reduce_sum``) and refuse the rest; the bridge declares them to XLA (``unreduced={"y"}`` in
# Shardy's shardings of parameters, constraints and results), so a ``reshard`` to a sharding
# without them is XLA's all-reduce, a ``reshard`` to one with them XLA's replicated-to-unreduced
# cast (a ``sharding_constraint`` with ``unreduced``/``reduced`` params, primitives/sharding.py),
# and a result left unreduced comes back as each device's partial block. Its value cannot be read
# whole (as in JAX). Derivatives swap the two (JAX's ``to_ct_aval``, ``kernel.ad.ct_aval``): the
# cotangent of a value reduced over an axis is unreduced over it (``grad``'s seed 1 is on one
# device of each group), and the reverse; a call's body types its results, both kinds of axes too.


def unreduced_of(x) -> frozenset:
    """The unreduced mesh axes of ``x``'s sharding (empty for any other value)."""
    b = getattr(x, "_buffer", None)
    user = getattr(getattr(b, "_sharding", None), "_fg_user", None)
    spec = getattr(user, "spec", None)
    return frozenset(getattr(spec, "unreduced", ()) or ())


def _groups(mesh: Mesh, unreduced) -> list:
    """The mesh's devices grouped by their coordinates on the other axes, each group in order of
    its coordinates on the unreduced axes."""
    names = mesh.axis_names
    grid = np.asarray(mesh.devices)
    groups: dict = {}
    for coords in np.ndindex(grid.shape):
        key = tuple(c for n, c in zip(names, coords) if n not in unreduced)
        rank = tuple(c for n, c in zip(names, coords) if n in unreduced)
        groups.setdefault(key, []).append((rank, grid[coords]))
    return [[d for _, d in sorted(g, key=lambda t: t[0])] for g in groups.values()]


def put_unreduced(value: np.ndarray, s: NamedSharding, held=None):
    """A buffer of ``value`` placed as the unreduced sharding ``s`` (NOTE: [unreduced values]).
    ``held`` maps each device to the index of ``value`` it held before (absent: it held all)."""
    ndim = value.ndim
    plain = NamedSharding(s.mesh, PartitionSpec(*s.spec))
    layout = plain.devices_indices_map(value.shape)
    blocks, devices = [], []
    for group in _groups(s.mesh, s.spec.unreduced):
        claimed = np.zeros(value.shape, bool)
        for d in group:
            mask = np.zeros(value.shape, bool)
            mask[held[d] if held is not None else (slice(None),) * ndim] = True
            mask &= ~claimed
            claimed |= mask
            idx = layout[d]
            blocks.append(np.where(mask[idx], value[idx], np.zeros((), value.dtype)))
            devices.append(d)
    return xla_bridge.sharded.put_blocks(
        blocks, devices, value.shape, value.dtype, s._bridge(ndim), distinct=True
    )


def reduced_value(x) -> np.ndarray:
    """The logical value of an unreduced ``x``: its devices' blocks summed over each unreduced
    group (on the host)."""
    b = x._buffer
    out = np.zeros(x.shape, x.dtype)
    user = b._sharding._fg_user
    layout = NamedSharding(user.mesh, PartitionSpec(*user.spec)).devices_indices_map(x.shape)
    blocks = {device: arr for device, _, arr in xla_bridge.sharded.shards(b)}
    for group in _groups(user.mesh, user.spec.unreduced):  # (groups of replicas agree)
        out[layout[group[0]]] = sum(xla_bridge.sharded.block_numpy(blocks[d]) for d in group)
    return out


def unreduced_type(v) -> bool:
    t = core.get_aval(v)._sharding
    return bool(t is not None and t.spec.unreduced)


def held_blocks(v):
    """Each device's index into ``v``'s value, for a value split over several devices (``None``
    for a host value or a value on one device: it is held whole)."""
    b = getattr(v, "_buffer", None)
    if b is None or hasattr(b._sharding, "_fg_device"):
        return None
    return from_bridge(b._sharding, v.ndim).devices_indices_map(v.shape)
