"""The NumPy interpreter of cached eager programs (NOTE: [eager grad program cache]): a program
laid out once as slot-indexed steps, then run in one loop, each step the primitive's host step --
the same function ``EvalTrace`` calls (NOTE: [one eager step] in kernel/eager_step.py), so narrow
dtypes, floating-point errors and missing impls are handled in one place.

Layer: kernel. Imports ``core``, ``ir``, ``array``, ``dtypes``, ``caches`` and ``hooks``.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import bounded_put, register_cache
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, Var


class SlotTable:
    """The slots of a slot-indexed interpreter of a jaxpr (a list of values, preloaded with
    ``init``): ``table(a, value)`` is the slot of variable ``a`` (given on first sight, holding
    ``value``), or a new one holding ``literal(a)`` for a literal."""

    __slots__ = ("slots", "init", "literal")

    def __init__(self, literal: Callable):
        self.slots: dict = {}
        self.init: list = []
        self.literal = literal

    def __call__(self, a, value=None) -> int:
        init = self.init
        if type(a) is Literal:
            init.append(self.literal(a))
            return len(init) - 1
        n = self.slots.get(a)
        if n is None:
            n = self.slots[a] = len(init)
            init.append(value)
        return n

    def alias(self, var: Var, source) -> None:
        """``var`` reads ``source``'s slot (an equation the interpreter need not run)."""
        self.slots[var] = self(source)


