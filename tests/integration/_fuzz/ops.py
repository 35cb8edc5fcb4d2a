"""The fuzzer's operation tables: public surface functions, and the primitives of op_db.

An ``Op`` is a source template over the names a program sees on either side -- ``np`` (funcgrad.numpy
or jax.numpy), ``lax``, ``nn``, ``special`` (scipy.special) -- with ``{0}``, ``{1}``, ... for its
operands and ``{name}`` for its static parameters, which ``params(shape)`` (a hypothesis strategy of
the first operand's shape) draws. ``kinds`` are the dtype kinds the operands may have; ``specials``
says whether the function is defined at NaN/inf (a program holding an op without it gets finite
inputs only). Whether a drawn application is valid (shapes, axes, dtypes) is decided by jax's
abstract evaluation when the program is drawn (``programs``), so the rules here stay loose.

``SURFACE`` is written here rather than discovered from test modules' ``CASES`` tables: the fuzzer
needs templates that run unchanged on jax, and the test modules are being moved. ``op_db_ops()``
derives the primitive table from op_db (found under tests/primitives/op_db or tests/op_db): every
entry whose primitive has a ``lax`` function of the same name on both sides and takes no static
parameters.

>>> SURFACE_BY_NAME["np.sum"].render(["x0"], {"axis": 1})
'np.sum(x0, axis=1)'
"""

from __future__ import annotations

import importlib
import pathlib
import sys

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _axes, _index, _perm, _Raw, axis, keyed

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _u(fn, **kw):
    return Op(fn, f"{fn}({U})", **kw)


def _b(fn, **kw):
    return Op(fn, f"{fn}({U}, {B})", arity=2, **kw)


_UNARY_NP = """sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 expm1 log
log2 log10 log1p sqrt cbrt square reciprocal abs negative positive sign floor ceil rint trunc sinc
deg2rad rad2deg signbit isnan isinf isfinite fabs i0 logical_not conj real imag angle""".split()
_COMPLEX_OK = set("sin cos exp log sqrt square negative abs conj real imag angle tanh".split())
_BINARY_NP = """add subtract multiply divide true_divide floor_divide remainder fmod power float_power
maximum minimum fmax fmin arctan2 hypot logaddexp logaddexp2 copysign heaviside nextafter equal
not_equal less less_equal greater greater_equal logical_and logical_or logical_xor""".split()

