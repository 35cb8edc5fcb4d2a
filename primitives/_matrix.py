"""Shared helpers of the linear-algebra families (``linalg``, ``spectral``, ``tridiagonal``):
matrix views built from primitives (transposes, triangles, diagonals, batched products), operand
checks, the batch rule of a leading-batch operation, the loop over a batch used by the eager
impls and SciPy's LAPACK/BLAS routines for them (``lapack``, ``blas``).

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families.

# NOTE: [linalg operand contract]
# A linear-algebra primitive works on the trailing two axes of its operands ("the matrices");
# all leading axes are batch axes, identical for every operand (the surface broadcasts them
# first). Dtypes are float32, float64, complex64 or complex128 -- the four LAPACK types --, one
# dtype per primitive call. Abstract evaluation checks all of it and names the fix, so nothing
# malformed reaches LAPACK (whose kernels do not check their inputs).

# NOTE: [complex conjugation in linalg rules]
# The rules are written once for real and complex matrices (``H`` is the conjugate transpose).
# On real dtypes ``conj``/``real`` are the identity and bind nothing. On complex dtypes they bind
# the complex-number family's ``conj``/``real``/``imag``/``complex`` primitives
# (``primitives/complex.py``) when the catalog has it; otherwise they are composed of
# ``convert_element_type`` (complex
# -> real keeps the real part; its JVP and transpose are the real part's) and arithmetic:
# ``conj(z) = 2 re(z) - z``, ``imag(z) = re(-i z)``.
"""

from __future__ import annotations

import sys

import numpy as np
from funcgrad.primitives import dot
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import aval_of, checked_impl, to_front

from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray


def lapack(name: str, *arrays):
    """SciPy's LAPACK routine ``name`` for the arrays' dtype (imported on first use: scipy.linalg
    costs ~0.3 s to import)."""
    import scipy.linalg.lapack  # noqa: PLC0415 - deferred for import time, not for a cycle

    return scipy.linalg.lapack.get_lapack_funcs(name, arrays)


def blas(name: str, *arrays):
    """SciPy's BLAS routine ``name`` for the arrays' dtype (imported on first use, as ``lapack``)."""
    import scipy.linalg.blas  # noqa: PLC0415 - deferred for import time, not for a cycle

    return scipy.linalg.blas.get_blas_funcs(name, arrays)


def _complex_family():
    """The complex-number family (``primitives/complex.py``: conj/real/imag/complex), if the
    catalog has one: importing ``primitives`` imports every family module of its directory, so
    the family is loaded by the time a rule runs (NOTE: [complex conjugation in linalg rules])."""
    return sys.modules.get("funcgrad.primitives.complex")


LAPACK_DTYPES = tuple(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))


# ----------------------------------------------------------------------------------------------
# Checks (abstract evaluation)


def check_dtype(name: str, *avals: ShapedArray, also: tuple = ()) -> np.dtype:
    """The operands' one dtype, a LAPACK type (or one of ``also``: a primitive XLA computes in
    more types than LAPACK has)."""
    dtype = avals[0].dtype
    for a in avals:
        if a.dtype not in LAPACK_DTYPES and a.dtype not in also:
            raise TypeError(
                f"{name} requires float32, float64, complex64 or complex128 operands (the LAPACK "
                f"types), got {a.str_short()}. Convert the operand first (funcgrad.numpy.linalg "
                "promotes integers to float64 for you)."
            )
        if a.dtype != dtype:
            raise TypeError(
                f"{name} requires operands of one dtype, got "
                + ", ".join(b.str_short() for b in avals)
                + ". Convert them to one dtype first."
            )
    return dtype


def check_matrix(name: str, arg: str, aval: ShapedArray, *, square: bool = False) -> None:
    if aval.ndim < 2:
        raise ValueError(
            f"{name}: {arg} must be a matrix or a batch of matrices (shape [..., m, n]), got "
            f"{aval.str_short()}"
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        shape = tuple(aval.shape)
        if name in _SQUARE_WORDS:  # (JAX's words)
            raise ValueError(_SQUARE_WORDS[name].format(shape=shape))
        raise ValueError(
            f"{name}: {arg} must be a square matrix or a batch of square matrices (shape "
            f"[..., n, n]), got {aval.str_short()}"
        )


_SQUARE_WORDS = {
    "eigh": "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape {shape}",
    "hessenberg": "Argument to Hessenberg reduction must have shape [..., n, n], got shape {shape}",
    "triangular_solve": "The first input to triangular_solve must be a square matrix. Got shape {shape}.",
    **{
        n: f"The input to {n} must be a square matrix. Got shape {{shape}}."
        for n in ("cholesky", "eig", "schur", "tridiagonal")
    },
}


def check_batch(name: str, **avals_and_ranks) -> tuple[int, ...]:
    """The common batch shape of operands given as ``arg=(aval, core_rank)``."""
    batch = None
    for aval, rank in avals_and_ranks.values():
        b = aval.shape[: aval.ndim - rank]
        if batch is None:
            batch = b
        elif b != batch:
            described = ", ".join(f"{k}={v[0].str_short()}" for k, v in avals_and_ranks.items())
            raise ValueError(
                f"{name}: the operands' batch dimensions differ ({described}); the leading "
                "dimensions must be equal (broadcast them first: funcgrad.numpy.linalg does)."
            )
    return batch


def real_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64) if dtype.kind == "c" else dtype


