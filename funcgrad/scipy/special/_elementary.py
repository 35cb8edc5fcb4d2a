"""``funcgrad.scipy.special``: the logistic, entropy and Box-Cox functions and the softmax family.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax and the kernel's ``custom_jvp``.
"""

from __future__ import annotations

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel.custom_derivatives import custom_jvp as _kernel_custom_jvp
from funcgrad.kernel.templates import template_public_functions
from funcgrad.nn import log_softmax as _nn_log_softmax
from funcgrad.nn import logsumexp as _nn_logsumexp
from funcgrad.nn import softmax as _nn_softmax
from funcgrad.numpy._core import (
    broadcast_shapes_as_lax,
    call_custom,
    check_arraylike,
    lax_const,
    promote_args_inexact,
)

__all__ = [
    "boxcox",
    "boxcox1p",
    "entr",
    "expit",
    "kl_div",
    "log_softmax",
    "logit",
    "logsumexp",
    "rel_entr",
    "softmax",
    "xlog1py",
    "xlogy",
]


class custom_jvp(_kernel_custom_jvp):
    """The kernel's ``custom_jvp`` for this package's own rules: a rule gets its primals as funcgrad
    arrays. (A primal may arrive as the NumPy array the caller passed, as in JAX, and NumPy's
    bfloat16 minus a Python float is float32: the rule's tangent then failed the type check.)

    >>> import funcgrad, ml_dtypes, numpy as np
    >>> funcgrad.grad(lambda a: logit(a).sum())(np.full(2, 0.5, ml_dtypes.bfloat16)).dtype
    dtype(bfloat16)
    """

    def defjvp(self, jvp, symbolic_zeros: bool = False):
        def on_arrays(*args):
            *nondiff, primals, tangents = args
            return jvp(*nondiff, tuple(fnp.asarray(p) for p in primals), tangents)  # (tuples, as JAX passes)

        super().defjvp(on_arrays, symbolic_zeros)
        return jvp


def real_inexact(name, *args, lists="refuse", shapes_as_lax=True):
    """``args`` promoted to one inexact dtype (integers become float64) and broadcast against each
    other (SciPy's special functions are ufuncs), refusing complex values as JAX's function ``name``
    does (``_complex_refusal``; those in ``_COMPLEX_COMPUTED`` take them).

    A list or tuple argument is JAX's TypeError naming ``name`` (its ``promote_args_inexact``), also
    where it arrives as a list of tracers (NOTE: [special functions JAX jits]); ``lists="stack"``
    makes it one array instead (where JAX's ``vectorize`` calls ``asarray``). Shapes that do not
    fit raise as JAX's elementwise functions do (``broadcast_shapes_as_lax``), or with
    ``shapes_as_lax=False`` (JAX's ``expn`` and ``hyp1f1``, which broadcast first) NumPy's
    ValueError."""
    if lists == "refuse":
        check_arraylike(name, *args)
    else:
        args = [fnp.asarray(a) if isinstance(a, list | tuple) else a for a in args]
    args = promote_args_inexact(*args)
    if fnp.iscomplexobj(args[0]) and name not in _COMPLEX_COMPUTED:
        raise _complex_refusal(name, args[0].dtype)
    if len(args) == 1:
        return args
    if shapes_as_lax:
        broadcast_shapes_as_lax([fnp.shape(a) for a in args], name)
    return fnp.broadcast_arrays(*args)


# JAX's formulas of these compute with complex values (jax.scipy.special.xlogy(1+1j, 2+1j) is a
# complex number); the others refuse them, each with the exception JAX's code raises: its own
# ValueError (words below), NotImplementedError (fresnel), or lax's TypeError for the dtype
_COMPLEX_COMPUTED = frozenset(
    {"xlogy", "xlog1py", "expit", "logit", "boxcox", "boxcox1p", "gamma", "loggamma", "erfcx"}
)
_COMPLEX_VALUE_ERRORS = frozenset(
    {"beta", "betainc", "dawsn", "entr", "exp1", "expi", "expn", "gammasgn", "hyp1f1", "kl_div", "polygamma",
     "rel_entr"}
)  # fmt: skip