class _Plan:
    """A program laid out for the NumPy interpreter: one slot per variable, literals and
    constants preloaded, each step ``(kind, impl, a, b, params, out, free)`` (``_run_plan``).

    NumPy-only liberties are taken (the interpreter, not the program, is NumPy's): a
    ``broadcast_in_dim`` read only by ufuncs whose other operand has the full shape is left to
    NumPy's broadcasting (a view with unit dimensions, or nothing); dead values are dropped, and
    some written over (NOTE: [eager buffer reuse]). Exact rewrites of the program itself -- a
    reshape back to the shape before a reshape -- are ``simplify``'s, which every cached program
    went through."""

    __slots__ = ("init", "in_slots", "steps", "out_slots", "out_weak", "__weakref__")

    def __init__(self, closed: ClosedJaxpr):
        slot = SlotTable(lambda a: a.val)  # (NumPy values: no weak Arrays in the loop)
        j = closed.jaxpr
        for v, c in zip(j.constvars, closed.consts):
            slot(v, c._numpy() if type(c) is Array else c)
        self.in_slots = [slot(v) for v in j.invars]
        narrow = _holds_narrow(j)
        # (NumPy's broadcasting standing for broadcast_in_dim is a liberty of plain NumPy steps;
        # a narrow step checks its operands' shapes by abstract evaluation.)
        implicit = {} if narrow else _numpy_broadcasts(j)
        slot_avals: dict = {}
        held = None  # (constants read by a compiled call, as Arrays kept with the program)
        by_calls = _read_by_calls_only(j)
        self.steps = []
        for eqn in j.eqns:
            prim, params, out = eqn.primitive, eqn.params, eqn.outvars
            if prim.traits.places_operand and out[0] in implicit:
                target = implicit[out[0]]
                if target is None:
                    slot.alias(out[0], eqn.invars[0])
                else:
                    view = (
                        _UNARY_PARAMS,
                        np.reshape,
                        slot(eqn.invars[0]),
                        None,
                        {"shape": target},
                        slot(out[0]),
                    )
                    self.steps.append(view)
                continue
            ins = tuple(slot(a) for a in eqn.invars)
            # NOTE: [one eager step]: the host step EvalTrace would take for these operands.
            if prim.impl_takes_arrays:  # (a compiled call: NOTE: [compiled calls in cached programs])
                if held is None:
                    held = dict(zip(j.constvars, _held_consts(closed)))
                kept = tuple(held.get(a) if type(a) is Var else None for a in eqn.invars)
                kept = tuple(c if type(c) is Array else None for c in kept)
                as_array = tuple(v in by_calls for v in out)
                impl = functools.partial(_array_step, prim, tuple(a.aval for a in eqn.invars), kept, as_array)
            elif (narrow and any(_dt.is_narrow(a.aval.dtype) for a in eqn.invars)) or (
                prim.traits.half_floats_compiled and any(a.aval.dtype in _dt.HALF_FLOATS for a in eqn.invars)
            ):
                impl = core.narrow_step(prim)
            else:
                impl = prim.impl
                # (a host step wrapped for complex operands only: its unwrapped form for real
                # ones, NOTE: [complex special values])
                real_step = getattr(impl, "real_step", None)
                if real_step is not None and all(a.aval.dtype.kind != "c" for a in eqn.invars):
                    impl = real_step
                if prim.traits.compiled_eagerly is not None and _compiled_by_avals(prim, eqn, params):
                    # (a large product compiled alone, as EvalTrace runs it: NOTE: [cached
                    # programs on placed values])
                    impl = functools.partial(_compiled_or_host, prim, impl)
            inner = params.get(prim.traits.call_jaxpr_param) if prim.traits.call_jaxpr_param else None
            inner = None if prim.impl_takes_arrays else inner  # (a compiled call stays one)
            if type(inner) is ClosedJaxpr and len(inner.jaxpr.invars) == len(ins):
                # A call whose impl evaluates its jaxpr (checkpoint, custom_jvp_call): by a plan
                # of its own, so its values are dropped as early as the caller's.
                inner_plan = _numpy_plan(inner)
                if inner_plan is not None:
                    impl, params = functools.partial(_run_nested, inner_plan), {}
            for v in out:
                slot_avals[slot(v)] = v.aval  # (the shape of the NumPy value in the slot)
            if prim.multiple_results:
                self.steps.append((_GENERAL, impl, ins, True, params, tuple(slot(v) for v in out)))
            elif len(ins) == 1:
                self.steps.append(
                    (_UNARY_PARAMS if params else _UNARY, impl, ins[0], None, params, slot(out[0]))
                )
            elif len(ins) == 2:
                self.steps.append(
                    (_BINARY_PARAMS if params else _BINARY, impl, ins[0], ins[1], params, slot(out[0]))
                )
            else:
                self.steps.append((_GENERAL, impl, ins, False, params, slot(out[0])))
        self.out_slots = [slot(a) for a in j.outvars]
        self.out_weak = [a.aval.weak_type for a in j.outvars]
        self.init = slot.init
        self.steps = _reuse_dead_buffers(self.steps, slot_avals, set(self.out_slots))
        self.steps = _pool_large_buffers(self.steps, slot_avals, slot.init)


(
    _GENERAL,
    _UNARY,
    _BINARY,
    _UNARY_PARAMS,
    _BINARY_PARAMS,
    _UNARY_INTO,
    _BINARY_INTO,
    _UNARY_POOL,
    _BINARY_POOL,
) = range(9)


def _step_inputs(step) -> tuple:
    kind, _, a, b = step[:4]
    if kind == _GENERAL:
        return a
    return (a,) if kind in (_UNARY, _UNARY_PARAMS, _UNARY_POOL) else (a, b)


# NOTE: [eager buffer reuse]
# The interpreter of cached programs holds its values in a list, so without help every
# intermediate of a forward-and-backward program would live until the call returns -- the
# uncached path frees each as soon as nothing refers to it. Each step therefore lists the slots it
# reads for the last time, which are cleared after it (outputs excepted). And a ufunc whose
# operand dies with it writes its result into that operand (``out=``), warm in the cache -- only
# when the operand is a whole array a ufunc made (never an input, a constant or a view), every
# reader of it is a ufunc (a reshape or transpose of it may be a view, alive after its last use),
# and it has the result's shape and dtype. Measured: a 3-layer 512-wide program 15.4 -> 14.9 ms;
# tests/kernel/test_surface_templates.py holds the view case to the uncached answer.


