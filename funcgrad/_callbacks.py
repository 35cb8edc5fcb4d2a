"""Calling Python from inside transformed and compiled functions: ``pure_callback`` (results
computed in Python), ``io_callback`` (results and side effects) and
``debug.callback``/``debug.print``/``debug.log`` (side effects).

Layer: surface. Imports the kernel (tree_util, core, ShapedArray) and the callback primitives
(primitives/callbacks.py), whose docstring describes what transformations do with them; a
compiled program calls the function through XLA's host callback.

The function receives funcgrad Arrays (concrete, on the host: NumPy works on them) and pytrees
as they were passed; non-array leaves (strings, None, objects) are passed through unchanged.

>>> import funcgrad, funcgrad.numpy as fnp
>>> f = funcgrad.jit(lambda x: funcgrad.pure_callback(np.sinc, x, x))
>>> f(np.array([0.0, 0.5])).tolist()
[1.0, 0.6366197723675814]
"""

from __future__ import annotations

import copy
import logging
import string
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from funcgrad import xla_bridge
from funcgrad._shardings import NamedSharding, SingleDeviceSharding
from funcgrad.kernel import core, source_info
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import ShapedArray
from funcgrad.primitives.callbacks import (
    VMAP_METHODS,
    HostCallback,
    debug_callback_p,
    io_callback_p,
    pure_callback_p,
)

__all__ = ["debug_callback", "debug_log", "debug_print", "io_callback", "pure_callback"]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("pure_callback",)

# debug.log's records go to JAX's logger name (a user's handler on "jax" sees them, as JAX's).
_logger = logging.getLogger("jax._src.debugging")
# A failing host callback is logged under JAX's logger name: libraries filter the record by it
# (equinox's filter_jit drops name "jax._src.callback", message "jax.pure_callback failed", since
# it raises its own error in the callback's place).
_callback_logger = logging.getLogger("jax._src.callback")


def _split(args, kwargs):
    """``(tree, dynamic leaves, {position: static leaf})`` of the call's arguments: arrays and
    scalars travel through the program, other leaves stay Python values."""
    leaves, tree = tu.tree_flatten((tuple(args), dict(kwargs)))
    dynamic, static = [], {}
    for i, leaf in enumerate(leaves):
        if core.is_array_like(leaf):
            dynamic.append(leaf)
        else:
            static[i] = leaf
    return tree, dynamic, static


def _host_function(fun: Callable, tree, static: dict, n: int) -> Callable:
    """A function of the dynamic leaves' NumPy values calling ``fun(*args, **kwargs)``."""

    def call(*arrays):
        it = iter(core.wrap_result(np.asarray(a)) for a in arrays)
        leaves = [static[i] if i in static else next(it) for i in range(n)]
        args, kwargs = tu.tree_unflatten(tree, leaves)
        return fun(*args, **kwargs)

    return call


def pure_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding=None,
    vmap_method: str | None = None,
    **kwargs: Any,
):
    """Compute ``callback(*args, **kwargs)`` in Python, also inside ``jit``/``vmap``: a pytree of
    arrays of the shapes and dtypes of ``result_shape_dtypes`` (leaves with ``.shape`` and
    ``.dtype``, e.g. ``ShapeDtypeStruct`` or arrays). The callback must be pure: it may be
    called again, or not at all when its results are unused. ``vmap_method`` says how it sees a
    batch under ``vmap`` (see primitives/callbacks.py: ``"sequential"``, ``"expand_dims"``,
    ``"broadcast_all"``, ...; None refuses ``vmap``). It has no derivative: give it one with
    ``custom_jvp``/``custom_vjp``. ``sharding``: a ``SingleDeviceSharding`` naming the device of
    a program over several devices that runs it (default: the program's first device).

    >>> import funcgrad
    >>> out = funcgrad.ShapeDtypeStruct((3,), np.float64)
    >>> funcgrad.vmap(lambda x: pure_callback(np.cumsum, out, x, vmap_method="sequential"))(
    ...     np.ones((2, 3))).tolist()
    [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    """
    if vmap_method not in (None, *VMAP_METHODS):
        raise ValueError(
            f"pure_callback: vmap_method must be one of {[None, *VMAP_METHODS]}, got {vmap_method!r}"
        )
    return _bind_with_results(
        pure_callback_p, callback, result_shape_dtypes, sharding, args, kwargs, vmap_method=vmap_method
    )


