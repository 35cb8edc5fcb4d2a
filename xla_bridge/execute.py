"""Compile a staged jaxpr once for one device and run any compiled program: the one-device builder
of ``programs.Compiled``, arguments moved to the device (or laid out over several) and outputs
wrapped as Arrays, the compiled ``jit`` primitive impl.

Layer: xla_bridge. May import the funcgrad kernel (``core``, ``ir``, ``array``, ``dtypes``,
``partial_eval``), the primitive catalog (through ``spmd_route``), its siblings ``lowering``,
``programs``, ``spmd_route`` and ``runtime`` (the latter on first use, see ``runtime()``). Never the
surface, never ``dispatch`` (which routes a jitted call here, NOTE: [jitted call route]).

Everything that turns values into device buffers and back is written here once: ``to_buffer``
(checked conversion of one argument), ``fast_put`` (the native route's transfer of a host-backed
Array, cached on it), outputs as ``Array._from_buffer``; so are the one-device builder
(``compiled``) and the run of every compiled program (``run``, NOTE: [one compiled program]).

Importing this module hands the kernel (NOTE: [kernel registration]) ``jit_impl=jit_call`` (an
eager ``jit`` equation compiles its jaxpr with XLA instead of interpreting it),
``eager_compiled``, ``eager_on_devices`` and ``device_to_numpy`` (how a device-backed ``Array``
reads itself back).

# NOTE: [compiled jit cache]
# ``compiled(closed, ...)`` caches one ``Compiled`` per (ClosedJaxpr object, device, donation) in
# the one cache of programs (NOTE: [one compiled program] in xla_bridge/programs.py).
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
# Donation follows JAX (jax 0.10.2 on CPU donates for real). The lowering decides which donated
# inputs the program consumes (``lower_jaxpr``: those an output can reuse by type, or on one
# device by element count; the others stay alive, with JAX's "Some donated buffers were not
# usable" warning). After the call, an Array whose device buffer the call consumed is deleted
# (``consume_donated``): host-backed Arrays too, whose device copy was the one consumed, so
# ``is_deleted()`` is True and any later use (reading it, computing with it, passing it to
# another call) raises ``runtime.deleted_buffer_error``, a RuntimeError that starts with JAX's
# "Array has been deleted with shape=..." and says what to do instead. NumPy arguments and
# Python scalars are copied to the device and stay usable. Donating calls take the general path
# (never the fast paths), which runs ``consume_donated``.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
from funcgrad.xla_bridge.committed import IncompatibleDevices, commit, committed_devices, memory_kind
from funcgrad.xla_bridge.lowering import lower_jaxpr, xla_dtype
from funcgrad.xla_bridge.programs import ArgumentMismatch, Compiled, cached, clear_cache, mismatch_error
from funcgrad.xla_bridge.programs import _cache as _programs
from funcgrad.xla_bridge.spmd_route import eager_on_devices, needs_spmd, spmd

from funcgrad import kernel
from funcgrad.kernel import core, ir
from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import bounded_put, register_cache
from funcgrad.kernel.extended import EArray
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import trace_to_jaxpr

__all__ = [
    "Compiled",
    "array_buffer",
    "clear_cache",
    "compiled",
    "eager_compiled",
    "fast_put",
    "consume_donated",
    "forget_donated",
    "from_buffers",
    "jit_call",
    "run",
    "runtime",
    "to_buffer",
]

# (jit's compile-time lines, under funcgrad.jitting's logger: "Finished XLA compilation of jit(f)")
_logger = logging.getLogger("funcgrad")

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
        user = getattr(buf._sharding, "_fg_user", None)
        if user is not None and getattr(getattr(user, "spec", None), "unreduced", None):
            return slow(buf)  # (it refuses: NOTE: [unreduced values] in funcgrad/_sharding_unreduced.py)
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
# The one-device builder of compiled programs (NOTE: [compiled jit cache])


def compiled(
    closed: ir.ClosedJaxpr,
    name: str = "main",
    donated_invars=None,
    device=None,
    compiler_options=None,
    arg_names=None,
    result_names=None,
) -> Compiled:
    """The ``Compiled`` program of ``closed`` on ``device`` (default: the default device);
    ``compiler_options``: XLA's options by name (``runtime.compile``'s), part of the cache key.
    ``arg_names``/``result_names``: ``lower_jaxpr``'s (names in the program's text only).
    The one-device builder of ``programs.cached`` (NOTE: [one compiled program]).

    >>> import funcgrad
    >>> cj = funcgrad.make_jaxpr(lambda x: x * 2.0)(np.ones(2))
    >>> c = compiled(cj, "double")
    >>> c is compiled(cj, "double")
    True
    """
    rt = runtime()
    if device is None:
        device = rt.default_device()
    donated = tuple(donated_invars) if donated_invars is not None and any(donated_invars) else None
    options = tuple(sorted(compiler_options.items())) if compiler_options else ()
    key = (id(closed), device, donated, *options)
    hit = _programs.get(key)
    if hit is not None and hit.closed is closed:
        return hit  # (the hit of programs.cached, inlined: every staged call asks)

    def build():
        start = time.perf_counter()
        lowered = lower_jaxpr(
            closed, name, donated, platform=rt.normalize_platform(device.platform),
            arg_names=arg_names, result_names=result_names,
        )  # fmt: skip
        logged = _logger.isEnabledFor(logging.DEBUG)  # (JAX's lines, for a logger set to show them)
        if logged:
            _logger.debug(
                "Finished jaxpr to MLIR module conversion jit(%s) in %.9f sec",
                name,
                time.perf_counter() - start,
            )
            start = time.perf_counter()
        exe = rt.compile(
            lowered.text,
            lowered.in_avals,
            lowered.out_avals,
            device=device,
            donate_argnums=lowered.donate_argnums,
            host_callbacks=lowered.host_callbacks,
            compiler_options=compiler_options,
        )
        if logged:
            _logger.debug(
                "Finished XLA compilation of jit(%s) in %.9f sec", name, time.perf_counter() - start
            )
        const_buffers = [rt.device_put(c, device) for c in lowered.const_args]
        return Compiled(
            closed, exe, const_buffers, lowered.text, lowered.donate_argnums, device,
            one_sharding=rt.sharding(device),
        )  # fmt: skip

    return cached(key, closed, build)


# ----------------------------------------------------------------------------------------------
# Arguments and results (NOTE: [argument buffers])

_from_buffer = Array._from_buffer


def from_buffers(buffers, weak) -> list:
    """Device buffers as ``Array`` objects holding only the buffer."""
    return [_from_buffer(b, w) for b, w in zip(buffers, weak)]


# NOTE: [float0 results]
# float0 (the tangent type of integers and bools) has no XLA type: a program computes it as bool
# zeros (``emitter``). Where a compiled program's outputs become Python values (``run`` here, for
# every placement, and the native route's miss in ``dispatch``), an output whose aval is float0
# (``Compiled.float0_outs``) is a NumPy float0 array of its shape, as JAX's (its result handler of
# a float0 aval; such calls take no C++ fast path there either, nor here). Eager ``jvp``/``grad``
# make the same NumPy arrays.


def with_float0(outs: list, positions, out_avals) -> list:
    """``outs`` with each float0 output (``positions``) replaced by NumPy float0 zeros of its
    shape (NOTE: [float0 results]).

    >>> from funcgrad.kernel.ir import ShapedArray
    >>> with_float0([True], (0,), [ShapedArray((2,), _fdt.float0)])[0].dtype == _fdt.float0
    True
    """
    for i in positions:
        outs[i] = np.zeros(out_avals[i].shape, _fdt.float0)
    return outs


_SCALAR_TYPES = frozenset((*_fdt.python_scalar_types, *_fdt.typed_scalar_types))  # (TypedFloat too)


def to_buffer(x, aval, device, name="argument"):
    """A device buffer on ``device`` for argument ``x`` expected to have ``aval`` (shape and dtype
    checked first; ``name`` words the errors).

    Python scalars take the expected dtype (they are weakly typed); everything else must match.
    """
    rt = runtime()
    t = type(x)
    if t is core.Token or aval is ir.abstract_token:
        return _token_buffer(x, aval, device, name)
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
        # (uncommitted: a host value's transfer for a call, NOTE: [committed arrays])
        b = rt.device_put(_host(v, aval), device, weak_type=x.weak_type, committed=False)
        if device is rt.default_device():
            x._buffer = b  # Arrays are immutable: cache the transfer (where the value lives)
        return b
    if t in _SCALAR_TYPES:
        want = np.dtype(aval.dtype)
        if aval.shape != () or not _scalar_fits(x, want):
            _mismatch(x, aval, name)
        return rt.device_put(np.asarray(x, xla_dtype(want)), device, weak_type=True)
    if isinstance(x, core.Tracer):
        raise core.UnexpectedTracerError(core._leak_message(x))
    if type(x) is EArray:  # its representation (NOTE: [extended dtypes])
        physical = ir.ShapedArray(*_ext.physical_shape_dtype(aval.shape, aval.dtype))
        return to_buffer(x._data, physical, device, name)
    v = np.asarray(x)
    if not _fdt.x64_enabled:  # NOTE: [x64 mode]: a 64-bit NumPy argument enters as 32 bits
        v = _fdt.canonical_value(v)
    _check(v.shape, v.dtype, aval, name, x)
    return rt.device_put(_host(v, aval), device)


def _token_buffer(x, aval, device, name):
    """The ``bool[0]`` buffer a token argument travels as (NOTE: [tokens] in kernel/ir.py)."""
    if type(x) is not core.Token or aval is not ir.abstract_token:
        got = "Tok" if type(x) is core.Token else core.get_aval(x).str_short()
        raise TypeError(
            f"jit call: {name} is {got} but the compiled program expects {aval.str_short()}. Call "
            "the jitted function (it retraces for new types) instead of reusing a compiled program "
            "with different inputs."
        )
    x.block_until_ready()  # (as JAX's: the token's computation has finished before it is passed)
    return runtime().device_put(np.zeros(0, np.bool_), device)


def with_tokens(outs: list, positions) -> list:
    """``outs`` with each token output (``positions``, ``Compiled.token_outs``) wrapped as a
    ``Token`` around its ``bool[0]`` buffer (NOTE: [tokens] in kernel/ir.py)."""
    for i in positions:
        outs[i] = core.Token(outs[i])
    return outs


def _host(v, aval):
    # float0 (tangents of integers) has no XLA type: it travels as bool zeros.
    if v.dtype == _fdt.float0:
        return np.zeros(v.shape, np.bool_)
    return v


def _scalar_fits(x, dtype) -> bool:
    kind = _fdt.kind(dtype)
    if type(x) is bool:
        return True
    if isinstance(x, int):  # (a TypedInt too)
        return kind in "iufc"
    if isinstance(x, float):
        return kind in "fc"
    return kind == "c"


def _check(shape, dtype, aval, name, x):
    if tuple(shape) != tuple(aval.shape) or np.dtype(dtype) != np.dtype(aval.dtype):
        _mismatch(x, aval, name)


def _mismatch(x, aval, name):
    got = core.get_aval(x) if not isinstance(x, Array) or x._value is not None else x
    raise ArgumentMismatch(name, got.shape, got.dtype, aval)


def _mismatches(put, rows):
    """Raise JAX's one error naming each argument not of the type compiled for, once one is found
    (``put(*row)`` of a row: an argument, where it goes, its aval, its name)."""
    lines = []
    for row in rows:
        try:
            put(*row)
        except ArgumentMismatch as e:
            lines.append(e.line)
    raise mismatch_error(lines) from None


def consume_donated(args, bufs, donated_invars) -> None:
    """After a call: each donated Array argument whose device buffer the call consumed is deleted,
    as in JAX (NOTE: [donated arrays]); an Array whose buffer was a copy made on another device
    stays alive.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> x = fnp.ones(3)  # host-backed: its device copy is the buffer donated
    >>> _ = funcgrad.jit(lambda v: v + 1.0, donate_argnums=0)(x)
    >>> x.is_deleted()
    True
    """
    for a, b, d in zip(args, bufs, donated_invars):
        # (``b`` may be ``a._buffer`` under another sharding, sharing its memory: NOTE:
        # [device-to-device resharding]; donating it deleted ``a._buffer`` too)
        if d and type(a) is Array and b.is_deleted() and (a._buffer is None or a._buffer.is_deleted()):
            a._buffer = b
            a._value = None


forget_donated = consume_donated  # the earlier name


def run(c: Compiled, args, donated_invars=None, names=None, committed=False) -> list:
    """Run ``c`` eagerly on ``args`` (Arrays, NumPy arrays, scalars), wherever it was compiled
    (NOTE: [one compiled program]): each argument is checked and moved to ``c``'s device or laid
    out as its sharding there, donated host copies are forgotten, the outputs are device Arrays;
    on one device committed with ``committed`` (NOTE: [committed arrays])."""
    if names is None:
        names = [f"argument {i}" for i in range(len(args))]
    shardings = c.in_shardings
    if shardings is None:
        device = c.device
        try:
            bufs = [to_buffer(a, av, device, n) for a, av, n in zip(args, c.in_avals, names)]
        except ArgumentMismatch:
            _mismatches(lambda a, av, n: to_buffer(a, av, device, n), zip(args, c.in_avals, names))
    else:
        put = spmd().to_sharded_buffer
        try:
            bufs = [put(a, s, av, n) for a, s, av, n in zip(args, shardings, c.in_avals, names)]
        except ArgumentMismatch:
            _mismatches(put, zip(args, shardings, c.in_avals, names))
    outs = c.call(bufs)
    if committed and shardings is None:
        outs = committed_results(outs, args)
    if c.host_outs:
        outs = host_results(outs, c.host_outs)
    if c.donate_argnums:
        consume_donated(args, bufs, donated_invars)
    if c.float0_outs:
        return with_float0(from_buffers(outs, c.out_weak), c.float0_outs, c.out_avals)
    if c.token_outs:
        return with_tokens(from_buffers(outs, c.out_weak), c.token_outs)
    if c.extended_outs:  # (NOTE: [extended dtypes])
        outs = from_buffers(outs, c.out_weak)
        for i in c.extended_outs:
            outs[i] = EArray(c.out_avals[i], outs[i])
        return outs
    return from_buffers(outs, c.out_weak)


def committed_results(outs, args) -> list:
    """The results ``outs`` (buffers) of a one-device call with committed ``args``: committed, and
    in the memory of the arguments' device that the device-backed ones share ("pinned_host": a
    jitted function of values in host memory returns values there, as JAX's)."""
    kind = memory_kind(args)
    if kind is None:
        return commit(outs)
    rt = runtime()
    put = rt.device_put
    return [
        put(rt.to_numpy(b), b._sharding._fg_device, weak_type=b.aval.weak_type, memory_kind=kind)
        for b in outs
    ]