def _reuse_dead_buffers(steps: list, slot_avals: dict, keep: set) -> list:
    """``steps`` with a seventh field, the slots to clear after each, and ufunc steps writing into
    an operand that dies with them (NOTE: [eager buffer reuse]); ``keep``: the output slots."""
    readers: dict = {}
    for k, step in enumerate(steps):
        for i in _step_inputs(step):
            readers.setdefault(i, []).append(k)
    is_ufunc = [s[0] in (_UNARY, _BINARY) and type(s[1]) is np.ufunc for s in steps]
    fresh = {s[5]: k for k, s in enumerate(steps) if is_ufunc[k]}  # slots a ufunc wrote
    out = []
    for k, step in enumerate(steps):
        kind, impl, a, b, params, result = step
        if is_ufunc[k]:
            aval = slot_avals.get(result)
            for d in dict.fromkeys(_step_inputs(step)):
                da = slot_avals.get(d)
                if (
                    d in fresh
                    and d not in keep
                    and aval is not None
                    and da is not None
                    and aval.ndim
                    and (da.shape, da.dtype) == (aval.shape, aval.dtype)
                    and readers[d][-1] == k
                    and all(is_ufunc[r] for r in readers[d])
                ):
                    kind = _UNARY_INTO if kind == _UNARY else _BINARY_INTO
                    params = d
                    break
        free = tuple(i for i in dict.fromkeys(_step_inputs(step)) if readers[i][-1] == k and i not in keep)
        out.append((kind, impl, a, b, params, result, free))
    return out


# NOTE: [eager buffers kept between calls]
# A cached program's large intermediates are allocated anew on every call, and glibc serves them
# from memory that it gave back to the system when the previous call freed them (it trims the top
# of its heap above a threshold of a few MiB, NOTE: [eager allocations]): every page of every
# large activation page-faults in again on every call. In the GPT-style model of
# bench/bench_transformer.py the eager grad's 168 MB of intermediates cost ~31k minor faults and
# ~55 ms of system time per call -- a sixth of the call, and all of the gap to PyTorch, whose
# process keeps that memory in its heap. So the interpreter keeps its own dead buffers, as a
# caching allocator does: a large array (at least _POOL_MIN_BYTES) whose slot is cleared and that
# nothing else refers to (its reference count says so: no view, no output, no caller holds it)
# goes into a pool keyed by shape and dtype, and a ufunc step whose result has that shape and
# dtype writes into one (``out=``) instead of allocating. Within a call that reuses the backward
# pass's dead cotangents; between calls, the previous call's intermediates. Only ufuncs whose
# operands all have the result's dtype take a pooled buffer (``out=`` would otherwise cast), and
# the pool keeps no more buffers of a shape than the program has steps taking one: a matmul's or
# a reduction's results, which no step of theirs can take back, would otherwise pile up call after
# call while their own allocations kept faulting (the 64-256-256-10 MLP of bench/bench_eager.py,
# 128 KiB activations: 224 faults and 1.37 ms per call that way, none and 0.82 ms with the bound,
# 0.86 ms without a pool). The memory stays held after the call: at most _POOL_MAX_BYTES per
# program, for the _POOL_PROGRAMS programs run last (the transformer's: 123 MB);
# ``funcgrad.clear_caches()`` frees it. Measured on that transformer (one thread, CPU time, five
# interleaved pairs of fresh processes at load 14-16): 31.5k -> 5.5k minor faults and 347 -> 312
# ms per call; the user time rises by ~25 ms (a pooled buffer is cold in the cache, where the
# kernel had just zeroed a fresh page), the system time falls by ~55 ms.
_POOL_MIN_BYTES = 1 << 16
_POOL_MAX_BYTES = 256 << 20
_POOL_PROGRAMS = 3


class _Pool:
    """Dead buffers of one program (NOTE: [eager buffers kept between calls]): (shape, dtype) ->
    list of arrays, and their total size."""

    __slots__ = ("free", "nbytes")

    def __init__(self):
        self.free: dict = {}
        self.nbytes = 0