SURFACE: list[Op] = [
    *(_u(f"np.{f}", kinds="bifc" if f in _COMPLEX_OK else "bif") for f in _UNARY_NP),
    *(_b(f"np.{f}", kinds="bifc" if f in ("add", "multiply", "subtract") else "bif") for f in _BINARY_NP),
    Op("np.where", f"np.where({U} > 0, {U}, {B})", arity=2),
    Op(
        "np.clip",
        f"np.clip({U}, {{lo}}, {{hi}})",
        params=keyed(lo=st.sampled_from([-1.0, 0.0, None]), hi=st.sampled_from([0.0, 1.0, 2])),
    ),
    Op("np.round", f"np.round({U}, {{decimals}})", params=keyed(decimals=st.integers(0, 2))),
    Op("np.nan_to_num", f"np.nan_to_num({U})"),
    Op("np.frexp", f"np.frexp({U})[0]", kinds="f"),
    Op("np.modf", f"np.modf({U})[{{i}}]", params=keyed(i=st.integers(0, 1)), kinds="f"),
    Op("np.ldexp", f"np.ldexp({U}, 2)", kinds="f"),
    Op("np.scalar_pow", f"{U} ** {{p}}", params=keyed(p=st.sampled_from([2, 3, -1, 0.5, 2.0, 0]))),
    Op("np.rpow", f"{{b}} ** {U}", params=keyed(b=st.sampled_from([2.0, 0.5, 0.0]))),
    Op(
        "np.scale",
        f"{U} * {{c}} + {{d}}",
        params=keyed(c=st.sampled_from([2.5, -1, 0.0]), d=st.sampled_from([1, -0.5])),
    ),
    # reductions
    *(
        Op(f"np.{f}", f"np.{f}({U}, axis={{axis}})", params=axis(), kinds=k)
        for f, k in [
            ("sum", "bifc"),
            ("prod", "bif"),
            ("mean", "bifc"),
            ("std", "bif"),
            ("var", "bif"),
            ("max", "bif"),
            ("min", "bif"),
            ("ptp", "bif"),
            ("any", "bif"),
            ("all", "bif"),
            ("count_nonzero", "bif"),
            ("nansum", "bif"),
            ("nanmean", "bif"),
            ("nanmax", "bif"),
            ("nanmin", "bif"),
            ("nanstd", "bif"),
            ("nanvar", "bif"),
            ("median", "bif"),
            ("nanmedian", "bif"),
            ("nanprod", "bif"),
        ]
    ),
    *(
        Op(f"np.{f}", f"np.{f}({U}, axis={{axis}})", params=axis(none=False))
        for f in ["argmax", "argmin", "cumsum", "cumprod", "nancumsum", "sort", "argsort", "flip", "diff"]
    ),
    Op(
        "np.quantile",
        f"np.quantile({U}, {{q}}, axis={{axis}})",
        kinds="bif",
        params=lambda s: st.fixed_dictionaries(
            {"q": st.sampled_from([0.0, 0.3, 0.5, 1.0]), "axis": _axes(s)}
        ),
    ),
    Op(
        "np.percentile",
        f"np.percentile({U}, {{q}}, axis={{axis}}, method={{method}})",
        params=lambda s: st.fixed_dictionaries(
            {
                "q": st.sampled_from([25.0, 50.0, 90.0]),
                "axis": _axes(s),
                "method": st.sampled_from(["linear", "lower", "nearest", "midpoint"]),
            }
        ),
    ),
    Op("np.average", f"np.average({U}, axis={{axis}})", params=axis()),
    Op("np.std_ddof", f"np.std({U}, axis={{axis}}, ddof=1)", params=axis()),
    Op(
        "np.linalg.norm",
        f"np.linalg.norm({U}, ord={{ord}})",
        kinds="bifc",
        params=keyed(ord=st.sampled_from([None, 1, 2])),
    ),
    Op("np.vector_norm", f"np.linalg.vector_norm({U}, axis={{axis}})", params=axis()),
    Op("special.logsumexp", f"special.logsumexp({U}, axis={{axis}})", params=axis()),
    Op("np.trapezoid", f"np.trapezoid({U}, axis={{axis}})", params=axis(none=False)),
    Op(
        "np.cumulative_sum",
        f"np.cumulative_sum({U}, axis={{axis}}, include_initial=True)",
        params=axis(none=False),
    ),
    # structure
    Op("np.reshape", f"np.reshape({U}, (-1,))"),
    Op(
        "np.transpose",
        f"np.transpose({U}, {{axes}})",
        params=lambda s: st.fixed_dictionaries({"axes": _perm(s)}),
    ),
    Op("np.expand_dims", f"np.expand_dims({U}, {{axis}})", params=keyed(axis=st.integers(-1, 1))),
    Op("np.squeeze", f"np.squeeze({U})"),
    Op("np.moveaxis", f"np.moveaxis({U}, 0, -1)"),
    Op(
        "np.roll",
        f"np.roll({U}, {{shift}}, axis={{axis}})",
        params=lambda s: st.fixed_dictionaries({"shift": st.integers(-3, 3), "axis": _axes(s)}),
    ),
    Op("np.tile", f"np.tile({U}, {{reps}})", params=keyed(reps=st.sampled_from([2, (2, 1), 0]))),
    Op(
        "np.repeat",
        f"np.repeat({U}, {{r}}, axis={{axis}})",
        params=lambda s: st.fixed_dictionaries({"r": st.integers(0, 2), "axis": _axes(s)}),
    ),
    Op("np.concatenate", f"np.concatenate([{U}, {B}], axis={{axis}})", arity=2, params=axis()),
    Op("np.stack", f"np.stack([{U}, {B}], axis={{axis}})", arity=2, params=keyed(axis=st.integers(-1, 1))),
    Op("np.broadcast_to", f"np.broadcast_to({U}, (2,) + np.shape({U}))"),
    Op("np.atleast_2d", f"np.atleast_2d({U})"),
    Op("np.triu", f"np.triu({U}, {{k}})", params=keyed(k=st.integers(-1, 1))),
    Op("np.tril", f"np.tril({U}, {{k}})", params=keyed(k=st.integers(-1, 1))),
    Op("np.diagonal", f"np.diagonal({U})"),
    Op("np.trace", f"np.trace({U})"),
    Op(
        "np.pad",
        f"np.pad({U}, {{w}}, mode={{mode}})",
        params=keyed(
            w=st.sampled_from([1, (0, 2), (2, 0)]),
            mode=st.sampled_from(["constant", "edge", "reflect", "wrap", "symmetric"]),
        ),
    ),
    Op("getitem.int", f"{U}[{{i}}]", params=lambda s: st.fixed_dictionaries({"i": _index(s)})),
    Op(
        "getitem.slice",
        f"{U}[{{a}}:{{b}}]",
        params=keyed(a=st.sampled_from([None, 1, -1]), b=st.sampled_from([None, 1, -1])),
    ),
    Op("getitem.rev", f"{U}[::-1]"),
    Op("getitem.newaxis", f"{U}[..., None]"),
    Op("getitem.array", f"{U}[np.array({{idx}})]", params=keyed(idx=st.sampled_from([[0, -1], [1, 1], [0]]))),
    Op(
        "np.take",
        f"np.take({U}, np.array({{idx}}), mode={{mode}})",
        params=keyed(idx=st.sampled_from([[-1, 2, 5], [0, 0], [1]]), mode=st.sampled_from(["clip", "wrap"])),
    ),
    Op("np.take_along_axis", f"np.take_along_axis({U}, np.argsort({U}, axis=-1), axis=-1)"),
    Op(
        "at.set",
        f"np.asarray({U}).at[{{i}}].set({{v}})",
        params=lambda s: st.fixed_dictionaries({"i": _index(s), "v": st.sampled_from([-1.0, 2, 0.5])}),
    ),
    Op(
        "at.add",
        f"np.asarray({U}).at[{{i}}].add({{v}})",
        params=lambda s: st.fixed_dictionaries({"i": _index(s), "v": st.sampled_from([2.5, -1, 1.0])}),
    ),
    Op(
        "at.mul",
        f"np.asarray({U}).at[{{i}}].multiply({{v}})",
        params=lambda s: st.fixed_dictionaries({"i": _index(s), "v": st.sampled_from([2.5, -1, 0.0])}),
    ),
    Op(
        "at.min",
        f"np.asarray({U}).at[{{i}}].min({{v}})",
        params=lambda s: st.fixed_dictionaries({"i": _index(s), "v": st.sampled_from([0.5, 0])}),
    ),
    Op(
        "at.max",
        f"np.asarray({U}).at[{{i}}].max({{v}})",
        params=lambda s: st.fixed_dictionaries({"i": _index(s), "v": st.sampled_from([0.5, 0])}),
    ),
    Op(
        "at.get",
        f"np.asarray({U}).at[{{i}}].get(mode='fill', fill_value=-7)",
        params=lambda s: st.fixed_dictionaries({"i": _index(s)}),
    ),
    # contractions
    Op("np.matmul", f"np.matmul({U}, {B})", arity=2),
    Op("np.dot", f"np.dot({U}, {B})", arity=2),
    Op("np.outer", f"np.outer({U}, {B})", arity=2),
    Op("np.inner", f"np.inner({U}, {B})", arity=2),
    Op("np.kron", f"np.kron({U}, {B})", arity=2),
    Op("np.tensordot", f"np.tensordot({U}, {B}, axes=0)", arity=2),
    Op("np.einsum", f"np.einsum('...i,...i->...', {U}, {B})", arity=2),
    Op(
        "np.convolve",
        f"np.convolve({U}, {B}, mode={{mode}})",
        arity=2,
        params=keyed(mode=st.sampled_from(["full", "same", "valid"])),
    ),
    Op(
        "np.correlate",
        f"np.correlate({U}, {B}, mode={{mode}})",
        arity=2,
        params=keyed(mode=st.sampled_from(["full", "same", "valid"])),
    ),
    Op("np.polyval", f"np.polyval({U}, {B})", arity=2),
    Op("np.interp", f"np.interp({U}, np.array([-1.0, 0.0, 2.0]), np.array([0.5, -1.0, 3.0]))"),
    Op(
        "np.interp_xp",
        f"np.interp({U}, np.sort(np.ravel({B})), np.sort(np.ravel({B})) * 2.0)",
        arity=2,
        specials=False,
    ),
    Op(
        "np.searchsorted",
        f"np.searchsorted(np.array([-1.0, 0.0, 0.0, 2.0]), {U}, side={{side}})",
        params=keyed(side=st.sampled_from(["left", "right"])),
    ),
    Op("np.unwrap", f"np.unwrap({U})"),
    # nn
    *(
        _u(f"nn.{f}")
        for f in """relu relu6 sigmoid softplus silu elu selu celu log_sigmoid hard_tanh
      hard_sigmoid hard_swish mish squareplus sparse_plus soft_sign""".split()
    ),
    Op("nn.gelu", f"nn.gelu({U}, approximate={{a}})", params=keyed(a=st.booleans())),
    Op("nn.leaky_relu", f"nn.leaky_relu({U}, 0.1)"),
    Op("nn.softmax", f"nn.softmax({U}, axis={{axis}})", params=axis(none=False)),
    Op("nn.log_softmax", f"nn.log_softmax({U}, axis={{axis}})", params=axis(none=False)),
    Op("nn.logsumexp", f"nn.logsumexp({U}, axis={{axis}})", params=axis()),
    Op("nn.standardize", f"nn.standardize({U}, axis={{axis}})", params=axis(none=False)),
    Op("nn.one_hot", f"nn.one_hot({U}, 3)"),
    # scipy.special
    *(
        _u(f"special.{f}")
        for f in """erf erfc erfinv gammaln digamma expit logit entr ndtr ndtri log_ndtr
      i0e i1 i1e gamma""".split()
    ),
    *(_b(f"special.{f}") for f in ["xlogy", "xlog1py"]),
    Op("special.polygamma", f"special.polygamma(1, {U})"),
    # lax (functions beyond op_db's elementwise primitives)
    Op("lax.cummax", f"lax.cummax({U}, axis={{axis}})", params=axis(none=False)),
    # (floats only: funcgrad refuses integers with a TypeError; jax's eager call overflows converting
    # -inf, its compiled one returns wrapped numbers)
    Op("lax.cumlogsumexp", f"lax.cumlogsumexp({U}, axis={{axis}})", params=axis(none=False), kinds="f"),
    Op("lax.top_k", f"lax.top_k({U}, {{k}})[{{i}}]", params=keyed(k=st.integers(1, 2), i=st.integers(0, 1))),
    Op("lax.integer_pow", f"lax.integer_pow({U}, {{p}})", params=keyed(p=st.sampled_from([0, 2, 3, -2]))),
    Op("lax.sort", f"lax.sort({U})"),
    Op("lax.rev", f"lax.rev({U}, (0,))"),
    Op("lax.reduce_max", f"lax.reduce_max({U}, (0,))"),
    # control flow (the branches and bodies are fixed lambdas over the operands)
    Op("lax.cond", f"lax.cond(np.sum({U}) > 0, lambda a: np.sin(a) * 2, lambda a: np.cos(a) - a, {U})"),
    Op(
        "lax.switch",
        f"lax.switch({{i}}, [lambda a: a * a, lambda a: -a, np.tanh], {U})",
        params=keyed(i=st.integers(-1, 3)),
    ),
    Op(
        "lax.fori_loop",
        f"lax.fori_loop(0, {{n}}, lambda i, a: a * 0.5 + np.sin(a) * i, {U})",
        params=keyed(n=st.integers(0, 3)),
    ),
    Op(
        "lax.scan",
        f"lax.scan(lambda c, a: (c + a, c * a), np.zeros_like({U}[0]), {U})[{{i}}]",
        params=keyed(i=st.integers(0, 1)),
    ),
    Op("lax.scan_reverse", f"lax.scan(lambda c, a: (c * 0.5 + a, np.sin(c)), {U}[0], {U}, reverse=True)[1]"),
    Op("lax.map", f"lax.map(lambda a: np.sum(a * a), {U})"),
    Op("lax.associative_scan", f"lax.associative_scan(np.add, {U}, axis={{axis}})", params=axis(none=False)),
    Op(
        "lax.while_loop",
        # at most 3 trips: a * 2 + 0.5 has the fixed point -0.5 (and an empty a sums to 0 forever)
        f"lax.while_loop(lambda c: (c[0] < 3) & (np.sum(np.abs(c[1])) < 4.0), "
        f"lambda c: (c[0] + 1, c[1] * 2 + 0.5), (0, {U}))[1]",
        specials=False,
    ),
    Op("lax.select", f"lax.select({U} > {B}, {U}, {B})", arity=2),
    Op("np.piecewise", f"np.piecewise({U}, [{U} < 0, {U} > 1], [lambda a: -a, lambda a: a * a, 0.5])"),
    # linear algebra and fft: each on a well-conditioned matrix built from the operand (_matrix)
    *(
        Op(
            f"linalg.{f}",
            f"np.linalg.{f}(_matrix(np, {U}, {{kind}}))",
            kinds="bif",
            specials=False,
            params=keyed(kind=st.sampled_from(kinds)),
        )
        for f, kinds in [
            ("det", ["any", "spd"]),
            ("inv", ["any"]),
            ("eigvalsh", ["sym", "spd"]),
            ("cholesky", ["spd"]),
            ("pinv", ["any"]),
            ("matrix_norm", ["any"]),
        ]
    ),
    Op("linalg.slogdet", f"np.linalg.slogdet(_matrix(np, {U}, 'any'))[1]", specials=False),
    Op(
        "linalg.solve",
        f"np.linalg.solve(_matrix(np, {U}, 'any'), np.ravel({B})[:2] if np.size({B}) >= 2 else np.ones(2))",
        arity=2,
        specials=False,
    ),
    Op("linalg.svdvals", f"np.linalg.svd(_matrix(np, {U}, 'any'), compute_uv=False)", specials=False),
    Op("linalg.eigh_vec_abs", f"np.abs(np.linalg.eigh(_matrix(np, {U}, 'sym'))[1])", specials=False),
    Op("linalg.qr_r", f"np.linalg.qr(_matrix(np, {U}, 'any'))[1]", specials=False),
    Op(
        "linalg.matrix_power",
        f"np.linalg.matrix_power(_matrix(np, {U}, 'any'), {{n}})",
        specials=False,
        params=keyed(n=st.integers(-1, 3)),
    ),
    *(
        Op(f"fft.{f}", f"np.fft.{f}({U})", kinds="bifc", specials=False)
        for f in ["fft", "ifft", "rfft", "fftn"]
    ),
    Op("fft.irfft", f"np.fft.irfft({U}, n=4)", kinds="bifc", specials=False),
    Op("fft.fftshift", f"np.fft.fftshift({U})", kinds="bifc"),
]

