"""NaN and Inf hunting: ``check_finite(f)(*args)`` and the ``debug_nans()`` context; and JAX's
``debug.print``/``debug.callback``/``debug.log`` (defined in ``funcgrad/_callbacks.py``) and
``debug.breakpoint`` (``funcgrad/_debugger.py``).

Layer: surface. Imports the kernel (core, partial_eval, tree_util, dtypes) and funcgrad.api.

Inside ``debug_nans()`` the root of the trace stack is a ``NanCheckTrace`` (``check_finite``'s:
a ``FiniteCheckTrace``, NaN and Inf; ``debug_infs``: ``InfCheckTrace``): the eager
evaluator, plus a check of every primitive's outputs. Every transformation binds its concrete work
on the trace below it, so the primal work of ``grad``/``vjp`` and every equation of the backward
pass are checked one equation at a time; a call (``jit``, ``checkpoint``, a custom rule's function)
is checked on its outputs, as JAX checks a jitted function's, and only when one is bad run again:
a user's jitted function called outside transformations runs its Python again, op by op (JAX's
de-optimized call: its side effects run again and the traceback reaches the user's line), any
other call is interpreted again equation by equation; so the report names an equation inside it
and a value inside that no output carries is not reported. Under ``check_finite`` the first
non-finite output raises ``NonFiniteError`` (a ``FloatingPointError``) that says whether it
happened in the forward or the backward pass, which primitive, the statistics of its inputs, and
the user's source line — for a backward equation, the forward line it differentiates (NOTE:
[source info of re-interpreted equations]; the checks switch on the source lines of linearize's
equations). Under ``debug_nans``/``debug_infs`` it raises JAX's error instead: a
``FloatingPointError`` with JAX's message (``invalid value (nan) encountered in log``), carrying
the same attributes.

Like JAX's ``debug_nans``, an intermediate NaN/Inf that the program later discards (``where(x > 0,
log(x), 0)``) is reported too: the tool finds where a non-finite value first appears.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import linecache
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from funcgrad import api
from funcgrad._callbacks import debug_callback as callback
from funcgrad._callbacks import debug_log as log
from funcgrad._callbacks import debug_print as print  # noqa: A004 - JAX's name: funcgrad.debug.print
from funcgrad._debugger import breakpoint  # noqa: A004 - JAX's name: funcgrad.debug.breakpoint
from funcgrad._effects import DebugEffect, OrderedDebugEffect
from funcgrad._visualize import inspect_array_sharding, visualize_array_sharding, visualize_sharding
from funcgrad.kernel import core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import source_info_config, user_source_info
from funcgrad.kernel.ir import ClosedJaxpr
from funcgrad.primitives.control_flow import cond_p, while_p
from funcgrad.primitives.scan import scan_p

__all__ = [
    "DebugEffect",
    "OrderedDebugEffect",
    "breakpoint",
    "callback",
    "check_finite",
    "log",
    "print",
    "debug_infs",
    "debug_nans",
    "NonFiniteError",
    "FiniteCheckTrace",
    "InfCheckTrace",
    "NanCheckTrace",
    "ValueStats",
    "inspect_array_sharding",
    "visualize_array_sharding",
    "visualize_sharding",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("check_finite", "debug_nans")


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class ValueStats(NamedTuple):
    """Summary of one array: shape, dtype, min and max of its finite values, NaN and Inf counts."""

    shape: tuple[int, ...]
    dtype: np.dtype
    min: float | None
    max: float | None
    nan: int
    inf: int
    size: int

    @staticmethod
    def of(x) -> ValueStats:
        v = np.asarray(x._numpy() if isinstance(x, Array) else x)
        if not _dt.is_inexact(v.dtype) or v.size == 0:
            lo = hi = None
            if v.size and v.dtype.kind in "biu":
                lo, hi = v.min().item(), v.max().item()
            return ValueStats(v.shape, v.dtype, lo, hi, 0, 0, v.size)
        real = v.real if v.dtype.kind == "c" else v
        nan = int(np.isnan(v).sum())
        inf = int(np.isinf(v).sum())
        finite = real[np.isfinite(real)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
        return ValueStats(v.shape, v.dtype, lo, hi, nan, inf, v.size)

    def __str__(self):
        aval = ir.ShapedArray(self.shape, self.dtype).str_short()
        if self.min is None:
            rng = "no finite values" if self.size else "empty"
        elif self.size == 1 and not (self.nan or self.inf):
            rng = f"value={self.min:g}"
        else:
            rng = f"min={self.min:g} max={self.max:g}"
        bad = []
        if self.nan:
            bad.append(f"{self.nan} nan")
        if self.inf:
            bad.append(f"{self.inf} inf")
        return f"{aval} {rng}, " + (" and ".join(bad) + f" of {self.size}" if bad else "all finite")


# JAX's words (jax/_src/api_util.py) when a jit's output holds a NaN/Inf under debug_nans/debug_infs.
_NO_NAN_DEOPTIMIZED = (
    "Because jax_config.debug_nans.value and/or config.jax_debug_infs is set, the de-optimized "
    "function (i.e., the function as if the `jit` decorator were removed) was called in an attempt "
    "to get a more precise error message. However, the de-optimized function did not produce "
    "invalid values during its execution. This behavior can result from `jit` optimizations causing "
    "the invalid value to be produced. It may also arise from having nan/inf literals as inputs or "
    "outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the "
    "invalid value by removing the `jit` decorator, at the cost of losing optimizations. \n\nIf you "
    "see this error, consider opening a bug report at https://github.com/jax-ml/jax."
)
_DEOPTIMIZED = (
    "Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version."
)


class NonFiniteError(FloatingPointError):
    """A NaN or Inf appeared. Attributes: ``phase`` ("forward", "backward" or "input"),
    ``primitive`` (its name), ``source_info``, ``inputs``/``outputs`` (``ValueStats``), ``params``,
    and ``loop_iterations``: ``[(loop, iteration), ...]`` from the outermost loop body inward.
    """

    def __init__(self, message: str, phase: str, primitive: str | None, source_info, inputs, outputs, params):
        super().__init__(message)
        self.phase = phase
        self.primitive = primitive
        self.source_info = source_info
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.loop_iterations: list[tuple[str, int | None]] = []


def _is_finite(x) -> bool:
    if isinstance(x, Array):
        if not _dt.is_inexact(x.dtype):
            return True
        return bool(np.isfinite(x._numpy()).all())
    if isinstance(x, np.ndarray | np.generic | float | complex):
        return bool(np.isfinite(x).all()) if _dt.is_inexact(np.asarray(x).dtype) else True
    return True


def _source_text(info) -> str:
    if info is None:
        return "  at an unknown line (the equation has no source information)"
    line = linecache.getline(info.file, info.line).strip()
    return f"  at {info}" + (f"\n      {line}" if line else "")


def _error(primitive, params, args, outs, phase: str, concise: bool = False) -> FloatingPointError:
    info = user_source_info()
    inputs = [ValueStats.of(a) for a in args if core.is_array_like(a)]
    outputs = [ValueStats.of(o) for o in outs]
    bad = next(s for s in outputs if s.nan or s.inf)
    what = "nan" if bad.nan else "inf"
    where = (
        "the backward pass (an equation of the derivative of the code at this line)"
        if phase == "backward"
        else "the forward pass"
    )
    shown = {k: v for k, v in params.items() if not isinstance(v, ClosedJaxpr | ir.Jaxpr) and not callable(v)}
    lines = [
        # JAX's words first (its FloatingPointError reads "invalid value (nan) encountered in log"),
        # then where and what.
        f"invalid value ({what}) encountered in {primitive.name}",
        f"check_finite: {where} produced {what} in `{primitive.name}`"
        + (f"[{', '.join(f'{k}={v}' for k, v in shown.items())}]" if shown else "")
        + " (the first non-finite value)",
        _source_text(info),
        "  inputs:",
        *[f"    {i}: {s}" for i, s in enumerate(inputs)],
        "  output" + ("s" if len(outputs) > 1 else "") + ":",
        *[f"    {i}: {s}" for i, s in enumerate(outputs)],
    ]
    if phase == "backward":
        lines.append(
            "  The forward values were finite; the derivative is not (e.g. sqrt, log or 1/x at 0, "
            "or an overflow). Consider a safe formulation such as where(x > 0, f(safe_x), 0)."
        )
    if not concise:
        return NonFiniteError("\n".join(lines), phase, primitive.name, info, inputs, outputs, params)
    # debug_nans/debug_infs: JAX's error -- a FloatingPointError, its message word for word -- with
    # NonFiniteError's attributes (where and what) for those who read them.
    err = FloatingPointError(lines[0])
    err.phase, err.primitive, err.source_info = phase, primitive.name, info
    err.inputs, err.outputs, err.params, err.loop_iterations = inputs, outputs, params, []
    return err


class _BadJitOutputs(Exception):
    """A jitted function's outputs hold a NaN/Inf (the signal ``FiniteCheckTrace.jitted_call``
    waits for: it then runs the function's Python)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _has_nan(x) -> bool:
    v = x._numpy() if isinstance(x, Array) else x
    if isinstance(v, np.ndarray | np.generic | float | complex) and _dt.is_inexact(np.asarray(v).dtype):
        return bool(np.isnan(v).any())
    return False


