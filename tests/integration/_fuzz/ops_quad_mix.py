"""The four-way table's session-22 pools (ops_quad runs them; ``--pool chain|ovf|nanred``):

- ``chain``: programs of 3-8 steps over two or three operands of different dtypes (bool, every
  integer width signed and unsigned, float16/bfloat16/float32/float64, complex64/complex128) and
  shapes that broadcast, mixing weak Python scalars (int/float/complex/bool), NumPy scalars and
  ``np.<dtype>(...)`` scalars into arithmetic, comparisons, bit operations, ``where``,
  ``maximum``/``minimum``, casts and reductions: the dtype, weak type and value of every result
  (promotion across weak and strong operands, in both modes);
- ``ovf``: integer and float edges: ``//``/``%``/``lax.div``/``lax.rem`` by zero and of the
  minimum by -1, shifts by the width and more (signed, negative counts), ``abs``/``negative`` of
  the minimum, wrapping sums/products/cumsums, float->int casts of NaN/inf/out-of-range values
  (``astype``, ``lax.convert_element_type``), ``round``/``floor`` of huge values, ``clip`` with
  reversed bounds, integer ``power`` with negative and large exponents;
- ``nanred``: NaN/inf/-0 through reductions: ``max``/``min``/``argmax``/``argmin`` with NaN, the
  nan-reductions of all-NaN slices (``nanmean``/``nanvar``/``nanargmax``...), cumulative sums and
  products of infinities, ``sort``/``argsort``/``median``/``quantile`` with NaN and signed zeros,
  ``logsumexp``/``softmax`` of all -inf, ``ptp``/``prod`` of inf and 0, ``sum`` of +inf and -inf,
  ``any``/``all`` of NaN, ``where=`` masks, over axes and keepdims.

>>> sorted(POOLS)
['chain', 'nanred', 'ovf']
"""

from __future__ import annotations

import numpy as onp
from hypothesis import strategies as st

from _fuzz import programs

_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
_FLOATS = ["float16", "bfloat16", "float32", "float64"]
_COMPLEX = ["complex64", "complex128"]
_ALL = ["bool"] + _INTS + _FLOATS + _COMPLEX


def _array(draw, dtype, shape, vals=None):
    """An array of ``dtype`` and ``shape`` with small values (ties, zeros, negatives)."""
    n = int(onp.prod(shape, dtype=onp.int64))
    pool = vals or [0, 1, -1, 2, 3, -2, 5, 7, 0.5, -1.5, 2.25, 100, -100]
    v = [draw(st.sampled_from(pool)) for _ in range(n)]
    if dtype == "bool":
        return onp.array([bool(x) for x in v]).reshape(shape)
    if dtype in _INTS:
        info = onp.iinfo(dtype)
        return onp.array([int(min(max(int(x), info.min), info.max)) for x in v], dtype).reshape(shape)
    if dtype in _COMPLEX:
        w = [draw(st.sampled_from(pool)) for _ in range(n)]
        return onp.array([complex(a, b) for a, b in zip(v, w)], dtype).reshape(shape)
    return onp.array(v, onp.float64).astype(programs._BF16 if dtype == "bfloat16" else dtype).reshape(shape)


_SCALARS = ["2", "-3", "0", "1.5", "-0.5", "2j", "(1-1j)", "True", "False", "3.0", "255", "-128"]
_NPSCALARS = [
    "np.int8(3)", "np.uint8(7)", "np.int32(-2)", "np.float32(1.5)", "np.float16(2)", "np.float64(0.25)",
    "np.int64(5)", "np.uint32(9)", "np.bool_(True)", "np.complex64(1j)", "np.bfloat16(3)", "onp.float32(0.5)",
    "onp.int16(4)",
]  # fmt: skip
_BIN = ["+", "-", "*", "/", "//", "%", "**", "<", "==", ">=", "&", "|", "^", "<<", ">>"]
_FNS2 = [
    "np.maximum", "np.minimum", "np.add", "np.subtract", "np.true_divide", "np.floor_divide", "np.power",
    "np.arctan2", "np.hypot", "np.fmax", "np.fmin", "np.copysign", "np.logaddexp", "np.heaviside",
    "np.bitwise_and", "np.left_shift", "np.right_shift", "np.gcd", "np.lcm", "np.fmod", "np.remainder",
    "np.divmod", "np.float_power", "np.logical_xor", "np.greater",
]  # fmt: skip
_FNS1 = [
    "np.abs", "np.negative", "np.sqrt", "np.exp", "np.sign", "np.square", "np.reciprocal", "np.invert",
    "np.logical_not", "np.floor", "np.ceil", "np.round", "np.conj", "np.real", "np.imag", "np.cbrt",
    "np.positive", "np.trunc", "np.rint", "np.log1p", "np.sin", "np.tanh", "np.isnan", "np.signbit",
    "np.fix", "np.angle", "np.deg2rad", "np.exp2",
]  # fmt: skip
_RED = [
    "np.sum", "np.mean", "np.prod", "np.max", "np.min", "np.argmax", "np.cumsum", "np.any", "np.all",
    "np.var", "np.cumprod", "np.ptp", "np.average", "np.count_nonzero",
]  # fmt: skip
_CASTS = _ALL + ["int", "float", "complex", "bool"]