# Integers, promotion with weak Python scalars, reductions with where=/initial=, cumulative ops,
# sorting with ties and NaN, out-of-bounds indexing and scatter modes, more control flow, custom
# derivatives, checkpointing and transformations inside a program.
_SCALARS = [2, -2, 3, 0, 0.5, -1.5, True]
_INT_DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "float16", "bfloat16", "float32", "bool"]
_OOB = [[5, -7, 1], [-4, 3], [2, 2, -1], [0, -1, 0]]


def _axis_and(**strategies):
    return lambda s: st.fixed_dictionaries({"axis": _axes(s), **strategies})


SURFACE += [
    *(_b(f"np.{f}", kinds="bi") for f in "bitwise_and bitwise_or bitwise_xor left_shift right_shift".split()),
    # (operands clipped: jax's gcd loop never ends at the int32 minimum, whose abs is negative)
    *(
        Op(f"np.{f}", f"np.{f}(np.clip({U}, -100, 100), np.clip({B}, -100, 100))", arity=2, kinds="i")
        for f in ["gcd", "lcm"]
    ),
    *(_u(f"np.{f}", kinds="bi") for f in ["invert", "bitwise_count"]),
    Op("np.divmod", f"np.divmod({U}, {B})[{{i}}]", arity=2, params=keyed(i=st.integers(0, 1))),
    # weak-typed Python scalars on either side (NumPy 2 / jax promotion; division by 0 and negatives)
    *(
        Op(f"scalar.{name}", expr, params=keyed(c=st.sampled_from(_SCALARS)))
        for name, expr in [
            ("floordiv", f"{U} // {{c}}"),
            ("mod", f"{U} % {{c}}"),
            ("rfloordiv", f"{{c}} // {U}"),
            ("rmod", f"{{c}} % {U}"),
            ("rsub", f"{{c}} - {U}"),
            ("rdiv", f"{{c}} / {U}"),
            ("lt", f"{U} < {{c}}"),
            ("eq", f"{U} == {{c}}"),
            ("maximum", f"np.maximum({U}, {{c}})"),
            ("where", f"np.where({U} > 0, {U}, {{c}})"),
        ]
    ),
    Op(
        "scalar.shift",
        f"{U} {{op}} {{c}}",
        kinds="i",
        params=keyed(op=st.sampled_from([">>", "<<"]), c=st.sampled_from([1, 3, 31, 33])),
    ),
    Op(
        "scalar.and",
        f"{U} {{op}} {{c}}",
        kinds="bi",
        params=keyed(op=st.sampled_from(["&", "|", "^"]), c=st.sampled_from([1, 6, -1, True])),
    ),
    Op("scalar.big", f"{U} + {{c}}", kinds="bi", params=keyed(c=st.sampled_from([300, -1, 70000, 2**31]))),
    Op(
        "np.astype",
        f"np.asarray({U}).astype({{dt}})",
        params=keyed(dt=st.sampled_from(_INT_DTYPES)),
        specials=False,
    ),
    Op(
        "lax.convert",
        f"lax.convert_element_type({U}, {{dt}})",
        params=keyed(dt=st.sampled_from(_INT_DTYPES)),
        specials=False,
    ),
    # reductions with where= / initial= / keepdims / dtype
    Op("np.sum_where", f"np.sum({U}, axis={{axis}}, where={U} > 0)", params=axis()),
    Op("np.prod_where", f"np.prod({U}, axis={{axis}}, where={U} < 2)", params=axis()),
    Op("np.mean_where", f"np.mean({U}, axis={{axis}}, where={U} > 0)", params=axis()),
    Op("np.var_where", f"np.var({U}, axis={{axis}}, where={U} >= 0)", params=axis()),
    Op("np.any_where", f"np.any({U}, axis={{axis}}, where={U} < 1)", params=axis()),
    Op("np.all_where", f"np.all({U}, axis={{axis}}, where={U} != 0)", params=axis()),
    Op(
        "np.max_initial",
        f"np.max({U}, axis={{axis}}, initial={{init}})",
        params=_axis_and(init=st.sampled_from([0, -1.5, 2])),
    ),
    Op(
        "np.min_where",
        f"np.min({U}, axis={{axis}}, where={U} != 1, initial={{init}})",
        params=_axis_and(init=st.sampled_from([0, 5, 2.5])),
    ),
    Op(
        "np.sum_initial",
        f"np.sum({U}, axis={{axis}}, initial={{init}}, keepdims=True)",
        params=_axis_and(init=st.sampled_from([1, -0.5])),
    ),
    Op(
        "np.sum_dtype",
        f"np.sum({U}, axis={{axis}}, dtype={{dt}})",
        params=_axis_and(dt=st.sampled_from(["int8", "uint8", "float16", "int32", "float32"])),
    ),
    Op("np.argmax_keepdims", f"np.argmax({U}, axis={{axis}}, keepdims=True)", params=axis(none=False)),
    Op("np.nanargmin", f"np.nanargmin({U}, axis={{axis}})", params=axis(none=False)),
    # cumulative
    Op(
        "np.cumulative_prod",
        f"np.cumulative_prod({U}, axis={{axis}}, include_initial={{b}})",
        params=lambda s: st.fixed_dictionaries({"axis": _axes(s, none=False), "b": st.booleans()}),
    ),
    Op("np.nancumprod", f"np.nancumprod({U}, axis={{axis}})", params=axis(none=False)),
    Op("np.cumsum_flat", f"np.cumsum({U})"),
    Op(
        "np.cumsum_dtype",
        f"np.cumsum({U}, axis={{axis}}, dtype={{dt}})",
        params=lambda s: st.fixed_dictionaries(
            {"axis": _axes(s, none=False), "dt": st.sampled_from(["int8", "int32", "float16", "float32"])}
        ),
    ),
    *(
        Op(
            f"lax.{f}_rev",
            f"lax.{f}({U}, axis={{axis}}, reverse={{r}})",
            params=lambda s: st.fixed_dictionaries({"axis": _axes(s, none=False), "r": st.booleans()}),
        )
        for f in ["cumsum", "cumprod", "cummin", "cummax"]
    ),
    # sorting: ties, NaN, descending, several operands
    Op(
        "np.sort_desc",
        f"np.sort({U}, axis={{axis}}, descending=True, stable={{s}})",
        params=lambda sh: st.fixed_dictionaries({"axis": _axes(sh, none=False), "s": st.booleans()}),
    ),
    Op(
        "np.argsort_desc",
        f"np.argsort({U}, axis={{axis}}, descending=True, stable=True)",
        params=axis(none=False),
    ),
    Op(
        "lax.sort_multi",
        f"lax.sort(({U}, {B}), num_keys={{k}})[{{i}}]",
        arity=2,
        params=keyed(k=st.integers(1, 2), i=st.integers(0, 1)),
    ),
    Op("np.lexsort", f"np.lexsort(({U}, {B}))", arity=2),
    Op(
        "np.partition_kth",
        f"np.partition({U}, {{k}}, axis=-1)[..., {{k}}]",
        params=keyed(k=st.integers(0, 1)),
    ),
    Op(
        "np.unique_size",
        f"np.unique({U}, size=3, fill_value={{fv}})",
        params=keyed(fv=st.sampled_from([None, -1])),
    ),
    Op(
        "np.searchsorted_sorted",
        f"np.searchsorted(np.sort(np.ravel({B})), {U}, side={{side}})",
        arity=2,
        params=keyed(side=st.sampled_from(["left", "right"])),
    ),
    # indexing: negative and out-of-bounds indices (jax clamps a gather, drops a scatter), modes
    Op("getitem.oob", f"{U}[np.array({{idx}})]", params=keyed(idx=st.sampled_from(_OOB))),
    Op("getitem.oob2", f"{U}[..., np.array({{idx}})]", params=keyed(idx=st.sampled_from(_OOB))),
    Op(
        "at.get_mode",
        f"np.asarray({U}).at[np.array({{idx}})].get(mode={{mode}}, fill_value={{fv}})",
        params=keyed(
            idx=st.sampled_from(_OOB),
            mode=st.sampled_from(["fill", "clip", None]),
            fv=st.sampled_from([None, -7, 0.5]),
        ),
    ),
    Op(
        "at.scatter",
        f"np.asarray({U}).at[np.array({{idx}})].{{method}}({{v}}, mode={{mode}})",
        params=keyed(
            idx=st.sampled_from(_OOB),
            method=st.sampled_from(["set", "add", "multiply", "min", "max", "divide", "power"]),
            v=st.sampled_from([2, -1.5, 0.5]),
            mode=st.sampled_from([None, "drop", "clip"]),
        ),
    ),
    Op(
        "at.scatter_operand",
        f"np.asarray({U}).at[{{i}}].{{method}}(np.sum({B}))",
        arity=2,
        params=lambda s: st.fixed_dictionaries(
            {"i": _index(s), "method": st.sampled_from(["set", "add", "multiply", "min", "max"])}
        ),
    ),
    Op(
        "at.slice",
        f"np.asarray({U}).at[{{sl}}].{{method}}({{v}})",
        params=keyed(
            sl=st.sampled_from(["1:", "::-1", "..., :1", ":-1"]).map(lambda t: _Raw(t)),
            method=st.sampled_from(["set", "add", "multiply"]),
            v=st.sampled_from([2, -1.5]),
        ),
    ),
    Op(
        "np.take_fill",
        f"np.take({U}, np.array({{idx}}), axis={{axis}}, mode='fill', fill_value={{fv}})",
        params=lambda s: st.fixed_dictionaries(
            {"idx": st.sampled_from(_OOB), "axis": _axes(s), "fv": st.sampled_from([None, 3])}
        ),
    ),
    Op(
        "np.take_along_oob",
        f"np.take_along_axis({U}, np.argsort({U}, axis=-1) * 2 - 1, axis=-1, mode={{mode}})",
        params=keyed(mode=st.sampled_from([None, "clip", "fill"])),
    ),
    Op(
        "lax.dynamic_slice",
        f"lax.dynamic_slice_in_dim({U}, {{start}}, {{size}})",
        params=keyed(start=st.sampled_from([-1, 5, 1, 0]), size=st.integers(0, 2)),
    ),
    Op("lax.dynamic_slice_traced", f"lax.dynamic_slice_in_dim({U}, np.sum({U} > 0), 1)"),
    Op(
        "lax.dynamic_update",
        f"lax.dynamic_update_slice_in_dim({U}, {U}[:1] * 2, {{start}}, axis=0)",
        params=keyed(start=st.sampled_from([-1, 5, 1])),
    ),
    Op(
        "lax.dynamic_index",
        f"lax.dynamic_index_in_dim({U}, {{i}}, keepdims=False)",
        params=keyed(i=st.sampled_from([-1, 4, 0])),
    ),
    # control flow over several operands and integer values
    Op(
        "lax.associative_scan_tree",
        f"lax.associative_scan(lambda a, b: (a[0] + b[0], np.maximum(a[1], b[1])), ({U}, {B}), "
        f"reverse={{r}}, axis={{axis}})[{{i}}]",
        arity=2,
        params=lambda s: st.fixed_dictionaries(
            {"r": st.booleans(), "axis": _axes(s, none=False), "i": st.integers(0, 1)}
        ),
    ),
    Op("lax.cond_float_pred", f"lax.cond(np.sum({U}) * 1.0, lambda a: a * 2, lambda a: a - 1, {U})"),
    Op("lax.cond2", f"lax.cond(np.any({U} > 1), lambda a, b: a + b, lambda a, b: a * b, {U}, {B})", arity=2),
    Op("lax.switch_traced", f"lax.switch(np.sum({U} > 0), [lambda a: a * 2, lambda a: a - 1, np.cos], {U})"),
    Op(
        "lax.fori_carry",
        f"lax.fori_loop(0, {{n}}, lambda i, c: (c[0] + i, c[1] * 1.5 - c[0]), (0, {U}))[1]",
        params=keyed(n=st.integers(0, 3)),
    ),
    Op(
        "lax.scan_length",
        f"lax.scan(lambda c, _: (c * 0.5 + 1, c), {U}, None, length={{n}}, unroll={{u}})[1]",
        params=keyed(n=st.integers(0, 3), u=st.sampled_from([1, 2])),
    ),
    Op(
        "lax.while_count",
        f"lax.while_loop(lambda c: c[0] < {{n}}, lambda c: (c[0] + 1, c[1] + c[1] * c[0]), (0, {U}))[1]",
        params=keyed(n=st.integers(0, 3)),
    ),
    # custom derivatives, checkpointing, transformations inside the program
    Op("custom_jvp", f"_custom_jvp(T, np, {U})", kinds="f"),
    Op("custom_vjp", f"_custom_vjp(T, np, {U})", kinds="f", specials=False),
    Op(
        "checkpoint",
        f"T.checkpoint(lambda a: np.sin(a) * np.exp(-a * a), policy={{p}})({U})",
        kinds="f",
        params=keyed(
            p=st.sampled_from(
                [
                    "None",
                    "T.checkpoint_policies.nothing_saveable",
                    "T.checkpoint_policies.everything_saveable",
                ]
            ).map(lambda t: _Raw(t))
        ),
    ),
    Op("inner.grad", f"T.grad(lambda a: np.sum(np.sin(a) * a))({U})", kinds="f"),
    Op("inner.jacfwd", f"T.jacfwd(lambda a: np.tanh(a) * 2)({U})", kinds="f"),
    Op("inner.hessian", f"T.hessian(lambda a: np.sum(a ** 3))({U})", kinds="f"),
    Op(
        "inner.vmap",
        f"T.vmap(lambda a: np.sum(a * a), in_axes={{ax}})({U})",
        params=keyed(ax=st.sampled_from([0, -1, 1])),
    ),
    Op(
        "inner.vmap_out",
        f"T.vmap(lambda a: a[::-1] * 2, in_axes={{ax}}, out_axes={{ox}})({U})",
        params=keyed(ax=st.sampled_from([0, -1]), ox=st.sampled_from([0, -1, 1])),
    ),
    Op("inner.vmap2", f"T.vmap(lambda a, b: a * b - b, in_axes=(0, None))({U}, {B})", arity=2),
]