def _has_inf(x) -> bool:
    v = x._numpy() if isinstance(x, Array) else x
    if isinstance(v, np.ndarray | np.generic | float | complex) and _dt.is_inexact(np.asarray(v).dtype):
        return bool(np.isinf(v).any())
    return False


class FiniteCheckTrace(core.EvalTrace):
    """The eager evaluator that raises ``NonFiniteError`` at the first non-finite output."""

    # What counts as bad: NaN and Inf (check_finite), NaN only (NanCheckTrace, debug_nans, as
    # JAX's jax_debug_nans) or Inf only (InfCheckTrace, debug_infs).
    infs_only = False
    nans_only = False
    # Inside ``jitted_call``'s compiled run: a bad output of its jit is signalled, not located.
    _awaiting_jit = False

    def jitted_call(self, fun, args, kwargs, compiled):
        """A call of the jitted function ``fun`` (``compiled()`` runs it), as JAX's
        ``jax_debug_nans`` treats one: the compiled program's outputs are checked; if one holds a
        NaN, JAX's notice is printed and the function's Python runs again on the same arguments,
        op by op with every operation checked (its side effects run again, and the error's
        traceback reaches the user's line that made the NaN), as JAX calls the de-optimized
        function; if that run makes none, JAX's error says so."""
        prev, self._awaiting_jit = self._awaiting_jit, True
        try:
            return compiled()
        except _BadJitOutputs as bad:
            what = bad.what
        finally:
            self._awaiting_jit = prev
        builtins.print(_DEOPTIMIZED)
        self._awaiting_jit = False
        try:
            fun(*args, **kwargs)
        except (FloatingPointError, ZeroDivisionError) as e:
            raise e from None
        finally:
            self._awaiting_jit = prev
        name = getattr(fun, "__name__", "fun")
        raise FloatingPointError(f"('jit({name})', '{what}'). " + _NO_NAN_DEOPTIMIZED) from None

    def _bad(self, x) -> bool:
        if self.infs_only:
            return _has_inf(x)
        if self.nans_only:
            return _has_nan(x)
        return not _is_finite(x)

    def process_primitive(self, primitive, args, params):
        # Call primitives whose impl is "evaluate the inner jaxpr" are checked equation by equation.
        inner = params.get(primitive.traits.call_jaxpr_param) if primitive.traits.call_jaxpr_param else None
        if isinstance(inner, ClosedJaxpr):
            # Its outputs first (unchecked inside), as JAX checks a jitted function's outputs.
            with core.set_current_trace(core.EvalTrace(None)), np.errstate(all="ignore"):
                outs = core.eval_jaxpr(inner.jaxpr, inner.consts, *args)
            if not any(self._bad(o) for o in outs):
                return outs
            if primitive.name != "jit":
                return core.eval_jaxpr(inner.jaxpr, inner.consts, *args)
            if self._awaiting_jit:  # a user's jitted function: its Python runs again (jitted_call)
                self._awaiting_jit = False
                raise _BadJitOutputs("nan" if any(_has_nan(o) for o in outs) else "inf")
            if str(params.get("name", "")).startswith("transpose("):
                # (JAX's words for a jit's backward pass, whose de-optimized run is the backward
                # pass interpreted equation by equation)
                builtins.print(
                    "Invalid nan value encountered in the backward pass of a jax.jit function. "
                    "Calling the de-optimized backward pass."
                )
                core.eval_jaxpr(inner.jaxpr, inner.consts, *args)
                what = "nan" if any(_has_nan(o) for o in outs) else "inf"
                raise FloatingPointError(f"('jit({params['name']})', '{what}'). " + _NO_NAN_DEOPTIMIZED)
            try:
                core.eval_jaxpr(inner.jaxpr, inner.consts, *args)
            except FloatingPointError:
                # JAX runs a jit compiled, finds the NaN in its outputs and says so before calling
                # the de-optimized version, which raises the precise error; funcgrad goes straight
                # to the de-optimized run, so it prints JAX's words when that run finds one.
                builtins.print(_DEOPTIMIZED)
                raise
            # No equation made it: a NaN literal or input passed through (JAX's error, its words).
            builtins.print(_DEOPTIMIZED)
            what = "nan" if any(_has_nan(o) for o in outs) else "inf"
            raise FloatingPointError(f"('jit({params.get('name', 'f')})', '{what}'). " + _NO_NAN_DEOPTIMIZED)
        sharded = primitive.impl_takes_arrays and inner is None
        if sharded:
            # A primitive whose impl runs a program of its own (shard_map's eager call compiles a
            # jit of itself): run it unchecked inside, as JAX checks a sharded computation's
            # outputs only (checked inside, that jit would meet this shard_map again, forever).
            with core.set_current_trace(core.EvalTrace(None)), np.errstate(all="ignore"):
                out = super().process_primitive(primitive, args, params)
        else:
            with np.errstate(all="ignore"):
                out = super().process_primitive(primitive, args, params)
        outs = out if primitive.multiple_results else (out,)
        for o in outs:
            if self._bad(o):
                # A loop ran its body in NumPy: run it again one equation at a time to find the
                # equation (and iteration) inside it; this raises if it finds it.
                locate = _LOOPS.get(primitive)
                if locate is not None:
                    locate(args, **params)
                phase = "backward" if source_info_config.backward_depth else "forward"
                err = _error(primitive, params, args, outs, phase, concise=self.nans_only or self.infs_only)
                if sharded:  # (JAX's words for a sharded computation: pmap, shard_map)
                    what = "nan" if err.outputs and any(s.nan for s in err.outputs) else "inf"
                    err.args = (
                        f"Invalid value ({what}) encountered in sharded computation.\n{err.args[0]}",
                        *err.args[1:],
                    )
                # An eager operation is a jitted primitive in JAX: it says so too (JAX's flags.md
                # prints it for an eager jnp.log, twice for a jit around it).
                builtins.print(_DEOPTIMIZED)
                raise err
        return out