def _complex_refusal(name, dtype) -> Exception:
    if name in _COMPLEX_VALUE_ERRORS:
        return ValueError(f"{name} does not support complex-valued inputs.")
    if name == "poch":
        return ValueError("jnp.poch does not support complex-valued inputs.")
    if name == "sici":
        return ValueError(f"Argument `x` to sici must be real-valued. Got dtype {dtype}.")
    if name == "fresnel":
        return NotImplementedError("Support for complex-valued inputs is not implemented yet.")
    return TypeError(f"scipy.special.{name} does not support complex-valued inputs, got {dtype}")


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``, stable for large ``|x|``.

    >>> float(expit(0.0))
    0.5
    """
    (x,) = real_inexact("expit", x)
    return lax.logistic(x)


@custom_jvp
def _logit(x):
    # (JAX's constant: a boolean or integer array gives a strong result, NOTE: [stats formulas as
    # JAX's])
    return fnp.log(x / (lax_const(x, 1) - x))


_logit.defjvps(lambda t, ans, x: t / (x * (lax_const(x, 1) - x)))


def logit(x):
    """``log(x / (1 - x))``, the inverse of ``expit``.

    >>> float(logit(0.5))
    0.0
    """
    (x,) = real_inexact("logit", x)
    return call_custom(_logit, x)


@custom_jvp
def _xlogy(x, y):
    return fnp.where((x != 0) | fnp.isnan(y), x * fnp.log(y), 0.0)


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * fnp.log(y) + ty * x / y


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (JAX's derivative: ``log(y)`` in ``x``, ``x / y`` in ``y``).

    >>> float(xlogy(0.0, 0.0)), float(xlogy(2.0, 1.0))
    (0.0, 0.0)
    """
    return call_custom(_xlogy, *real_inexact("xlogy", x, y))


@custom_jvp
def _xlog1py(x, y):
    return fnp.where((x != 0) | fnp.isnan(y), x * fnp.log1p(y), 0.0)


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), tx * fnp.log1p(y) + ty * x / (1.0 + y)


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0``.

    >>> float(xlog1py(0.0, -1.0))
    0.0
    """
    return call_custom(_xlog1py, *real_inexact("xlog1py", x, y))


@custom_jvp
def _xlogx(x):
    return _xlogy(x, x)


_xlogx.defjvps(lambda t, ans, x: t * (fnp.log(x) + 1.0))


def entr(x):
    """The elementwise entropy ``-x log x`` (0 at 0, ``-inf`` for negative x).

    >>> float(entr(0.0)) == 0.0, round(float(entr(0.5)), 12)
    (True, 0.34657359028)
    """
    (x,) = real_inexact("entr", x)
    return fnp.where(x < 0, -fnp.inf, -call_custom(_xlogx, x))


def rel_entr(p, q):
    """The elementwise relative entropy ``p log(p / q)`` (0 where ``p == 0 <= q``, inf elsewhere off
    the domain).

    >>> round(float(rel_entr(0.5, 0.25)), 12)
    0.34657359028
    """
    p, q = real_inexact("rel_entr", p, q)
    zero = lax_const(p, 0.0)  # (JAX's: a boolean or integer array gives a strong result)
    both = (p > zero) & (q > zero)
    safe_p, safe_q = fnp.where(both, p, 1), fnp.where(both, q, 1)
    value = call_custom(_xlogx, safe_p) - call_custom(_xlogy, safe_p, safe_q)
    return fnp.where(both, value, fnp.where((p == zero) & (q >= zero), zero, fnp.inf))


def kl_div(p, q):
    """The elementwise Kullback-Leibler divergence term ``p log(p / q) - p + q``.

    >>> round(float(kl_div(0.5, 0.25)), 12)
    0.09657359028
    """
    p, q = real_inexact("kl_div", p, q)
    return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
    """The Box-Cox transformation ``(x ** lmbda - 1) / lmbda`` (``log x`` at ``lmbda == 0``).

    >>> round(float(boxcox(2.0, 0.5)), 12)
    0.828427124746
    """
    x, lmbda = real_inexact("boxcox", x, lmbda)
    return _boxcox_of_log(fnp.log(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
    """``(exp(lmbda log_x) - 1) / lmbda`` (``log_x`` at ``lmbda == 0``), via ``expm1``."""
    zero = lmbda == 0
    safe = fnp.where(zero, 1.0, lmbda)
    return fnp.where(zero, log_x, fnp.expm1(safe * log_x) / safe)


def boxcox1p(x, lmbda):
    """The Box-Cox transformation of ``1 + x``.

    >>> round(float(boxcox1p(1.0, 0.5)), 12)
    0.828427124746
    """
    x, lmbda = real_inexact("boxcox1p", x, lmbda)
    return _boxcox_of_log(fnp.log1p(x), lmbda)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably (SciPy's signature).

    >>> import funcgrad.numpy as fnp
    >>> float(logsumexp(fnp.array([0.0, 0.0])))   # log 2
    0.6931471805599453
    """
    check_arraylike("logsumexp", a, *(() if b is None else (b,)))  # (JAX's refusal of lists)
    return _nn_logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default, as in SciPy).

    >>> softmax(fnp.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    check_arraylike("max", x)  # (JAX's refusal of a list, naming the max its softmax takes first)
    return _nn_softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (all axes by default, as in SciPy).

    >>> [round(v, 12) for v in log_softmax(fnp.array([0.0, 0.0])).tolist()]
    [-0.69314718056, -0.69314718056]
    """
    check_arraylike("log_softmax", x)  # (JAX's refusal of lists)
    return _nn_log_softmax(x, axis=axis)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