def host_results(outs, positions) -> list:
    """The results ``outs`` (buffers of a one-device call) with those at ``positions`` (typed in
    host memory, ``Compiled.host_outs``) in their device's "pinned_host" memory, as JAX's.

    >>> import funcgrad
    >>> from funcgrad import memory
    >>> x = funcgrad.numpy.ones(2)
    >>> funcgrad.jit(lambda a: funcgrad.device_put(a, memory.Space.Host))(x).sharding.memory_kind
    'pinned_host'
    """
    rt = runtime()
    outs = list(outs)
    for i in positions:
        b = outs[i]
        if getattr(b._sharding, "memory_kind", None) != "pinned_host":
            device = b._sharding._fg_device
            outs[i] = rt.device_put(
                rt.to_numpy(b), device, weak_type=b.aval.weak_type, memory_kind="pinned_host"
            )
    return outs


def jit_call(*args, jaxpr, name, donated_invars, device=None, in_shardings=None, out_shardings=None):
    """The eager impl of ``jit_p``: run ``jaxpr`` compiled by XLA (registered at import); on
    several devices when it has shardings, holds a mesh or gets sharded arguments (NOTE: [SPMD
    call route]).

    >>> import funcgrad
    >>> from funcgrad.primitives.call import jit_p
    >>> cj = funcgrad.make_jaxpr(lambda x: x + 1.0)(1.0)
    >>> [float(y) for y in jit_p.bind(2.0, jaxpr=cj, name="inc", donated_invars=(False,))]
    [3.0]
    """
    if len(args) != len(jaxpr.in_avals):
        raise TypeError(f"jit call '{name}' expects {len(jaxpr.in_avals)} arguments, got {len(args)}")
    try:
        committed = committed_devices(args, name)  # NOTE: [committed arrays]
    except IncompatibleDevices as e:
        raise e.worded() from None
    if needs_spmd(jaxpr, args, in_shardings, out_shardings):
        c = spmd().prepare(jaxpr, args, name, donated_invars, in_shardings, out_shardings)
        return run(c, args, donated_invars)
    if device is None and committed is not None:
        device = committed[0]  # (computation follows committed data)
    c = compiled(jaxpr, name, donated_invars, device)
    return run(c, args, donated_invars, committed=committed is not None or device is not None)