def _pool_large_buffers(steps: list, slot_avals: dict, init: list) -> list:
    """``steps`` with an eighth field, the cleared slots whose buffers may go back to the pool
    ``(slot, key, limit)``, and large ufunc steps made pool steps (NOTE: [eager buffers kept
    between calls]). A key's ``limit`` is the number of steps that take a buffer of that key:
    the pool never holds more than one call can use."""
    takes: dict = {}
    pooled = []
    for step in steps:
        kind, impl, a, b, params, result, free = step
        if kind in (_UNARY, _BINARY) and type(impl) is np.ufunc and impl.nout == 1:
            key = _pool_key(slot_avals.get(result))
            if key is not None and all(_dtype_of(i, slot_avals, init) == key[1] for i in _step_inputs(step)):
                kind, params = (_UNARY_POOL if kind == _UNARY else _BINARY_POOL), key
                takes[key] = takes.get(key, 0) + 1
        pooled.append((kind, impl, a, b, params, result, free))
    out = []
    for kind, impl, a, b, params, result, free in pooled:
        keys = {i: _pool_key(slot_avals.get(i)) for i in free}
        recycle = tuple((i, keys[i], takes[keys[i]]) for i in free if keys[i] in takes)
        if recycle:
            free = tuple(i for i in free if keys[i] not in takes)
        out.append((kind, impl, a, b, params, result, free, recycle))
    return out


def _pool_key(aval):
    if aval is None or not aval.ndim:
        return None
    dtype = np.dtype(aval.dtype)
    if dtype.kind not in "biufc" or aval.size * dtype.itemsize < _POOL_MIN_BYTES:
        return None
    return tuple(aval.shape), dtype


def _dtype_of(i, slot_avals, init):
    aval = slot_avals.get(i)
    if aval is not None:
        return np.dtype(aval.dtype)
    value = init[i]  # a literal or constant
    return getattr(value, "dtype", None)


def _take(pool: _Pool, key):
    """A kept buffer for ``key``, or None. (Popped, not tested then popped: another thread
    running the same program may take the last one in between.)"""
    try:
        buf = pool.free[key].pop()
    except (KeyError, IndexError):
        return None
    pool.nbytes -= buf.nbytes
    return buf


def _pool_of(plan) -> _Pool:
    hit = _pools.pop(id(plan), None)
    pool = hit[1] if hit is not None and hit[0]() is plan else _Pool()
    _pools[id(plan)] = (weakref.ref(plan), pool)  # (most recently run last)
    while len(_pools) > _POOL_PROGRAMS:
        del _pools[next(iter(_pools))]
    return pool


_pools: dict = register_cache("kernel.eager_buffer_pools", {})  # NOTE: [caches have an owner]


def _numpy_broadcasts(jaxpr: Jaxpr) -> dict:
    """The ``broadcast_in_dim`` results NumPy's broadcasting can stand for: each is read only by
    ufunc equations (not by the program's outputs) that have another operand of the broadcast
    shape, itself not one of them. Maps each to the shape of the view that stands for it (the
    operand with unit dimensions), or ``None`` when the operand itself does."""
    readers: dict = {}
    for eqn in jaxpr.eqns:
        for a in eqn.invars:
            if type(a) is Var:
                readers.setdefault(a, []).append(eqn)
    outputs = {a for a in jaxpr.outvars if type(a) is Var}
    candidates = {}
    for eqn in jaxpr.eqns:
        if not eqn.primitive.traits.places_operand or eqn.outvars[0] in outputs:
            continue
        out = eqn.outvars[0]
        users = readers.get(out, ())
        if users and all(type(u.primitive.impl) is np.ufunc for u in users):
            candidates[out] = eqn
    changed = True
    while changed:
        changed = False
        for out in list(candidates):
            shape = out.aval.shape
            for u in readers[out]:
                full = any(
                    type(a) is not Literal and a is not out and a not in candidates and a.aval.shape == shape
                    for a in u.invars
                )
                if not full or u.outvars[0].aval.shape != shape:
                    del candidates[out]
                    changed = True
                    break
    views = {}
    for out, eqn in candidates.items():
        x = eqn.invars[0]
        dims = eqn.params["broadcast_dimensions"]
        shape = out.aval.shape
        target = [1] * len(shape)
        for i, d in enumerate(dims):
            target[d] = x.aval.shape[i]
        while target and target[0] == 1 and len(target) > x.aval.ndim:
            target.pop(0)
        views[out] = None if tuple(target) == x.aval.shape else tuple(target)
    return views


