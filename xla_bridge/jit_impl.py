"""The compiled implementation of the ``jit`` call primitive: lower once, compile, run on device.

Layer: xla_bridge. May import the funcgrad kernel (``core``, ``array``), the primitive catalog
(``primitives.call``) and its siblings (``lowering``; ``runtime`` lazily). Never the surface.

Importing this module registers (dependency inversion, see design.md):

- ``jit_impl=jit_call``: a ``jit`` equation evaluated eagerly compiles its
  jaxpr with XLA instead of interpreting it;
- ``device_to_numpy``: how an ``Array`` backed by a device buffer reads
  itself back.

It stays cheap: jaxlib's XLA runtime (``xla_bridge.runtime``) is imported, and the PJRT client
created, on the first compile, not here.

# NOTE: [compiled jit cache]
# ``compiled(closed, ...)`` caches one ``Compiled`` per (ClosedJaxpr object, device, donation).
# ``funcgrad.jit`` reuses its traced ClosedJaxpr objects across calls, so a hit costs one dict
# lookup; the entry keeps a reference to its jaxpr so that an ``id`` is never reused while the
# entry lives. Jaxprs made afresh on each call (the JVP or transpose of a jit call inside an
# eager ``grad``) miss here and are lowered again (~1 ms), but compile to the same module text,
# which ``runtime.compile`` caches: XLA compiles each distinct program once.

# NOTE: [native dispatch]
# jaxlib's C++ ``pjit`` object is a dispatcher that does not depend on jax: given our executable,
# shardings and avals (``fastpath_data``) it computes argument signatures, transfers NumPy
# arguments and runs the executable in C++, calling back into Python only on a cache miss. It
# reads three process-wide jaxlib states (x64, disable_jit, post_hook), which we set to our own
# configs (x64 on) -- unless jax's config is loaded, which takes those states over; then
# ``funcgrad.jit`` uses its Python fast path instead (``native_dispatch_available``).

# NOTE: [argument buffers]
# An ``Array`` is immutable, so the device buffer made for a host-backed Array is cached on it
# (``Array._buffer``) and reused by later calls. NumPy arrays are mutable and Python scalars have
# no slot, so they are copied to the device on every call. Outputs are Arrays holding only a
# buffer (``_value is None``): chained jitted calls never go through the host, and host reads are
# lazy (the ``device_to_numpy`` registered with the kernel).
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

import numpy as np

from funcgrad import kernel
from funcgrad.kernel import core, ir
from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel.array import Array
from funcgrad.kernel.hooks import hooks
from xla_bridge.lowering import lower_jaxpr, xla_dtype

__all__ = [
    "Compiled",
    "compiled",
    "fast_put",
    "fastpath_data",
    "jit_call",
    "make_native_dispatcher",
    "native_dispatch_available",
    "put_scalar",
    "to_buffer",
    "wrap_outputs",
]

_runtime = None


def runtime():
    """``xla_bridge.runtime``, imported on first use (it loads jaxlib's XLA extension)."""
    global _runtime
    if _runtime is None:
        # Deferred for import time (``import xla_bridge`` must stay cheap), not to dodge a cycle.
        from xla_bridge import runtime as rt  # noqa: PLC0415

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
                return out
        except Exception:  # noqa: BLE001
            pass
        return slow(buf)

    return to_numpy


def _lazy_to_numpy(buf):
    return runtime().to_numpy(buf)


if hooks.device_to_numpy is None:
    kernel.register(device_to_numpy=_lazy_to_numpy)


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
        exe_call = executable.call
        if const_buffers:
            consts = list(const_buffers)
            self.call = lambda bufs: exe_call(consts + bufs)
        else:
            self.call = exe_call

    def as_text(self) -> str:
        return self.text


_cache: dict = {}
_CACHE_SIZE = 1024


def compiled(closed: ir.ClosedJaxpr, name: str = "main", donated_invars=None, device=None) -> Compiled:
    """The ``Compiled`` program of ``closed`` (see NOTE: [compiled jit cache]).

    >>> import funcgrad, funcgrad.numpy as fnp
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
    lowered = lower_jaxpr(closed, name, donated)
    exe = rt.compile(
        lowered.text,
        lowered.in_avals,
        lowered.out_avals,
        device=device,
        donate_argnums=lowered.donate_argnums,
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
# Arguments and results

_new = object.__new__


def wrap_outputs(buffers, weak) -> list:
    """Device buffers as ``Array`` objects holding only the buffer (NOTE: [argument buffers])."""
    out = []
    for b, w in zip(buffers, weak):
        a = _new(Array)
        a._value = None
        a._buffer = b
        a.weak_type = w
        out.append(a)
    return out


def to_buffer(x, aval, device, name="argument"):
    """A device buffer for argument ``x`` expected to have ``aval`` (shape/dtype checked first).

    Python scalars take the expected dtype (they are weakly typed); everything else must match.
    """
    rt = runtime()
    t = type(x)
    if t is Array:
        b = x._buffer
        if b is not None and not b.is_deleted():
            if (tuple(b.aval.shape), b.aval.dtype) != (aval.shape, xla_dtype(aval.dtype)):
                _mismatch(x, aval, name)
            if b._sharding._fg_device is not device:
                b = rt.device_put(b, device)
            return b
        v = x._numpy()
        _check(v.shape, v.dtype, aval, name, x)
        b = rt.device_put(_host(v, aval), device, weak_type=x.weak_type)
        if x._buffer is None or x._buffer.is_deleted():
            x._buffer = b  # Arrays are immutable: cache the transfer (NOTE: [argument buffers])
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
    kind = np.dtype(dtype).kind
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


def jit_call(*args, jaxpr, name, donated_invars):
    """The eager impl of ``jit_p``: run ``jaxpr`` compiled by XLA (registered at import).

    >>> from primitives.call import jit_p
    >>> import funcgrad
    >>> cj = funcgrad.make_jaxpr(lambda x: x + 1.0)(1.0)
    >>> [float(y) for y in jit_p.bind(2.0, jaxpr=cj, name="inc", donated_invars=(False,))]
    [3.0]
    """
    if len(args) != len(jaxpr.in_avals):
        raise TypeError(f"jit call '{name}' expects {len(jaxpr.in_avals)} arguments, got {len(args)}")
    c = compiled(jaxpr, name, donated_invars)
    device = c.device
    bufs = [to_buffer(a, av, device, f"argument {i}") for i, (a, av) in enumerate(zip(args, c.in_avals))]
    outs = c.call(bufs)
    if c.donate_argnums:
        forget_donated(args, donated_invars)
    return wrap_outputs(outs, c.out_weak)


# ----------------------------------------------------------------------------------------------
# The dispatch fast path's transfers (funcgrad.jit, NOTE: [jit fast path])


def _first_fast_put(value: np.ndarray, weak_type: bool):
    """Copy a NumPy array to the default device with no checks beyond the dtype; ``None`` when
    the value needs the general path (unsupported dtype, non-native byte order, failure).

    The first call builds the real function (it needs the runtime) and rebinds ``fast_put``."""
    global fast_put
    fast_put = _make_fast_put()
    return fast_put(value, weak_type)


fast_put = _first_fast_put


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


_registered = []
_states = []


def native_dispatch_available() -> bool:
    """Whether jaxlib's C++ dispatch can be used now: it reads process-wide jaxlib states
    (x64, disable_jit) that ``import jax`` takes over with jax's own config (x64 off by
    default), so it is used only while jax's config module is not loaded."""
    return "jax._src.config" not in sys.modules