@st.composite
def chain_calls(draw):
    """A chain of 3-8 steps mixing dtypes, shapes and scalar kinds (see the module docstring)."""
    n_in = draw(st.integers(2, 3))
    base = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 2))))
    inputs = []
    for _ in range(n_in):
        # (a shape broadcasting against base: a suffix of it with some ones)
        shape = base[draw(st.integers(0, len(base))) :]
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in shape)
        inputs.append(_array(draw, draw(st.sampled_from(_ALL)), shape))
    terms = [f"x{i}" for i in range(n_in)]
    expr = terms[0]
    for _ in range(draw(st.integers(3, 8))):
        kind = draw(st.integers(0, 9))
        other = draw(
            st.sampled_from(terms + terms + _SCALARS + _NPSCALARS)
        )  # (an operand: an input, a weak Python scalar or a strong NumPy scalar)
        if kind <= 2:
            op = draw(st.sampled_from(_BIN))
            expr = f"({expr} {op} {other})" if draw(st.booleans()) else f"({other} {op} {expr})"
        elif kind <= 4:
            expr = f"{draw(st.sampled_from(_FNS2))}({expr}, {other})"
        elif kind == 5:
            expr = f"{draw(st.sampled_from(_FNS1))}({expr})"
        elif kind == 6:
            expr = f"np.where({draw(st.sampled_from(terms))} > 0, {expr}, {other})"
        elif kind == 7:
            fn = draw(st.sampled_from(_RED))
            ax = draw(st.sampled_from(["", ", axis=-1", ", axis=0", ", keepdims=True"]))
            expr = f"{fn}(np.atleast_1d({expr}){ax})"
        elif kind == 8:
            to = draw(st.sampled_from(_CASTS))
            expr = f"({expr}).astype({'np.' + to if to in _ALL else to})"
        else:
            expr = f"np.clip({expr}, {draw(st.sampled_from(['0', '-1', '1.5', 'x1', 'None']))}, 4)"
    return "mix.chain", expr, inputs


# ----------------------------------------------------------------------------------------------
# ovf: integer and float edges


def _extremes(dtype):
    info = onp.iinfo(dtype)
    return [info.min, info.max, 0, -1 if info.min < 0 else 1, 1, info.min + 1 if info.min < 0 else 2, 7]


_BIG = [float("nan"), float("inf"), -float("inf"), 1e10, -1e10, 3e38, 2.0**31, -(2.0**31) - 1, 2.0**63, 256.5]
_BIG += [-0.0, 0.0, 255.9, -1.5, 65504.0, 2.0**32, -(2.0**63), 4294967295.0, 127.5, -128.7, 1e19]


