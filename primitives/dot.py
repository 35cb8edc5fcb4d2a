"""dot_general: batched tensor contraction, the one matrix-multiply primitive.

Layer: primitives. Imports the funcgrad kernel, numpy and sibling families.

``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``; the result
has the batch dims first, then the free dims of lhs, then those of rhs (StableHLO's order).

``precision`` is ``None``, a pair of ``Precision`` values (one per operand), JAX's canonical form
(``canonicalize_precision``), or a dot algorithm (``DotAlgorithm``/``DotAlgorithmPreset``). A pair is
carried to StableHLO's ``precision_config`` as JAX does. On CPU XLA computes float32 products in
float32 whatever the precision (as in JAX), and the NumPy impl does the same, so a pair changes no
value here; it matters on accelerators.

# NOTE: [dot algorithms]
# A dot algorithm is the equation's ``precision`` parameter, as in JAX: the impl and the lowering
# convert the operands to its types, contract in its accumulation type and convert to the result
# type (``algorithm_compute_types``; JAX's lowering makes the same converts, and XLA's CPU ignores
# the algorithm attribute itself). Because the equation keeps it, the transpose rule's products
# carry the forward's algorithm and ``preferred_element_type`` as JAX's
# ``_dot_general_transpose_lhs/rhs`` do: the cotangent is rounded to the algorithm's operand type
# (bfloat16 under BF16_BF16_F32) before the backward product. Converts around a plain product
# (before session 19) lost that: a bfloat16 training step's second loss differed from jax's.
``Precision`` lives here (not in the surface) because the contraction primitives -- this one and
``conv_general_dilated`` -- carry it as a parameter.
"""

from __future__ import annotations

import enum
import math
from typing import Any, NamedTuple

import numpy as np
from funcgrad.primitives import _sharding_rules, _unreduced_rules
from funcgrad.primitives._rules import aval_of, bilinear_jvp, bilinear_taylor
from funcgrad.primitives.elementwise.conversion import convert_element_type, convert_element_type_p
from funcgrad.primitives.structure import transpose

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import instantiate, is_undefined_primal
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ShapedArray


class Precision(enum.Enum):
    """Precision of a matrix product or convolution (``jax.lax.Precision``).

    ``DEFAULT`` (aliases ``'default'``, ``'fastest'``, ``'bfloat16'``), ``HIGH`` (``'high'``,
    ``'tensorfloat32'``, ``'bfloat16_3x'``), ``HIGHEST`` (``'highest'``, ``'float32'``). It trades
    speed for accuracy of float32 products on accelerators; the CPU always computes in full float32
    precision, as it does in JAX.

    >>> Precision("highest"), str(Precision.HIGH)
    (Precision.HIGHEST, 'HIGH')
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        return _PRECISION_STRINGS.get(value)

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST,
    "float32": Precision.HIGHEST,
    "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH,
    "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT,
    "bfloat16": Precision.DEFAULT,
    "fastest": Precision.DEFAULT,
}


class DotAlgorithm(NamedTuple):
    """The algorithm of a matrix product (``jax.lax.DotAlgorithm``), given as ``precision=``: the
    operands are converted to ``lhs_precision_type`` / ``rhs_precision_type`` and the products are
    accumulated in ``accumulation_type``; the result has the operands' dtype (or
    ``preferred_element_type``). The component counts describe emulation schemes of accelerators
    (several narrow products for one wide one); funcgrad computes the product in the named types.

    >>> DotAlgorithm(np.float16, np.float16, np.float32).accumulation_type
    <class 'numpy.float32'>
    """

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms (``jax.lax.DotAlgorithmPreset``), passed as ``precision=`` (the member
    or its name): ``LHS_RHS_ACCUM`` gives the operand and accumulation types; an ``_X3``/``_X6``/
    ``_X9`` suffix names how many narrow products an accelerator uses to emulate the wide one.

    >>> DotAlgorithmPreset("F16_F16_F32"), DotAlgorithmPreset.F16_F16_F32.accumulation_type
    (DotAlgorithmPreset.F16_F16_F32, <class 'numpy.float32'>)
    """

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    @classmethod
    def _missing_(cls, value):
        return cls.__members__.get(value) if isinstance(value, str) else None

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name

    @property
    def supported_lhs_types(self) -> tuple | None:
        """The operand types the algorithm takes as they are (others are converted to the first);
        ``None``: any."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16"):
            return (np.float16,)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (_dt.bfloat16, np.float32)
        return (np.float64,) if name == "F64_F64_F64" else (np.float32,)

    supported_rhs_types = supported_lhs_types

    @property
    def accumulation_type(self):
        """The type products are summed in; ``None``: the result's."""
        name = self.name
        if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": _dt.bfloat16, "F64_F64_F64": np.float64}.get(
            name, np.float32
        )