def complex_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return np.dtype(np.complex64 if dtype in (np.float32, np.complex64) else np.complex128)


# ----------------------------------------------------------------------------------------------
# Matrix views made of primitives (used by the derivative rules)


def T(x):
    """Swap the last two axes."""
    nd = aval_of(x).ndim
    return st.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _quiet_real_part(x):
    """The real part through ``convert_element_type`` (whose JVP and transpose are those of the
    real part)."""
    return ew.convert_element_type(x, real_dtype(aval_of(x).dtype))


def conj(x):
    if aval_of(x).dtype.kind != "c":
        return x
    family = _complex_family()
    if family is not None:  # NOTE: [complex conjugation in linalg rules]
        return family.conj_p.bind(x)
    return ew.sub(ew.mul(ew.convert_element_type(_quiet_real_part(x), aval_of(x).dtype), 2), x)


def real(x):
    if aval_of(x).dtype.kind != "c":
        return x
    family = _complex_family()
    return family.real_p.bind(x) if family is not None else _quiet_real_part(x)


def imag(x):
    family = _complex_family()
    if family is not None:
        return family.imag_p.bind(x)
    return _quiet_real_part(ew.mul(x, np.asarray(-1j, aval_of(x).dtype)))


def make_complex(re, im):
    family = _complex_family()
    if family is not None:
        return family.complex_p.bind(re, im)
    cdt = complex_dtype(aval_of(re).dtype)
    as_complex = lambda v: ew.convert_element_type(v, cdt)  # noqa: E731
    return ew.add(as_complex(re), ew.mul(as_complex(im), np.asarray(1j, cdt)))


def abs_value(x):
    """``|x|`` as a real array (``sqrt(re(x conj(x)))`` for complex ``x`` until the complex family
    gives ``abs`` its real result type)."""
    if aval_of(x).dtype.kind != "c" or _complex_family() is not None:
        return ew.abs_p.bind(x)
    return ew.sqrt_p.bind(real(ew.mul(x, conj(x))))


def H(x):
    """The conjugate transpose of the matrices ``x``."""
    return conj(T(x))


def matmul(a, b, *, highest: bool = False):
    """``a @ b`` over equal leading batch axes; ``highest``: at ``Precision.HIGHEST``, as JAX's
    derivative rules of cholesky, triangular_solve, eig and eigh ask (their jaxprs say so)."""
    nd = aval_of(a).ndim
    batch = tuple(range(nd - 2))
    precision = (dot.Precision.HIGHEST,) * 2 if highest else None
    return dot.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)), precision=precision)


def mask(shape, k: int = 0, *, lower: bool = True):
    """A boolean ``shape`` (batch dims first) true on the lower triangle ``j <= i + k`` (or the
    upper one ``j >= i + k``), made of iotas (no large constant in the program)."""
    nd = len(shape)
    i = st.broadcasted_iota(np.int32, shape, nd - 2)
    j = st.broadcasted_iota(np.int32, shape, nd - 1)
    if k:
        i = ew.add(i, np.int32(k))
    return ew.le_p.bind(j, i) if lower else ew.ge_p.bind(j, i)


def eye_mask(shape):
    nd = len(shape)
    i = st.broadcasted_iota(np.int32, shape, nd - 2)
    j = st.broadcasted_iota(np.int32, shape, nd - 1)
    return ew.eq_p.bind(i, j)


def zeros_like(x):
    a = aval_of(x)
    return st.broadcast_in_dim(np.zeros((), a.dtype), a.shape, ())


def full(shape, value, dtype):
    return st.broadcast_in_dim(np.asarray(value, dtype), tuple(shape), ())


def tril(x, k: int = 0):
    return ew.select(mask(aval_of(x).shape, k, lower=True), x, zeros_like(x))


def triu(x, k: int = 0):
    return ew.select(mask(aval_of(x).shape, k, lower=False), x, zeros_like(x))


def eye(n: int, dtype, batch=()):
    shape = (*batch, n, n)
    return ew.select(eye_mask(shape), full(shape, 1, dtype), full(shape, 0, dtype))


def diagonal(x):
    """The main diagonals ``(..., min(m, n))`` of the matrices ``x``."""
    shape = aval_of(x).shape
    k = min(shape[-2:])
    if shape[-2:] != (k, k):
        nd = len(shape)
        x = st.slice_(x, (0,) * nd, (*shape[:-2], k, k))
        shape = (*shape[:-2], k, k)
    return red.reduce_sum(ew.select(eye_mask(shape), x, zeros_like(x)), (len(shape) - 1,))


def diag_embed(d):
    """Diagonal matrices ``(..., k, k)`` from vectors ``(..., k)``."""
    shape = aval_of(d).shape
    k = shape[-1]
    full_shape = (*shape, k)
    rows = st.broadcast_in_dim(d, full_shape, (*range(len(shape) - 1), len(shape)))
    return ew.select(eye_mask(full_shape), rows, zeros_like(rows))