# ----------------------------------------------------------------------------------------------
# Finding the equation inside a loop body (only after the loop produced a NaN/Inf)


def _value(x):
    return x._numpy() if isinstance(x, Array) else np.asarray(x)


def _in_iteration(loop: str, i: int | None, closed: ClosedJaxpr, args) -> list:
    """Evaluate ``closed`` on ``args`` (one iteration of a loop body); a NonFiniteError raised inside
    is told which loop and iteration it happened in."""
    try:
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    except FloatingPointError as e:
        where = f"`{loop}`" if i is None else f"iteration {i} of `{loop}`"
        e.args = (
            str(e).replace(" (the first non-finite value)", f" in {where} (the first non-finite value)", 1),
        )
        e.loop_iterations = [(loop, i), *getattr(e, "loop_iterations", [])]
        raise


def _locate_scan(args, *, jaxpr, num_consts, num_carry, length, reverse, **_):
    consts, carry = list(args[:num_consts]), list(args[num_consts : num_consts + num_carry])
    xs = [_value(x) for x in args[num_consts + num_carry :]]
    for t in range(length):
        i = length - 1 - t if reverse else t
        carry = _in_iteration("scan", i, jaxpr, [*consts, *carry, *[x[i] for x in xs]])[:num_carry]


def _locate_while(args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, **_):
    cc, bc = list(args[:cond_nconsts]), list(args[cond_nconsts : cond_nconsts + body_nconsts])
    carry, i = list(args[cond_nconsts + body_nconsts :]), 0
    # (any lane of a batched predicate: NOTE: [batched while predicates])
    while bool(_value(_in_iteration("while_loop", i, cond_jaxpr, [*cc, *carry])[0]).any()):
        carry = _in_iteration("while_loop", i, body_jaxpr, [*bc, *carry])
        i += 1