# (the newer part of the table: ops_extra)
from _fuzz.ops_comp import COMP  # noqa: E402
from _fuzz.ops_edges import EDGES  # noqa: E402
from _fuzz.ops_extra import EXTRA  # noqa: E402
from _fuzz.ops_lax import LAX  # noqa: E402
from _fuzz.ops_mix import MIX  # noqa: E402
from _fuzz.ops_models import MODELS  # noqa: E402
from _fuzz.ops_more import MORE  # noqa: E402
from _fuzz.ops_prog import PROG  # noqa: E402
from _fuzz.ops_shard import SHARD  # noqa: E402
from _fuzz.ops_struct import STRUCT  # noqa: E402
from _fuzz.ops_tcomp import TCOMP  # noqa: E402
from _fuzz.ops_wide import WIDE  # noqa: E402

SURFACE += EXTRA + MORE + EDGES + STRUCT + MIX + WIDE + COMP + MODELS + PROG + SHARD + LAX + TCOMP
SURFACE_BY_NAME = {op.name: op for op in SURFACE}
assert len(SURFACE_BY_NAME) == len(SURFACE), "duplicate op names"


def _find_op_db():
    """Import op_db from wherever it lives now (tests/primitives/op_db after the reorganisation,
    tests/op_db before); its modules import themselves as the top-level package ``op_db``."""
    if "op_db" in sys.modules:
        return sys.modules["op_db"]
    for parent in (ROOT / "tests" / "primitives", ROOT / "tests"):
        if (parent / "op_db" / "__init__.py").exists():
            if str(parent) not in sys.path:
                sys.path.insert(0, str(parent))
            return importlib.import_module("op_db")
    raise ImportError("op_db not found under tests/primitives/ or tests/")