def _eager_on_devices(primitive, args, params):
    """An eager primitive with a device-backed operand (the kernel's ``eager_on_devices``): over
    several devices it runs there, compiled (``spmd_route.eager_on_devices``); with a committed
    operand on one device it is computed on the host, as uncommitted ones are (the same numbers),
    and its results are committed to that device (NOTE: [committed arrays]); else
    ``NotImplemented``: the kernel computes on the host."""
    try:
        committed = committed_devices(args, primitive.name)
    except IncompatibleDevices as e:
        raise e.worded() from None
    out = eager_on_devices(primitive, args, params)
    if out is not NotImplemented or committed is None:
        return out
    device = committed[0]
    kind = memory_kind(args, primitive.name)  # (JAX's error when the operands' memories differ)
    host = [Array._from_owned_raw(a._numpy(), a.weak_type) if type(a) is Array else a for a in args]
    out = primitive.bind(*host, **params)
    rt = runtime()

    def put(o):
        if type(o) is not Array:
            return o
        buf = rt.device_put(o._numpy(), device, weak_type=o.weak_type, memory_kind=kind)
        return _from_buffer(buf, o.weak_type)

    return [put(o) for o in out] if primitive.multiple_results else put(out)


def _buffer_placed(buf) -> bool:
    """Whether an eager operation on a value with device buffer ``buf`` runs where it lives (the
    kernel's ``buffer_placed``): committed to a device (NOTE: [committed arrays]) or over several
    devices, as ``_eager_on_devices`` decides; an uncommitted one-device buffer (a host value's
    transfer cached on its Array, or a jitted call's result) is computed on the host."""
    return buf._committed or not hasattr(buf._sharding, "_fg_device")