def _locate_cond(args, *, branches, **_):
    index = min(max(int(_value(args[0])), 0), len(branches) - 1)
    _in_iteration("cond", None, branches[index], args[1:])


_LOOPS = {scan_p: _locate_scan, while_p: _locate_while, cond_p: _locate_cond}


class NanCheckTrace(FiniteCheckTrace):
    """``FiniteCheckTrace`` for ``debug_nans``: only NaNs are reported, as JAX's."""

    nans_only = True


class InfCheckTrace(FiniteCheckTrace):
    """``FiniteCheckTrace`` for ``debug_infs``: only infinities are reported."""

    infs_only = True


class debug_nans(contextlib.ContextDecorator):
    """Check every primitive evaluated inside (forward and backward) for NaN.

    Usable as ``with debug_nans(): ...`` or as a decorator; enter it outside transformations.
    ``debug_nans(False)`` switches the checks off inside an enclosing ``debug_nans`` (the
    ``jax.debug_nans(new_val)`` signature; ``funcgrad.config``'s ``jax_debug_nans`` enables it for the
    whole program). As JAX's, it reports NaNs only (``debug_infs`` reports infinities;
    ``check_finite`` both).

    >>> import funcgrad.numpy as fnp
    >>> with debug_nans():
    ...     fnp.log(fnp.zeros(2))  # -inf: not reported
    Array([-inf, -inf], dtype=float64)
    >>> with debug_nans():
    ...     fnp.log(-fnp.ones(2))
    Traceback (most recent call last):
    ...
    FloatingPointError: invalid value (nan) encountered in log
    """

    _trace_type: type = NanCheckTrace

    def __init__(self, new_val: bool = True):
        if not isinstance(new_val, bool | np.bool_):
            raise TypeError(f"{type(self).__name__}(new_val): new_val must be a bool, got {new_val!r}")
        self.new_val = bool(new_val)
        self._stack: list[tuple[Any, bool]] = []

    def __enter__(self):
        current = core.current_trace()
        setter = None
        wanted = self._trace_type if self.new_val else core.EvalTrace
        if type(current) is not wanted:
            if not isinstance(current, core.EvalTrace):
                raise RuntimeError(
                    f"{type(self).__name__}() must be entered outside transformations (not inside a "
                    "function being traced by grad, vmap or jit); wrap the whole call instead."
                )
            setter = core.set_current_trace(wanted(None))
            setter.__enter__()
        self._stack.append((setter, source_info_config.in_linearize))
        source_info_config.in_linearize = True
        return self

    def __exit__(self, *exc):
        setter, in_linearize = self._stack.pop()
        source_info_config.in_linearize = in_linearize
        if setter is not None:
            setter.__exit__(*exc)
        return False


