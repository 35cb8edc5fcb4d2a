"""What funcgrad.numpy asks of its operands before converting them: whether they are array-like
(JAX's ``check_arraylike``), their avals and shapes, NumPy's broadcasting of shapes (with JAX's
errors and rank-promotion flag), the broadcast of operands already known to fit, and axes and
static sizes (``normalize_axis``, ``concrete_int``).

Layer: surface. Imports the kernel (core, array), the primitive catalog (``structure``: the
broadcast itself) and ``funcgrad.numpy._dtypes`` (the rank-promotion flag, typed key arrays);
``funcgrad.numpy._core``
(conversion, promotion, the elementwise operand preparation: NOTE: [numpy operand preparation])
builds on it and re-exports its names, which the other modules import from there.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence

import numpy as np

from funcgrad.kernel import core, ir
from funcgrad.kernel.array import Array
from funcgrad.numpy._dtypes import ExtendedArray, _flags
from funcgrad.primitives import structure as st

__all__ = ["broadcast_shapes"]

AxisError = np.exceptions.AxisError


def aval(x) -> ir.ShapedArray:
    """The abstract value (shape, dtype, weak type) of any array-like."""
    return core.get_aval(x)


# (tuples made once: ``Array | core.Tracer`` would build a union on every eager call)
_ARRAYS = (Array, core.Tracer)
_SHAPED = (Array, core.Tracer, np.ndarray)


def is_array(x) -> bool:
    """True for funcgrad Arrays and tracers (values the primitives accept without conversion)."""
    return isinstance(x, _ARRAYS)


def shape_of(x) -> tuple[int, ...]:
    return x.shape if isinstance(x, _SHAPED) else aval(x).shape


def ndim_of(x) -> int:
    return len(shape_of(x))


# ----------------------------------------------------------------------------------------------
# Array-likeness (NOTE: [array-like arguments])


def arraylike_other(x) -> bool:
    """JAX's ``_arraylike`` past the common types: an object with ``__jax_array__``, a NumPy scalar
    by ``np.isscalar`` (a ``Fraction``, a ``str``), and funcgrad's typed key arrays (a Ref is not
    array-like: JAX's ``jnp.sin(ref)`` is a TypeError)."""
    return hasattr(x, "__jax_array__") or np.isscalar(x) or isinstance(x, ExtendedArray)


ARRAYLIKE_TYPES = (Array, core.Tracer, np.ndarray, np.generic, int, float, complex)


def is_arraylike(x) -> bool:
    """What JAX's ``check_arraylike`` lets pass: an array, a tracer, a scalar (not a list, a tuple
    or None)."""
    return isinstance(x, ARRAYLIKE_TYPES) or arraylike_other(x)


def arraylike_error(name: str, x, position: int, none: bool = False) -> TypeError:
    what = "ndarray, scalar, or None" if none else "ndarray or scalar"  # (none: JAX's arange)
    return TypeError(f"{name} requires {what} arguments, got {type(x)} at position {position}.")


def check_arraylike(name: str, *args, emit_warning: bool = False, stacklevel: int = 3) -> None:
    """JAX's refusal of a list, a tuple or another non-array where a function takes arrays (NumPy
    would convert it): ``sum([1, 2, 3])`` raises TypeError in JAX's words, so that a program runs
    on jax too (NOTE: [array-like arguments]). With ``emit_warning`` (JAX's
    ``shape``/``ndim``/``size``), a DeprecationWarning instead.

    >>> check_arraylike("sum", [1, 2, 3])
    Traceback (most recent call last):
    TypeError: sum requires ndarray or scalar arguments, got <class 'list'> at position 0.
    """
    for i, a in enumerate(args):
        if not is_arraylike(a):
            error = arraylike_error(name, a, i)
            if not emit_warning:
                raise error
            warnings.warn(
                f"{error} In a future JAX release this will be an error.",
                DeprecationWarning,
                stacklevel=stacklevel,
            )
            return


