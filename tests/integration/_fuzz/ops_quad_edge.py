"""The four-way table's edge draws (session 20; ops_quad runs them): jax.numpy functions over edge
inputs -- empty arrays, 0-d, size-1 axes, NaN/inf/-0, huge and tiny magnitudes, integer extremes.

Each draw returns ``(name, expression over x0.., inputs)``: linalg (pinv, lstsq, matrix_power with
negative powers, det/slogdet of singular and empty matrices, eigvalsh/eigh, svd of zeros,
inv/solve/norm/cond/matrix_rank/qr/cholesky), fft with every norm and ``n``/``s`` shorter or longer
than the axis, nan-reductions, quantile/percentile/median methods, histogram/bincount/digitize/
searchsorted sides and methods, interp with period/left/right, unwrap, convolve/correlate modes,
polyfit/polyval/polyder/polyint/polymul, trapezoid, cross, kron, diff/gradient, elementwise
functions at the edges, and reductions with their keywords.

>>> len(EDGE_DRAWS) > 5
True
"""

from __future__ import annotations

import math

import numpy as onp
from hypothesis import strategies as st

from _fuzz import programs

# ----------------------------------------------------------------------------------------------
# Edge inputs

_F_EDGE = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    3.0,
    2.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e300,
    -1e300,
    1e-310,
    5e-324,
    3.4e38,
    -3.4e38,
    1e-45,
    1e-30,
    65504.0,
    1e20,
]
_F_PLAIN = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 0.25, 1.5, -3.0, 4.0, 0.1]


def _edge_vals(draw, n, dtype, edge=True):
    if dtype == "bool":
        return [draw(st.booleans()) for _ in range(n)]
    if dtype[0] in "iu":
        info = onp.iinfo(dtype)
        pool = [0, 1, 2, 3, -1, -2, int(info.min), int(info.max), int(info.max) - 1, 5]
        pool = [v for v in pool if info.min <= v <= info.max]
        return [draw(st.sampled_from(pool)) for _ in range(n)]
    pool = _F_EDGE if edge else _F_PLAIN
    vals = [draw(st.sampled_from(pool if draw(st.integers(0, 2)) == 0 else _F_PLAIN)) for _ in range(n)]
    if dtype.startswith("complex"):
        return [complex(v, draw(st.sampled_from(_F_PLAIN))) for v in vals]
    return vals


def _arr(draw, shape, dtype, edge=True):
    vals = _edge_vals(draw, math.prod(shape), dtype, edge)
    dt = programs._BF16 if dtype == "bfloat16" else dtype
    with onp.errstate(over="ignore"):
        return onp.array(vals, dtype=dt).reshape(shape)


def _shape(draw, lo_rank=0, hi_rank=2, lo=0, hi=4):
    # sizes 0..hi, with empty and size-1 dimensions common
    return tuple(
        draw(st.sampled_from([0, 1, 1, 2, 3, hi])) if lo == 0 else draw(st.integers(lo, hi))
        for _ in range(draw(st.integers(lo_rank, hi_rank)))
    )


_FDT = ["float64", "float64", "float32", "float16", "bfloat16"]
_IDT = ["int32", "int8", "uint8", "int64", "uint32", "int16"]


def _fdt(draw):
    return draw(st.sampled_from(_FDT))


# ----------------------------------------------------------------------------------------------
# Edge draws: each returns (name, expression over x0.., inputs)


def _mat_in(draw, square=True, stack=False, edge=True):
    n = draw(st.sampled_from([0, 1, 2, 2, 3]))
    m = n if square else draw(st.sampled_from([0, 1, 2, 3]))
    shape = ((draw(st.sampled_from([0, 1, 2])),) if stack and draw(st.booleans()) else ()) + (n, m)
    dt = draw(st.sampled_from(["float64", "float64", "float32", "complex128"]))
    kind = draw(st.sampled_from(["vals", "vals", "zeros", "singular", "eye"]))
    a = _arr(draw, shape, dt, edge and draw(st.integers(0, 3)) == 0)
    if kind == "zeros":
        a = onp.zeros(shape, dt)
    elif kind == "singular" and shape[-1] >= 2:
        a = a.copy()
        a[..., :, -1] = a[..., :, 0] * 2
    elif kind == "eye" and n == m:
        a = onp.broadcast_to(onp.eye(n, dtype=dt) * draw(st.sampled_from([1.0, -2.0, 1e-3])), shape).copy()
    return a