def _supported_output_types(algorithm, lhs_dtype, rhs_dtype) -> tuple | None:
    """The product types a preset writes as they are (JAX's ``supported_output_types``): a 16-bit
    result of 16-bit operands under BF16_BF16_F32/F16_F16_F32, else the accumulation type."""
    name = algorithm.name
    if name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
        return tuple(
            np.dtype(t)
            for t in (np.float32, np.float16, _dt.bfloat16, "float8_e4m3fn", "float8_e5m2")
            + ("float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e4m3b11fnuz")
        )
    narrow = {"F16_F16_F32": np.dtype(np.float16), "BF16_BF16_F32": np.dtype(_dt.bfloat16)}.get(name)
    if narrow is not None:
        both = lhs_dtype == narrow and rhs_dtype == narrow
        return (np.dtype(np.float32), narrow) if both else (np.dtype(np.float32),)
    acc = algorithm.accumulation_type
    return None if acc is None else (np.dtype(acc),)


def _algorithm_types(algorithm, lhs_dtype, rhs_dtype, out_dtype=None):
    """(lhs type, rhs type, product type or None) a dot algorithm computes in, as JAX's lowering
    converts (``get_algorithm_compute_types``): an explicit ``DotAlgorithm`` names them; a preset
    keeps an operand type it supports and converts any other to its first supported type, and
    writes the product in ``out_dtype`` where it supports that, else in its first supported
    output type."""
    if isinstance(algorithm, DotAlgorithm):
        return tuple(
            np.dtype(t)
            for t in (algorithm.lhs_precision_type, algorithm.rhs_precision_type, algorithm.accumulation_type)
        )
    if algorithm.name.startswith("ANY_F8"):
        if not (
            _dt.is_float(lhs_dtype)
            and lhs_dtype.itemsize == 1
            and _dt.is_float(rhs_dtype)
            and rhs_dtype.itemsize == 1
        ):
            raise ValueError(
                f"The dot algorithm '{algorithm}' requires both inputs to have float8 dtypes. "
                f"Got {lhs_dtype} and {rhs_dtype} instead."
            )

    def kept(dtype, supported):
        if supported is None or any(dtype == np.dtype(t) for t in supported):
            return dtype
        return np.dtype(supported[0])

    lt = kept(lhs_dtype, algorithm.supported_lhs_types)
    rt = kept(rhs_dtype, algorithm.supported_rhs_types)
    if out_dtype is None:
        acc = algorithm.accumulation_type
        return lt, rt, (None if acc is None else np.dtype(acc))
    return lt, rt, kept(np.dtype(out_dtype), _supported_output_types(algorithm, lt, rt))


def is_algorithm(precision) -> bool:
    """Whether a canonical ``precision`` parameter names a dot algorithm (not a Precision pair)."""
    return isinstance(precision, DotAlgorithm | DotAlgorithmPreset)