def columns_scaled(x, v):
    """``x * v[..., None, :]``: column ``j`` of each matrix scaled by ``v[..., j]``."""
    shape = aval_of(x).shape
    return ew.mul(x, st.broadcast_in_dim(v, shape, (*range(len(shape) - 2), len(shape) - 1)))


def rows_scaled(x, v):
    """``x * v[..., :, None]``: row ``i`` of each matrix scaled by ``v[..., i]``."""
    shape = aval_of(x).shape
    return ew.mul(x, st.broadcast_in_dim(v, shape, tuple(range(len(shape) - 1))))


def permutation_matrix(perm, dtype):
    """One-hot rows: ``P[..., i, j] = (perm[..., i] == j)``, so ``P @ x == x[..., perm, :]``."""
    shape = aval_of(perm).shape
    m = shape[-1]
    full_shape = (*shape, m)
    p = st.broadcast_in_dim(perm, full_shape, tuple(range(len(shape))))
    j = st.broadcasted_iota(np.int32, full_shape, len(shape))
    return ew.convert_element_type(ew.eq_p.bind(p, j), dtype)


# ----------------------------------------------------------------------------------------------
# Batching and eager batch loops


# NOTE: [eager LAPACK as compiled]
# A factorisation whose result is not unique (eigenvector and singular-vector signs or phases,
# Householder reflectors) or whose rounding depends on the LAPACK build (NumPy bundles its own
# OpenBLAS; jaxlib calls SciPy's) runs eagerly as its compiled lowering does: the primitive alone,
# compiled once per parameters and operand types (``hooks.eager_compiled``, cached), so eager,
# ``jit`` and JAX (whose eager ops are compiled) give the same bits -- ``eigh`` of a float32 matrix
# through ``np.linalg.eigh`` flipped eigenvector signs against ``jit``. The NumPy/SciPy impl stays
# for the kernel without the bridge and for empty operands. ``cholesky`` and ``triangular_solve``
# keep their host impls (unique results; the eager GP benchmark's hot path).


def lapack_primitive(
    name: str, impl, abstract_eval, *, multiple_results: bool = False, compiled: bool = False
) -> Primitive:
    """A linear-algebra primitive: its impl checks operands as abstract evaluation does (eager
    errors are the traced ones), and it batches over leading axes (``leading_batch_rule``); the
    caller adds the derivative rules. ``compiled``: the eager impl runs the primitive compiled,
    as ``jit`` does (NOTE: [eager LAPACK as compiled])."""
    p = Primitive(name, multiple_results=multiple_results)
    if compiled:
        impl = _compiled_impl(p, impl)
    p.def_impl(checked_impl(abstract_eval, impl))
    p.def_abstract_eval(abstract_eval)
    leading_batch_rule(p)
    return p


def _compiled_impl(primitive, host_impl):
    """``primitive``'s eager impl through its compiled lowering (NOTE: [eager LAPACK as
    compiled]); ``host_impl`` without the bridge or for an empty operand."""

    def impl(a, **params):
        if hooks.eager_compiled is None or np.size(a) == 0:
            return host_impl(a, **params)
        out = hooks.eager_compiled(primitive, (a,), params)
        return [o._numpy() for o in out] if primitive.multiple_results else out._numpy()

    return impl


def leading_batch_rule(primitive):
    """Batch rule of a primitive that maps over leading axes (NOTE: [linalg operand contract]):
    every operand gets the batch axis first (unbatched ones are broadcast), one bind."""

    def rule(axis_size, vals, dims, **params):
        vals = [to_front(v, d, axis_size) for v, d in zip(vals, dims)]
        out = primitive.bind(*vals, **params)
        return out, ([0] * len(out) if primitive.multiple_results else 0)

    primitive.def_batch(rule)
    return rule


def per_matrix(fn, arrays, core_ranks, out_like):
    """Apply ``fn`` (a NumPy/SciPy routine of unbatched operands returning a tuple) to each batch
    element of ``arrays``; ``out_like`` gives the ``(shape, dtype)`` of each unbatched result."""
    batch = np.shape(arrays[0])[: np.ndim(arrays[0]) - core_ranks[0]]
    if not batch:  # one matrix: no copies into stacked outputs
        return [np.asarray(r, dtype) for r, (_, dtype) in zip(fn(*arrays), out_like)]
    outs = [np.empty((*batch, *shape), dtype) for shape, dtype in out_like]
    for idx in np.ndindex(*batch):
        results = fn(*[a[idx] for a in arrays])
        for o, r in zip(outs, results):
            o[idx] = r
    return outs


def nan_where(failed, x):
    """``x`` with the batch elements flagged in ``failed`` (shape: x's batch shape) set to NaN, as
    the compiled LAPACK calls do (jit-safe failure, NOTE: [factorisation failures])."""
    failed = np.asarray(failed)
    if not failed.any():
        return x
    x = np.array(x, copy=True)
    x[failed] = np.nan
    return x