def _linalg(draw):
    which = draw(
        st.sampled_from(
            [
                "pinv",
                "lstsq",
                "matrix_power",
                "det",
                "slogdet",
                "eigvalsh",
                "svd",
                "inv",
                "solve",
                "norm",
                "cond",
                "matrix_rank",
                "eigh",
                "qr",
                "cholesky",
            ]
        )
    )
    if which == "pinv":
        a = _mat_in(draw, square=False, stack=True)
        kw = draw(st.sampled_from(["", ", rtol=0.1", ", hermitian=True", ", rtol=1e-20"]))
        if "hermitian" in kw:
            a = _mat_in(draw, stack=True)
            return "linalg.pinv", f"np.linalg.pinv(x0 + np.conj(np.swapaxes(x0, -1, -2)){kw})", [a]
        return "linalg.pinv", f"np.linalg.pinv(x0{kw})", [a]
    if which == "lstsq":
        a = _mat_in(draw, square=False)
        k = draw(st.sampled_from([None, 1, 2]))
        b = _arr(draw, (a.shape[0],) + ((k,) if k else ()), "float64", False)
        rc = draw(st.sampled_from(["", ", rcond=None", ", rcond=0.5"]))
        return "linalg.lstsq", f"_pack(T, np, np.linalg.lstsq(x0, x1{rc}))", [a, b]
    if which == "matrix_power":
        a = _mat_in(draw, stack=True)
        n = draw(st.integers(-3, 4))
        return "linalg.matrix_power", f"np.linalg.matrix_power(x0, {n})", [a]
    if which in ("det", "slogdet"):
        a = _mat_in(draw, stack=True)
        if which == "det":
            return "linalg.det", "np.linalg.det(x0)", [a]
        m = draw(st.sampled_from(["", ", method='lu'", ", method='qr'"]))
        return "linalg.slogdet", f"_pack(T, np, tuple(np.linalg.slogdet(x0{m})))", [a]
    if which in ("eigvalsh", "eigh"):
        a = _mat_in(draw, stack=True)
        up = draw(st.sampled_from(["'L'", "'U'"]))
        s = "(x0 + np.conj(np.swapaxes(x0, -1, -2)))"
        if which == "eigh":  # (eigenvectors' signs are free: v |v| products only)
            return (
                "linalg.eigh",
                f"(lambda w, v: _pack(T, np, (w, np.abs(v) ** 2)))(*np.linalg.eigh({s}, UPLO={up}))",
                [a],
            )
        return "linalg.eigvalsh", f"np.linalg.eigvalsh({s}, UPLO={up})", [a]
    if which == "svd":
        a = _mat_in(draw, square=False, stack=True)
        if draw(st.booleans()):
            return "linalg.svd", "np.linalg.svd(x0, compute_uv=False)", [a]
        fm = draw(st.booleans())
        # (singular vectors are free up to phase: the reconstruction and the values)
        return (
            "linalg.svd",
            "(lambda u, s, vh: _pack(T, np, (s, (u[..., :s.shape[-1]] * s[..., None, :])"
            " @ vh[..., :s.shape[-1], :])))"
            f"(*np.linalg.svd(x0, full_matrices={fm}))",
            [a],
        )
    if which in ("inv", "solve"):
        a = _mat_in(draw, stack=False)
        if which == "inv":
            return "linalg.inv", "np.linalg.inv(x0)", [a]
        b = _arr(draw, (a.shape[0],) + ((2,) if draw(st.booleans()) else ()), "float64", False)
        return "linalg.solve", "np.linalg.solve(x0, x1)", [a, b]
    if which == "norm":
        a = _mat_in(draw, square=False, stack=True)
        o = draw(st.sampled_from(["None", "'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf", "-np.inf"]))
        kd = draw(st.booleans())
        return "linalg.norm", f"np.linalg.norm(x0, ord={o}, axis=(-2, -1), keepdims={kd})", [a]
    if which == "cond":
        a = _mat_in(draw)
        o = draw(st.sampled_from(["None", "'fro'", "1", "-1", "2", "-2", "np.inf"]))
        return "linalg.cond", f"np.linalg.cond(x0, {o})", [a]
    if which == "matrix_rank":
        a = _mat_in(draw, square=False, stack=True)
        return "linalg.matrix_rank", "np.linalg.matrix_rank(x0)", [a]
    if which == "qr":
        a = _mat_in(draw, square=False)
        m = draw(st.sampled_from(["'r'", "'reduced'", "'complete'"]))
        if m == "'r'":
            return "linalg.qr", "np.abs(np.linalg.qr(x0, mode='r'))", [a]
        return "linalg.qr", f"(lambda q, r: q @ r)(*np.linalg.qr(x0, mode={m}))", [a]
    a = _mat_in(draw, stack=True)
    return (
        "linalg.cholesky",
        "np.linalg.cholesky(x0 @ np.conj(np.swapaxes(x0, -1, -2)) + np.eye(x0.shape[-1], dtype=x0.dtype))",
        [a],
    )