class debug_infs(debug_nans):
    """Like ``debug_nans``, reporting only infinities (``jax.debug_infs``): raise
    ``FloatingPointError`` at the first primitive that produces an Inf.

    >>> import funcgrad.numpy as fnp
    >>> with debug_infs():
    ...     fnp.sqrt(-fnp.ones(2))   # NaN, not an Inf: not reported
    Array([nan, nan], dtype=float64)
    """

    _trace_type = InfCheckTrace


class _finite_checks(debug_nans):
    """``check_finite``'s context: NaN and Inf."""

    _trace_type = FiniteCheckTrace


def _check_inputs(args, kwargs):
    names = [f"args[{p[0].idx}]{tu.keystr(p[1:])}" for p, _ in tu.tree_leaves_with_path(args)]
    names += [f"{p[0].key}{tu.keystr(p[1:])}" for p, _ in tu.tree_leaves_with_path(kwargs)]
    for name, leaf in zip(names, [*tu.tree_leaves(args), *tu.tree_leaves(kwargs)]):
        if core.is_array_like(leaf) and not isinstance(leaf, core.Tracer) and not _is_finite(leaf):
            s = ValueStats.of(leaf)
            raise NonFiniteError(
                f"check_finite: input {name} is not finite: {s}", "input", None, None, [s], [], {}
            )