def algorithm_compute_types(algorithm, lhs_dtype, rhs_dtype, out_dtype):
    """(lhs type, rhs type, common type, product type) of a product under a dot algorithm, as JAX's
    lowering (``get_algorithm_compute_types``) converts: each operand to the algorithm's type for
    it, the product written in the type it supports. Two different operand types (a float32
    cotangent and bfloat16 operand; two float8 formats) are then both taken, exactly, in a float
    wide enough for either (the common type), as XLA's CPU dot computes a mixed product."""
    lt, rt, acc = _algorithm_types(algorithm, np.dtype(lhs_dtype), np.dtype(rhs_dtype), out_dtype)
    common = lt if lt == rt else max(lt, rt, np.dtype(np.float32), key=lambda d: d.itemsize)
    return lt, rt, common, np.dtype(out_dtype) if acc is None else acc


def canonicalize_precision(precision, name: str = "dot_general", *, algorithms: bool = True):
    """``None``, a pair ``(Precision, Precision)``, or a dot algorithm, from any spelling JAX
    accepts: ``None``, a ``Precision``, one of its strings, or a pair of either; a
    ``DotAlgorithm``, a ``DotAlgorithmPreset`` or a preset's name.

    >>> canonicalize_precision("high"), canonicalize_precision("F32_F32_F32")
    ((Precision.HIGH, Precision.HIGH), DotAlgorithmPreset.F32_F32_F32)
    """
    if precision is None:
        # (``jax_default_matmul_precision`` in the calling thread, registered by funcgrad._config,
        # as JAX's canonicalize_precision reads it)
        default = hooks.default_precision()
        if default is None or (not algorithms and default not in _PRECISION_STRINGS):
            return None
        return canonicalize_precision(default, name, algorithms=algorithms)
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        precision = DotAlgorithmPreset[precision]
    if isinstance(precision, DotAlgorithm | DotAlgorithmPreset):
        if not algorithms:  # (convolutions: JAX's lower only a Precision pair)
            raise ValueError(
                f"{name}: precision must be a lax.Precision or a pair, not a dot algorithm {precision!r}"
            )
        return precision
    if isinstance(precision, Precision):
        return precision, precision
    if isinstance(precision, str) and precision in _PRECISION_STRINGS:
        p = _PRECISION_STRINGS[precision]
        return p, p
    if isinstance(precision, list | tuple) and len(precision) == 2:
        pair = []
        for p in precision:
            if isinstance(p, Precision):
                pair.append(p)
            elif isinstance(p, str) and p in _PRECISION_STRINGS:
                pair.append(_PRECISION_STRINGS[p])
            elif p is None:
                pair.append(Precision.DEFAULT)
            else:
                break
        else:
            return tuple(pair)
    raise ValueError(
        f"{name}: precision must be None, a lax.Precision, one of the strings "
        f"{sorted(_PRECISION_STRINGS)}, or a pair of these (one per operand); got {precision!r}"
    )


def _free(ndim, contract, batch):
    return [i for i in range(ndim) if i not in contract and i not in batch]