def io_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding=None,
    ordered: bool = False,
    **kwargs: Any,
):
    """Compute ``callback(*args, **kwargs)`` in Python for its results *and* its side effects
    (``jax.experimental.io_callback``): unlike ``pure_callback`` it runs every time the program
    runs, even when its results are unused. ``ordered=True`` runs the ordered callbacks of a
    ``jit`` function in program order. Under ``vmap`` it is called once per element, in turn
    (an ordered one refuses ``vmap``); it cannot be differentiated. ``result_shape_dtypes`` as for
    ``pure_callback``, ``sharding`` too.

    >>> import funcgrad
    >>> log = []
    >>> def record(x):
    ...     log.append(float(x))
    ...     return np.float64(len(log))
    >>> f = funcgrad.jit(lambda x: io_callback(record, funcgrad.ShapeDtypeStruct((), np.float64), x * 2))
    >>> [float(f(1.0)), float(f(5.0))], log
    ([1.0, 2.0], [2.0, 10.0])
    """
    return _bind_with_results(
        io_callback_p, callback, result_shape_dtypes, sharding, args, kwargs, ordered=bool(ordered)
    )


def _bind_with_results(primitive, callback: Callable, result_shape_dtypes, sharding, args, kwargs, **params):
    """Bind ``primitive`` (pure_callback or io_callback) on the call's dynamic leaves with the
    user's function wrapped as a ``HostCallback``; the results in ``result_shape_dtypes``'s tree."""
    what = primitive.name
    if not callable(callback):
        raise TypeError(f"{what}: the callback must be callable, got {type(callback).__name__}")
    _check_sharding(sharding)
    host, result_avals, out_tree, dynamic = _with_results(what, callback, result_shape_dtypes, args, kwargs)
    name = getattr(callback, "__name__", type(callback).__name__)
    bind = lambda: primitive.bind(
        *dynamic, callback=HostCallback(host, name), result_avals=result_avals, sharding=sharding, **params
    )  # noqa: E731
    if type(core.current_trace()) is not core.EvalTrace or any(isinstance(d, core.Tracer) for d in dynamic):
        return tu.tree_unflatten(out_tree, bind())
    try:
        outs = bind()
    except Exception as e:
        raise _eager_error(what, e) from e
    return tu.tree_unflatten(out_tree, outs)


def _check_sharding(sharding) -> None:
    """A callback's ``sharding``: None (the program's first device) or the one device to run it on,
    a ``SingleDeviceSharding`` (or a ``NamedSharding`` over a mesh of no axes), as JAX's."""
    if sharding is None or isinstance(sharding, SingleDeviceSharding):
        return
    if isinstance(sharding, NamedSharding) and not sharding.mesh.axis_names and len(sharding.device_set) == 1:
        return
    raise NotImplementedError(f"pure_callback only supports SingleDeviceSharding, but got {type(sharding)}")


def _eager_error(what: str, e: Exception):
    """The error of a callback run eagerly that raised (its result checks included): JAX runs an
    eager callback through XLA, so it is a ``JaxRuntimeError`` carrying the callback's own error,
    as under ``jit``.

    >>> import funcgrad
    >>> funcgrad.pure_callback(lambda v: np.ones(2), funcgrad.ShapeDtypeStruct((), np.float64), 1.0)
    Traceback (most recent call last):
    ...
    funcgrad.xla_bridge.backends.XlaBridgeError: a host callback (pure_callback) raised RuntimeError: ...
    """
    tb = "".join(traceback.format_exception(e)).rstrip()
    return xla_bridge.XlaBridgeError(
        f"a host callback ({what}) raised {type(e).__name__}: {e}\n"
        f"while running eagerly: INTERNAL: CpuCallback error calling callback: {tb}",
        phase="execute",
    )


def _with_results(what: str, callback: Callable, result_shape_dtypes, args, kwargs):
    """``(host function of the dynamic leaves returning the result leaves, result avals, result
    tree, dynamic leaves)`` of a callback with declared results."""
    shapes, out_tree = tu.tree_flatten(result_shape_dtypes)
    try:
        result_avals = tuple(ShapedArray(tuple(s.shape), np.dtype(s.dtype)) for s in shapes)
    except AttributeError:
        raise TypeError(
            f"{what}: result_shape_dtypes must be a pytree of objects with .shape and .dtype "
            "(funcgrad.ShapeDtypeStruct, arrays)"
        ) from None
    if any(_dt.canonical(a.dtype) != a.dtype for a in result_avals):  # (JAX's check and words)
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
    tree, dynamic, static = _split(args, kwargs)
    call = _host_function(callback, tree, static, len(dynamic) + len(static))

    def host(*arrays):
        try:
            out = call(*arrays)
        except BaseException:
            # (JAX logs a failing callback at ERROR with its traceback, then the error propagates)
            _callback_logger.exception("jax.%s failed", what)
            raise
        # (the result's leaves, whatever its structure, as JAX takes them: their number, shapes
        # and dtypes are checked against the declared ones)
        return [np.asarray(leaf) for leaf in tu.tree_leaves(out)]

    return host, result_avals, out_tree, dynamic


