"""The key-reuse checker's state (``jax_debug_key_reuse``, ``jax.experimental.key_reuse``): which
PRNG keys have been consumed, the checks of the random functions, and the boundaries of ``jit``
and structured control flow.

Layer: surface, below ``funcgrad.jitting``, ``funcgrad._control_flow`` and ``funcgrad.random``
(which report consumption here). Imports the kernel only; a key array is recognised by its
``_key_reuse_cell`` slot (funcgrad/random/_keys.py), not by importing its class.

# NOTE: [key reuse]
# JAX checks key reuse on jaxprs whose variables have key types. funcgrad's jaxprs hold a key's
# raw data (NOTE: [PRNG implementations]), so the checker follows the key array *objects* while
# Python runs, which is when JAX's checker runs too (eagerly, and while a function is traced):
# - Each key array has a consumption cell (a boolean, or a boolean mask of its shape). A random
#   function that consumes its key (``bits``, ``split``, every sampler) checks the cell of the key
#   it is given and marks it (``consume``); ``fold_in`` and ``key_data`` do not consume; ``clone``
#   gives a fresh cell. Keys made from a key without selecting keys (reshape, ``key[None]``,
#   squeeze, a copy, ``device_put``, a traced index) share its cell (JAX's ``Forward``); static
#   slices consume the selected keys and give fresh ones; joining keys consumes them all.
# - A function traced by ``jit`` or a control-flow primitive is a boundary (``body``): its key
#   arguments get fresh cells, and what it consumed is summarised as an ``Effects`` (the argument
#   positions and closed-over keys it consumed, what its key results are) while anything it did to
#   keys from outside is undone. The caller checks and applies the effects to its operands, once:
#   ``jit`` at every call (the effects are kept with its trace, so a cache hit checks too), and
#   ``scan``/``while_loop`` refuse a body that consumes a closed-over key or a carried key it does
#   not replace (JAX's rules and words); ``cond`` consumes what any branch consumes.
# - ``vmap``/``grad`` are not boundaries: a key whose data is a tracer of another key's data (a
#   ``BatchTracer``'s ``val``, a ``JVPTracer``'s ``primal``) is that key.
# The checker runs while ``jax_debug_key_reuse`` is set or inside ``check_key_reuse``; otherwise
# every hook is one flag test. While it runs, control-flow traces are not taken from their cache
# (the body's Python runs again, so its keys are checked again) and jitted calls take the staged
# route (which checks the arguments, as JAX's slow path).
# Where it differs from JAX's jaxpr analysis: a user primitive bound on a key array does not
# consume it (JAX's "unknown primitive" sinks every key operand); the key results of ``vmap``,
# ``scan`` (its ys) and ``while_loop`` are fresh keys rather than forwarded operands.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.errors import KeyReuseError

__all__ = [
    "Effects",
    "active",
    "alias",
    "apply_effects",
    "body",
    "born",
    "check_branches",
    "check_scan",
    "check_while",
    "checking",
    "consume",
    "consumed_mask",
    "finish",
    "fresh",
    "keys_in",
    "set_flag",
    "sink_selected",
    "suspended",
    "take_effects",
    "traced_body",
]

_flag = [False]  # jax_debug_key_reuse (set by funcgrad.config)
_local = threading.local()


def _tls():
    s = _local.__dict__
    if "checking" not in s:
        s["checking"] = 0
        s["suspended"] = 0
        s["bodies"] = []
    return s


def set_flag(on: bool) -> None:
    """``jax_debug_key_reuse`` changed (funcgrad.config)."""
    _flag[0] = bool(on)


def active() -> bool:
    """Whether keys are checked now: the flag is set or ``check_key_reuse`` runs, and no random
    function consuming its key runs its own internals."""
    s = _local.__dict__
    if not (_flag[0] or s.get("checking")):
        return False
    return not s.get("suspended")


@contextmanager
def checking():
    """Check keys inside (``check_key_reuse``), whatever the flag."""
    s = _tls()
    s["checking"] += 1
    try:
        yield
    finally:
        s["checking"] -= 1


@contextmanager
def suspended():
    """No checks inside: a random function's internals, after it consumed its argument once."""
    s = _tls()
    s["suspended"] += 1
    try:
        yield
    finally:
        s["suspended"] -= 1


