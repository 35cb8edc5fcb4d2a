"""autograd.numpy is funcgrad.numpy, with autograd's contract and extras: on plain values its
functions return NumPy arrays (mutable, as autograd's do), ``numpy.random`` is NumPy's stateful
generator, the scalar types are NumPy's, ``ndarray`` covers funcgrad arrays and traced values,
``abs``'s derivative at 0 is autograd's 0, and autograd's own helpers (``make_diagonal``,
``real_if_close``, a ``where`` that keeps Python types) exist."""

import builtins as _builtins

import numpy as _onp

import funcgrad.numpy as _fnp
from funcgrad.core import Tracer as _Tracer
from funcgrad.kernel.array import Array as _ConcreteArray

from ..tracer import Box, getval, notrace_primitive, primitive  # noqa: F401
from . import fft, linalg, random  # noqa: F401
from ._wrap import host_results as _host
from ._wrap import wrap_namespace as _wrap_namespace

# NumPy's float and complex types (programs compare ``x.dtype.type is np.float32``); the integer
# types stay funcgrad's, which convert traced values too (``np.int64(W[:, -1])`` as an index).
_SCALAR_TYPES = (
    "float16 float32 float64 complex64 complex128 longdouble clongdouble half single double csingle "
    "cdouble number integer floating complexfloating inexact signedinteger unsignedinteger generic dtype "
    "finfo iinfo"
).split()
for _name in _SCALAR_TYPES:
    if hasattr(_onp, _name):
        globals()[_name] = getattr(_onp, _name)

_wrap_namespace(_fnp, globals(), skip=("abs", "absolute", "where", "ndarray", "random", "linalg", "fft"))


class _ArrayType(type):
    def __instancecheck__(cls, obj):
        return _builtins.isinstance(obj, (_onp.ndarray, _fnp.ndarray, _Tracer))


class ndarray(metaclass=_ArrayType):
    """What ``isinstance(x, np.ndarray)`` means under autograd: NumPy and funcgrad arrays, and
    traced values."""


@_host
def absolute(x):
    """``|x|`` with autograd's derivative: ``sign(x)`` for real ``x`` (0 at 0; JAX and funcgrad
    take 1 at 0)."""
    x = _fnp.asarray(x)
    if _fnp.issubdtype(x.dtype, _fnp.complexfloating) or not _fnp.issubdtype(x.dtype, _fnp.inexact):
        return _fnp.abs(x)
    return x * _fnp.sign(x)


abs = absolute


def _unchecked(f):
    """``f`` taking lists as autograd's (NumPy's) do (see ``_wrap``)."""
    return getattr(f, "__wrapped_unchecked__", f)


def _is_array_or_traced(x):
    if _builtins.isinstance(x, (_Tracer, _fnp.ndarray, _onp.ndarray, _onp.generic)):
        return True
    return _builtins.isinstance(x, (list, tuple)) and _builtins.any(_is_array_or_traced(v) for v in x)


def where(condition, *args, **kwargs):
    """NumPy's ``where``; like autograd's, Python scalars and lists in give Python values out."""
    if not args and not kwargs:
        return _host(_unchecked(_fnp.nonzero))(condition)
    if len(args) + len(kwargs) != 2:
        raise ValueError("either both or neither of x and y should be given")
    x = args[0] if args else kwargs["x"]
    y = args[1] if len(args) > 1 else kwargs["y"]
    if _builtins.any(_is_array_or_traced(v) for v in (condition, x, y)):
        return _host(_unchecked(_fnp.where))(condition, x, y)
    res = _onp.where(condition, x, y)
    return res.tolist() if _builtins.isinstance(res, _onp.ndarray) else res


@_host
def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """An array with ``D``'s last axis on the diagonal of the new axes ``axis1``, ``axis2``."""
    if offset != 0:
        raise NotImplementedError("make_diagonal: only offset=0 is supported (as in autograd)")
    D = _fnp.asarray(D)
    n = D.shape[-1]
    full = D[..., :, None] * _fnp.eye(n, dtype=D.dtype)
    nd = full.ndim
    return _fnp.moveaxis(full, (nd - 2, nd - 1), (axis1 % nd, axis2 % nd))


def real_if_close(a, tol=100):
    """``real(a)`` when every imaginary part is within ``tol`` machine epsilons of 0 (decided on the
    value under any tracer), else ``a``."""
    v = _onp.asarray(getval(a)) if not _builtins.isinstance(getval(a), _Tracer) else None
    if v is None or not _onp.iscomplexobj(v):
        return a
    eps = _onp.finfo(v.dtype).eps * tol
    return real(a) if _onp.all(_onp.abs(v.imag) < eps) else a  # noqa: F821 - bound by _wrap_namespace


row_stack = vstack  # noqa: F821 - NumPy 2 removed row_stack; autograd keeps it
for _name in (
    "errstate",
    "seterr",
    "geterr",
    "ndindex",
    "ndenumerate",
    "asanyarray",
    "ascontiguousarray",
    "array2string",
    "may_share_memory",
    "nditer",
    "asarray_chkfinite",
):
    if _name not in globals():
        globals()[_name] = getattr(_onp, _name)

__version__ = _onp.__version__


def _numpy_index(getitem):
    """``getitem`` reading a list index as NumPy's (and autograd's) index array: funcgrad, as JAX,
    refuses ``x[[0, 1]]`` with a TypeError."""

    def __getitem__(self, idx):
        if type(idx) is list:
            idx = _fnp.asarray(idx)
        return getitem(self, idx)

    return __getitem__


for _cls in (_ConcreteArray, _Tracer):
    _cls.__getitem__ = _numpy_index(_cls.__getitem__)