def _fft(draw):
    fn = draw(
        st.sampled_from(
            [
                "fft",
                "ifft",
                "rfft",
                "irfft",
                "hfft",
                "ihfft",
                "fftn",
                "ifftn",
                "rfftn",
                "irfftn",
                "fft2",
                "rfft2",
                "irfft2",
                "fftshift",
                "fftfreq",
                "rfftfreq",
            ]
        )
    )
    shape = _shape(draw, 1, 3, 1, 4)
    if fn in ("fftfreq", "rfftfreq"):
        n = draw(st.integers(1, 6))
        d = draw(st.sampled_from(["1.0", "0.5", "np.array(2.0)"]))
        return f"fft.{fn}", f"np.fft.{fn}({n}, {d}) * x0", [_arr(draw, (), "float64", False)]
    dt = draw(st.sampled_from(["float64", "float32", "complex128", "complex64", "int32", "float16"]))
    x = _arr(draw, shape, dt, draw(st.integers(0, 3)) == 0)
    if fn == "fftshift":
        ax = draw(st.sampled_from(["None", "0", "-1", "(0,)"]))
        f2 = draw(st.sampled_from(["fftshift", "ifftshift"]))
        return f"fft.{f2}", f"np.fft.{f2}(x0, axes={ax})", [x]
    norm = draw(st.sampled_from(["None", "'backward'", "'ortho'", "'forward'"]))
    nd = len(shape)
    if fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        ax = draw(st.integers(-nd, nd - 1))
        n = draw(st.sampled_from(["None", "None", "1", "2", "3", "5", "8"]))
        return f"fft.{fn}", f"np.fft.{fn}(x0, n={n}, axis={ax}, norm={norm})", [x]
    k = draw(st.integers(1, min(nd, 2 if fn.endswith("2") else 3)))
    axes = tuple(sorted(draw(st.permutations(range(nd)))[:k])) if not fn.endswith("2") or nd >= 2 else None
    if axes is None:
        x = x.reshape(x.shape + (1,))
        axes = (0, 1)
    if fn.endswith("2"):
        axes = axes[-2:] if len(axes) >= 2 else (-2, -1)
        if x.ndim < 2:
            x = x.reshape(x.shape + (1,))
    s = draw(st.sampled_from(["None", "sizes"]))
    if s == "sizes":
        s = repr(tuple(draw(st.integers(1, 5)) for _ in axes))
    return f"fft.{fn}", f"np.fft.{fn}(x0, s={s}, axes={tuple(axes)}, norm={norm})", [x]