_KINDS = {"b": "b", "i": "i", "u": "i", "f": "f", "c": "c"}


def op_db_ops() -> list[Op]:
    """The primitive table as fuzzer ops: each op_db entry of a primitive with a parameter-free
    ``lax`` function of its name in funcgrad and jax (elementwise arithmetic, comparisons, special
    functions), taking 1 or 2 operands of the dtypes the entry lists."""
    import jax.lax
    import numpy as np

    import funcgrad.lax

    op_db = _find_op_db()
    rng = np.random.default_rng(0)
    out = {}
    for entry in op_db.OPS:
        name = entry.name
        if entry.named_axis or not (hasattr(jax.lax, name) and hasattr(funcgrad.lax, name)):
            continue
        sample = op_db.sample_inputs(entry, entry.dtypes[0], rng)[0]
        if (
            sample.params
            or len(sample.args) not in (1, 2)
            or name in ("stop_gradient", "optimization_barrier")
        ):
            continue
        kinds = "".join(sorted({_KINDS[np.dtype(d).kind] for d in entry.dtypes}))
        operands = ", ".join(f"{{{i}}}" for i in range(len(sample.args)))
        out[name] = Op(
            f"lax.{name}", f"lax.{name}({operands})", arity=len(sample.args), kinds=kinds, source="op_db"
        )
    return list(out.values())
