"""autograd.util: deprecated helpers kept by autograd for old code."""

import warnings

from .test_util import check_grads
from .wrap_util import subvals  # noqa: F401


def quick_grad_check(
    fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4, rtol=1e-4, atol=1e-6, rs=None
):
    warnings.warn("quick_grad_check is deprecated: use autograd.test_util.check_grads", stacklevel=2)
    kwargs = kwargs or {}
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)


def func(f):
    """autograd's identity helper for naming a method as a function (``func(Cls.__call__)``)."""
    return f
