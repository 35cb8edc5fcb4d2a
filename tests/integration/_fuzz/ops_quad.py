"""The four-way table (session 20): each drawn call run eagerly and under ``jit``, in JAX's 32-bit mode
and in 64-bit mode, then its first derivatives (``jvp`` and ``vjp``) in float64.

The other tables draw one mode and one stack of transformations per case, so a call drawn under
``jit`` is never seen eagerly (funcgrad's eager interpreter computes many primitives on the host,
apart from XLA), and the long runs were mostly 64-bit. Here one drawn call is six cases (``quad``):
``eager``/``jit`` x ``x64``/``x32`` (values, dtypes, shapes and weak types compared with jax's), and
where its first input is floating, ``jvp`` and ``vjp`` in 64-bit mode. Calls come from three pools:

- ``lax``: ops_lax's and ops_lax2's draws (``jax.lax`` primitives with random *parameters*:
  conv_general_dilated's dimension numbers/strides/padding/dilations/group counts/
  preferred_element_type, reduce_window and its gradients, gather/scatter dimension numbers and
  modes, dynamic slices out of range, pad, sort/top_k, cumulative ops, bit ops, casts, ...) over an
  operand ``a`` whose elements feed every array (``_mat``);
- ``lax_more`` (drawn in ``lax`` too): lax calls ops_lax does not draw (integer_pow's negative
  exponents, iota, split, concatenation of empty operands, reductions over chosen axes,
  approx_max_k, scatter_apply, multi-key sorts with NaN and -0, reduce_window with negative padding);
- ``edge`` (``ops_quad_edge``): jax.numpy functions over *edge inputs* (empty arrays, 0-d, size-1
  axes, NaN/inf/-0, huge/tiny magnitudes, integer minimum/maximum): linalg, fft with every norm and
  lengths, nan-reductions, quantile methods, histogram/bincount/digitize/searchsorted, interp,
  unwrap, convolve/correlate, polynomials, trapezoid, cross, kron, elementwise functions.

Session 21's pools: ``sig`` (ops_sig: signature-driven calls of every jax.numpy/linalg/fft/nn/
scipy.special function; ``sig:new`` the functions no older table names) and ``random``/``index``/
``half`` (ops_quad_more). Session 22's: ``chain``/``ovf``/``nanred`` (ops_quad_mix: dtype-mixing
chains with weak and strong scalars, integer and float edges and casts, NaN/inf/-0 through
reductions). A call hypothesis draws twice runs once.

Run (from tests/integration; one core): ``python -m _fuzz.ops_quad --seed 1 --calls 50 [--pool lax]
[--out DIR]`` prints each disagreement with its reproducer script; the suite's CI piece
(test_differential_fuzz.py::test_fuzz_four_ways) runs a few calls of each pool.

>>> sorted(POOLS)
['chain', 'edge', 'half', 'index', 'lax', 'lax_more', 'nanred', 'ovf', 'random', 'sig']
"""

from __future__ import annotations

import argparse
import os
import pathlib

import numpy as onp
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from _fuzz import compare, ops_quad_mix, ops_quad_more, ops_sig, programs
from _fuzz.opbase import Op
from _fuzz.ops_lax import _DRAWS as _LAX_DRAWS
from _fuzz.ops_quad_edge import _F_PLAIN, EDGE_DRAWS

# ----------------------------------------------------------------------------------------------
# lax draws ops_lax/ops_lax2 do not make (text over a, b as theirs)


def _lm(shape, dtype, src="a", scale=None):
    x = f"_mat(np, {src}, {tuple(shape)!r}, np.{dtype})"
    return (
        x
        if scale is None
        else f"(_mat(np, {src}, {tuple(shape)!r}, np.float64) * {scale}).astype(np.{dtype})"
    )