@st.composite
def ovf_calls(draw):
    """An integer or float edge (see the module docstring)."""
    kind = draw(st.integers(0, 7))
    n = draw(st.integers(1, 6))
    if kind <= 2:  # integer arithmetic at the extremes
        dt = draw(st.sampled_from(_INTS))
        a = onp.array([draw(st.sampled_from(_extremes(dt))) for _ in range(n)], dt)
        b = onp.array([draw(st.sampled_from(_extremes(dt) + [0, 0])) for _ in range(n)], dt)
        e = draw(
            st.sampled_from(
                [
                    "x0 // x1", "x0 % x1", "lax.div(x0, x1)", "lax.rem(x0, x1)", "np.abs(x0)", "-x0",
                    "np.negative(x0)", "x0 + x1", "x0 * x1", "x0 - x1", "np.sum(x0)", "np.prod(x0)",
                    "np.cumsum(x0)", "np.cumprod(x0)", "np.divmod(x0, x1)", "np.fmod(x0, x1)",
                    "np.remainder(x0, x1)", "np.sign(x0)", "x0 // -1", "x0 % -1", "np.mean(x0)",
                    "np.square(x0)", "np.lcm(x0, x1)", "np.gcd(x0, x1)", "x0 / x1", "np.abs(x0) // 3",
                    "lax.abs(x0)", "np.max(x0) - np.min(x0)", "np.ptp(x0)", "np.diff(x0)",
                    "np.var(x0)", "x0 * 2", "x0 + 1", "x0 - 1", "np.int8(3) * x0", "np.clip(x0, 5, 2)",
                ]
            )
        )  # fmt: skip
        return "mix.ovf_int", e, [a, b]
    if kind == 3:  # shifts by the width and beyond
        dt = draw(st.sampled_from(_INTS))
        bits = onp.iinfo(dt).bits
        a = onp.array([draw(st.sampled_from(_extremes(dt))) for _ in range(n)], dt)
        counts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, 255] + ([-1, -bits] if dt[0] == "i" else [])
        counts = [c for c in counts if onp.iinfo(dt).min <= c <= onp.iinfo(dt).max]
        b = onp.array([draw(st.sampled_from(counts)) % (2 ** bits) if dt[0] == "u" else
                       draw(st.sampled_from(counts)) for _ in range(n)], dt)  # fmt: skip
        e = draw(
            st.sampled_from(
                [
                    "x0 << x1", "x0 >> x1", "np.left_shift(x0, x1)", "np.right_shift(x0, x1)",
                    "lax.shift_left(x0, x1)", "lax.shift_right_arithmetic(x0, x1)",
                    "lax.shift_right_logical(x0, x1)", f"x0 << {bits}", f"x0 >> {bits}", f"x0 >> {bits + 3}",
                    "np.bitwise_left_shift(x0, x1)", "np.bitwise_right_shift(x0, x1)",
                ]
            )
        )  # fmt: skip
        return "mix.ovf_shift", e, [a, b]
    if kind <= 5:  # float -> int casts out of range
        src = draw(st.sampled_from(["float16", "float32", "float64", "bfloat16"]))
        vals = [draw(st.sampled_from(_BIG)) for _ in range(n)]
        x = onp.array(vals, onp.float64).astype(programs._BF16 if src == "bfloat16" else src)
        to = draw(st.sampled_from(_INTS + ["bool"]))
        e = draw(
            st.sampled_from(
                [
                    f"x0.astype(np.{to})", f"lax.convert_element_type(x0, np.{to})",
                    f"np.asarray(x0, np.{to})",
                    f"np.round(x0).astype(np.{to})", f"np.floor(x0).astype(np.{to})",
                    f"np.trunc(x0).astype(np.{to})", f"np.array(x0, dtype=np.{to})",
                    f"x0.astype(np.{to}).astype(np.float32)", f"np.clip(x0, -10, 10).astype(np.{to})",
                    f"np.nan_to_num(x0).astype(np.{to})", "np.round(x0, 2)", "np.round(x0, -3)",
                    "np.floor_divide(x0, 0.0)", "np.fmod(x0, 0.0)", "np.remainder(x0, -0.0)",
                    "np.floor_divide(x0, np.inf)", "np.remainder(x0, np.inf)",
                ]
            )
        )  # fmt: skip
        return "mix.ovf_cast", e, [x]
    if kind == 6:  # integer power
        dt = draw(st.sampled_from(_INTS))
        a = onp.array([draw(st.sampled_from([0, 1, -1, 2, 3, -2, 7])) % 256 if dt[0] == "u" else
                       draw(st.sampled_from([0, 1, -1, 2, 3, -2, 7])) for _ in range(n)], dt)  # fmt: skip
        p = draw(st.sampled_from(["0", "1", "2", "3", "7", "31", "63", "64", "100", "-1", "-2"]))
        e = draw(st.sampled_from([f"x0 ** {p}", f"lax.integer_pow(x0, {p})", f"np.power(x0, {p})",
                                  "np.power(x0, np.abs(x0))", f"x0 ** np.{dt}(3)"]))  # fmt: skip
        return "mix.ovf_pow", e, [a]
    # float16/bfloat16/float32 overflow and underflow
    src = draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    vals = [
        draw(st.sampled_from([65504.0, 6e-8, 3e38, 1e-45, 300.0, -70000.0, 1e-8, 2.0, 0.0, -0.0]))
        for _ in range(n)
    ]
    x = onp.array(vals, onp.float64).astype(programs._BF16 if src == "bfloat16" else src)
    e = draw(
        st.sampled_from(
            [
                "x0 * x0", "x0 + x0", "np.sum(x0)", "np.mean(x0)", "np.var(x0)", "np.exp(x0)", "x0 / 1e-5",
                "np.square(x0) / x0", "np.linalg.norm(x0)", "np.hypot(x0, x0)", "x0 * 2 ** 10",
                "np.cumsum(x0)",
                "np.prod(x0)", "x0.astype(np.float16)", "x0.astype(np.bfloat16)", "np.std(x0)",
                "np.sqrt(x0 * x0)", "1 / x0", "np.ldexp(x0, 10)", "np.frexp(x0)",
            ]
        )
    )  # fmt: skip
    return "mix.ovf_float", e, [x]