# ----------------------------------------------------------------------------------------------
# Cells


class _Cell:
    """The consumption state of one key array (and of the keys sharing it): ``mask`` is False,
    True or a boolean array of ``shape``."""

    __slots__ = ("__weakref__", "mask", "serial", "shape")
    _count = 0

    def __init__(self, shape, mask=False):
        _Cell._count += 1
        self.serial = _Cell._count
        self.shape = tuple(shape)
        self.mask = mask


# data object -> cell of the key holding it, for keys whose data a transformation wraps
_by_data: dict[int, tuple] = {}


def _register(data, cell) -> None:
    try:
        ref = weakref.ref(data, lambda _, i=id(data): _by_data.pop(i, None))
    except TypeError:
        return
    _by_data[id(data)] = (ref, cell)


def _registered(data):
    hit = _by_data.get(id(data))
    if hit is not None and hit[0]() is data:
        return hit[1]
    return None


def born(key) -> None:
    """A key array was made (its ``__init__``): while the checker runs, its cell is made now, so a
    boundary knows the key as its own (one made before it, used inside, is one from outside)."""
    s = _local.__dict__
    if _flag[0] or s.get("checking"):
        _cell(key, _Cell._count + 1)


def _cell(key, serial: int = 0) -> _Cell:
    cell = key._key_reuse_cell
    if cell is None:
        data = key._base_array
        # a key whose data is a vmap/jvp tracer of another key's data is that key (NOTE: [key reuse])
        inner = data
        while cell is None and isinstance(inner, core.Tracer):
            inner = getattr(inner, "val", getattr(inner, "primal", None))
            if inner is None:
                break
            cell = _registered(inner)
        if cell is None:
            cell = _Cell(key.shape)
            cell.serial = serial  # (0 unless just made: a key older than every boundary)
        key._key_reuse_cell = cell
        _register(data, cell)
    return cell


def consumed_mask(key):
    """The consumption of ``key``: a bool, or a boolean array of its shape."""
    cell = _cell(key)
    if cell.shape != tuple(key.shape):
        return bool(np.any(cell.mask))
    return cell.mask


def fresh(key, consumed=False):
    """Give ``key`` a cell of its own (a new key: ``clone``, a result)."""
    key._key_reuse_cell = _Cell(key.shape, consumed)
    _register(key._base_array, key._key_reuse_cell)
    return key


def alias(new, old):
    """``new`` is ``old`` for consumption (a reshape, a broadcast, a copy of it)."""
    if active() and new is not old:
        new._key_reuse_cell = _cell(old)
        _register(new._base_array, new._key_reuse_cell)
    return new


def _eager() -> bool:
    s = _tls()
    return type(core.current_trace()) is core.EvalTrace and not s["checking"] and not s["bodies"]


def _error(name: str, index: int) -> KeyReuseError:
    if _eager():
        where = "jit-compiled function" if name == "jit" else name
        return KeyReuseError(f"Previously-consumed key passed to {where} at index {index}")
    return KeyReuseError(f"In {name}, argument {index} is already consumed.")


def _mark(cell: _Cell, mask, name: str, index: int) -> None:
    if np.any(np.logical_and(cell.mask, mask)):
        raise _error(name, index)
    for b in _tls()["bodies"]:  # a key from outside a boundary: remember its state to undo it
        if cell.serial < b.start and cell not in b.outer:
            b.outer[cell] = cell.mask
    new = np.logical_or(cell.mask, mask)
    cell.mask = bool(new) if np.ndim(new) == 0 else new