def _nanred(draw):
    fn = draw(
        st.sampled_from(
            [
                "nansum",
                "nanmean",
                "nanvar",
                "nanstd",
                "nanmax",
                "nanmin",
                "nanargmax",
                "nanargmin",
                "nanprod",
                "nancumsum",
                "nancumprod",
                "nanmedian",
                "nanquantile",
                "nanpercentile",
            ]
        )
    )
    shape = _shape(draw, 0, 3)
    dt = draw(st.sampled_from(["float64", "float32", "float16", "int32", "bfloat16"]))
    x = _arr(draw, shape, dt)
    if dt[0] == "f" and draw(st.integers(0, 2)) == 0 and x.size:  # an all-NaN slice
        x = x.copy()
        x.reshape(-1)[: max(1, x.size // 2)] = onp.nan
    nd = x.ndim
    ax = draw(st.sampled_from(["None"] + [str(i) for i in range(-nd, nd)]))
    kw = ""
    if fn not in ("nanargmax", "nanargmin", "nancumsum", "nancumprod"):
        kw = f", keepdims={draw(st.booleans())}"
    if fn in ("nancumsum", "nancumprod") and ax == "None":
        kw = ""
    if fn in ("nanvar", "nanstd"):
        kw += f", ddof={draw(st.integers(0, 2))}"
    if fn in ("nanquantile", "nanpercentile"):
        q = draw(st.sampled_from(["0.5", "0.0", "1.0", "np.array([0.25, 0.75])", "0.3"]))
        if fn == "nanpercentile":
            q = f"{q} * 100"
        m = draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
        return f"np.{fn}", f"np.{fn}(x0, {q}, axis={ax}, method={m!r}{kw})", [x]
    return f"np.{fn}", f"np.{fn}(x0, axis={ax}{kw})", [x]


def _quantile(draw):
    fn = draw(st.sampled_from(["quantile", "percentile", "median"]))
    shape = _shape(draw, 1, 2, 0, 4)
    dt = draw(st.sampled_from(["float64", "float32", "int32", "float16"]))
    x = _arr(draw, shape, dt)
    nd = x.ndim
    ax = draw(st.sampled_from(["None"] + [str(i) for i in range(-nd, nd)] + (["(0, 1)"] if nd == 2 else [])))
    kd = draw(st.booleans())
    if fn == "median":
        return "np.median", f"np.median(x0, axis={ax}, keepdims={kd})", [x]
    q = draw(st.sampled_from(["0.5", "0.0", "1.0", "np.array([0.1, 0.9])", "0.333", "np.array(0.25)"]))
    if fn == "percentile":
        q = f"{q} * 100"
    m = draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
    return f"np.{fn}", f"np.{fn}(x0, {q}, axis={ax}, method={m!r}, keepdims={kd})", [x]


def _binning(draw):
    fn = draw(st.sampled_from(["histogram", "bincount", "digitize", "searchsorted", "histogram_bin_edges"]))
    n = draw(st.sampled_from([0, 1, 3, 5]))
    if fn == "bincount":
        x = onp.array(
            [draw(st.integers(0, 6)) for _ in range(n)], draw(st.sampled_from(["int32", "int64", "uint8"]))
        )
        w = draw(st.booleans())
        ln = draw(st.sampled_from(["", ", length=4", ", length=8", ", minlength=3, length=9"]))
        args = [x] + ([_arr(draw, (n,), "float64", False)] if w else [])
        return "np.bincount", f"np.bincount(x0{', weights=x1' if w else ''}{ln})", args
    dt = draw(st.sampled_from(["float64", "float32", "int32"]))
    x = _arr(draw, (n,), dt)
    if fn in ("histogram", "histogram_bin_edges"):
        bins = draw(
            st.sampled_from(["3", "1", "np.array([-1.0, 0.0, 0.5, 2.0])", "np.array([0.0, 0.0, 1.0])"])
        )
        rng = draw(st.sampled_from(["None", "(-2.0, 2.0)", "(0.0, 0.0)"]))
        if fn == "histogram_bin_edges":
            return f"np.{fn}", f"np.{fn}(x0, bins={bins}, range={rng})", [x]
        dens = draw(st.sampled_from(["None", "True", "False"]))
        w = ", weights=np.abs(x0)" if draw(st.booleans()) and dt != "int32" else ""
        return (
            "np.histogram",
            f"_pack(T, np, np.histogram(x0, bins={bins}, range={rng}, density={dens}{w}))",
            [x],
        )
    edges = onp.sort(_arr(draw, (draw(st.sampled_from([0, 1, 2, 4])),), dt, False))
    if draw(st.booleans()) and edges.size:
        edges = edges[::-1].copy()  # decreasing bins (digitize takes them)
    if fn == "digitize":
        return "np.digitize", f"np.digitize(x0, x1, right={draw(st.booleans())})", [x, edges]
    side = draw(st.sampled_from(["left", "right"]))
    m = draw(st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"]))
    edges = onp.sort(edges)
    return "np.searchsorted", f"np.searchsorted(x1, x0, side={side!r}, method={m!r})", [x, edges]


def _interp(draw):
    fn = draw(
        st.sampled_from(
            [
                "interp",
                "unwrap",
                "trapezoid",
                "cross",
                "kron",
                "convolve",
                "correlate",
                "polyval",
                "polyfit",
                "polyder",
                "polyint",
                "polymul",
                "diff",
                "gradient",
            ]
        )
    )
    if fn == "interp":
        n = draw(st.sampled_from([1, 2, 4]))
        xp = onp.sort(_arr(draw, (n,), "float64", False))
        fp = _arr(draw, (n,), draw(st.sampled_from(["float64", "float32", "complex128"])), False)
        x = _arr(draw, _shape(draw, 0, 1, 0, 5), "float64")
        kw = draw(
            st.sampled_from(
                [
                    "",
                    ", left=-7.0",
                    ", right=9.0",
                    ", left=-7.0, right=np.inf",
                    ", period=2.0",
                    ", period=-1.5",
                ]
            )
        )
        return "np.interp", f"np.interp(x0, x1, x2{kw})", [x, xp, fp]
    if fn == "unwrap":
        x = (
            _arr(
                draw, _shape(draw, 1, 2, 0, 5), draw(st.sampled_from(["float64", "float32", "int32"])), False
            )
            * 3
        )
        kw = draw(
            st.sampled_from(["", ", discont=1.0", ", period=4.0", ", period=5, discont=2.0", ", axis=0"])
        )
        return "np.unwrap", f"np.unwrap(x0{kw})", [x]
    if fn == "trapezoid":
        x = _arr(draw, _shape(draw, 1, 2, 0, 4), draw(st.sampled_from(["float64", "float32", "int32"])))
        kw = draw(st.sampled_from(["", ", dx=0.5", ", x=np.arange(x0.shape[-1]) ** 2", ", axis=0"]))
        return "np.trapezoid", f"np.trapezoid(x0{kw})", [x]
    if fn == "cross":
        k1, k2 = draw(st.sampled_from([2, 3])), draw(st.sampled_from([2, 3]))
        b = draw(st.sampled_from([(), (2,), (1,)]))
        a = _arr(draw, b + (k1,), "float64")
        c = _arr(draw, (k2,), draw(st.sampled_from(["float64", "int32"])))
        return "np.cross", "np.cross(x0, x1)", [a, c]
    if fn == "kron":
        a = _arr(draw, _shape(draw, 0, 2, 0, 3), "float64")
        c = _arr(draw, _shape(draw, 0, 2, 0, 3), draw(st.sampled_from(["float64", "int32", "complex128"])))
        return "np.kron", "np.kron(x0, x1)", [a, c]
    if fn in ("convolve", "correlate"):
        a = _arr(draw, (draw(st.integers(1, 5)),), "float64")
        c = _arr(
            draw, (draw(st.integers(1, 5)),), draw(st.sampled_from(["float64", "int32", "complex128"])), False
        )
        m = draw(st.sampled_from(["full", "same", "valid"]))
        swap = draw(st.booleans())
        args = [c, a] if swap and fn == "convolve" and c.dtype.kind != "i" else [a, c]
        return f"np.{fn}", f"np.{fn}(x0, x1, mode={m!r})", args
    if fn == "polyval":
        p = _arr(draw, (draw(st.integers(0, 4)),), draw(st.sampled_from(["float64", "int32"])))
        x = _arr(draw, _shape(draw, 0, 2, 0, 3), "float64")
        return "np.polyval", "np.polyval(x0, x1)", [p, x]
    if fn == "polyfit":
        n = draw(st.integers(2, 6))
        x = onp.linspace(-1, 1, n) * draw(st.sampled_from([1.0, 3.0, 1e-3]))
        y = _arr(draw, (n,) + ((2,) if draw(st.booleans()) else ()), "float64", False)
        deg = draw(st.integers(0, min(n - 1, 3)))
        kw = draw(st.sampled_from(["", ", w=np.abs(x0) + 1", ", rcond=1e-3"]))
        return "np.polyfit", f"np.polyfit(x0, x1, {deg}{kw})", [x, y]
    if fn in ("polyder", "polyint"):
        p = _arr(draw, (draw(st.integers(1, 4)),), draw(st.sampled_from(["float64", "int32"])), False)
        m = draw(st.integers(0, 3))
        return f"np.{fn}", f"np.{fn}(x0, m={m})", [p]
    if fn == "polymul":
        p = _arr(draw, (draw(st.integers(1, 4)),), "float64", False)
        q = _arr(draw, (draw(st.integers(1, 3)),), draw(st.sampled_from(["float64", "int32"])), False)
        return "np.polymul", "np.polymul(x0, x1, trim_leading_zeros=True)", [p, q]
    if fn == "diff":
        x = _arr(draw, _shape(draw, 1, 2, 0, 4), draw(st.sampled_from(["float64", "int32", "uint8", "bool"])))
        nn_ = draw(st.integers(0, 3))
        kw = draw(st.sampled_from(["", ", prepend=0.5", ", append=np.array([1, 2])", ", axis=0"]))
        if "append" in kw and x.ndim != 1:
            kw = ""
        return "np.diff", f"np.diff(x0, n={nn_}{kw})", [x]
    x = _arr(draw, _shape(draw, 1, 2, 2, 4), draw(st.sampled_from(["float64", "float32"])))
    kw = draw(st.sampled_from(["", ", 0.5", ", axis=0", ", edge_order=2"]))
    if "edge_order" in kw and min(x.shape) < 3:
        kw = ""
    return "np.gradient", f"_pack(T, np, np.gradient(x0{kw}))", [x]


def _elementwise(draw):
    """jax.numpy elementwise functions at the edges (huge/tiny/-0/NaN/inf, integer extremes)."""
    fn, kinds = draw(
        st.sampled_from(
            [
                ("np.abs", "fi"),
                ("np.sign", "fic"),
                ("np.floor_divide", "fi2"),
                ("np.remainder", "fi2"),
                ("np.fmod", "fi2"),
                ("np.divmod", "fi2"),
                ("np.power", "fi2"),
                ("np.float_power", "fi2"),
                ("np.ldexp", "f+i"),
                ("np.frexp", "f"),
                ("np.modf", "f"),
                ("np.hypot", "f2"),
                ("np.logaddexp", "f2"),
                ("np.logaddexp2", "f2"),
                ("np.copysign", "f2"),
                ("np.nextafter", "f2"),
                ("np.spacing", "f"),
                ("np.heaviside", "f2"),
                ("np.round", "fi"),
                ("np.rint", "f"),
                ("np.fix", "f"),
                ("np.trunc", "fi"),
                ("np.cbrt", "f"),
                ("np.exp2", "f"),
                ("np.expm1", "f"),
                ("np.log1p", "f"),
                ("np.sinc", "f"),
                ("np.arctan2", "f2"),
                ("np.gcd", "i2"),
                ("np.lcm", "i2"),
                ("np.left_shift", "i2"),
                ("np.right_shift", "i2"),
                ("np.bitwise_count", "i"),
                ("np.nan_to_num", "f"),
                ("np.isclose", "f2"),
                ("np.fmax", "f2"),
                ("np.fmin", "f2"),
                ("np.deg2rad", "f"),
                ("np.signbit", "f"),
                ("np.reciprocal", "f"),
                ("np.square", "fi"),
                ("np.sqrt", "fc"),
                ("np.float_power", "i2"),
                ("np.true_divide", "i2"),
            ]
        )
    )
    shape = _shape(draw, 0, 2, 0, 3)
    if "i" in kinds and ("f" not in kinds or draw(st.booleans())):
        dt = draw(st.sampled_from(_IDT))
    elif "c" in kinds and draw(st.booleans()):
        dt = "complex128"
    else:
        dt = _fdt(draw)
    x = _arr(draw, shape, dt)
    if fn == "np.round":
        return fn, f"np.round(x0, {draw(st.integers(-2, 3))})", [x]
    if fn == "np.ldexp":
        e = onp.array(
            draw(st.sampled_from([0, 1, -1, 1100, -1100, 30, -160])),
            draw(st.sampled_from(["int32", "int64", "int8"])),
        )
        return fn, "np.ldexp(x0, x1)", [x, e]
    if fn == "np.nan_to_num":
        kw = draw(st.sampled_from(["", ", nan=1.5", ", posinf=7.0, neginf=-7.0", ", copy=False"]))
        return fn, f"np.nan_to_num(x0{kw})", [x]
    if kinds.endswith("2"):
        dt2 = dt if draw(st.integers(0, 3)) else draw(st.sampled_from(_FDT + _IDT))
        y = _arr(draw, shape if draw(st.booleans()) else shape[-1:], dt2)
        if fn in ("np.left_shift", "np.right_shift") and y.dtype.kind == "f":
            y = y.astype(dt) if onp.all(onp.isfinite(y)) else onp.ones_like(x)
        if fn in ("np.divmod",):
            return fn, "_pack(T, np, np.divmod(x0, x1))", [x, y]
        return fn, f"{fn}(x0, x1)", [x, y]
    if fn in ("np.frexp", "np.modf"):
        return fn, f"_pack(T, np, {fn}(x0))", [x]
    return fn, f"{fn}(x0)", [x]


def _reductions(draw):
    """Plain reductions and index functions at the edges (empty axes, where=, initial=, dtype=)."""
    fn = draw(
        st.sampled_from(
            [
                "sum",
                "prod",
                "max",
                "min",
                "mean",
                "var",
                "std",
                "argmax",
                "argmin",
                "ptp",
                "all",
                "any",
                "cumsum",
                "cumprod",
                "average",
                "count_nonzero",
                "logsumexp",
            ]
        )
    )
    shape = _shape(draw, 0, 3)
    dt = draw(st.sampled_from(_FDT + _IDT + ["bool"]))
    x = _arr(draw, shape, dt)
    nd = x.ndim
    ax = draw(st.sampled_from(["None"] + [str(i) for i in range(-nd, nd)]))
    if fn == "logsumexp":
        b = draw(st.sampled_from(["", ", b=-1.0", ", return_sign=True"]))
        return "special.logsumexp", f"_pack(T, np, special.logsumexp(x0, axis={ax}{b}))", [x]
    if fn == "average":
        w = ", weights=np.ones_like(x0) * 2" if ax != "None" or draw(st.booleans()) else ""
        return (
            "np.average",
            f"_pack(T, np, np.average(x0, axis={ax}{w}, returned={draw(st.booleans())}))",
            [x],
        )
    if fn in ("argmax", "argmin", "count_nonzero"):
        return f"np.{fn}", f"np.{fn}(x0, axis={ax}, keepdims={draw(st.booleans())})", [x]
    kw = draw(
        st.sampled_from(
            [
                "",
                "",
                ", keepdims=True",
                ", dtype=np.float32",
                ", dtype=np.int32",
                ", where=x0 != 0",
                ", initial=5",
            ]
        )
    )
    if fn in ("cumsum", "cumprod") and kw not in ("", ", dtype=np.float32", ", dtype=np.int32"):
        kw = ""
    if fn in ("mean", "var", "std", "ptp", "all", "any") and "initial" in kw:
        kw = ""
    if fn in ("max", "min", "ptp", "all", "any") and "dtype" in kw:
        kw = ""
    if fn in ("var", "std"):
        kw += f", ddof={draw(st.integers(0, 2))}"
    return f"np.{fn}", f"np.{fn}(x0, axis={ax}{kw})", [x]


def _statistics(draw):
    """cov/corrcoef, sorting with NaN and -0 (stable, descending), unique, clip with NaN bounds,
    vander, cumulative ops of bools, einsum traces, at the edges."""
    fn = draw(
        st.sampled_from(
            [
                "cov",
                "corrcoef",
                "sort",
                "argsort",
                "unique",
                "clip",
                "vander",
                "cumsum",
                "lexsort",
                "einsum",
                "ediff1d",
                "outer",
            ]
        )
    )
    if fn in ("cov", "corrcoef"):
        shape = (draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2, 3, 4])))
        x = _arr(
            draw,
            shape if draw(st.booleans()) else shape[1:],
            draw(st.sampled_from(["float64", "float32", "int32"])),
        )
        kw = draw(
            st.sampled_from(
                ["", ", rowvar=False", ", ddof=0", ", bias=True", ", ddof=3"]
                if fn == "cov"
                else ["", ", rowvar=False"]
            )
        )
        return f"np.{fn}", f"np.{fn}(x0{kw})", [x]
    if fn in ("sort", "argsort"):
        x = _arr(
            draw,
            _shape(draw, 1, 2, 1, 4),
            draw(st.sampled_from(["float64", "float32", "float16", "int8", "bool"])),
        )
        kw = draw(
            st.sampled_from(
                [
                    "",
                    ", stable=True",
                    ", descending=True",
                    ", stable=True, descending=True",
                    ", axis=None" if fn == "sort" else ", axis=0",
                ]
            )
        )
        return f"np.{fn}", f"np.{fn}(x0{kw})", [x]
    if fn == "unique":
        x = _arr(draw, _shape(draw, 1, 2, 1, 4), draw(st.sampled_from(["float64", "float32", "int32"])))
        kw = draw(
            st.sampled_from(
                [
                    "",
                    ", return_counts=True",
                    ", return_index=True, return_inverse=True",
                    ", size=3, fill_value=-1.0",
                    ", equal_nan=False",
                ]
            )
        )
        return "np.unique", f"_pack(T, np, np.unique(x0{kw}))", [x]
    if fn == "clip":
        x = _arr(draw, _shape(draw, 0, 2), draw(st.sampled_from(["float64", "float32", "int32", "uint8"])))
        lo = draw(st.sampled_from(["None", "0.5", "np.nan", "-np.inf", "2", "x0 * 0"]))
        hi = draw(st.sampled_from(["None", "1.0", "np.nan", "np.inf", "-1", "0"]))
        if lo == hi == "None":
            lo = "0"
        return "np.clip", f"np.clip(x0, {lo}, {hi})", [x]
    if fn == "vander":
        x = _arr(
            draw,
            (draw(st.sampled_from([0, 1, 3])),),
            draw(st.sampled_from(["float64", "int32", "complex128"])),
        )
        n = draw(st.sampled_from(["None", "0", "1", "4"]))
        return "np.vander", f"np.vander(x0, {n}, increasing={draw(st.booleans())})", [x]
    if fn == "cumsum":
        x = _arr(draw, _shape(draw, 1, 2), draw(st.sampled_from(["bool", "uint8", "int8"])))
        f2 = draw(st.sampled_from(["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"]))
        kw = ", axis=0" if f2.startswith("cumulative") and x.ndim > 1 else ""
        kw += draw(st.sampled_from(["", ", dtype=np.int32", ", dtype=np.float32"]))
        if f2.startswith("cumulative"):
            kw += draw(st.sampled_from(["", ", include_initial=True"]))
        return f"np.{f2}", f"np.{f2}(x0{kw})", [x]
    if fn == "lexsort":
        n = draw(st.sampled_from([0, 1, 3, 4]))
        a = _arr(draw, (n,), draw(st.sampled_from(["float64", "int32"])))
        b = onp.array([draw(st.integers(0, 1)) for _ in range(n)], onp.int32)
        return "np.lexsort", "np.lexsort((x0, x1))", [a, b]
    if fn == "einsum":
        n = draw(st.sampled_from([0, 1, 2, 3]))
        x = _arr(draw, (n, n), draw(st.sampled_from(["float64", "float32", "int32", "complex128"])))
        sub = draw(st.sampled_from(["ii", "ii->i", "ij->", "ij,ij->j", "ij,ji", "ji"]))
        ops_ = "x0, x0" if "," in sub else "x0"
        return "np.einsum", f"np.einsum({sub!r}, {ops_})", [x]
    if fn == "ediff1d":
        x = _arr(draw, _shape(draw, 0, 2), "float64")
        kw = draw(
            st.sampled_from(
                ["", ", to_end=np.array([1.0, 2.0])", ", to_begin=-1.0", ", to_begin=np.zeros(0)"]
            )
        )
        return "np.ediff1d", f"np.ediff1d(x0{kw})", [x]
    a = _arr(draw, _shape(draw, 0, 2, 0, 3), "float64")
    b = _arr(draw, _shape(draw, 0, 1, 0, 3), draw(st.sampled_from(["float64", "int32", "bool"])))
    return "np.outer", "np.outer(x0, x1)", [a, b]


EDGE_DRAWS = [
    _statistics,
    _statistics,
    _linalg,
    _linalg,
    _fft,
    _fft,
    _nanred,
    _quantile,
    _binning,
    _interp,
    _interp,
    _elementwise,
    _elementwise,
    _reductions,
]
