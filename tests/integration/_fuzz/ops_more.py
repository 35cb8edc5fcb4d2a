"""The third part of the fuzzer's surface table: where session 7 found the generator still blind.

Boolean-mask indexing (eager: jax refuses it traced) and masks through ``where(size=)``; float->int
and float->bool conversions of NaN, inf and out-of-range values (XLA's convert semantics: NaN -> 0,
saturation); shifts by amounts at and beyond the width; ``lax``'s shifts and ``population_count`` on
every integer width; ``reduce_precision``; ``frexp``'s exponent and ``ldexp`` with array exponents;
``nextafter`` towards specials; complex functions under derivatives (``grad`` of a real function of a
complex input, ``holomorphic=True`` grad/jacfwd/jacrev, ``jvp`` with complex tangents); einsum
specifications and tensordot/matmul broadcasting; every pad mode with its options; ``roll`` over
several axes; ``clip`` with array bounds or one side None; ``where`` broadcasting a scalar;
``linspace``/``arange`` dtypes; ``lax.sort`` of three operands; stable ``argsort`` of ties; ``jvp``
with an integer input (float0 tangent); ``grad`` with ``has_aux`` and ``argnums`` tuples;
``jacfwd``/``jacrev`` of pytrees. Helpers (``_float0_jvp``) are in ``programs.HELPERS``.

>>> MORE[0].name
'getitem.bool_mask'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.opbase import B, Op, U, _axes, _Raw, keyed

_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]
_COMPLEX_FNS = ["np.sin", "np.exp", "np.tanh", "np.log", "np.sqrt", "np.square", "np.cos", "np.reciprocal"]
_EINSUM = [
    "i,i->",
    "i,j->ij",
    "ij,j->i",
    "ij,jk->ik",
    "...i,...i->...",
    "ii->i",
    "ij->ji",
    "ij,ij->j",
    "i,i->i",
]

MORE: list[Op] = [
    # boolean masks: eager indexing (data-dependent shape), and the size= form that works traced
    Op("getitem.bool_mask", f"{U}[{U} > 0]"),
    Op(
        "np.where_size",
        f"{U}[np.where({U} > 0, size={{n}}, fill_value={{fv}})]",
        params=keyed(n=st.sampled_from([0, 1, 3]), fv=st.sampled_from([None, 0, -1])),
    ),
    Op("at.bool_mask_set", f"np.where({U} < 0, {{v}}, {U})", params=keyed(v=st.sampled_from([0, -1.5]))),
    # conversions of NaN, inf and out-of-range values (drawn with specials)
    Op(
        "cast.specials",
        f"np.asarray({U}).astype({{dt}})",
        kinds="f",
        params=keyed(dt=st.sampled_from([*_INTS, "bool", "float16", "bfloat16"])),
    ),
    Op(
        "cast.scaled",
        f"lax.convert_element_type({U} * {{c}}, {{dt}})",
        kinds="f",
        params=keyed(c=st.sampled_from([1e3, 3e9, -7e4, 1e20]), dt=st.sampled_from(_INTS)),
    ),
    # shifts by amounts at and beyond the width, lax's shifts, population counts
    Op(
        "shift.wide",
        f"np.{{f}}({U}, np.asarray({{k}}, np.result_type({U})))",
        kinds="i",
        params=keyed(
            f=st.sampled_from(["left_shift", "right_shift"]).map(_Raw),
            k=st.sampled_from([0, 7, 8, 15, 16, 31, 40]),
        ),
    ),
    Op(
        "lax.shift",
        f"lax.{{f}}({U}, np.full_like({U}, {{k}}))",
        kinds="i",
        params=keyed(
            f=st.sampled_from(["shift_left", "shift_right_logical", "shift_right_arithmetic"]).map(_Raw),
            k=st.sampled_from([0, 1, 7, 8, 16, 33]),
        ),
    ),
    Op("lax.population_count", f"lax.population_count({U})", kinds="i"),
    Op("lax.clz", f"lax.clz({U})", kinds="i"),
    Op(
        "np.bitwise_invert_cast",
        f"np.invert(np.asarray({U}).astype({{dt}}))",
        kinds="bi",
        params=keyed(dt=st.sampled_from(_INTS)),
    ),  # fmt: skip
    # float bits
    Op(
        "lax.reduce_precision",
        f"lax.reduce_precision({U}, exponent_bits={{e}}, mantissa_bits={{m}})",
        kinds="f",
        params=keyed(e=st.sampled_from([5, 8, 2]), m=st.sampled_from([2, 7, 10, 0])),
    ),
    Op("np.frexp_exponent", f"np.frexp({U})[1]", kinds="f"),
    Op(
        "np.ldexp_array",
        f"np.ldexp({U}, np.asarray({B}).astype('int32'))",
        arity=2,
        kinds="f",
        specials=False,
    ),
    Op(
        "np.nextafter_special",
        f"np.nextafter({U}, {{to}})",
        kinds="f",
        params=keyed(to=st.sampled_from([_Raw("np.inf"), _Raw("-np.inf"), 0.0, _Raw("np.nan")])),
    ),
    # complex functions under derivatives
    Op(
        "complex.grad_real_of_complex",
        f"T.grad(lambda z: np.sum(np.abs({{fn}}(z)) ** 2))(np.asarray({U} * (1 + 0.5j) + 0.25j))",
        kinds="f",
        specials=False,
        params=keyed(fn=st.sampled_from(_COMPLEX_FNS).map(_Raw)),
    ),
    Op(
        "complex.holomorphic",
        f"T.{{t}}(lambda z: {{fn}}(z) * 2, holomorphic=True)(np.asarray({U} * (1 + 0.5j) + 0.25j))",
        kinds="f",
        specials=False,
        params=keyed(
            t=st.sampled_from(["jacfwd", "jacrev"]).map(_Raw), fn=st.sampled_from(_COMPLEX_FNS).map(_Raw)
        ),
    ),
    Op(
        "complex.holomorphic_grad",
        f"T.grad(lambda z: np.sum({{fn}}(z)), holomorphic=True)(np.asarray({U} * (1 - 0.5j) + 0.25j))",
        kinds="f",
        specials=False,
        params=keyed(fn=st.sampled_from(_COMPLEX_FNS).map(_Raw)),
    ),
    Op(
        "complex.jvp",
        f"T.jvp({{fn}}, (np.asarray({U} + 0.5j),), (np.asarray({U} * 0.5 - 1j),))[1]",
        kinds="f",
        specials=False,
        params=keyed(fn=st.sampled_from(_COMPLEX_FNS).map(_Raw)),
    ),
    # contractions: einsum specifications, tensordot axes, matmul broadcasting
    Op(
        "np.einsum_spec",
        f"np.einsum({{s}}, {U}, {B})",
        arity=2,
        params=keyed(s=st.sampled_from([s for s in _EINSUM if "," in s])),
    ),  # fmt: skip
    Op(
        "np.einsum_unary",
        f"np.einsum({{s}}, {U})",
        params=keyed(s=st.sampled_from(["ii->i", "ij->ji", "ij->", "i->"])),
    ),
    Op(
        "np.tensordot_axes",
        f"np.tensordot({U}, {B}, axes={{a}})",
        arity=2,
        params=keyed(a=st.sampled_from([1, 2, ([0], [0]), ([-1], [0])])),
    ),  # fmt: skip
    Op("np.matmul_batch", f"np.matmul({U}, np.swapaxes({B}, -1, -2))", arity=2),
    Op("np.vecdot", f"np.vecdot({U}, {B}, axis=-1)", arity=2),
    # pad modes and their options
    Op(
        "np.pad_modes",
        f"np.pad({U}, {{w}}, mode={{mode}})",
        params=keyed(
            w=st.sampled_from([1, (0, 2), (2, 1)]),
            mode=st.sampled_from(
                ["linear_ramp", "maximum", "minimum", "mean", "median", "empty_as_zero"]
            ).map(lambda m: _Raw("'constant', constant_values=0") if m == "empty_as_zero" else m),
        ),
    ),
    Op(
        "np.pad_options",
        f"np.pad({U}, {{w}}, mode={{mode}}, {{opt}})",
        params=keyed(
            w=st.sampled_from([1, 2, (0, 3)]),
            mode=st.sampled_from(["reflect", "symmetric", "constant", "linear_ramp", "maximum"]),
            opt=st.sampled_from(
                [
                    "reflect_type='odd'",
                    "reflect_type='even'",
                    "constant_values=(-1, 2)",
                    "end_values=3",
                    "stat_length=1",
                ]  # fmt: skip
            ).map(_Raw),
        ),
    ),
    Op(
        "np.roll_multi",
        f"np.roll({U}, {{shift}}, axis={{axis}})",
        params=keyed(
            shift=st.sampled_from([(1, -2), (3, 0), (-1, 1)]),
            axis=st.sampled_from([(0, -1), (-1, 0), (0, 0)]),
        ),
    ),
    Op("np.roll_flat", f"np.roll({U}, {{shift}})", params=keyed(shift=st.integers(-4, 4))),
    # clip with array bounds or a side None, where broadcasting a scalar
    Op(
        "np.clip_array_lo",
        f"np.clip({U}, {B}, {{hi}})",
        arity=2,
        params=keyed(hi=st.sampled_from([None, 2.0, 0])),
    ),
    Op(
        "np.clip_array_hi",
        f"np.clip({U}, {{lo}}, {B})",
        arity=2,
        params=keyed(lo=st.sampled_from([None, -1, 0.5])),
    ),
    Op("np.clip_none", f"np.clip({U}, None, {{hi}})", params=keyed(hi=st.sampled_from([0, 1.5, None]))),
    Op(
        "np.where_scalar",
        f"np.where({B} > 0, {{c}}, {U})",
        arity=2,
        params=keyed(c=st.sampled_from([0, 1.5, True])),
    ),
    # creation dtypes (arange's length and values, linspace of traced ends, integer dtypes)
    Op(
        "np.linspace",
        f"np.linspace(np.sum({U}), {{stop}}, {{n}}, endpoint={{e}}, dtype={{dt}})",
        params=keyed(
            stop=st.sampled_from([1.0, 5, -2.5]),
            n=st.sampled_from([0, 1, 4]),
            e=st.booleans(),
            dt=st.sampled_from([None, "int32", "float32", "uint8", "float16"]),
        ),
    ),
    Op(
        "np.arange",
        "np.arange({a}, {b}, {s}, dtype={dt})",  # (no operand: a constant of the program)
        params=keyed(
            a=st.sampled_from([0, 0.5, -2]),
            b=st.sampled_from([3, 2.6, 5]),
            s=st.sampled_from([1, 0.5, 2]),
            dt=st.sampled_from([None, "int32", "float32", "int8"]),
        ),
    ),
    # sorting: three operands, num_keys; stable argsort of ties
    Op(
        "lax.sort3",
        f"lax.sort(({U}, {B}, np.zeros_like({U}) + np.arange(np.shape({U})[-1] if np.ndim({U}) else 1)), "
        f"num_keys={{k}}, is_stable={{s}})[{{i}}]",
        arity=2,
        params=keyed(k=st.integers(1, 2), s=st.booleans(), i=st.integers(0, 2)),
    ),
    Op(
        "np.argsort_stable",
        f"np.argsort(np.round({U}), axis={{axis}}, stable=True)",
        params=lambda s: st.fixed_dictionaries({"axis": _axes(s, none=True)}),
    ),
    # transformations' argument forms inside the program
    Op("jvp.float0", f"_float0_jvp(T, np, {U})", kinds="f"),
    Op(
        "grad.has_aux",
        f"T.grad(lambda a, b: (np.sum(np.sin(a) * b), a * 2), argnums={{an}}, has_aux=True)({U}, {B})[{{i}}]",
        arity=2,
        kinds="f",
        params=keyed(an=st.sampled_from([0, (0,), (0, 1), (1, 0)]), i=st.integers(0, 1)),
    ),
    Op(
        "value_and_grad.argnums",
        f"T.value_and_grad(lambda a, b: np.sum(a * b - np.cos(b)), argnums={{an}})({U}, {B})[1][{{j}}]",
        arity=2,
        kinds="f",
        params=keyed(an=st.sampled_from([(0, 1), (1,)]), j=st.sampled_from([0, -1])),
    ),
    Op(
        "jac.pytree",
        f"T.{{t}}(lambda d: {{{{'a': np.sin(d['x']) * d['y'], 'b': (np.sum(d['x'] ** 2), d['y'])}}}})"
        f"({{{{'x': {U}, 'y': {B}}}}}){{path}}",
        arity=2,
        kinds="f",
        params=keyed(
            t=st.sampled_from(["jacfwd", "jacrev"]).map(_Raw),
            path=st.sampled_from(["['a']['x']", "['a']['y']", "['b'][0]['x']", "['b'][1]['y']"]).map(_Raw),
        ),
    ),
]