def _bind_debug(callback: Callable, args, kwargs, ordered: bool, partitioned: bool = False) -> None:
    tree, dynamic, static = _split(args, kwargs)
    call = _host_function(callback, tree, static, len(dynamic) + len(static))
    name = getattr(callback, "__name__", type(callback).__name__)
    params = {"callback": HostCallback(call, name), "ordered": bool(ordered)}
    # ``partitioned``: each device calls it on its own blocks in a compiled program, as JAX's (an
    # eager call sees the whole values, as JAX's impl)
    if partitioned and (
        type(core.current_trace()) is not core.EvalTrace or any(isinstance(x, core.Tracer) for x in dynamic)
    ):
        params["partitioned"] = True
    debug_callback_p.bind(*dynamic, **params)


def debug_callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
                   partitioned: bool = False, **kwargs: Any):  # fmt: skip
    """Call ``callback(*args, **kwargs)`` for its side effect, also inside ``jit``, ``grad``
    (on the primal values) and ``vmap`` (once per element). ``ordered=True`` keeps the order of
    ordered callbacks under ``jit``. Two-call form: ``debug.callback(ordered=True)(f, *args)``.

    >>> import funcgrad
    >>> seen = []
    >>> _ = funcgrad.jit(lambda x: debug_callback(seen.append, x) or x * 2)(3.0)
    >>> [float(v) for v in seen]
    [3.0]
    """

    def bound(callback, *c_args, **c_kwargs):
        if not callable(callback):
            raise TypeError(
                f"debug.callback: the first argument must be callable, got {type(callback).__name__}"
            )
        _bind_debug(callback, c_args, c_kwargs, ordered, partitioned)

    if callback is not None:
        bound(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(
            f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}"
        )
    return bound


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting (unused ones are errors)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")  # (JAX's words)
        if unused_kw:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing an "
                'f-string (i.e, `f"{x}"`) into `jax.debug.print` and instead should pass in a regular '
                'string: write debug.print("x={x}", x=x).'
            )


def _printer(fmt: str, has_placeholders: bool, printoptions: dict, log_level: int | None):
    record = None
    if log_level is not None:
        # As JAX's: the record is made where debug.log was called (the user's file and line) and
        # handed to the logger's handlers whatever the logger's level (``Logger.handle``).
        where = source_info.user_source_info()
        file, line = (where.file, where.line) if where is not None else ("(unknown file)", 0)
        record = _logger.makeRecord(_logger.name, log_level, file, line, "", (), None)

    def emit(*args, **kwargs):
        with np.printoptions(**printoptions):
            if has_placeholders:
                message = fmt.format(*args, **kwargs)
            else:
                message = " ".join((fmt, *(str(a) for a in args)))
        if record is None:
            sys.stdout.write(message + "\n")
        else:
            logged = copy.copy(record)
            logged.msg = message
            _logger.handle(logged)

    emit.__name__ = "debug_print"
    return emit


def _print(fmt, args, kwargs, ordered, skip_format_check, log_level, partitioned=False):
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: the format must be a string, got {type(fmt).__name__}")
    if not skip_format_check:
        _FormatChecker().format(fmt, *args, **kwargs)
    has_placeholders = bool(fmt) and any(
        field is not None for _, field, _, _ in string.Formatter().parse(fmt)
    )
    emit = _printer(fmt, has_placeholders, np.get_printoptions(), log_level)
    _bind_debug(emit, args, kwargs, ordered, partitioned)


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, **kwargs: Any):  # fmt: skip
    """Print ``fmt.format(*args, **kwargs)`` when the values exist: at once in eager code, each
    time a compiled function runs under ``jit``; under ``vmap`` once per element. Write
    ``debug.print("x={x}", x=x)``, not an f-string (that would format the traced value).
    Two-call form: ``debug.print(ordered=True)("x={}", x)``.

    >>> import funcgrad
    >>> _ = funcgrad.jit(lambda x: debug_print("x = {}", x) or x)(2.0)
    x = 2.0
    """
    if fmt is not None:
        _print(fmt, args, kwargs, ordered, skip_format_check, None, partitioned)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return lambda fmt, *a, **k: _print(fmt, a, k, ordered, skip_format_check, None, partitioned)


def debug_log(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
              skip_format_check: bool = False, **kwargs: Any):  # fmt: skip
    """Like ``debug.print``, but the message goes to JAX's ``jax._src.debugging`` logger as an INFO
    record of the line that called it, handed to its handlers whatever the logger's level (JAX's).

    >>> import logging
    >>> records = []
    >>> class Keep(logging.Handler):
    ...     def emit(self, record):
    ...         records.append(record.getMessage())
    >>> logger, keep = logging.getLogger("jax._src.debugging"), Keep()
    >>> logger.addHandler(keep)
    >>> debug_log("loss {}", 0.5); logger.removeHandler(keep); records
    ['loss 0.5']
    """
    if fmt is not None:
        _print(fmt, args, kwargs, ordered, skip_format_check, logging.INFO, partitioned)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return lambda fmt, *a, **k: _print(fmt, a, k, ordered, skip_format_check, logging.INFO, partitioned)