def consume(key, name: str, index: int = 0, mask=True) -> None:
    """``key`` is consumed by ``name`` (JAX's primitive name; ``"jit"`` for its jitted samplers):
    a ``KeyReuseError`` if it was already (NOTE: [key reuse])."""
    if not active() or not hasattr(key, "_key_reuse_cell"):
        return
    cell = _cell(key)
    if cell.shape != tuple(key.shape):
        mask = True if np.any(mask) else False
    _mark(cell, mask, name, index)


def sink_selected(key, index, name: str = "slice") -> None:
    """The keys ``key[index]`` (a static index: ints, slices, None) are consumed (JAX's ``slice``
    of keys: its result is a fresh key)."""
    if not active():
        return
    selected = np.zeros(key.shape, bool)
    selected[tuple(i for i in index if i is not None)] = True
    consume(key, name, 0, selected)


def keys_in(tree) -> list:
    """The key arrays of a pytree, in its leaves' order."""
    return [x for x in tu.tree_leaves(tree, is_leaf=_is_key) if _is_key(x)]


def _is_key(x) -> bool:
    return hasattr(x, "_key_reuse_cell")


# ----------------------------------------------------------------------------------------------
# Boundaries


class Effects:
    """What a traced function did to keys: ``sinks`` {argument key position: mask}, ``consts``
    {closed-over key's cell: mask}, ``outs`` per key result: ("arg", position), ("new", consumed
    mask) or ("const", cell)."""

    __slots__ = ("consts", "outs", "sinks")

    def __init__(self, sinks, consts, outs):
        self.sinks, self.consts, self.outs = sinks, consts, outs

    def __repr__(self):
        return f"Effects(sinks={self.sinks}, consts={len(self.consts)}, outs={self.outs})"


class _Body:
    __slots__ = ("args", "effects", "outer", "start")

    def __init__(self):
        self.start = _Cell._count + 1
        self.outer: dict[_Cell, object] = {}  # cells from outside -> their state before
        self.args: list[_Cell] = []
        self.effects: Effects | None = None


@contextmanager
def body(args):
    """A boundary (NOTE: [key reuse]): the key arrays in ``args`` (the traced function's arguments)
    get fresh cells; call ``finish(outputs)`` on the result before leaving. Keys from outside are
    left as they were; the summary is ``.effects``."""
    s = _tls()
    b = _Body()
    b.args = [fresh(k)._key_reuse_cell for k in keys_in(args)]
    s["bodies"].append(b)
    try:
        yield b
    finally:
        s["bodies"].remove(b)
        consts = {}
        for cell, before in b.outer.items():
            consts[cell] = np.logical_and(cell.mask, np.logical_not(before)) if np.ndim(before) else cell.mask
            cell.mask = before
        if b.effects is not None:
            b.effects.consts = {c: m for c, m in consts.items() if np.any(m)}


def finish(b: _Body, outs) -> None:
    """Summarise the boundary ``b`` with the traced function's outputs ``outs``."""
    sinks = {i: c.mask for i, c in enumerate(b.args) if np.any(c.mask)}
    info = []
    for k in keys_in(outs):
        c = _cell(k)
        if c in b.args:
            info.append(("arg", b.args.index(c)))
        elif c.serial >= b.start:
            info.append(("new", c.mask))
        else:
            info.append(("const", c))
    b.effects = Effects(sinks, {}, info)


def apply_effects(effects: Effects, operands: list, outs: list | None, name: str | None) -> None:
    """Apply a boundary's ``effects`` at its call: its operand keys ``operands`` (the argument
    keys, in order) and closed-over keys are checked and consumed; the result keys ``outs`` get
    cells (a forwarded argument's, or fresh)."""
    if not active():
        return
    if name is not None:  # (``None``: the results only, after the call)
        for i, mask in sorted(effects.sinks.items()):
            if i < len(operands):
                consume(operands[i], name, i, mask)
        for cell, mask in effects.consts.items():
            _mark(cell, mask, name, len(operands))
    if outs is None:
        return
    for k, (kind, what) in zip(outs, effects.outs):
        if kind == "arg" and what < len(operands):
            alias(k, operands[what])
        elif kind == "const":
            k._key_reuse_cell = what
        else:
            fresh(k, what if kind == "new" else False)


