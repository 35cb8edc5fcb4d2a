"""One route for a jitted call: compile a staged jaxpr once, move arguments to the device, run it.

Layer: xla_bridge. May import the funcgrad kernel (``core``, ``ir``, ``array``, ``tree_util``,
``dtypes``), the primitive catalog (``primitives.call``: the ``jit`` call primitive) and its
siblings ``lowering`` and ``runtime`` (the latter on first use, see ``runtime()``), and its C
hot path ``xla_bridge._hot_call`` where it is built. Never the surface.

A jitted call goes surface -> this module -> executable (NOTE: [jitted call route]). Everything
that turns values into device buffers and back lives here, written once: ``to_buffer`` (checked
conversion of one argument), ``fast_put``/``put_scalar`` (the fast paths' transfers), outputs as
``Array._from_buffer``; so do the compiled-program cache (``compiled``), the eager run
(``run``) and both fast paths of a jitted function (``Dispatcher``).

Importing this module hands the kernel (NOTE: [kernel registration]) ``jit_impl=jit_call`` (an
eager ``jit`` equation compiles its jaxpr with XLA instead of interpreting it) and
``device_to_numpy`` (how a device-backed ``Array`` reads itself back).

# NOTE: [jitted call route]
# ``funcgrad.jit`` returns a ``JittedFunction``, a subclass of ``Dispatcher``: the surface owns
# the staging (static arguments, flattening, the trace cache, retrace warnings, the AOT API) and
# implements one method, ``_stage(args, kwargs) -> (Staged, flat arguments, donated flags)``;
# the bridge owns the call. ``Dispatcher.__call__`` tries, fastest first:
# - native dispatch (the current trace is the eager ``EvalTrace``, no donation, static arguments
#   only positional, jax's config not loaded): jaxlib's C++ dispatcher runs the executable
#   (NOTE: [native dispatch]); the hot path (in C where built, NOTE: [array in C]) only swaps
#   ``Array`` leaves for their buffers and wraps the outputs. Its cache misses come back to
#   ``_native_miss``, which stages and compiles;
# - the Python fast path (the same, but jax is imported): NOTE: [python fast path];
# - the general path (``_call``): stage, then ``run`` the compiled program eagerly, or, under a
#   transformation (or when the jaxpr closes over tracers), bind the ``jit`` call primitive so
#   the transformation sees one call (``grad(jit(f))``, ``vmap(jit(f))``, ``make_jaxpr(jit(f))``);
#   evaluated eagerly later, that equation runs ``jit_call``, the same ``run``.
# Neither fast path looks at an equation: the cost of a call does not grow with the program. The
# bridge never imports the surface: ``_stage`` is the one thing it asks of its subclass, the way
# jaxlib's C++ dispatcher asks its cache-miss function.

# NOTE: [native dispatch]
# jaxlib's C++ ``pjit`` object is a dispatcher that does not depend on jax: given our executable,
# shardings and avals (``fastpath_data``) it computes argument signatures, transfers NumPy
# arguments (to the executable's device) and runs the executable in C++, calling back into
# Python only on a cache miss. It reads three process-wide jaxlib states (x64, disable_jit,
# post_hook), which we set to our own configs (x64 on) -- unless jax's config is loaded, which
# takes those states over; then the Python fast path is used instead.

# NOTE: [python fast path]
# Used while jax's config is loaded, for calls without static or donated arguments on the default
# device. The Python fast cache maps (treedef, id(aval) per leaf) to the compiled call. ``id`` is safe
# because the bridge interns avals (``xla_bridge.dtypes.aval``) and keeps them alive forever;
# buffers made by ``device_put`` and by executables carry those interned avals. A miss falls back
# to the general path, which stages (or reuses the staged jaxpr) and compiles, then fills the
# entry.

# NOTE: [compiled jit cache]
# ``compiled(closed, ...)`` caches one ``Compiled`` per (ClosedJaxpr object, device, donation).
# ``funcgrad.jit`` reuses its traced ClosedJaxpr objects across calls, so a hit costs one dict
# lookup; the entry keeps a reference to its jaxpr so that an ``id`` is never reused while the
# entry lives. Jaxprs made afresh on each call (the JVP or transpose of a jit call inside an
# eager ``grad``) miss here and are lowered again (~1 ms), but compile to the same module text,
# which ``runtime.compile`` caches: XLA compiles each distinct program once.

# NOTE: [argument buffers]
# An ``Array`` is immutable, so the device buffer made for a host-backed Array is cached on it
# (``Array._buffer``) and reused by later calls. NumPy arrays are mutable and Python scalars have
# no slot, so they are copied to the device on every call. Outputs are Arrays holding only a
# buffer (``Array._from_buffer``): chained jitted calls never go through the host, and host reads
# are lazy (the ``device_to_numpy`` registered with the kernel).

# NOTE: [donated arrays]
# A donated argument's device buffer is consumed by the call (XLA reuses it for an output). A
# device-backed Array passed there is dead afterwards: reading it, computing with it or passing
# it to another call raises the error ``runtime.deleted_buffer_error`` words (what happened, and
# the fix: use the output, pass a copy, or don't donate). A host-backed Array only loses the
# device copy made for the call (``forget_donated``) and stays usable; NumPy arguments are copied
# to the device anyway. Donating calls take the general path (never the fast paths), which
# forgets the consumed buffers.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NamedTuple

import numpy as np
from funcgrad.primitives.call import jit_p
from funcgrad.xla_bridge.fastpath import fastpath_record, prepend_constants
from funcgrad.xla_bridge.lowering import lower_jaxpr, xla_dtype
from funcgrad.xla_bridge.spmd_route import eager_on_devices, needs_spmd, spmd

from funcgrad import kernel
from funcgrad.kernel import core, ir
from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel.array import Array
from funcgrad.kernel.c_modules import c_modules_wanted
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.numpy_plan import bounded_put
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.kernel.tree_util import registry as _registry

__all__ = [
    "Compiled",
    "Dispatcher",
    "Staged",
    "clear_cache",
    "compiled",
    "eager_compiled",
    "fast_put",
    "fastpath_data",
    "forget_donated",
    "from_buffers",
    "jit_call",
    "make_native_dispatcher",
    "native_dispatch_available",
    "needs_spmd",
    "put_scalar",
    "run",
    "runtime",
    "spmd",
    "to_buffer",
]

_runtime = None


def runtime():
    """``xla_bridge.runtime``, imported on first use.

    Deferred for import time only (``import funcgrad`` must not load jaxlib's XLA extension until
    something is compiled), not to dodge a cycle: runtime imports nothing of ours but its own
    siblings.
    """
    global _runtime
    if _runtime is None:
        from funcgrad.xla_bridge import runtime as rt  # noqa: PLC0415 - import-time cost, see docstring

        kernel.register(device_to_numpy=_make_to_numpy(rt.to_numpy))
        _runtime = rt
    return _runtime


def _make_to_numpy(slow):
    asarray = np.asarray

    def to_numpy(buf):
        # The common case first: a CPU buffer of a NumPy dtype is a zero-copy view through the
        # buffer protocol. Anything else (ml_dtypes, other devices, deleted buffers) yields an
        # array of another dtype or raises: the runtime's to_numpy handles (and explains) it.
        try:
            out = asarray(buf)
            if out.dtype == buf.aval.dtype:
                if out.flags.writeable:  # (it views the device buffer: never written through)
                    out.flags.writeable = False
                return out
        except Exception:  # noqa: BLE001
            pass
        return _read_only(slow(buf))

    return to_numpy


def _read_only(value: np.ndarray) -> np.ndarray:
    # The kernel's contract for device_to_numpy: Array.__array__ hands the value out as it is.
    if value.flags.writeable:
        value.flags.writeable = False
    return value


def _lazy_to_numpy(buf):
    return _read_only(runtime().to_numpy(buf))


if hooks.device_to_numpy is None:
    kernel.register(device_to_numpy=_lazy_to_numpy)


# ----------------------------------------------------------------------------------------------
# Compiled programs (NOTE: [compiled jit cache])


class Compiled:
    """A jaxpr compiled for one device.

    ``call(buffers)`` runs the executable on the jaxpr's argument buffers (hoisted constants are
    prepended); ``in_avals`` are the jaxpr's input avals; ``out_weak`` the outputs' weak types.
    """

    __slots__ = (
        "closed",
        "executable",
        "const_buffers",
        "in_avals",
        "in_xla_avals",
        "out_weak",
        "donate_argnums",
        "text",
        "device",
        "call",
    )

    def __init__(self, closed, lowered, executable, const_buffers, device):
        self.closed = closed
        self.executable = executable
        self.const_buffers = const_buffers
        self.in_avals = closed.in_avals
        self.in_xla_avals = lowered.in_avals[len(const_buffers) :]
        self.out_weak = tuple(a.weak_type for a in closed.out_avals)
        self.donate_argnums = lowered.donate_argnums
        self.text = lowered.text
        self.device = device
        self.call = prepend_constants(executable.call, const_buffers)

    def as_text(self) -> str:
        return self.text


_cache: dict = {}
_CACHE_SIZE = 1024


def compiled(closed: ir.ClosedJaxpr, name: str = "main", donated_invars=None, device=None) -> Compiled:
    """The ``Compiled`` program of ``closed`` on ``device`` (default: the default device).

    >>> import funcgrad
    >>> cj = funcgrad.make_jaxpr(lambda x: x * 2.0)(np.ones(2))
    >>> c = compiled(cj, "double")
    >>> c is compiled(cj, "double")
    True
    """
    rt = runtime()
    if device is None:
        device = rt._default_dev or rt.default_device()
    donated = tuple(donated_invars) if donated_invars is not None and any(donated_invars) else None
    key = (id(closed), device, donated)
    hit = _cache.get(key)
    if hit is not None and hit.closed is closed:
        return hit
    lowered = lower_jaxpr(closed, name, donated, platform=rt.normalize_platform(device.platform))
    exe = rt.compile(
        lowered.text,
        lowered.in_avals,
        lowered.out_avals,
        device=device,
        donate_argnums=lowered.donate_argnums,
        host_callbacks=lowered.host_callbacks,
    )
    const_buffers = [rt.device_put(c, device) for c in lowered.const_args]
    entry = Compiled(closed, lowered, exe, const_buffers, device)
    if len(_cache) >= _CACHE_SIZE:
        _cache.pop(next(iter(_cache)))  # oldest first
    _cache[key] = entry
    return entry


def clear_cache() -> None:
    """Forget compiled jaxprs (the runtime's executable cache is separate)."""
    _cache.clear()


# ----------------------------------------------------------------------------------------------
# Arguments and results (NOTE: [argument buffers])

_from_buffer = Array._from_buffer


def from_buffers(buffers, weak) -> list:
    """Device buffers as ``Array`` objects holding only the buffer."""
    return [_from_buffer(b, w) for b, w in zip(buffers, weak)]


def to_buffer(x, aval, device, name="argument"):
    """A device buffer on ``device`` for argument ``x`` expected to have ``aval`` (shape and dtype
    checked first; ``name`` words the errors).

    Python scalars take the expected dtype (they are weakly typed); everything else must match.
    """
    rt = runtime()
    t = type(x)
    if t is Array:
        b = x._buffer
        if b is not None and not b.is_deleted():
            if (tuple(b.aval.shape), b.aval.dtype) != (aval.shape, xla_dtype(aval.dtype)):
                _mismatch(x, aval, name)
            here = getattr(b._sharding, "_fg_device", None)
            if here is not device:
                # Another device: a copy; several devices: the value, assembled on the host.
                b = rt.device_put(b if here is not None else x._numpy(), device)
            return b
        if x._value is None:
            raise rt.deleted_buffer_error(b, f"jit call: {name}: ")
        v = x._value
        _check(v.shape, v.dtype, aval, name, x)
        b = rt.device_put(_host(v, aval), device, weak_type=x.weak_type)
        x._buffer = b  # Arrays are immutable: cache the transfer
        return b
    if t in (bool, int, float, complex):
        want = np.dtype(aval.dtype)
        if aval.shape != () or not _scalar_fits(x, want):
            _mismatch(x, aval, name)
        return rt.device_put(np.asarray(x, xla_dtype(want)), device, weak_type=True)
    if isinstance(x, core.Tracer):
        raise core.UnexpectedTracerError(core._leak_message(x))
    v = np.asarray(x)
    _check(v.shape, v.dtype, aval, name, x)
    return rt.device_put(_host(v, aval), device)


def _host(v, aval):
    # float0 (tangents of integers) has no XLA type: it travels as bool zeros.
    if v.dtype == _fdt.float0:
        return np.zeros(v.shape, np.bool_)
    return v


def _scalar_fits(x, dtype) -> bool:
    kind = _fdt.kind(dtype)
    if type(x) is bool:
        return True
    if type(x) is int:
        return kind in "iufc"
    if type(x) is float:
        return kind in "fc"
    return kind == "c"


def _check(shape, dtype, aval, name, x):
    if tuple(shape) != tuple(aval.shape) or np.dtype(dtype) != np.dtype(aval.dtype):
        _mismatch(x, aval, name)


def _mismatch(x, aval, name):
    got = core.get_aval(x) if not isinstance(x, Array) or x._value is not None else None
    got_s = got.str_short() if got is not None else f"{_fdt.short_name(x.dtype)}{list(x.shape)}"
    raise TypeError(
        f"jit call: {name} is {got_s} but the compiled program expects {aval.str_short()}. "
        "Call the jitted function (it retraces for new shapes/dtypes) instead of reusing a "
        "compiled program with different inputs."
    )


def forget_donated(args, donated_invars) -> None:
    """After a call that donated them, host-backed Arrays drop their (now deleted) buffer
    (NOTE: [donated arrays])."""
    for a, d in zip(args, donated_invars):
        if d and type(a) is Array and a._value is not None:
            a._buffer = None


def run(c: Compiled, args, donated_invars=None, names=None) -> list:
    """Run ``c`` eagerly on ``args`` (Arrays, NumPy arrays, scalars): each argument is checked and
    moved to ``c``'s device, donated host copies are forgotten, the outputs are device Arrays."""
    device = c.device
    if names is None:
        names = [f"argument {i}" for i in range(len(args))]
    bufs = [to_buffer(a, av, device, n) for a, av, n in zip(args, c.in_avals, names)]
    outs = c.call(bufs)
    if c.donate_argnums:
        forget_donated(args, donated_invars)
    return from_buffers(outs, c.out_weak)


def jit_call(*args, jaxpr, name, donated_invars, device=None, in_shardings=None, out_shardings=None):
    """The eager impl of ``jit_p``: run ``jaxpr`` compiled by XLA (registered at import); on
    several devices when it has shardings, holds a mesh or gets sharded arguments (NOTE: [SPMD
    call route]).

    >>> import funcgrad
    >>> cj = funcgrad.make_jaxpr(lambda x: x + 1.0)(1.0)
    >>> [float(y) for y in jit_p.bind(2.0, jaxpr=cj, name="inc", donated_invars=(False,))]
    [3.0]
    """
    if len(args) != len(jaxpr.in_avals):
        raise TypeError(f"jit call '{name}' expects {len(jaxpr.in_avals)} arguments, got {len(args)}")
    if needs_spmd(jaxpr, args, in_shardings, out_shardings):
        return spmd().call(jaxpr, args, name, donated_invars, in_shardings, out_shardings)
    return run(compiled(jaxpr, name, donated_invars, device), args, donated_invars)


_single_programs: dict = {}


def eager_compiled(primitive, args, params):
    """``primitive`` applied to concrete ``args`` as a compiled program of its own (registered
    with the kernel as ``eager_compiled``): for what NumPy cannot compute on the host (NOTE:
    [narrow dtypes on the host]), XLA's own random bit generator, and eager operations on values
    over several devices (which ``jit_call`` runs there). The traced program is cached per
    primitive, parameters and operand types, so its compiled form is too (NOTE: [compiled jit
    cache]).

    >>> import numpy as np, ml_dtypes
    >>> from funcgrad.primitives.elementwise import neg_p
    >>> eager_compiled(neg_p, [np.array([1, 2], ml_dtypes.uint4)], {})
    Array([15, 14], dtype=uint4)
    """
    avals = [core.get_aval(a) for a in args]
    try:
        key = (primitive, tuple(sorted(params.items())), tuple(avals))
        closed = _single_programs.get(key)
    except TypeError:  # parameters that cannot key a cache: traced afresh
        key = closed = None
    if closed is None:

        def one(*xs):
            out = primitive.bind(*xs, **params)
            return list(out) if primitive.multiple_results else [out]

        closed = trace_to_jaxpr(one, avals, description=primitive.name)
        if key is not None:
            bounded_put(_single_programs, key, closed, 1024)
    outs = jit_call(*args, jaxpr=closed, name=primitive.name, donated_invars=(False,) * len(args))
    return outs if primitive.multiple_results else outs[0]


# ----------------------------------------------------------------------------------------------
# The fast paths' transfers


def _first_fast_put(value: np.ndarray, weak_type: bool):
    """Copy a NumPy array to the default device with no checks beyond the dtype; ``None`` when
    the value needs the general path (unsupported dtype, non-native byte order, failure).

    The first call builds the real function (it needs the runtime) and rebinds ``fast_put``."""
    global fast_put
    fast_put = _make_fast_put()
    return fast_put(value, weak_type)


fast_put = _first_fast_put


def _array_buffer(x: Array):
    """The device buffer of ``x`` for a fast path: its own, or one made from its host value and
    cached on it (NOTE: [argument buffers]); ``None`` when the general path must convert it."""
    b = x._buffer
    if b is None:
        b = x._buffer = fast_put(x._value, x.weak_type)
    return b


def put_scalar(x):
    """A Python scalar on the default device, weakly typed (``None``: use the general path)."""
    try:
        v = np.asarray(x)
    except OverflowError:
        return None
    return fast_put(v, True)


def _make_fast_put():
    rt = runtime()
    device = rt._default_dev or rt.default_device()
    sharding, devices = rt.sharding(device), [device]
    put, copy, aval, supported = rt._put, rt._COPY, rt.aval, rt._SUPPORTED

    def fast_put(value, weak_type):
        dt = value.dtype
        if dt not in supported:
            return None
        try:
            return put(aval(value.shape, dt, weak_type), sharding, [value], devices, True, True, copy, True)
        except Exception:  # noqa: BLE001 - the general path reports it properly
            return None

    return fast_put


# ----------------------------------------------------------------------------------------------
# Native dispatch: jaxlib's C++ pjit fast path driving our executables (NOTE: [native dispatch])

_states: list = []


def native_dispatch_available() -> bool:
    """Whether jaxlib's C++ dispatch can be used now: it reads process-wide jaxlib states
    (x64, disable_jit) that ``import jax`` takes over with jax's own config (x64 off by
    default), so it is used only while jax's config module is not loaded."""
    return _JAX_CONFIG not in sys.modules


def _init_native():
    if not _states and native_dispatch_available():
        jx = runtime()._jax
        config = jx.config.Config
        _states.extend(
            [
                config("funcgrad_x64", True),
                config("funcgrad_disable_jit", False),
                config("funcgrad_post_hook", None),
            ]
        )
        jx.jax_jit.set_enable_x64_state(_states[0])
        jx.jax_jit.set_disable_jit_state(_states[1])
        jx.jax_jit.set_post_hook_state(_states[2])


def make_native_dispatcher(name: str, cache_miss, capacity: int = 4096, statics: bool = True):
    """A C++ dispatcher: ``d(treedef, statics, *leaves) -> outputs`` (see ``fastpath_data``).

    ``cache_miss(treedef, statics, *leaves)`` runs when the (treedef, statics, leaf signatures)
    triple is new and returns ``(outputs, fastpath_data(...) or None)``; ``statics`` must be
    hashable (the static arguments of the jitted function, ``()`` when it has none). With
    ``statics=False`` the dispatcher is ``d(*leaves)`` and ``cache_miss(*leaves)``.
    """
    _init_native()
    jx = runtime()._jax

    def miss(*args):
        outs, fast = cache_miss(*args)
        return outs, fast, False

    def fallback(x, sharding, *layout):
        # Values for several devices (NOTE: [SPMD call route]); the C++ side moves the others.
        buf = spmd().shard_arg(x, sharding)
        if buf is None:
            raise TypeError(f"jit({name}): cannot transfer argument {x!r} to the device")
        return buf

    key = (name, id(cache_miss))  # any hashable; each dispatcher has its own cache anyway
    cache = jx.PjitFunctionCache(capacity=capacity)
    return jx.pjit(name, None, miss, [0, 1] if statics else [], [], key, _registry, fallback, cache)


def fastpath_data(compiled: Compiled, outputs, n_args: int):
    """The data jaxlib's C++ fast path needs to run ``compiled`` for ``n_args`` leaves.

    ``outputs`` is a pytree of the executable's output buffers in the form the dispatcher must
    return (the C++ side rebuilds it around fresh outputs, natively for dicts/lists/leaves).
    """
    sh = runtime().sharding(compiled.device)
    n_in = len(compiled.const_buffers) + n_args
    exe = compiled.executable
    return fastpath_record(
        exe._loaded, outputs, [sh] * n_in, [sh] * len(exe.out_avals), exe.out_avals, compiled.const_buffers
    )


# ----------------------------------------------------------------------------------------------
# The dispatcher of a jitted function (NOTE: [jitted call route])


class Staged:
    """A staged call: the closed jaxpr, the output tree and the tracers of an enclosing
    transformation the jaxpr closes over (``hoisted``: passed as leading arguments).

    ``in_shardings``/``out_shardings``: one ``sharded.MeshSharding`` or ``None`` (unspecified)
    per jaxpr input/output, or ``None`` when the jitted function has none; ``spmd``: whether the
    program runs on several devices whatever its arguments (shardings, or meshes inside)."""

    __slots__ = ("closed", "out_tree", "hoisted", "single", "in_shardings", "out_shardings", "spmd")

    def __init__(self, closed, out_tree, hoisted=(), in_shardings=None, out_shardings=None):
        self.closed = closed
        self.out_tree = out_tree
        self.hoisted = tuple(hoisted)
        # A bare leaf output: no unflattening.
        self.single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.spmd = needs_spmd(closed, (), in_shardings, out_shardings)


class _KwStatics(NamedTuple):
    """The dispatcher's static key of a call with keyword arguments."""

    pos: tuple
    kw: tuple


class _FastEntry:
    __slots__ = ("call", "out_weak", "out_tree", "single")

    def __init__(self, c: Compiled, staged: Staged):
        self.call = c.call
        self.out_weak = c.out_weak
        self.out_tree = staged.out_tree
        self.single = staged.single


_EvalTrace = core.EvalTrace
_state = core._state
_modules = sys.modules
_ndarray = np.ndarray
_SCALARS = frozenset({float, int, bool, complex, np.float32, np.float64, np.int32, np.int64, np.bool_})
_PY_SCALARS = (float, int, bool, complex)
_JAX_CONFIG = "jax._src.config"
_flatten = _registry.flatten


class _PythonHotCall:
    """The hot path of a jitted call in Python, where ``xla_bridge._hot_call`` is not built
    (NOTE: [array in C]). The C ``HotCall`` does this, and also takes ``_dispatch``'s native
    route (static arguments, containers, keywords) without its Python frame."""

    def __call__(self, *args, **kwargs):
        # Kept to one Python frame: no static/keyword arguments, top-level NumPy arrays, scalars
        # or device-backed Arrays, a plain dispatcher already made (everything else: _dispatch).
        # The per-argument loop only looks at types; NumPy arrays and scalars go to the C++ side
        # as they are (NOTE: [native dispatch]).
        native = self._native_plain
        if (
            native is not None
            and not kwargs
            and type(_state.trace) is _EvalTrace
            and _JAX_CONFIG not in _modules
        ):
            for x in args:  # NumPy arrays and scalars go to the C++ side as they are
                t = type(x)
                if t is not _ndarray and t not in _SCALARS:
                    flat = self._unwrap(args) if t is Array else None  # Arrays: their buffers
                    if flat is None:
                        return self._dispatch(args, kwargs)
                    break
            else:
                flat = args
            self._native_calls += 1
            res = native(*flat)
            if type(res) is dict:
                return self._native_outputs(res)
            return _from_buffer(res, res.aval.weak_type)  # a bare output is the buffer itself
        return self._dispatch(args, kwargs)

    @staticmethod
    def _unwrap(args):
        """``args`` with each Array replaced by its device buffer; None if an Array has none or
        an argument is neither an Array, a NumPy array nor a scalar."""
        flat = []  # one pass, no comprehension: a 3.11 comprehension is a function call
        for x in args:
            t = type(x)
            if t is Array:
                x = x._buffer
                if x is None:
                    return None
            elif t is not _ndarray and t not in _SCALARS:
                return None
            flat.append(x)
        return flat


_HotCall = _PythonHotCall
if c_modules_wanted():
    with contextlib.suppress(ImportError):  # not built: no C compiler where it was installed
        from funcgrad.xla_bridge import _hot_call

        _hot_call.configure(
            _state, _EvalTrace, _JAX_CONFIG, _ndarray, _SCALARS, Array, _from_buffer, _flatten, _KwStatics
        )
        _HotCall = _hot_call.HotCall


class Dispatcher(_HotCall):
    """The bridge's half of a jitted function: how a call reaches the executable.

    ``name`` names the function in errors; ``static_argnums`` (sorted, non-negative where the
    signature allows) and ``static_argnames`` are the static parameters; ``named_positional`` is
    how many positional parameters have names (a static one missing from a call's positional
    arguments was passed by keyword); ``donate`` says whether any argument is donated; ``device``
    is where the computation runs (``None``: the default device). A subclass implements
    ``_stage`` (NOTE: [jitted call route]) and may read ``_dispatch_hits()`` and call
    ``_clear_dispatch()``.
    """

    def __init__(
        self, name, static_argnums=(), static_argnames=(), donate=False, device=None, named_positional=0
    ):
        self._name = name
        self._static_argnums = tuple(static_argnums)
        self._static_argnames = tuple(static_argnames)
        self._static_set = frozenset(self._static_argnums)
        self._named_positional = named_positional
        self._donate = donate
        self._device = device
        self._fast: dict = {}
        # The Python fast path only knows the default device (fast_put).
        self._fast_ok = not self._static_argnums and not donate and device is None
        # The native dispatcher takes positional static arguments (passed as one static).
        self._native_ok = not donate and all(n >= 0 for n in self._static_argnums)
        self._plain = self._native_ok and not self._static_argnums
        self._native = None
        # For functions without static arguments: a second C++ dispatcher whose only arguments
        # are the leaves (no static treedef/statics to hash), used by the hot path for calls
        # whose arguments are all top-level leaves.
        self._native_plain = None
        self._native_meta: list = []
        self._native_calls = 0
        self._native_misses = 0
        self._fast_hits = 0

    def _stage(self, args, kwargs) -> tuple[Staged, list, tuple]:
        """``(Staged, flat dynamic arguments, donated flag per jaxpr input)`` for this call, from
        the subclass's trace cache (tracing on a miss)."""
        raise NotImplementedError

    def __getstate__(self):
        # copy.copy(jitted) (and pickle, as far as the contents allow): the state is the instance
        # dict. Said explicitly because the C base's call counter makes object's default refuse
        # ("cannot pickle"); the counter is statistics, not state.
        return self.__dict__

    def _dispatch_hits(self) -> int:
        """Calls answered by a fast path's cache (the C++ dispatcher's or the Python one)."""
        return self._fast_hits + self._native_calls - self._native_misses

    def _clear_dispatch(self) -> None:
        self._fast.clear()
        self._native = None
        self._native_plain = None
        self._native_meta.clear()

    def _dispatch(self, args, kwargs):
        if not self._native_ok or type(_state.trace) is not _EvalTrace:
            return self._call(args, kwargs)
        if _JAX_CONFIG in _modules:
            if kwargs or not self._fast_ok:
                return self._call(args, kwargs)
            return self._python_fast_call(args, kwargs)
        # Native dispatch. The dispatcher's two static arguments: the input treedef (or, for
        # top-level leaves only, the argument count) and the static argument values.
        dyn, statics = args, ()
        snums = self._static_argnums
        if snums:
            if snums[-1] >= max(len(args), self._named_positional):
                return self._call(args, kwargs)  # _stage reports the missing static argument
            statics = tuple(args[i] for i in snums if i < len(args))
            dyn = tuple(a for i, a in enumerate(args) if i not in self._static_set)
        tree = None
        if kwargs:
            names = self._static_argnames
            static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in names))
            dyn_kw = {k: v for k, v in kwargs.items() if k not in names}
            statics = _KwStatics(statics, static_kw)
            flat, tree = _flatten((dyn, dyn_kw))
        else:
            flat = dyn
            for x in dyn:
                t = type(x)
                if t is not _ndarray and t not in _SCALARS and t is not Array:
                    flat, tree = _flatten(dyn)  # containers: flatten here, so Arrays are seen
                    break
            if tree is None:
                tree = len(dyn)  # top-level leaves: the C++ side flattens nothing
        if any(type(x) is Array for x in flat):
            flat = list(flat)
            for i, x in enumerate(flat):
                if type(x) is Array:
                    flat[i] = _array_buffer(x)
                    if flat[i] is None:
                        return self._call(args, kwargs)
        if self._plain and type(tree) is int and not statics:
            # Top-level leaves: the plain dispatcher, the one the hot path in __call__ uses.
            native = self._native_plain
            if native is None:
                native = self._native_plain = make_native_dispatcher(
                    self._name, self._native_miss_plain, statics=False
                )
            self._native_calls += 1
            res = native(*flat)
            if type(res) is dict:
                return self._native_outputs(res)
            return _from_buffer(res, res.aval.weak_type)
        native = self._native
        if native is None:
            native = self._native = make_native_dispatcher(self._name, self._native_miss)
        self._native_calls += 1
        try:
            res = native(tree, statics, *flat)
        except (TypeError, ValueError):  # jaxlib reports unhashable statics as ValueError
            if statics and not _hashable(statics):
                return self._call(args, kwargs)  # raises the clear error
            raise
        if type(res) is dict:
            return self._native_outputs(res)
        return _from_buffer(res, res.aval.weak_type)

    def _native_outputs(self, res):
        # Several outputs come back as {entry index: [buffers]} (a native pytree).
        ((k, bufs),) = res.items()
        out_tree, out_weak = self._native_meta[k]
        return out_tree.unflatten(from_buffers(bufs, out_weak))

    def _merge(self, statics, dyn_args) -> tuple:
        """Positional arguments from the static values and the dynamic ones."""
        if not statics:
            return tuple(dyn_args)
        it, st = iter(dyn_args), iter(statics)
        n = len(dyn_args) + len(statics)
        return tuple(next(st) if i in self._static_set else next(it) for i in range(n))

    def _native_miss_plain(self, *leaves):
        """Cache miss of the plain dispatcher (top-level leaves, no static arguments)."""
        return self._native_miss(len(leaves), (), *leaves)

    def _native_miss(self, tree, statics, *leaves):
        """Cache miss of the native dispatcher: stage/compile as needed, run, describe the entry
        for the C++ fast path."""
        self._native_misses += 1
        array_impl = runtime().ArrayImpl
        wrapped = [_from_buffer(x, x.aval.weak_type) if type(x) is array_impl else x for x in leaves]
        kwargs = {}
        if type(statics) is _KwStatics:
            dyn, kwargs = tree.unflatten(wrapped)
            kwargs = {**kwargs, **dict(statics.kw)}
            statics = statics.pos
        else:
            dyn = tuple(wrapped) if type(tree) is int else tree.unflatten(wrapped)
        staged, flat, _ = self._stage(self._merge(statics, dyn), kwargs)
        if staged.hoisted:
            raise RuntimeError(f"jit({self._name}): an eager call captured tracers (internal error)")
        if staged.spmd or needs_spmd(staged.closed, flat):  # NOTE: [SPMD call route]
            sp = spmd()
            c = sp.prepare(staged.closed, flat, self._name, None, staged.in_shardings, staged.out_shardings)
            bufs = [o._buffer for o in sp.run(c, flat)]
            if staged.single:
                res = bufs[0]
            else:
                res = {len(self._native_meta): bufs}
                self._native_meta.append((staged.out_tree, c.out_weak))
            return res, sp.fastpath_data(c, res, len(leaves))
        c = compiled(staged.closed, self._name, None, self._device)
        bufs = c.call(
            [to_buffer(x, a, c.device, f"argument {i}") for i, (x, a) in enumerate(zip(flat, c.in_avals))]
        )
        if staged.single:
            res = bufs[0]
        else:
            res = {len(self._native_meta): bufs}
            self._native_meta.append((staged.out_tree, c.out_weak))
        return res, fastpath_data(c, res, len(leaves))

    def _python_fast_call(self, args, kwargs):
        # NOTE: [python fast path]
        flat, tree = _flatten(args)
        key = [tree]
        bufs = []
        default_device = runtime()._default_dev
        for x in flat:
            t = type(x)
            if t is Array:
                b = _array_buffer(x)
                if b is None or getattr(b._sharding, "_fg_device", None) is not default_device:
                    return self._call(args, kwargs)  # to_buffer converts (or moves) it
            elif t is _ndarray:
                b = fast_put(x, False)
                if b is None:
                    return self._call(args, kwargs)
            elif t in _PY_SCALARS:
                b = put_scalar(x)
                if b is None:
                    return self._call(args, kwargs)
            else:
                return self._call(args, kwargs)
            bufs.append(b)
            key.append(id(b.aval))
        entry = self._fast.get(tuple(key))
        if entry is None:
            return self._call(args, kwargs, tuple(key), bufs)
        self._fast_hits += 1
        outs = entry.call(bufs)
        if entry.single:
            return _from_buffer(outs[0], entry.out_weak[0])
        return entry.out_tree.unflatten(from_buffers(outs, entry.out_weak))

    # -- the general path ----------------------------------------------------------------------

    def _call(self, args, kwargs, fast_key=None, bufs=None):
        staged, flat, donated = self._stage(args, kwargs)
        if type(_state.trace) is _EvalTrace and not staged.hoisted:
            if staged.spmd or needs_spmd(staged.closed, flat):  # NOTE: [SPMD call route]
                outs = spmd().call(
                    staged.closed, flat, self._name, donated, staged.in_shardings, staged.out_shardings
                )
                return staged.out_tree.unflatten(outs)
            c = compiled(staged.closed, self._name, donated, self._device)
            if fast_key is not None:
                self._fast[fast_key] = _FastEntry(c, staged)
                outs = from_buffers(c.call(bufs), c.out_weak)
            else:
                outs = run(c, flat, donated)
            return staged.out_tree.unflatten(outs)
        params = dict(jaxpr=staged.closed, name=self._name, donated_invars=donated)
        if self._device is not None:
            params["device"] = self._device
        if staged.in_shardings is not None or staged.out_shardings is not None:
            n = len(staged.hoisted)
            ins = staged.in_shardings or (None,) * len(flat)
            params["in_shardings"] = (None,) * n + tuple(ins)
            params["out_shardings"] = staged.out_shardings or (None,) * len(staged.closed.out_avals)
        return staged.out_tree.unflatten(jit_p.bind(*staged.hoisted, *flat, **params))


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


kernel.register(
    jit_impl=jit_call,
    eager_on_devices=eager_on_devices,
    eager_compiled=eager_compiled,
    library_dir=os.path.dirname(os.path.abspath(__file__)) + os.sep,
)