# ----------------------------------------------------------------------------------------------
# Broadcasting


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy's broadcasting of shapes, with JAX's error (``Incompatible shapes for broadcasting``).

    >>> broadcast_shapes((3, 1), (4,))
    (3, 4)
    """
    if all(type(s) is tuple for s in shapes):
        fast = _broadcast_tuples(shapes)
        if fast is not None:
            return fast
    shapes = [(int(s),) if isinstance(s, int | np.integer) else tuple(int(d) for d in s) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def _broadcast_tuples(shapes) -> tuple[int, ...] | None:
    """``broadcast_shapes`` of tuples of Python ints (the shapes of avals), without NumPy's call
    overhead; ``None`` for anything else (the general path then gives the answer or the error)."""
    n = max(map(len, shapes), default=0)
    out = [1] * n
    for s in shapes:
        off = n - len(s)
        for i, d in enumerate(s):
            if type(d) is not int:
                return None
            o = out[off + i]
            if d != o:
                if o == 1:
                    out[off + i] = d
                elif d != 1:
                    return None
    return tuple(out)


def static_shape(shape, what: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of Python ints. A traced value in it
    raises a TypeError (JAX's type for a traced shape, not a ConcretizationTypeError) saying which
    transformation traced it and that shapes are static: make the size a static argument
    (``jit(f, static_argnums=...)``)."""
    if isinstance(shape, int | np.integer) or (hasattr(shape, "ndim") and shape.ndim == 0):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(_NOT_A_SHAPE.format(what=what, shape=shape)) from None
    out = []
    for s in items:
        if isinstance(s, core.Tracer):
            trace = s._trace
            where = trace.describe() if hasattr(trace, "describe") else "a transformation"
            origin = trace.describe_origin(s) if hasattr(trace, "describe_origin") else ""
            raise TypeError(  # (JAX's words first)
                f"Shapes must be 1D sequences of concrete values of integer type, got {tuple(items)!r}.\n"
                "If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
                f"{origin}\nThe {what} holds a traced value ({s.aval.str_short()}) inside {where}: shapes "
                "are static (as in JAX), so pass the size as a static argument (jit(f, static_argnums=...) "
                "or static_argnames=...), or compute it outside the transformed function."
            )
        try:
            out.append(operator.index(s))
        except TypeError:
            raise TypeError(_NOT_A_SHAPE.format(what=what, shape=shape)) from None
    return tuple(out)


# (JAX's words first: users and JAX's tests grep for them)
_NOT_A_SHAPE = (
    "Shapes must be 1D sequences of concrete values of integer type, got {shape!r} "
    "({what} must be an integer or a sequence of integers)"
)


def _as_shape(shape) -> tuple[int, ...]:
    return static_shape(shape)


def broadcast_args(*args, name: str = "elementwise operation", explicit: bool = False) -> list:
    """Broadcast to one shape; 0-d operands stay 0-d (NOTE: [elementwise operand contract]).
    Shapes that do not fit raise as JAX's elementwise functions (``broadcast_shapes_as_lax``), or
    its ValueError where JAX's function broadcasts its operands itself (``explicit``: copysign,
    heaviside)."""
    shapes = [shape_of(a) for a in args]
    nonscalar = {s for s in shapes if s != ()}
    if len(nonscalar) <= 1:
        return list(args)  # equal shapes, or 0-d operands meeting one shape: nothing to do
    if _flags["rank_promotion"] != "allow" and len({len(s) for s in nonscalar}) > 1:
        _rank_promotion(shapes, name)
    shape = broadcast_shapes(*shapes) if explicit else broadcast_shapes_as_lax(shapes, name)
    return [a if (s == shape or s == ()) else _broadcast_known(a, s, shape) for a, s in zip(args, shapes)]


def broadcast_shapes_as_lax(shapes, name: str = "elementwise operation") -> tuple[int, ...]:
    """``broadcast_shapes`` with the error JAX's elementwise functions give: operands of one rank
    that do not fit reach a lax primitive, whose TypeError names it (``hypot``, ``logaddexp``,
    ``xlogy`` ... of shapes (3,) and (2,)); operands of several ranks fail in JAX's rank promotion
    first, its ValueError."""
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        if len({len(s) for s in shapes if s != ()}) == 1:
            raise TypeError(
                f"{name} got incompatible shapes for broadcasting: {', '.join(map(str, shapes))}."
            ) from None
        raise


def _broadcast_known(x, xs: tuple, shape: tuple):
    """``broadcast_to(x, shape)`` for an operand of shape ``xs`` already known to broadcast to
    ``shape`` and different from it (checked by ``broadcast_to``, or by ``broadcast_args`` on the
    elementwise hot path). The size-1 dims that stretch are dropped; broadcast_in_dim places the
    others."""
    lead = len(shape) - len(xs)
    keep = [i for i, s in enumerate(xs) if s == shape[lead + i]]
    if len(keep) != len(xs):
        x = st.reshape(x, tuple(xs[i] for i in keep))
    return st.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=tuple(lead + i for i in keep))