def _run_plan(plan, vals):
    pool = None
    for kind, impl, a, b, params, out, free, recycle in plan.steps:
        if kind == _BINARY:
            vals[out] = impl(vals[a], vals[b])
        elif kind == _BINARY_POOL:
            if pool is None:
                pool = _pool_of(plan)
            vals[out] = impl(vals[a], vals[b], out=_take(pool, params))  # (out=None: a new array)
        elif kind == _UNARY_POOL:
            if pool is None:
                pool = _pool_of(plan)
            vals[out] = impl(vals[a], out=_take(pool, params))  # (out=None: a new array)
        elif kind == _BINARY_INTO:
            vals[out] = impl(vals[a], vals[b], out=vals[params])
        elif kind == _UNARY:
            vals[out] = impl(vals[a])
        elif kind == _UNARY_INTO:
            vals[out] = impl(vals[a], out=vals[params])
        elif kind == _BINARY_PARAMS:
            vals[out] = impl(vals[a], vals[b], **params)
        elif kind == _UNARY_PARAMS:
            vals[out] = impl(vals[a], **params)
        else:
            result = impl(*[vals[i] for i in a], **params)
            if b:
                for o, r in zip(out, result):
                    vals[o] = r
            else:
                vals[out] = result
        if free:
            for i in free:
                vals[i] = None
        if recycle:
            if pool is None:
                pool = _pool_of(plan)
            for i, key, limit in recycle:
                v = vals[i]
                vals[i] = None
                # Only a buffer nothing else holds (refcount: ``v`` and getrefcount's argument).
                if (
                    type(v) is np.ndarray
                    and sys.getrefcount(v) == 2
                    and v.base is None
                    and v.shape == key[0]
                    and v.dtype == key[1]
                    and v.flags.c_contiguous
                    and v.flags.writeable
                    and pool.nbytes + v.nbytes <= _POOL_MAX_BYTES
                ):
                    bufs = pool.free.setdefault(key, [])
                    if len(bufs) < limit:
                        bufs.append(v)
                        pool.nbytes += v.nbytes
                del v


def _compiled_by_avals(primitive, eqn, params) -> bool:
    """Whether EvalTrace may compile ``eqn`` alone (NOTE: [eager products are XLA's]), judged
    by its operands' types, which the values of every call have: non-empty floating arrays that
    the primitive's ``compiled_eagerly`` takes (a small product stays a plain host step)."""
    avals = [a.aval for a in eqn.invars]
    for aval in avals:
        dtype = aval.dtype
        if 0 in aval.shape or (dtype.kind not in "fc" and dtype not in _dt.HALF_FLOATS):
            return False
    return bool(primitive.traits.compiled_eagerly(avals, params))


def _compiled_or_host(primitive, host_step, *args, **params):
    """``primitive`` at NumPy ``args`` compiled alone where EvalTrace would compile it (its
    traits' ``compiled_eagerly``: NOTE: [eager products are XLA's]), as a NumPy value (a view of
    the result's buffer); else its host step."""
    if hooks.eager_compiled is not None:
        out = core._compiled_step(primitive, args, params)
        if out is not None:
            return [o._numpy() for o in out] if primitive.multiple_results else out._numpy()
    return host_step(*args, **params)


def _run_nested(plan: _Plan, *args) -> list:
    vals = plan.init.copy()
    for n, a in zip(plan.in_slots, args):
        vals[n] = a
    _run_plan(plan, vals)
    return [vals[n] for n in plan.out_slots]


