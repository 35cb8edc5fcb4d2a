"""autograd's differential operators, each a few lines over funcgrad's ``vjp``/``jvp``.

The conventions are autograd's (which for complex numbers are also JAX's and funcgrad's): ``grad``
of a real scalar function of complex ``z`` is ``df/dx - i df/dy``.
"""

from __future__ import annotations

import inspect
import warnings
from collections import OrderedDict

import funcgrad
import funcgrad.numpy as fnp

from .core import make_jvp as _make_jvp
from .core import make_vjp as _make_vjp
from .core import vspace
from .wrap_util import unary_to_nary

make_vjp = unary_to_nary(_make_vjp)
make_jvp = unary_to_nary(_make_jvp)


def _scalar_output(name, ans):
    if not fnp.issubdtype(fnp.result_type(ans), fnp.inexact):
        raise TypeError(
            f"{name} of a function whose output is not a float (got {fnp.result_type(ans)}): "
            "the output must depend differentiably on the input"
        )
    if vspace(ans).size != 1:
        raise TypeError(
            f"{name} only applies to real scalar-output functions. "
            "Try jacobian, elementwise_grad or holomorphic_grad."
        )


@unary_to_nary
def grad(fun, x):
    """
    Returns a function which computes the gradient of `fun` with respect to
    positional argument number `argnum` (autograd's docstring, whose first line programs read)."""
    vjp, ans = _make_vjp(fun, x)
    _scalar_output("Grad", ans)
    return vjp(vspace(ans).ones())


@unary_to_nary
def elementwise_grad(fun, x):
    """The sum of the Jacobian's rows (its diagonal when the Jacobian is diagonal), in one pass."""
    vjp, ans = _make_vjp(fun, x)
    if vspace(ans).iscomplex:
        raise TypeError("Elementwise_grad only applies to real-output functions.")
    return vjp(vspace(ans).ones())


@unary_to_nary
def deriv(fun, x):
    return _make_jvp(fun, x)(vspace(x).ones())[1]


@unary_to_nary
def jacobian(fun, x):
    """The Jacobian, of shape ``out.shape + x.shape``, one VJP per output element."""
    vjp, ans = _make_vjp(fun, x)
    ans_vs, x_vs = vspace(ans), vspace(x)
    rows = [vjp(e) for e in ans_vs.standard_basis()]
    if not rows:
        return fnp.zeros(ans_vs.shape + x_vs.shape)
    return fnp.reshape(fnp.stack(rows), ans_vs.shape + x_vs.shape)


@unary_to_nary
def holomorphic_grad(fun, x):
    if not vspace(x).iscomplex:
        warnings.warn("Input to holomorphic_grad is not complex", stacklevel=2)
    return grad(lambda x: fnp.real(fun(x)))(x)


def grad_named(fun, argname):
    """The gradient with respect to the argument named ``argname``."""
    return grad(fun, list(inspect.signature(fun).parameters).index(argname))


@unary_to_nary
def hessian(fun, x):
    return jacobian(jacobian(fun))(x)


@unary_to_nary
def make_hvp(fun, x):
    """``(hvp, grad(fun)(x))``: Hessian-vector products at ``x``."""
    return _make_vjp(grad(fun), x)


def hessian_tensor_product(fun, argnum=0):
    """``f(*args, v)`` -> the Hessian (w.r.t. ``args[argnum]``) contracted with ``v``."""
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return fnp.tensordot(fun_grad(*args, **kwargs), vector, fnp.ndim(vector))

    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """``f(*args, v)`` -> ``v`` contracted with the Jacobian (a VJP)."""

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return fnp.tensordot(vector, fun(*args, **kwargs), axes=fnp.ndim(vector))

    return jacobian(vector_dot_fun, argnum)


vector_jacobian_product = tensor_jacobian_product


@unary_to_nary
def make_jvp_reversemode(fun, x):
    return _make_jvp(fun, x)


def make_ggnvp(f, g=lambda x: 1.0 / 2 * fnp.sum(x**2, axis=-1), f_argnum=0):
    """Generalised Gauss-Newton-vector products ``J^T H_g J v`` at a point."""

    @unary_to_nary
    def _make_ggnvp(f, x):
        f_vjp, f_x = _make_vjp(f, x)
        g_hvp, _ = _make_vjp(grad(g), f_x)

        def ggnvp(v):
            return f_vjp(g_hvp(funcgrad.jvp(f, (x,), (v,))[1]))

        return ggnvp

    return _make_ggnvp(f, f_argnum)


@unary_to_nary
def value_and_grad(fun, x):
    vjp, ans = _make_vjp(fun, x)
    _scalar_output("value_and_grad", ans)
    return ans, vjp(vspace(ans).ones())


@unary_to_nary
def grad_and_aux(fun, x):
    """The gradient of the first of ``fun``'s two outputs, and the second unchanged."""
    g, aux = funcgrad.grad(fun, has_aux=True)(x)
    return g, aux


def multigrad_dict(fun):
    """The gradient with respect to every argument, as a dict from argument name to gradient."""
    sig = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = OrderedDict(bound.arguments)

        def newfun(dct):
            b = sig.bind_partial()
            b.arguments.update(dct)
            return fun(*b.args, **b.kwargs)

        grads = grad(newfun)(dict(arguments))
        return OrderedDict((name, grads[name]) for name in arguments)

    return gradfun


def checkpoint(fun):
    """``fun`` whose intermediate values are recomputed in the backward pass."""
    return funcgrad.checkpoint(fun)