def _check(lhs: ShapedArray, rhs: ShapedArray, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: mismatched dimension numbers {dimension_numbers}")
    for name, dims, aval in (("lhs", (*lc, *lb), lhs), ("rhs", (*rc, *rb), rhs)):
        if any(not 0 <= d < aval.ndim for d in dims) or len(set(dims)) != len(dims):
            raise TypeError(f"dot_general: bad {name} dimensions {dims} for {aval.str_short()}")
    for a, b in zip((*lc, *lb), (*rc, *rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(
                f"dot_general: lhs dimension {a} (size {lhs.shape[a]}) and rhs dimension {b} "
                f"(size {rhs.shape[b]}) must match; shapes {lhs.str_short()} and {rhs.str_short()}"
            )
    if lhs.dtype != rhs.dtype and not is_algorithm(precision):
        raise TypeError(
            f"dot_general requires operands of one dtype, got {lhs.str_short()} and {rhs.str_short()}"
        )


def _out_dtype(lhs_dtype, rhs_dtype, preferred_element_type):
    """The result type: ``preferred_element_type``, else the operands' (the wider of two, which only
    a dot algorithm's operands may differ in, as XLA's shape inference takes the wider)."""
    if preferred_element_type is not None:
        return np.dtype(preferred_element_type)
    return max(np.dtype(lhs_dtype), np.dtype(rhs_dtype), key=lambda d: (d.kind == "c", d.itemsize))


def _abstract_eval(
    lhs,
    rhs,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
    out_unreduced=frozenset(),
):
    _check(lhs, rhs, dimension_numbers, precision)
    (lc, rc), (lb, rb) = dimension_numbers
    shape = (
        *(lhs.shape[d] for d in lb),
        *(lhs.shape[d] for d in _free(lhs.ndim, lc, lb)),
        *(rhs.shape[d] for d in _free(rhs.ndim, rc, rb)),
    )
    dtype = _out_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _no_blas(dtype) -> bool:
    """A floating dtype narrower than 32 bits (float16, bfloat16, the float8 formats): NumPy has no
    BLAS for it and multiplies in a scalar loop."""
    return dtype.itemsize <= 2 and dtype.kind in "fV" and dtype.name.startswith(("float", "bfloat"))


def _impl(
    lhs,
    rhs,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
    out_unreduced=frozenset(),
):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if is_algorithm(precision):
        # The converts the lowering makes (NOTE: [dot algorithms]), then a plain product.
        out = _out_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
        lt, rt, common, acc = algorithm_compute_types(precision, lhs.dtype, rhs.dtype, out)
        # (NumPy's astype rounds to nearest even, as XLA's convert)
        lhs, rhs = (x.astype(t).astype(common, copy=False) for x, t in ((lhs, lt), (rhs, rt)))
        pet = None if acc == common else acc
        res = _impl(lhs, rhs, dimension_numbers=dimension_numbers, preferred_element_type=pet)
        return res if acc == out else convert_element_type_p.impl(res, new_dtype=out)
    if preferred_element_type is not None:
        pet = np.dtype(preferred_element_type)
        # (booleans are never narrowed into: a product of booleans in int8 counts, as XLA's,
        # where an OR of ANDs converted once gave 1s eagerly -- the lax-parameter fuzzer's dtype
        # probe, session 18)
        narrow = lhs.dtype != np.bool_ and pet != lhs.dtype and pet.itemsize <= lhs.dtype.itemsize
        # (but float16 operands of a bfloat16 product: XLA's CPU dot converts them to bfloat16 first,
        # as below; bfloat16 into float16 computes in bfloat16 -- jax's eager and jitted bits)
        narrow = narrow and not (lhs.dtype == np.float16 and pet == _dt.bfloat16)
        if narrow or (_dt.kind(lhs.dtype) == "f" and _dt.kind(pet) in "iub"):
            # A narrower preferred type (float32 -> bfloat16; bfloat16 -> float16) or an integer
            # one of float operands: XLA's CPU dot computes in the operands' type and converts the
            # result once (saturating into integers), as jax's eager and jitted products.
            out = _impl(lhs, rhs, dimension_numbers=dimension_numbers)
            return convert_element_type_p.impl(out, new_dtype=pet)
        # Accumulate in the preferred type (int8 x int8 -> int32 must not wrap), as XLA does.
        lhs = lhs.astype(preferred_element_type, copy=False)
        rhs = rhs.astype(preferred_element_type, copy=False)
    if _no_blas(lhs.dtype):
        # In float32, rounded once, as XLA's CPU dot computes a narrow float product: NumPy's loop
        # over bfloat16 took minutes for one ViT layer eagerly (flax's ViT example).
        out = _impl(lhs.astype(np.float32), rhs.astype(np.float32), dimension_numbers=dimension_numbers)
        return out.astype(lhs.dtype)
    (lc, rc), (lb, rb) = dimension_numbers
    if not lb:
        if len(lc) == 1 and lhs.ndim <= 2 and rhs.ndim <= 2:
            # Matrix/vector products: BLAS handles transposed views without copying.
            a = lhs.T if lhs.ndim == 2 and lc[0] == 0 else lhs
            b = rhs.T if rhs.ndim == 2 and rc[0] == 1 else rhs
            return np.matmul(a, b)
        # tensordot orders the result as lhs free dims then rhs free dims, like dot_general.
        return np.tensordot(lhs, rhs, axes=(list(lc), list(rc)))
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    if len(lf) == 1 and len(rf) == 1 and len(lc) == 1:
        # One matrix product per batch element, on transposed views: np.matmul reads each matrix
        # through its strides (BLAS's leading dimension), where merging the batch axes of a view
        # (attention's heads split from one projection) would copy both operands first.
        out = np.matmul(np.transpose(lhs, (*lb, *lf, *lc)), np.transpose(rhs, (*rb, *rc, *rf)))
        return out if preferred_element_type is None else out.astype(preferred_element_type, copy=False)
    # As a batched matmul: (batch, free, contract) @ (batch, contract, free) uses BLAS.
    bshape = [lhs.shape[d] for d in lb]
    lfs, rfs = [lhs.shape[d] for d in lf], [rhs.shape[d] for d in rf]
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    # An explicit batch size: NumPy cannot infer a -1 dimension of an empty array.
    nb = int(np.prod(bshape, dtype=np.int64))
    a = np.transpose(lhs, (*lb, *lf, *lc)).reshape(nb, int(np.prod(lfs, dtype=np.int64)), k)
    b = np.transpose(rhs, (*rb, *rc, *rf)).reshape(nb, k, int(np.prod(rfs, dtype=np.int64)))
    out = np.matmul(a, b).reshape((*bshape, *lfs, *rfs))  # a tuple: the shape may be ()
    if preferred_element_type is not None:
        out = out.astype(preferred_element_type, copy=False)
    return out


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield list(range(start, start + len(x)))
        start += len(x)


def _transpose_lhs(
    g, x_aval, y, *, dimension_numbers, precision, preferred_element_type, swap_ans=False, swap_free=True
):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = x_aval.ndim
    y_ndim = aval_of(y).ndim
    x_kept = _free(x_ndim, x_contract, x_batch)
    y_kept = _free(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    x_contract_sorted_by_y = (
        [int(d) for d in np.take(x_contract, np.argsort(y_contract))] if x_contract else []
    )
    identity = list(range(x_ndim))
    # The cotangent is unreduced over the axes the primal is reduced over (JAX's to_ct_aval: NOTE:
    # [unreduced values]), recorded in the product's equation (NOTE: [unreduced in the equation]).
    ct_unreduced = _unreduced_rules.reduced_of(x_aval)
    if is_algorithm(precision):
        # JAX's rule as it is (NOTE: [dot algorithms]): the product of the cotangent and y under
        # the forward's algorithm and preferred type, then x's order and type.
        order = [*x_batch, *x_kept, *x_contract_sorted_by_y]
        with _sharding_rules.contraction_out(_typed_spec(x_aval, order, g, y)):
            prod = dot_general(
                g,
                y,
                dims,
                preferred_element_type=preferred_element_type,
                precision=precision,
                out_unreduced=ct_unreduced,
            )
        if order != identity:
            prod = transpose(prod, tuple(int(a) for a in np.argsort(order)))
        if aval_of(prod).dtype != x_aval.dtype:
            prod = convert_element_type(prod, x_aval.dtype, x_aval.weak_type)
        return prod
    if aval_of(g).dtype != aval_of(y).dtype:
        # A forward preferred_element_type other than the operands' (f32 x f32 -> bf16): JAX's rule
        # contracts the cotangent with y in that type (its CPU lowering converts mixed operands to
        # the result type), then converts to x's type; the bf16 or f16 roundings are jax's.
        pet = preferred_element_type if preferred_element_type is not None else aval_of(g).dtype
        g = g if aval_of(g).dtype == pet else convert_element_type(g, pet)
        y = y if aval_of(y).dtype == pet else convert_element_type(y, pet)
        prod = _transpose_lhs(
            g,
            x_aval.update(dtype=pet),
            y,
            dimension_numbers=dimension_numbers,
            precision=precision,
            preferred_element_type=None,
            swap_ans=swap_ans,
            swap_free=False,
        )  # fmt: skip (JAX's operand order: XLA rounds a narrow product of swapped operands otherwise)
        return prod if pet == x_aval.dtype else convert_element_type(prod, x_aval.dtype, x_aval.weak_type)
    # With nothing of x kept (a vector operand) both orders need no transpose: g first, as JAX's
    # rule, keeps g's vmapped dimensions in front (a per-example activation cotangent).
    if swap_free and x_kept and [*x_batch, *x_contract_sorted_by_y, *x_kept] == identity:
        # NOTE: [cotangent without transpose] The product with its operands swapped comes out in
        # x's order: the weight cotangent of ``x @ W`` is ``x^T g``, not ``(g^T x)^T``. Under
        # vmap this is the per-example gradient, an outer product XLA writes as one broadcast
        # multiply; a transpose after it would cost a strided copy of the largest array.
        swapped = ((tuple(y_kept), tuple(ans_y)), (tuple(y_batch), tuple(ans_batch)))
        flipped = None if precision is None else precision[::-1]
        # The cotangent has its primal's sharding type (NOTE: [sharding in types]), unreduced
        # over the axes the primal is reduced over (JAX's to_ct_aval: NOTE: [unreduced values]).
        with _sharding_rules.contraction_out(_typed_spec(x_aval, identity, g, y)):
            pet = x_aval.dtype
            return dot_general(y, g, swapped, pet, precision=flipped, out_unreduced=ct_unreduced)
    order = [*x_batch, *x_kept, *x_contract_sorted_by_y]
    with _sharding_rules.contraction_out(_typed_spec(x_aval, order, g, y)):
        prod = dot_general(
            g, y, dims, preferred_element_type=x_aval.dtype, precision=precision, out_unreduced=ct_unreduced
        )
    if order == identity:
        return prod
    return transpose(prod, tuple(int(a) for a in np.argsort(order)))


def _typed_spec(x_aval, order, *operands):
    """The sharding type of ``x_aval`` with its dimensions in ``order``. An untyped ``x_aval`` (a
    constant made off the mesh) among typed ``operands`` is replicated, as JAX's
    ``get_cur_mesh_sharding(P(None, ...))`` for a primal whose mesh is empty: a weight cotangent
    contracting a batch split over ``x`` is no ambiguity. None when nothing is typed."""
    if x_aval._sharding is None:
        if any(getattr(aval_of(o), "_sharding", None) is not None for o in operands):
            return ((),) * len(order)
        return None
    spec = _sharding_rules.spec_of(x_aval)
    return tuple(spec[d] for d in order)  # (a normalized spec: contraction_out takes it as it is)


def _transpose(
    ct,
    lhs,
    rhs,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
    out_unreduced=frozenset(),
):
    ct = instantiate(ct)
    (lc, rc), (lb, rb) = dimension_numbers
    outs = [None, None]
    if is_undefined_primal(lhs):
        outs[0] = _transpose_lhs(
            ct,
            lhs.aval,
            rhs,
            dimension_numbers=dimension_numbers,
            precision=precision,
            preferred_element_type=preferred_element_type,
        )
    if is_undefined_primal(rhs):
        swapped = ((rc, lc), (rb, lb))
        outs[1] = _transpose_lhs(
            ct,
            rhs.aval,
            lhs,
            dimension_numbers=swapped,
            precision=precision if precision is None or is_algorithm(precision) else precision[::-1],
            preferred_element_type=preferred_element_type,
            swap_ans=True,
        )
    return outs


def _batch(
    axis_size,
    vals,
    dims,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
    out_unreduced=frozenset(),
):
    # JAX's _dot_general_batch_dim_nums: the mapped dimension stays where it is (no transpose of
    # an operand): mapped on both sides, it is a new leading batch dimension of the product; on one
    # side, a free dimension of that operand, at its place among them in the result.
    lhs, rhs = vals
    ld, rd = dims
    (lc, rc), (lb, rb) = dimension_numbers

    def bump(ds, b):  # (the operand's dimensions after the mapped one, one further on)
        return tuple(d + 1 if d >= b else d for d in ds)

    def free_before(b, batch, contract) -> int:
        return sum(1 for d in range(b) if d not in batch and d not in contract)

    if ld is not None and rd is not None:
        new = ((bump(lc, ld), bump(rc, rd)), ((ld, *bump(lb, ld)), (rd, *bump(rb, rd))))
        at = 0
    elif ld is not None:
        new = ((bump(lc, ld), rc), (bump(lb, ld), rb))
        at = len(lb) + free_before(ld, lb, lc)
    else:
        new = ((lc, bump(rc, rd)), (lb, bump(rb, rd)))
        at = aval_of(lhs).ndim - len(lc) + free_before(rd, rb, rc)
    if out_sharding is not None:
        # (the result's batch dimension split as vmap's mapped inputs are: get_sharding_for_vmap)
        out_sharding = (*out_sharding[:at], _sharding_rules.vmapped_axes(), *out_sharding[at:])
    pet = preferred_element_type
    out = dot_general(lhs, rhs, new, pet, precision, out_sharding=out_sharding, out_unreduced=out_unreduced)
    return out, at


# NOTE: [eager products are XLA's]
# jax's eager ``x @ w`` is XLA's CPU dot (Eigen/YNNPACK), and so is funcgrad's under jit; the
# NumPy impl is BLAS (OpenBLAS), which sums in another order: float32 products differ from jax's
# in the last place (49 of 64 values of an 8x64x8 product, 3,222 of 16,384 of 128x256x128), and
# a computation compared between eager and ``jit``/``scan`` (flax's nnx.compat.scan of two Dense
# layers against ``x @ w[0] @ w[1]``) differs too. An eager product runs compiled alone
# (``hooks.eager_compiled``, the Arrays handed over with their device buffers: the traits'
# ``compiled_eagerly``, NOTE: [one eager step]) when it has ``_COMPILED_FROM`` multiply-adds or
# more, where XLA is also the faster (CPU time per call, one thread, load 16-20: 128x256x128 84
# -> 66 us, 512^3 2,486 -> 1,455 us; with OpenBLAS's own threads on the loaded machine 6,667 ->
# 139 us). Below it NumPy stays: a compiled call costs ~10 us more than BLAS's 8-14 us for a
# small product (4x16x4 8.2 -> 19.1 us; two small dense layers with a tanh 21 -> 67 us, each
# result read back from the device for NumPy's next step), which would slow every eager program
# of small matrices 2-3x for a last-place difference. The interpreter of eager grad's cached
# programs (NOTE: [eager grad program cache]) makes the same choice per product (NOTE: [cached
# programs on placed values]), so a cached program's values are the uncached call's.
#
# Two ways an eager primitive is XLA's, and why they stay two. (1) This trait, ``compiled_eagerly``
# (dot_general, conv_general_dilated, zeta): a per-call choice of ``EvalTrace`` *before* the
# primitive's host step, on the Arrays themselves (device buffers handed over, the result left on
# the device), for non-empty floating operands only; the host step stays NumPy's, so the cached-program
# interpreter and the eager loops' NumPy interpreter (NOTE: [one eager step]) keep NumPy's fast
# small products. (2) An impl that calls ``hooks.eager_compiled`` itself (fft, the generic
# ``reduce``, cond/while/scan, rng_bit_generator, call_exported, the factorisations of NOTE:
# [eager LAPACK as compiled], jaxlib's perturbed tridiagonal solver, the special values of some
# elementwise functions): the *host step itself* is XLA's, so every interpreter that takes it
# gets XLA's values (pocketfft's float32 rounding and NumPy's fold order are wrong wherever they
# run, not only at the top), on NumPy values of any dtype (an integer ``reduce``), with the
# primitive's own fallback where nothing can be compiled (a reducer or loop body without a
# lowering runs in NumPy, remembered per jaxpr; no compiler registered). The control-flow
# primitives take Arrays (``impl_takes_arrays``), so ``EvalTrace`` never reaches a trait check
# for them. A trait for (2) would be the host step's own switch (as ``half_floats_compiled`` is
# for half floats, in ``narrow_step``) plus a fallback protocol per primitive; the impl already is
# that switch, one line beside the fallback it needs.
# What the two share -- one primitive compiled alone, cached per parameters and operand types --
# is one function, the bridge's ``eager_compiled``.
_COMPILED_FROM = 2**20


def _large_product(args, params) -> bool:
    """Whether an eager product of ``args`` has at least ``_COMPILED_FROM`` multiply-adds (NOTE:
    [eager products are XLA's])."""
    lhs, rhs = args
    (_, rc), (_, rb) = params["dimension_numbers"]
    shared = 1
    for d in (*rc, *rb):
        shared *= rhs.shape[d]
    return math.prod(lhs.shape) * (math.prod(rhs.shape) // shared) >= _COMPILED_FROM


dot_general_p = Primitive("dot_general")
dot_general_p.def_traits(
    contraction=True, may_produce_nan=True, sparse="dot_general"
)  # what checkpoint's dots_saveable policy keeps
dot_general_p.def_impl(_impl)
dot_general_p.def_abstract_eval(_abstract_eval)
dot_general_p.def_jvp(bilinear_jvp(dot_general_p))
dot_general_p.def_transpose(_transpose)
dot_general_p.def_batch(_batch)
dot_general_p.def_traits(linear=True)  # bilinear: linear in each operand separately
dot_general_p.def_traits(compiled_eagerly=_large_product)  # NOTE: [eager products are XLA's]
dot_general_p.def_taylor(bilinear_taylor(dot_general_p))


_FROM_CONTEXT = object()


def dot_general(
    lhs,
    rhs,
    dimension_numbers,
    preferred_element_type=None,
    precision=None,
    *,
    out_sharding=_FROM_CONTEXT,
    out_unreduced=None,
):
    """Contract ``lhs`` and ``rhs``; see the module docstring for ``dimension_numbers`` and
    ``precision`` (already canonical: ``None``, a pair of ``Precision`` or a dot algorithm).

    >>> import numpy as np
    >>> dot_general(np.ones((2, 3)), np.ones((3, 4)), (((1,), (0,)), ((), ()))).shape
    (2, 4)
    """
    (lc, rc), (lb, rb) = dimension_numbers
    dn = (
        (tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
        (tuple(int(d) for d in lb), tuple(int(d) for d in rb)),
    )
    # NOTE: [sharding in types]: a result typed by ``out_sharding=`` (given in the context of the
    # call that asked for it) carries its spec in the equation, as JAX's ``out_sharding`` param,
    # so that binding the equation again (evaluating a jaxpr, vmap, jvp) types it alike.
    if out_sharding is _FROM_CONTEXT:
        ndim = aval_of(lhs).ndim + aval_of(rhs).ndim - 2 * len(dn[0][0]) - len(dn[1][0])
        out_sharding = _sharding_rules._overridden(ndim)
    extra = {} if out_sharding is None else {"out_sharding": tuple(out_sharding)}
    # (its unreduced axes too, ``out_unreduced``, else the context's: NOTE: [unreduced in the equation])
    extra.update(_unreduced_rules.bound_unreduced(out_unreduced))
    return dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=dn,
        precision=precision,
        preferred_element_type=None if preferred_element_type is None else np.dtype(preferred_element_type),
        **extra,
    )