def _numpy_plan(closed: ClosedJaxpr) -> _Plan | None:
    hit = _plans.get(id(closed))
    if hit is not None and hit[0] is closed:
        return hit[1]
    plan = None
    if all(e.primitive.impl is not None and _host_step_ok(e) for e in closed.jaxpr.eqns):
        plan = _Plan(closed)
    bounded_put(_plans, id(closed), (closed, plan), 512)
    return plan


_plans: dict = register_cache("kernel.numpy_plans", {})  # NOTE: [caches have an owner]


# NOTE: [compiled calls in cached programs]
# A cached eager program (an eager ``grad``'s) that holds a ``jit`` call -- jnp.linalg.cholesky
# and jnp.linalg.solve are jitted functions, as in JAX, so a grad through one holds the call's
# forward and its transpose -- still runs in the NumPy interpreter: the call's step wraps its
# NumPy operands in Arrays, runs the call compiled (the impl EvalTrace would run) and takes its
# results back as NumPy values (views of XLA's buffers). Before, such a program went equation by
# equation through EvalTrace, so none of its other steps reused a buffer or took one from the pool
# (NOTE: [eager buffers kept between calls]): each 500x500 temporary of the Gaussian process of
# bench/bench_linalg.py (``gp_eager``) page-faulted in anew on every call, 18 products ~10 ms of a
# 33 ms call. A call whose operands' placement decides where it runs (a donating one, one with a
# device or shardings: the primitive's ``host_values_ok``) keeps the program equation by
# equation, as do other primitives taking Arrays (device_put, control flow).


def _host_step_ok(eqn) -> bool:
    """Whether the NumPy interpreter may run ``eqn`` (NOTE: [compiled calls in cached programs])."""
    prim = eqn.primitive
    if not prim.impl_takes_arrays:
        return True
    ok = prim.host_values_ok
    return ok is not None and ok(eqn.params)


def _read_by_calls_only(j: Jaxpr) -> set:
    """The variables of ``j`` that only equations taking Arrays read (not its outputs)."""
    calls: dict = {}
    for e in j.eqns:
        for a in e.invars:
            if type(a) is Var:
                calls[a] = calls.get(a, True) and e.primitive.impl_takes_arrays
    outs = {a for a in j.outvars if type(a) is Var}
    return {a for a, ok in calls.items() if ok and a not in outs}


def _array_step(primitive, avals, kept, as_array, *args, **params) -> list:
    """``primitive`` (whose impl takes Arrays) on NumPy values, as NumPy values, except the
    results that only such calls read (``as_array``), which stay Arrays with their device
    buffers; a constant of the program as the Array ``kept`` holds, with its device copy
    (``_held_consts``): NOTE: [compiled calls in cached programs]."""
    ins = []
    for x, aval, k in zip(args, avals, kept):
        if k is not None:
            x = k
        elif isinstance(x, (np.ndarray, np.generic)):
            x = np.asarray(x)
            if x.dtype != aval.dtype:  # (a NumPy step at 64 bits: NOTE: [x64 mode])
                x = x.astype(aval.dtype)
            x = Array._from_owned_raw(x, aval.weak_type)
        ins.append(x)
    out = primitive.impl(*ins, **params)
    if not primitive.multiple_results:
        return out._numpy() if type(out) is Array and not as_array[0] else out
    return [o._numpy() if type(o) is Array and not a else o for o, a in zip(out, as_array)]


def _holds_narrow(j: Jaxpr) -> bool:
    # NOTE: [narrow dtypes on the host]: their equations take core.narrow_step, as in EvalTrace.
    atoms = (*j.invars, *j.constvars, *(a for e in j.eqns for a in (*e.invars, *e.outvars)))
    return any(_dt.is_narrow(a.aval.dtype) for a in atoms)