def traced_body(fun, args):
    """``fun(*args)`` as a boundary while the checker runs (a control-flow function's trace); its
    summary is kept for ``take_effects``."""
    if not active():
        return fun(*args)
    with body(args) as b:
        out = fun(*args)
        finish(b, out)
    _tls()["last"] = b.effects
    return out


def take_effects() -> Effects | None:
    """The summary of the last ``traced_body`` of this thread (None when it ran unchecked)."""
    return _tls().pop("last", None)


def _carry_sourced(effects: Effects, n_carry: int) -> set:
    return {i for i, (kind, m) in enumerate(effects.outs[:n_carry]) if kind == "new" and not np.any(m)}


def check_scan(effects: Effects | None, n_carry: int, operands: list) -> None:
    """JAX's rules for a scan body's keys (``n_carry`` carried keys lead its key arguments and
    results), then its operands' keys (carry, then xs) consumed as the body consumes them."""
    if effects is None or not active():
        return
    why = None
    carried = {i for i in effects.sinks if i < n_carry}
    # (a carry the body returns unchanged is a constant of JAX's scan, which moves it out)
    if effects.consts or any(effects.outs[i] == ("arg", i) for i in carried if i < len(effects.outs)):
        why = "because key constants are repeatedly consumed"
    elif not carried <= _carry_sourced(effects, n_carry):
        why = "because consumed inputs don't match sourced outputs"
    if why is not None:
        raise KeyReuseError(
            f"scan body function leads to key reuse when repeatedly executed, {why}:\n  {effects=}"
        )
    apply_effects(effects, operands, None, "scan")


def check_while(body_effects: Effects | None, cond_effects: Effects | None, operands: list) -> None:
    """JAX's rules for a while loop's keys (its carry's keys are the functions' key arguments and
    the body's key results), then the carry's keys consumed as the functions consume them."""
    if body_effects is None or cond_effects is None or not active():
        return
    n = len(operands)
    sourced = _carry_sourced(body_effects, n)
    body_sinks, cond_sinks = set(body_effects.sinks), set(cond_effects.sinks)
    if cond_effects.consts:
        raise KeyReuseError(
            f"while_loop cond function leads to key reuse when repeatedly executed: {cond_effects=}"
        )
    if body_effects.consts:
        raise KeyReuseError(
            f"while_loop body function leads to key reuse when repeatedly executed: {body_effects=}"
        )
    if not cond_sinks <= sourced:
        raise KeyReuseError(
            f"while_loop cond function leads to key reuse when repeatedly executed: {cond_effects=}"
        )
    if not body_sinks <= sourced:
        raise KeyReuseError(
            f"while_loop body function leads to key reuse when repeatedly executed: {body_effects=}"
        )
    if body_sinks & cond_sinks:
        raise KeyReuseError(
            f"while_loop cond and body functions both use the same key: {cond_effects=} {body_effects=}"
        )
    apply_effects(body_effects, operands, None, "while")
    apply_effects(cond_effects, operands, None, "while")


def check_branches(effects: list, operands: list) -> None:
    """A ``cond``/``switch`` consumes what any of its branches consumes (JAX's rule)."""
    if not active() or any(e is None for e in effects):
        return
    sinks: dict[int, object] = {}
    consts: dict[_Cell, object] = {}
    for e in effects:
        for i, m in e.sinks.items():
            sinks[i] = np.logical_or(sinks.get(i, False), m)
        for c, m in e.consts.items():
            consts[c] = np.logical_or(consts.get(c, False), m)
    apply_effects(Effects(sinks, consts, []), operands, None, "cond")
