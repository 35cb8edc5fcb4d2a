"""autograd.test_util on funcgrad: ``check_grads`` compares reverse (VJP) and forward (JVP)
derivatives with central finite differences along random directions, to ``order``, with
autograd's tolerances and messages (``Derivative (VJP) check of f failed``)."""

from __future__ import annotations

from itertools import product

from .core import make_jvp, make_vjp, vspace
from .wrap_util import get_name, unary_to_nary

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def make_numerical_jvp(f, x):
    y = f(x)
    x_vs, y_vs = vspace(x), vspace(y)

    def jvp(v):
        plus = f(x_vs.add(x, x_vs.scalar_mul(v, EPS / 2)))
        minus = f(x_vs.add(x, x_vs.scalar_mul(v, -EPS / 2)))
        return y_vs.scalar_mul(y_vs.add(plus, y_vs.scalar_mul(minus, -1.0)), 1.0 / EPS)

    return jvp


def check_vjp(f, x):
    vjp, y = make_vjp(f, x)
    jvp = make_numerical_jvp(f, x)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(), y_vs.randn()
    vjp_y = x_vs.covector(vjp(y_vs.covector(y_v)))
    assert vspace(vjp_y) == x_vs, f"VJP of {get_name(f)} has space {vspace(vjp_y)}, not {x_vs}"
    exact = x_vs.inner_prod(x_v, vjp_y)
    numeric = y_vs.inner_prod(y_v, jvp(x_v))
    assert scalar_close(numeric, exact), (
        f"Derivative (VJP) check of {get_name(f)} failed with arg {x}:\n"
        f"analytic: {exact}\nnumeric:  {numeric}"
    )


def check_jvp(f, x):
    x_v = vspace(x).randn()
    check_equivalent(make_jvp(f, x)(x_v)[1], make_numerical_jvp(f, x)(x_v))


def check_equivalent(x, y):
    x_vs, y_vs = vspace(x), vspace(y)
    assert x_vs == y_vs, f"VSpace mismatch:\nx: {x_vs}\ny: {y_vs}"
    v = x_vs.randn()
    assert scalar_close(x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)), f"Value mismatch:\nx: {x}\ny: {y}"


@unary_to_nary
def check_grads(f, x, modes=None, order=2):
    modes = ["fwd", "rev"] if modes is None else modes
    if any(m not in ("fwd", "rev") for m in modes):
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', got {modes}")
    if "fwd" in modes:
        check_jvp(f, x)
        if order > 1:

            def grad_f(x, v):
                return make_jvp(f, x)(v)[1]

            grad_f.__name__ = f"jvp_{get_name(f)}"
            check_grads(grad_f, (0, 1), modes, order=order - 1)(x, vspace(x).randn())
    if "rev" in modes:
        check_vjp(f, x)
        if order > 1:

            def grad_f(x, v):
                return make_vjp(f, x)[0](v)

            grad_f.__name__ = f"vjp_{get_name(f)}"
            check_grads(grad_f, (0, 1), modes, order=order - 1)(x, vspace(f(x)).randn())


def combo_check(fun, *args, **kwargs):
    """Run ``check_grads`` on every combination of the given argument and keyword values."""

    def _combo_check(*arg_lists, **kwarg_lists):
        kv = [[(k, x) for x in xs] for k, xs in kwarg_lists.items()]
        for _args in product(*arg_lists):
            for _kwargs in product(*kv):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))

    return _combo_check