def _held_consts(closed: ClosedJaxpr) -> list:
    """The constants of ``closed`` for the equation-by-equation evaluation, those read by an
    equation whose impl takes Arrays (a ``jit`` call, which runs compiled) as Arrays made once
    per program: the call's transfer of a constant to the device is then kept on its Array
    (``xla_bridge.execute.to_buffer``) instead of repeated on every evaluation (the cotangent
    seed of an eager ``grad`` over a jitted function was put on the device once per ``grad``).
    The values are the same NumPy arrays; other equations read them as before."""
    hit = _const_arrays.get(id(closed))
    if hit is not None and hit[0] is closed:
        return hit[1]
    read = {a for e in closed.jaxpr.eqns if e.primitive.impl_takes_arrays for a in e.invars}
    consts = [
        Array._from_owned_raw(c, v.aval.weak_type) if type(c) is np.ndarray and v in read else c
        for v, c in zip(closed.jaxpr.constvars, closed.consts)
    ]
    bounded_put(_const_arrays, id(closed), (closed, consts), 512)
    return consts


_const_arrays: dict = register_cache("kernel.held_consts", {})  # NOTE: [caches have an owner]


# NOTE: [cached programs on placed values]
# The interpreter runs a cached program on NumPy values, each step the host step EvalTrace would
# take -- and a large product compiled alone where EvalTrace would compile it (NOTE: [eager
# products are XLA's]), so a cached program's values are those of the same program evaluated
# equation by equation. Only an operand whose placement decides where an eager operation runs
# (``hooks.buffer_placed``: committed to a device, or over several) sends the program equation by
# equation through EvalTrace, which computes there. A device buffer that is only a transfer
# cached on an Array (the first, uncached ``grad`` call hands the parameters to compiled products,
# which keep their buffers) or an uncommitted jitted result is computed on the host either way:
# before, any buffer sent the program down that route, so an eager ``grad`` whose parameters had
# once met a compiled product ran its every later call equation by equation (no buffer reuse, no
# pool: NOTE: [eager buffers kept between calls]), while the same call on fresh host values took
# the interpreter, with NumPy's products (other bits: 3.2 M of the 3.3 M gradient values of
# bench/bench_transformer.py's model). That model's eager ``grad`` (one thread, CPU time per call,
# medians of 9 calls in three interleaved pairs of fresh processes, load 17-20): 434/458/805 ms
# (9k-121k minor faults a call) -> 405/402/385 ms (2.1k-2.5k). Its products at NumPy's speed
# instead would save ~40 ms more at that load (OpenBLAS and XLA run these GEMMs at the same rate
# there; XLA's operands are copied in, NumPy's 16-byte-aligned memory being no XLA buffer).


def eager_call_impl(*args, jaxpr: ClosedJaxpr):
    """Evaluate a cached program with the host steps (a large product compiled: NOTE: [cached
    programs on placed values]), keeping NumPy values between equations (the eager interpreter's
    per-equation wrapping and error-state switching, paid once)."""
    plan = _numpy_plan(jaxpr)
    if hooks.context_mesh is not None and hooks.context_mesh() is not None:
        plan = None  # each equation runs on the mesh set (NOTE: [placement in context])
    vals = None if plan is None else plan.init.copy()
    if vals is not None:
        for n, a in zip(plan.in_slots, args):
            if type(a) is Array:
                b = a._buffer
                if b is not None and hooks.buffer_placed is not None and hooks.buffer_placed(b):
                    vals = None  # placed: each equation runs where its operands live
                    break
                v = a._value
                vals[n] = a._numpy() if v is None else v
            else:
                vals[n] = a
    if vals is None:
        return core.eval_jaxpr(jaxpr.jaxpr, _held_consts(jaxpr), *args)
    token = core._FP_ERRORS.set(core._FP_QUIET)
    try:
        _run_plan(plan, vals)
    finally:
        core._FP_ERRORS.reset(token)
    if not _dt.x64_enabled:  # NOTE: [x64 mode]: NumPy steps may compute at 64 bits
        return [
            Array._from_owned(_dt.canonical_value(np.asarray(vals[n])), w)
            for n, w in zip(plan.out_slots, plan.out_weak)
        ]
    return [Array._from_owned(np.asarray(vals[n]), w) for n, w in zip(plan.out_slots, plan.out_weak)]
