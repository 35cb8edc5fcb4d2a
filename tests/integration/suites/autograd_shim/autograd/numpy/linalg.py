"""autograd.numpy.linalg is funcgrad.numpy.linalg (eigenvector derivatives of ``eig`` enabled, as
autograd has them), plus autograd's helpers ``_dot`` and ``T``."""

from numpy.linalg import LinAlgError  # noqa: F401

import funcgrad.lax.linalg as _lax_linalg
import funcgrad.numpy as _fnp
import funcgrad.numpy.linalg as _fl

from ._wrap import host_results as _host
from ._wrap import wrap_namespace as _wrap_namespace

_wrap_namespace(_fl, globals(), skip=("eig",))


@_host
def eig(a):
    w, v = _lax_linalg.eig(_fnp.asarray(a), compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


_dot = _host(_fnp.matmul)


def T(x):
    return _fnp.swapaxes(x, -1, -2)