_single_programs: dict = register_cache("xla_bridge.single_programs", {})


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
# The native route's transfer of a host-backed Array (NOTE: [argument buffers])


def _first_fast_put(value: np.ndarray, weak_type: bool):
    """Copy a NumPy array to the default device with no checks beyond the dtype; ``None`` when
    the value needs ``to_buffer`` (unsupported dtype, non-native byte order, failure).

    The first call builds the real function (it needs the runtime) and rebinds ``fast_put``."""
    global fast_put
    fast_put = _make_fast_put()
    return fast_put(value, weak_type)


fast_put = _first_fast_put


def array_buffer(x: Array):
    """The device buffer of ``x`` for the native route: its own, or one made from its host value
    and cached on it (NOTE: [argument buffers]); ``None`` when ``to_buffer`` must convert it."""
    b = x._buffer
    if b is None:
        b = x._buffer = fast_put(x._value, x.weak_type)
    return b


def _make_fast_put():
    rt = runtime()
    device = rt.default_device()
    sharding, devices = rt.sharding(device), [device]
    put, copy, aval, supported = rt._put, rt._COPY, rt.aval, rt._SUPPORTED

    def fast_put(value, weak_type):
        dt = value.dtype
        if dt not in supported:
            return None
        try:
            # (uncommitted: NOTE: [committed arrays])
            return put(aval(value.shape, dt, weak_type), sharding, [value], devices, False, True, copy, True)
        except Exception:  # noqa: BLE001 - the general path reports it properly
            return None

    return fast_put


kernel.register(
    jit_impl=jit_call,
    eager_on_devices=_eager_on_devices,
    buffer_placed=_buffer_placed,
    eager_compiled=eager_compiled,
    library_dir=os.path.dirname(os.path.abspath(__file__)) + os.sep,
)