def _wants_gradient(fun, argnums, args, kwargs) -> bool:
    try:
        out = api.eval_shape(fun, *args, **kwargs)
    except Exception:  # noqa: BLE001 - the real call below reports the error properly
        return False
    leaves = tu.tree_leaves(out)
    if len(leaves) != 1 or leaves[0].shape != () or not _dt.is_inexact(leaves[0].dtype):
        return False
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    dyn = [args[i] for i in nums if i < len(args)]
    return bool(dyn) and all(_dt.is_inexact(core.get_aval(x).dtype) for x in tu.tree_leaves(dyn))


def check_finite(fun: Callable, *, argnums=0, backward: bool | None = None) -> Callable:
    """``check_finite(f)(*args)`` runs ``f`` — and, for a scalar loss, its gradient — one equation at
    a time and raises ``NonFiniteError`` (a ``FloatingPointError``) at the first equation that
    produces a NaN or Inf: forward or backward, the primitive, its inputs' statistics and your
    source line. When everything is finite it returns ``value_and_grad(f, argnums)(*args)`` for a
    real scalar output (or with ``backward=True``), else ``f(*args)`` (or with ``backward=False``).

    >>> import funcgrad.numpy as fnp
    >>> value, g = check_finite(lambda x: fnp.sqrt(x).sum())(fnp.array([1.0, 4.0]))
    >>> float(value), g.tolist()
    (3.0, [0.5, 0.25])
    >>> check_finite(lambda x: fnp.sqrt(x).sum())(fnp.array([0.0, 4.0]))
    Traceback (most recent call last):
    ...
    funcgrad.debug.NonFiniteError: invalid value (inf) encountered in div ...
    """

    @functools.wraps(fun)
    def checked(*args, **kwargs):
        _check_inputs(args, kwargs)
        grads = _wants_gradient(fun, argnums, args, kwargs) if backward is None else backward
        with _finite_checks():
            if grads:
                return api.value_and_grad(fun, argnums)(*args, **kwargs)
            return fun(*args, **kwargs)

    return checked