def _rank_promotion(shapes, name: str) -> None:
    # (JAX's words, naming the function; then funcgrad's hint)
    shown = " ".join(str(s) for s in shapes)
    hint = (
        f" (operands with shapes {shown} were broadcast to a common rank (implicit rank promotion); "
        "add the leading axes explicitly: reshape, expand_dims, [None])"
    )
    if _flags["rank_promotion"] == "raise":
        raise ValueError(
            f"Operands could not be broadcast together for {name} on shapes {shown} and with the config "
            "option jax_numpy_rank_promotion='raise'. For more information, see "
            "https://docs.jax.dev/en/latest/rank_promotion_warning.html." + hint
        )
    warnings.warn(
        f"Following NumPy automatic rank promotion for {name} on shapes {shown}. Set the "
        "jax_numpy_rank_promotion config option to 'allow' to disable this warning; for more "
        "information, see https://docs.jax.dev/en/latest/rank_promotion_warning.html." + hint,
        UserWarning,
        stacklevel=4,
    )


# ----------------------------------------------------------------------------------------------
# Axes


def normalize_axis(axis, ndim: int, name: str = "axis") -> int:
    """A non-negative axis, with NumPy's ``AxisError`` for out-of-range axes.

    >>> normalize_axis(-1, 3)
    2
    """
    if isinstance(axis, core.Tracer):  # (JAX's error type for a traced axis, not a TypeError)
        concrete_or_error(axis, f"the {name} argument (it must be known statically)")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(
            f"'{type(axis).__name__}' object cannot be interpreted as an integer ({name})"
        ) from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def normalize_axes(axis, ndim: int, name: str = "axis") -> tuple[int, ...]:
    """``None`` → all axes; an int or a sequence → sorted non-negative axes (no duplicates)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int | np.integer) or (isinstance(axis, Array | core.Tracer) and axis.ndim == 0):
        return (normalize_axis(axis, ndim, name),)
    axes = tuple(normalize_axis(a, ndim, name) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in '{name}': {tuple(axis)}")  # (JAX's words)
    return tuple(sorted(axes))


def concrete_int(
    x, what: str, error: type[Exception] = core.ConcretizationTypeError, convert=operator.index
) -> int:
    """A Python int from a static value; a clear error if ``x`` is traced (``error``: JAX raises a
    ConcretizationTypeError for a traced size or count, a TypeError for a traced dimension). A
    tracer whose value is known (forward mode's, eager grad's: ``Tracer.to_concrete_value``)
    gives it, as JAX's ``core.concrete_or_error``. ``convert=int`` truncates a float as JAX's
    ``split`` does.

    >>> concrete_int(np.int32(3), "n")
    3
    """
    if isinstance(x, core.Tracer):
        value = x.to_concrete_value()
        if value is None:
            raise error(  # (JAX's words first)
                f"Abstract tracer value encountered where concrete value is expected: {what} must be "
                f"a concrete integer, but a traced value was given ({x.aval.str_short()}). Make it "
                "static (jit(f, static_argnums=...)) or use a fixed size."
            )
        x = value
    try:
        return convert(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


def concrete_or_error(x, what: str):
    """The NumPy value of ``x``, raising a clear ConcretizationTypeError if it is traced (and its
    value is not known: ``concrete_int``)."""
    if isinstance(x, core.Tracer):
        value = x.to_concrete_value()
        if value is not None:
            return value
        raise core.ConcretizationTypeError(  # (JAX's words first)
            f"Abstract tracer value encountered where concrete value is expected: {what} requires a "
            f"concrete (non-traced) value, got a traced {x.aval.str_short()}. "
            "Make the argument static (jit(f, static_argnums=...)) or pass the size explicitly."
        )
    return np.asarray(x)


def as_sequence(x) -> Sequence:
    # (a range or a 1-D NumPy array of axes too, as JAX's index tuples: distrax's
    # expand_dims(x, range(n)), TensorFlow Probability's transpose(x, np.array(perm)))
    if isinstance(x, list | tuple):
        return x
    return list(x) if isinstance(x, range) or (type(x) is np.ndarray and x.ndim == 1) else [x]