# ----------------------------------------------------------------------------------------------
# nanred: NaN/inf/-0 through reductions

_NAN_VALS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.0, 1.0, float("nan")]
_NANRED = [
    "np.max({x}{ax})", "np.min({x}{ax})", "np.argmax({x}{ax})", "np.argmin({x}{ax})", "np.nanmax({x}{ax})",
    "np.nanmin({x}{ax})", "np.nanargmax({x}{ax})", "np.nanargmin({x}{ax})", "np.nanmean({x}{ax})",
    "np.nanvar({x}{ax})", "np.nanstd({x}{ax})", "np.nansum({x}{ax})", "np.nanprod({x}{ax})",
    "np.nancumsum({x}{ax})", "np.nancumprod({x}{ax})", "np.cumsum({x}{ax})", "np.cumprod({x}{ax})",
    "np.sort({x}{ax})", "np.argsort({x}{ax})", "np.median({x}{ax})", "np.nanmedian({x}{ax})",
    "np.quantile({x}, 0.3{ax})", "np.nanquantile({x}, 0.7{ax})", "np.percentile({x}, 50{ax})",
    "nn.logsumexp({x}{ax})", "nn.softmax({x}{ax})", "nn.log_softmax({x}{ax})", "np.ptp({x}{ax})",
    "np.prod({x}{ax})", "np.sum({x}{ax})", "np.mean({x}{ax})", "np.var({x}{ax})", "np.any({x}{ax})",
    "np.all({x}{ax})", "np.amax({x}{ax})", "lax.cummax({x}, {axn})", "lax.cummin({x}, {axn})",
    "lax.cumlogsumexp({x}, {axn})", "np.max({x}{ax}, initial=-np.inf)",
    "np.min({x}{ax}, where={x} > 0, initial=5.0)",
    "np.sum({x}{ax}, where=~np.isnan({x}))", "np.mean({x}{ax}, where={x} > 0)", "np.count_nonzero({x}{ax})",
    "np.unique({x}, size=4, fill_value=0.0)", "np.maximum.reduce({x}{ax})", "np.fmax.reduce({x}{ax})",
    "np.minimum.accumulate({x}{ax})", "np.add.accumulate({x}{ax})", "np.logaddexp.reduce({x}{ax})",
    "special.logsumexp({x}{ax}, b=np.ones_like({x}))", "np.average({x}{ax}, weights=np.abs({x}) + 1)",
    "np.linalg.norm({x}{ax})", "np.sort({x}{ax}, descending=True)", "lax.sort({x}, dimension={axn})",
    "lax.top_k({x}, 1)", "np.searchsorted(np.sort(np.ravel({x})), {x})", "np.isclose({x}, {x})",
    "np.allclose({x}, {x}, equal_nan=True)", "np.array_equal({x}, {x}, equal_nan=True)",
]  # fmt: skip


@st.composite
def nanred_calls(draw):
    """A reduction over NaN/inf/-0 (see the module docstring)."""
    shape = tuple(draw(st.sampled_from([1, 2, 3, 4])) for _ in range(draw(st.integers(1, 2))))
    n = int(onp.prod(shape))
    dt = draw(st.sampled_from(["float32", "float64", "float16", "bfloat16", "complex64"]))
    vals = [draw(st.sampled_from(_NAN_VALS)) for _ in range(n)]
    if draw(st.integers(0, 3)) == 0:  # an all-NaN (or all -inf) slice
        fill = draw(st.sampled_from([float("nan"), -float("inf"), float("inf"), -0.0]))
        vals[: shape[-1]] = [fill] * shape[-1]
    x = onp.array(vals, onp.float64)
    if dt == "complex64":
        x = (x + 1j * onp.array([draw(st.sampled_from(_NAN_VALS[3:8])) for _ in range(n)])).astype(dt)
    else:
        x = x.astype(programs._BF16 if dt == "bfloat16" else dt)
    x = x.reshape(shape)
    axn = draw(st.integers(0, len(shape) - 1))
    ax = draw(st.sampled_from(["", f", axis={axn}", f", axis={axn}, keepdims=True", ", axis=-1"]))
    tmpl = draw(st.sampled_from(_NANRED))
    if "lax." in tmpl or "top_k" in tmpl:
        ax = ""
    return "mix.nanred", tmpl.format(x="x0", ax=ax, axn=axn), [x]


POOLS = {"chain": chain_calls, "ovf": ovf_calls, "nanred": nanred_calls}