def _init_native():
    if not _registered:
        from funcgrad.kernel import tree_util as tu  # noqa: PLC0415 - kernel module, import-time cost

        _registered.append(tu.registry)
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


def make_native_dispatcher(name: str, cache_miss, capacity: int = 4096):
    """A C++ dispatcher: ``d(treedef, statics, *leaves) -> outputs`` (see ``fastpath_data``).

    ``cache_miss(treedef, statics, *leaves)`` runs when the (treedef, statics, leaf signatures)
    triple is new and returns ``(outputs, fastpath_data(...) or None)``; ``statics`` must be
    hashable (the static arguments of the jitted function, ``()`` when it has none).
    """
    _init_native()
    jx = runtime()._jax

    def miss(*args):
        outs, fast = cache_miss(*args)
        return outs, fast, False

    def fallback(*args):
        raise TypeError(f"jit({name}): cannot transfer argument {args[0]!r} to the device")

    key = (name, id(cache_miss))  # any hashable; each dispatcher has its own cache anyway
    cache = jx.PjitFunctionCache(capacity=capacity)
    return jx.pjit(name, None, miss, [0, 1], [], key, _registered[0], fallback, cache)


def fastpath_data(compiled: Compiled, outputs, n_args: int):
    """The data jaxlib's C++ fast path needs to run ``compiled`` for ``n_args`` leaves.

    ``outputs`` is a pytree of the executable's output buffers in the form the dispatcher must
    return (the C++ side rebuilds it around fresh outputs, natively for dicts/lists/leaves).
    """
    rt = runtime()
    sh = rt.sharding(compiled.device)
    treedef = _registered[0].flatten(outputs)[1]
    n_out = len(compiled.executable.out_avals)
    return _FastPathData(
        compiled.executable._loaded,
        treedef,
        # Hoisted constants are the executable's leading parameters: every per-parameter list
        # covers them too (shorter lists made the second call fail with std::bad_cast or crash).
        [sh] * (len(compiled.const_buffers) + n_args),
        [sh] * n_out,
        list(compiled.executable.out_avals),
        [True] * n_out,
        [True] * (len(compiled.const_buffers) + n_args),
        [None] * (len(compiled.const_buffers) + n_args),
        list(compiled.const_buffers),
    )


class _FastPathData(NamedTuple):
    xla_executable: Any
    out_pytree_def: Any
    in_shardings: Any
    out_shardings: Any
    out_avals: Any
    out_committed: Any
    kept_var_bitvec: Any
    in_device_local_layouts: Any
    const_args: Any


def forget_donated(args, donated_invars) -> None:
    """After a call that donated them, host-backed Arrays drop their (now deleted) buffer."""
    for a, d in zip(args, donated_invars):
        if d and type(a) is Array and a._value is not None:
            a._buffer = None


kernel.register(jit_impl=jit_call, library_dir=os.path.dirname(os.path.abspath(__file__)) + os.sep)