_LDT = ["float32", "float64", "float16", "bfloat16"]
_LIDT = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _lax_more(draw):
    which = draw(
        st.sampled_from(
            [
                "integer_pow",
                "iota",
                "split",
                "concatenate",
                "reduce_axes",
                "clamp",
                "approx_k",
                "cum_int",
                "sort_keys",
                "reduce_window_neg",
                "reduce_precision_half",
                "scatter_apply",
                "top_k_half",
                "rem_float",
            ]
        )
    )
    shape = tuple(draw(st.sampled_from([0, 1, 2, 3])) for _ in range(draw(st.integers(0, 3))))
    nd = len(shape)
    if which == "integer_pow":
        k = draw(st.integers(-3, 4))
        dt = draw(st.sampled_from(_LDT + _LIDT + ["complex64"]))
        x = _lm(shape, dt, scale=draw(st.sampled_from(["1", "0", "300", "1e-3"])))
        return f"lax.integer_pow({x}, {k})"
    if which == "iota":
        dt = draw(st.sampled_from(_LDT + _LIDT))
        if draw(st.booleans()) or not nd:
            return f"lax.iota(np.{dt}, {draw(st.integers(0, 300))}) + np.zeros((), np.{dt})"
        return f"lax.broadcasted_iota(np.{dt}, {shape!r}, {draw(st.integers(0, nd - 1))})"
    if which == "split":
        if not nd:
            shape, nd = (3,), 1
        ax = draw(st.integers(-nd, nd - 1))
        n = shape[ax]
        cuts = sorted(draw(st.integers(0, n)) for _ in range(draw(st.integers(0, 3))))
        sizes = [b - a_ for a_, b in zip([0] + cuts, cuts + [n])]
        if draw(st.integers(0, 7)) == 0:
            sizes[-1] += 1
        dt = draw(st.sampled_from(_LDT + ["int32", "bool"]))
        return f"_one_dtype(T, np, lax.split({_lm(shape, dt)}, {tuple(sizes)}, axis={ax}))"
    if which == "concatenate":
        if not nd:
            shape, nd = (2,), 1
        ax = draw(st.integers(0, nd - 1))
        parts = []
        for _ in range(draw(st.integers(1, 4))):
            sh = list(shape)
            sh[ax] = draw(st.sampled_from([0, 0, 1, 2]))
            parts.append(sh)
        dt = draw(st.sampled_from(_LDT + ["int32", "bool", "uint8"]))
        srcs = ", ".join(_lm(sh, dt, "ab"[i % 2]) for i, sh in enumerate(parts))
        return f"lax.concatenate([{srcs}], {ax})"
    if which == "reduce_axes":
        fn = draw(
            st.sampled_from(
                [
                    "reduce_sum",
                    "reduce_prod",
                    "reduce_max",
                    "reduce_min",
                    "reduce_and",
                    "reduce_or",
                    "reduce_xor",
                    "argmax",
                    "argmin",
                ]
            )
        )
        dt = draw(
            st.sampled_from(
                ["bool", "int8", "uint32", "int32"]
                if fn in ("reduce_and", "reduce_or", "reduce_xor")
                else _LDT + _LIDT
            )
        )
        x = _lm(shape, dt, scale=draw(st.sampled_from(["1", "40", "1e5"])))
        if fn.startswith("arg"):
            if not nd:
                return f"lax.{fn}({_lm((2,), dt)}, 0, np.int32)"
            idt = draw(st.sampled_from(["int32", "int64", "uint8"]))
            return f"lax.{fn}({x}, {draw(st.integers(0, nd - 1))}, np.{idt})"
        axes = tuple(sorted(draw(st.permutations(range(nd)))[: draw(st.integers(0, nd))]))
        return f"lax.{fn}({x}, {axes})"
    if which == "clamp":
        dt = draw(st.sampled_from(_LDT + _LIDT))
        x = _lm(shape, dt, scale="3")
        lo = draw(
            st.sampled_from(
                ["np.array(-1, np.{d})", "np.array(2, np.{d})", "-1", "0.5", _lm(shape, dt, "b", "2")]
            )
        ).format(d=dt)
        hi = draw(
            st.sampled_from(["np.array(1, np.{d})", "np.array(-2, np.{d})", "2", _lm(shape, dt, "b", "4")])
        ).format(d=dt)
        return f"lax.clamp({lo}, {x}, {hi})"
    if which == "approx_k":
        if not nd or shape[-1] == 0:
            shape, nd = shape[:-1] + (3,), max(nd, 1)
        fn = draw(st.sampled_from(["approx_max_k", "approx_min_k"]))
        dt = draw(st.sampled_from(["float32", "float64", "bfloat16", "float16"]))
        k = draw(st.integers(1, shape[-1]))
        rd = draw(st.sampled_from(["", ", recall_target=0.9", ", reduction_dimension=0"]))
        # (no ties: jax's CPU fallback orders tied values as XLA's unstable sort leaves them, e.g.
        # the indices [8, 16, 15] for approx_min_k(ones(17), 3); funcgrad's are the first, exact)
        m = _lm(shape, "float64")
        x = f"(np.reshape(np.argsort(np.ravel({m})), {shape!r}) + {m} * 0.01).astype(np.{dt})"
        return f"_one_dtype(T, np, lax.{fn}({x}, {k}{rd}))"
    if which == "cum_int":
        if not nd:
            shape, nd = (3,), 1
        fn = draw(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin"]))
        dt = draw(st.sampled_from(_LIDT + ["bool"]))
        x = _lm(shape, dt, scale=draw(st.sampled_from(["7", "100", "1e4"])))
        return f"lax.{fn}({x}, axis={draw(st.integers(0, nd - 1))}, reverse={draw(st.booleans())})"
    if which == "sort_keys":
        if not nd:
            shape, nd = (4,), 1
        dim = draw(st.integers(0, nd - 1))
        f64 = _lm(shape, "float64")
        k1 = f"np.where(np.abs({f64}) > 1.2, np.nan, np.round({f64}) * 0.0)"
        k1 = draw(
            st.sampled_from([k1, f"np.round({_lm(shape, 'float64')})", f"-{_lm(shape, 'float64')} * 0.0"])
        )
        dt = draw(st.sampled_from(["float32", "float64", "float16", "int32"]))
        k2 = f"np.round({_lm(shape, 'float64', 'b')} * 2).astype(np.{dt})"
        k3 = f"lax.broadcasted_iota(np.int32, {shape!r}, {dim})"
        nk = draw(st.integers(1, 3))
        return (
            f"_one_dtype(T, np, lax.sort(({k1}.astype(np.{dt}), {k2}, {k3}), dimension={dim}, "
            f"is_stable=True, num_keys={nk}))"
        )
    if which == "reduce_window_neg":
        if not nd:
            shape, nd = (3,), 1
        dt = draw(st.sampled_from(_LDT + ["int32"]))
        pad = [(draw(st.integers(-2, 2)), draw(st.integers(-2, 2))) for _ in range(nd)]
        win = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        if all(w == 1 for w in win):
            # (a window of ones with a negative padding aborts XLA's algebraic simplifier in jaxlib
            # 0.10.2, jax's process and funcgrad's alike: reduce_window(x, -inf, max, (1,), (1,),
            # [(0, -1)]) of a float32/float16 x under jit, 'Check failed: computation->Accept')
            win = (2,) + win[1:]
        strides = tuple(draw(st.integers(1, 2)) for _ in range(nd))
        fn, init = draw(st.sampled_from([("lax.add", "0"), ("lax.max", "-np.inf"), ("lax.min", "np.inf")]))
        if dt == "int32":
            init = {"0": "0", "-np.inf": "-2147483648", "np.inf": "2147483647"}[init]
        return (
            f"lax.reduce_window({_lm(shape, dt)}, np.array({init}, np.{dt}), {fn}, {win}, {strides}, {pad!r})"
        )
    if which == "reduce_precision_half":
        dt = draw(st.sampled_from(["float16", "bfloat16", "float32", "float64"]))
        e, m = draw(st.integers(1, 11)), draw(st.integers(0, 52))
        x = _lm(shape, dt, scale=draw(st.sampled_from(["1", "1e4", "60000", "1e-6"])))
        return f"lax.reduce_precision({x}, exponent_bits={e}, mantissa_bits={m})"
    if which == "scatter_apply":
        n = draw(st.integers(1, 4))
        idx = [draw(st.integers(-2, n + 1)) for _ in range(draw(st.integers(0, 4)))]
        mode = draw(st.sampled_from(["None", "'clip'", "'drop'", "'fill'"]))
        dt = draw(st.sampled_from(_LDT + ["int32"]))
        fn = draw(
            st.sampled_from(["lambda v: v * 2", "lambda v: -v", "np.sin" if dt != "int32" else "np.abs"])
        )
        dn = (
            "lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
            "scatter_dims_to_operand_dims=(0,))"
        )
        return (
            f"lax.scatter_apply({_lm((n,), dt)}, np.array({idx!r}, np.int32).reshape(({len(idx)}, 1)), "
            f"{fn}, {dn}, update_shape=({len(idx)},), mode={mode})"
        )
    if which == "top_k_half":
        if not nd or shape[-1] == 0:
            shape, nd = shape[:-1] + (4,), max(nd, 1)
        dt = draw(st.sampled_from(["float16", "bfloat16", "float32", "int8", "uint32"]))
        f64, g64 = _lm(shape, "float64"), _lm(shape, "float64", "b")
        x = f"np.where({f64} > 1.5, np.nan, {f64} * 0.0 - np.round({g64}))"
        if dt[0] in "iu":
            x = f"np.round({_lm(shape, 'float64')} * 3)"
        return f"_one_dtype(T, np, lax.top_k(({x}).astype(np.{dt}), {draw(st.integers(0, shape[-1]))}))"
    dt = draw(st.sampled_from(_LDT))
    x, y = _lm(shape, dt, scale="7"), _lm(shape, dt, "b", draw(st.sampled_from(["2", "0", "-3", "np.inf"])))
    fn = draw(st.sampled_from(["rem", "div", "atan2", "pow", "nextafter"]))
    return f"lax.{fn}({x}, {y})"


POOLS = {
    "lax": "ops_lax's and ops_lax2's random-parameter lax calls, and _lax_more's",
    "lax_more": "_lax_more's only (lax calls ops_lax does not draw)",
    "edge": "jax.numpy at edge inputs",
    "sig": "ops_sig's signature-driven calls of every jax.numpy/linalg/fft/nn/scipy.special function",
    **{k: v.__doc__.splitlines()[0] for k, v in ops_quad_more.POOLS.items()},
    **{k: v.__doc__.splitlines()[0] for k, v in ops_quad_mix.POOLS.items()},
}


@st.composite
def calls(draw, pool):
    """One drawn call: (name, expression over x0.., inputs)."""
    if pool.startswith("sig"):  # ("sig:new": the functions no older table names; "sig:a,b": those)
        return draw(ops_sig.sig_calls(pool.partition(":")[2]))
    if pool in ops_quad_more.POOLS:
        return draw(ops_quad_more.POOLS[pool]())
    if pool in ops_quad_mix.POOLS:
        return draw(ops_quad_mix.POOLS[pool]())
    if pool.startswith("edge"):  # ("edge:_fft,_linalg": those draws only)
        only = pool.partition(":")[2].split(",")
        return draw(st.sampled_from([d for d in EDGE_DRAWS if not only[0] or d.__name__ in only]))(draw)
    gen = _lax_more if pool == "lax_more" else draw(st.sampled_from(_LAX_DRAWS + [_lax_more] * 6))
    n = draw(st.integers(1, 12))
    a = onp.array([draw(st.sampled_from(_F_PLAIN)) for _ in range(n)], onp.float64)
    return f"quad.{gen.__name__}", f"(lambda a, b: {gen(draw)})(x0, np.cos(x0 * 1.0))", [a]


# ----------------------------------------------------------------------------------------------
# Running one call the six ways


def ways(name, expr, inputs):
    """The cases of one call: eager and jit in each mode, jvp and vjp in 64-bit mode (when x0 is a
    floating array)."""
    op = Op(name, expr, arity=len(inputs), source="quad")
    out = []
    for x64 in (True, False):
        for stack in ([], [("jit", None)]):
            out.append(programs.Case(list(inputs), [(name, expr)], stack, (op,), True, x64=x64))
    x0 = inputs[0] if inputs else None
    if isinstance(x0, onp.ndarray) and x0.dtype.kind == "f" and x0.dtype.itemsize >= 4:
        x = [x0.astype(onp.float64)] + list(inputs[1:])
        for d in ("jvp", "vjp"):
            out.append(programs.Case(x, [(name, expr)], [(d, None)], (op,), True, x64=True))
    return out


def check_call(name, expr, inputs):
    """The outcomes of a call's cases that are not ok (each a compare.Outcome), and the count run."""
    bad, n = [], 0
    trace = os.environ.get("FUNCGRAD_FUZZ_TRACE")
    for case in ways(name, expr, inputs):
        if trace:  # (the running case's reproducer: what to rerun when XLA aborts the process)
            pathlib.Path(trace).write_text(case.script())
        with programs.mode(case.x64):
            outcome = compare.check(case)
        n += 1
        if not outcome.ok:
            bad.append(outcome)
    return bad, n


def campaign(seed_, n_calls, pool, on_bad=None, skip=0):
    """``n_calls`` calls of ``pool`` drawn from seed ``seed_``, each run the six ways: counts.
    ``skip``: draws made and not run first (hypothesis's first draw is its simplest: the CI piece
    runs a later one)."""
    import warnings

    counts = {"calls": 0, "cases": 0, "bad": 0, "drawn": 0}
    seen = set()

    @seed(seed_)
    @settings(
        max_examples=n_calls + skip,
        phases=["generate"],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(call=calls(pool))
    def run(call):
        counts["drawn"] += 1
        if counts["drawn"] <= skip:
            return
        key = (
            call[1],
            repr([(getattr(x, "dtype", None), x.tolist() if hasattr(x, "tolist") else x) for x in call[2]]),
        )
        if key in seen:  # (hypothesis repeats a draw now and then: run each call once)
            return
        seen.add(key)
        bad, n = check_call(*call)
        counts["calls"] += 1
        counts["cases"] += n
        counts["bad"] += len(bad)
        for outcome in bad:
            if on_bad:
                on_bad(outcome)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--pool", default="edge", help=f"{sorted(POOLS)}; edge:_fft,_linalg draws only those")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    found = []

    def on_bad(o):
        found.append(o)
        print(f"=== {o.status}: {o.case.describe()}\n    {(o.error or o.mismatch.detail)[:300]}", flush=True)
        if args.out:
            d = pathlib.Path(args.out)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"s{args.seed}_{len(found):03d}.py").write_text(o.case.script())

    counts = campaign(args.seed, args.calls, args.pool, on_bad)
    print("counts:", counts)


if __name__ == "__main__":
    main()
