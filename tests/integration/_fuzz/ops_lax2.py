"""The lax-parameter table's second half (session 17): draws ``ops_lax`` did not reach.

Each draw returns a call's text over the operand ``a`` (and ``b``), as ``ops_lax``'s do; ``ops_lax``
samples them with its own:

- control flow with random carries and pytrees: ``scan`` (``length``, ``reverse``, ``unroll``,
  ``xs=None``), ``while_loop``, ``fori_loop`` (static and traced bounds, ``unroll``), ``cond`` and
  ``switch`` (indices out of range, clamped), ``map`` (``batch_size``); carries drawn of the wrong
  type on purpose;
- ``associative_scan`` (``reverse``, ``axis``, a pytree recurrence);
- ``reduce_precision`` with exponent/mantissa bits up to float64's, at overflow, inf and NaN;
- ``convert_element_type`` between every pair of dtypes (float -> int past the range, NaN -> int,
  bool, complex -> real);
- ``lax.linalg``: ``cholesky``, ``eigh``, ``qr`` (pivoting), ``svd``, ``triangular_solve`` with
  every flag, ``lu``, ``tridiagonal_solve``, ``householder_product``, on well-conditioned inputs;
- ``lax.fft`` with each ``fft_type`` and ``fft_lengths``; ``ragged_dot``;
- collectives under ``vmap`` with ``axis_name``: ``psum``/``pmax``/``pmin``/``pmean``/
  ``all_gather``/``ppermute``/``all_to_all``/``psum_scatter``/``axis_index``;
- integer edges: ``mul``/``add``/``sub``/``neg``/``abs`` wrapping at the extremes, ``div``/``rem``
  by zero and ``INT_MIN / -1`` (XLA's defined results), shifts by the width or more;
- complex ``sqrt``/``log``/``pow``/... at branch cuts with signed zeros, ``nextafter`` at
  +-0/inf/NaN, and float16/bfloat16 ``exp``/``log1p``/``tanh``/``logistic``/``erf``/... compared
  bit for bit (their results bitcast to integers).

>>> callable(DRAWS[0])
True
"""

from __future__ import annotations

import os

from hypothesis import strategies as st

# (ops_lax's eager pass: no jit in the drawn calls either)
EAGER = os.environ.get("FUNCGRAD_FUZZ_EAGER", "0") != "0"

# Helpers the drawn calls use (programs.HELPERS takes them): a float result's bits as unsigned
# integers (NaNs made one NaN first: XLA's and NumPy's NaN payloads differ and neither is
# specified), and a complex result's parts with their sign bits (signed zeros, branch cuts).
HELPERS = """
def _bits(np, lax, r):
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(r.dtype).itemsize]
    return lax.bitcast_convert_type(np.where(np.isnan(r), np.array(np.nan, r.dtype), r), u)


def _one_dtype(T, np, tree):
    # several results (sort's operands, top_k's values and indices) as one vector in the first
    # floating result's dtype (int32 if none), the same on both sides: _pack's common dtype is
    # NumPy 2's in funcgrad's 64-bit mode (float16 with int32 gives float64), jax's own in jax
    leaves = T.tree_util.tree_leaves(tree)
    floats = [v.dtype for v in leaves if np.issubdtype(v.dtype, np.inexact)]
    dtype = floats[0] if floats else np.int32
    return np.concatenate([np.ravel(v).astype(dtype) for v in leaves])


def _signed_parts(np, z):
    parts = [np.real(z), np.imag(z)]
    signs = [np.signbit(np.where(np.isnan(p), np.zeros((), p.dtype), p)).astype(p.dtype) for p in parts]
    return np.concatenate([np.ravel(p) for p in parts + signs])
"""

_REALS = ["float32", "float32", "float64", "float16", "bfloat16"]
_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
_ALL = _REALS[1:] + _INTS + ["bool", "complex64", "complex128"]


def _m(shape, dtype, src="a"):
    return f"_mat(np, {src}, {tuple(shape)!r}, np.{dtype})"


def _shape(draw, rank_lo=0, rank_hi=2, lo=1, hi=3):
    return tuple(draw(st.integers(lo, hi)) for _ in range(draw(st.integers(rank_lo, rank_hi))))


def _wrong(draw):
    return draw(st.integers(0, 7)) == 0


# ----------------------------------------------------------------------------------------------
# Control flow


def _control(draw):
    shape = _shape(draw)
    dt = draw(st.sampled_from(_REALS))
    x, y = _m(shape, dt), _m(shape, dt, "b")
    which = draw(
        st.sampled_from(["scan", "scan_none", "while", "fori", "fori_traced", "cond", "switch", "map"])
    )
    bad = _wrong(draw)
    if which in ("scan", "scan_none"):
        n = draw(st.integers(0, 3))
        rev, unroll = draw(st.booleans()), draw(st.sampled_from([1, 2, 3, True, False]))
        new_c0 = "c[0][None]" if bad else "c[0] * 0.5 + np.sin(t) * c[1]['k']"
        if which == "scan_none":
            new_c0 = "c[0][None]" if bad else "c[0] * 0.5 + np.sin(c[0]) * c[1]['k']"
            body = f"lambda c, t: (({new_c0}, {{'k': c[1]['k'] * 0.9}}), c[0] + 1)"
            xs, length = "None", f", length={n}"
        else:
            body = f"lambda c, t: (({new_c0}, {{'k': c[1]['k'] + np.sum(t)}}), (c[0] * t, np.cos(t)))"
            xs = _m((n, *shape), dt, "b")
            length = f", length={n + 1 if _wrong(draw) else n}" if draw(st.booleans()) else ""
        k0 = f"np.sum({y}) * 0.1"
        init = f"({x}, {{'k': {k0}}})"
        return f"_pack(T, np, lax.scan({body}, {init}, {xs}{length}, reverse={rev}, unroll={unroll}))"
    if which == "while":
        n = draw(st.integers(0, 3))
        newc = "(c[0] + 1, c[1][None])" if bad else "(c[0] + 1, c[1] * 0.75 + np.cos(c[1]) * 0.25)"
        return f"_pack(T, np, lax.while_loop(lambda c: c[0] < {n}, lambda c: {newc}, (np.int32(0), {x})))"
    if which in ("fori", "fori_traced"):
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 3))
        body = (
            "lambda i, c: {'x': c['x'] * 0.9 + np.sin(c['x']) * (i + 1).astype(c['x'].dtype), "
            "'y': c['y'] + np.sum(c['x'])}"
            if not bad
            else "lambda i, c: {'x': c['x'], 'z': c['y']}"
        )
        init = f"{{'x': {x}, 'y': np.sum({y})}}"
        if which == "fori_traced":
            lo_s = f"np.int32({lo}) + (np.sum({x}) * 0).astype(np.int32)"
            return f"_pack(T, np, lax.fori_loop({lo_s}, {hi}, {body}, {init}))"
        unroll = draw(st.sampled_from(["", ", unroll=2", ", unroll=True"]))
        return f"_pack(T, np, lax.fori_loop({lo}, {hi}, {body}, {init}{unroll}))"
    if which == "cond":
        pred = draw(
            st.sampled_from(
                [f"np.sum({x}) > 0", "True", "np.bool_(False)", f"(np.sum({y}) > 0).astype(np.int32)"]
            )
        )
        other = f"p[0].astype(np.{'int32' if dt != 'int32' else 'float32'})" if bad else "p[1]"
        branches = f"lambda p: (p[0] * 2, np.sin(p[1])), lambda p: ({other}, p[0])"
        return f"_pack(T, np, lax.cond({pred}, {branches}, ({x}, {y})))"
    if which == "switch":
        k = draw(st.integers(1, 3))
        idx = draw(
            st.sampled_from(
                [f"(np.sum({x}) * 3).astype(np.int32)", "np.int32(-1)", f"np.int32({k})", "np.int32(0)", "1"]
            )
        )
        branches = ["lambda u, v: u * v", "lambda u, v: np.sin(u) + v", "lambda u, v: u - v * 0.5"][:k]
        if bad:
            branches[-1] = "lambda u, v: (u, v)"
        return f"lax.switch({idx}, [{', '.join(branches)}], {x}, {y})"
    n = draw(st.integers(0, 4))
    bs = draw(st.sampled_from(["", ", batch_size=1", ", batch_size=2", ", batch_size=3", ", batch_size=5"]))
    return f"lax.map(lambda r: np.sin(r) * np.sum(r), {_m((n, *shape), dt)}{bs})"


def _assoc(draw):
    shape = list(_shape(draw, 1, 3, 0, 4))
    nd = len(shape)
    dt = draw(st.sampled_from(_REALS + ["int32"]))
    ax = draw(st.integers(-nd, nd - 1 + (1 if _wrong(draw) else 0)))
    rev = draw(st.booleans())
    which = draw(st.sampled_from(["lax.add", "lax.mul", "lax.max", "lax.min", "pair", "lambda"]))
    if which == "pair" and dt == "int32":
        which = "lax.add"
    x = _m(shape, dt)
    if which == "pair":  # the linear recurrence h = a * h + b, as pairs
        other = list(shape)
        if _wrong(draw):
            other[ax] += 1
        fn = "lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1])"
        return (
            f"_pack(T, np, lax.associative_scan({fn}, ({x} * 0.5, {_m(other, dt, 'b')}), reverse={rev}, "
            f"axis={ax}))"
        )
    fn = "lambda u, v: lax.max(u, v) - lax.min(u, v) * 0" if which == "lambda" else which
    return f"lax.associative_scan({fn}, {x}, reverse={rev}, axis={ax})"


_FBITS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}


def _precision(draw):
    shape = _shape(draw, 0, 2, 1, 3)
    dt = draw(st.sampled_from(_REALS))
    ex, mt = _FBITS[dt]
    e = draw(st.integers(1, ex + (2 if _wrong(draw) else 0)))
    m = draw(st.integers(0, mt + (2 if _wrong(draw) else 0)))
    if _wrong(draw):
        e = 0
    scale = draw(st.sampled_from(["1", "37.5", "1e4", "3e38", "1e-30", "65504"]))
    specials = draw(st.booleans())
    x = f"({_m(shape, 'float64')} * {scale}).astype(np.{dt})"
    if specials:
        x = f"np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 6e-6, 65519.0, 1.5, -3.75e10], np.{dt})"
    return f"lax.reduce_precision({x}, exponent_bits={e}, mantissa_bits={m})"


_INT_EDGES = (
    "[0, 1, -1, 127, -128, 255, 32767, -32768, 65535, 2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1, -2**63]"
)
_FLOAT_EDGES = (
    "[np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 255.5, 256.0, -129.0, 65535.9, 2.2e9, -2.2e9, 4.3e9, "
    "9.3e18, -9.3e18, 1.9e19, 1e30]"
)


def _convert(draw):
    shape = _shape(draw, 0, 2, 1, 3)
    src, dst = draw(st.sampled_from(_ALL)), draw(st.sampled_from(_ALL))
    kind = draw(st.sampled_from(["scaled", "edges", "edges"]))
    if kind == "scaled":
        scale = draw(st.sampled_from(["1", "100.7", "3e4", "5e9", "1e20", "-7.5"]))
        x = f"({_m(shape, 'float64')} * {scale}).astype(np.{src})"
    else:
        vals = _FLOAT_EDGES
        x = (
            f"np.array({vals}).astype(np.{src})"
            if src in ("float64", "float32", "float16", "bfloat16")
            else (
                f"np.array({vals}, np.float64).astype(np.{src})"
                if not src.startswith("complex")
                else f"(np.array({vals}, np.float64) + 1j * np.array({vals}[::-1])).astype(np.{src})"
            )
        )
        if src not in _REALS and not src.startswith("complex"):
            # (an integer or bool source from float specials: the NumPy cast's value, the same on
            # both sides, then the extremes of the type)
            x = f"_onp.array({_INT_EDGES}, _onp.int64).astype(_onp.{src})"
    return f"lax.convert_element_type({x}, np.{dst})"


# ----------------------------------------------------------------------------------------------
# Linear algebra, fft, ragged dot


def _linalg(draw):
    n = draw(st.integers(1, 4))
    batch = _shape(draw, 0, 1, 1, 2)
    dt = draw(st.sampled_from(["float32", "float64", "float32", "complex64"]))
    sq = f"{_m((*batch, n, n), 'float64')}"
    # well-conditioned: 0.3 * x + n * I (symmetric positive definite: m m^T + I)
    base = f"(0.3 * {sq} + {n} * np.eye({n})).astype(np.{dt})"
    spd = f"(lambda m: m @ np.conj(np.swapaxes(m, -1, -2)) + np.eye({n}, dtype=m.dtype))({base})"
    which = draw(st.sampled_from(["chol", "eigh", "qr", "svd", "tri", "tri", "lu", "tridiag", "householder"]))
    if which == "chol":
        return f"lax.linalg.cholesky({spd}, symmetrize_input={draw(st.booleans())})"
    if which == "eigh":
        # distinct eigenvalues (the vectors' derivatives exist): a diagonal spread plus a small
        # symmetric part
        diag = f"np.diag(np.arange(1, {n + 1}, dtype=np.float64) * 2.0)"
        sym = f"((lambda m: (m + np.swapaxes(m, -1, -2)) * 0.1)({sq}) + {diag}).astype(np.{dt})"
        lower, si = draw(st.booleans()), draw(st.booleans())
        se = draw(st.booleans())
        flags = f"lower={lower}, symmetrize_input={si}, sort_eigenvalues={se}"
        return f"_pack(T, np, lax.linalg.eigh({sym}, {flags}))"
    if which == "qr":
        m = draw(st.integers(1, 4))
        x = f"(0.3 * {_m((*batch, m, n), 'float64')} + np.eye({m}, {n})).astype(np.{dt})"
        piv = draw(st.booleans()) and dt != "complex64"
        pv = ", pivoting=True" if piv else ""
        return f"_pack(T, np, lax.linalg.qr({x}, full_matrices={draw(st.booleans())}{pv}))"
    if which == "svd":
        m = draw(st.integers(1, 4))
        diag = f"np.eye({m}, {n}) * (1.0 + np.arange({n}))"  # (distinct singular values)
        x = f"(0.1 * {_m((*batch, m, n), 'float64')} + {diag}).astype(np.{dt})"
        uv = draw(st.booleans())
        full = draw(st.booleans())
        return f"_pack(T, np, lax.linalg.svd({x}, full_matrices={full}, compute_uv={uv}))"
    if which == "tri":
        left, lower = draw(st.booleans()), draw(st.booleans())
        ta, ca, ud = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
        k = draw(st.integers(1, 3))
        a = f"(lambda m: np.tril(m) if {lower} else np.triu(m))({base})"
        bshape = (*batch, n, k) if left else (*batch, k, n)
        if _wrong(draw):
            bshape = (*batch, n + 1, k) if left else (*batch, k, n + 1)
        b = _m(bshape, dt, "b")
        return (
            f"lax.linalg.triangular_solve({a}, {b}, left_side={left}, lower={lower}, transpose_a={ta}, "
            f"conjugate_a={ca}, unit_diagonal={ud})"
        )
    if which == "lu":
        return f"_pack(T, np, lax.linalg.lu({base}))"
    if which == "tridiag":
        k = draw(st.integers(1, 2))
        dl = f"np.concatenate([np.zeros(1), {_m((n - 1,), 'float64')} * 0.3]).astype(np.{dt})"
        du = f"np.concatenate([{_m((n - 1,), 'float64', 'b')} * 0.3, np.zeros(1)]).astype(np.{dt})"
        d = f"(4.0 + np.abs({_m((n,), 'float64')})).astype(np.{dt})"
        rhs = _m((n, k), dt, "b")
        return f"lax.linalg.tridiagonal_solve({dl}, {d}, {du}, {rhs})"
    m = draw(st.integers(n, 4))
    k = draw(st.integers(0, n))
    a = f"(0.3 * {_m((m, n), 'float64')}).astype(np.{dt})"
    taus = f"(0.5 + 0.1 * {_m((k,), 'float64', 'b')}).astype(np.{dt})"
    return f"lax.linalg.householder_product({a}, {taus})"


def _fft(draw):
    nd = draw(st.integers(1, 3))
    lens = [draw(st.integers(1, 4)) for _ in range(nd)]
    lead = _shape(draw, 0, 1, 1, 2)
    kind = draw(st.sampled_from(["FFT", "IFFT", "RFFT", "IRFFT"]))
    ft = draw(st.sampled_from([f"lax.FftType.{kind}", f"'{kind.lower()}'"]))
    cdt = draw(st.sampled_from(["complex64", "complex128"]))
    rdt = "float32" if cdt == "complex64" else "float64"
    shape = list(lens)
    if kind == "IRFFT":
        shape[-1] = lens[-1] // 2 + 1
    if _wrong(draw):
        shape[-1] += 1
    if kind == "RFFT":
        x = _m((*lead, *shape), rdt)
    else:
        x = f"({_m((*lead, *shape), rdt)} + 1j * {_m((*lead, *shape), rdt, 'b')}).astype(np.{cdt})"
    return f"lax.fft({x}, {ft}, {tuple(lens)})"


def _ragged(draw):
    g, m, k, n = (
        draw(st.integers(1, 3)),
        draw(st.integers(0, 4)),
        draw(st.integers(1, 3)),
        draw(st.integers(1, 3)),
    )
    sizes = [draw(st.integers(0, m)) for _ in range(g)]
    total = 0
    for i, s in enumerate(sizes):  # (group sizes adding up to m at most)
        sizes[i] = min(s, m - total)
        total += sizes[i]
    if draw(st.booleans()):
        sizes[-1] += m - total
    dt = draw(st.sampled_from(["float32", "float64", "bfloat16", "float16"]))
    pet = draw(st.sampled_from(["None", "np.float32", "None"]))
    rhs_k = k + 1 if _wrong(draw) else k
    return (
        f"lax.ragged_dot({_m((m, k), dt)}, {_m((g, rhs_k, n), dt, 'b')}, np.array({sizes}, np.int32), "
        f"preferred_element_type={pet})"
    )


# ----------------------------------------------------------------------------------------------
# Collectives under vmap


def _collective(draw):
    n = draw(st.integers(1, 4))
    inner = _shape(draw, 0, 2, 1, 4)
    dt = draw(st.sampled_from(_REALS + ["int32"]))
    x = _m((n, *inner), dt)
    name = "'i'" if not _wrong(draw) else "'j'"
    which = draw(st.sampled_from(["psum", "pmax", "pmin", "pmean", "all_gather", "ppermute", "all_to_all",
                                  "psum_scatter", "axis_index", "psum_tuple"]))  # fmt: skip
    if which in ("psum", "pmax", "pmin", "pmean"):
        body = f"lax.{which}(r, {name})"
    elif which == "psum_tuple":
        body = f"_pack(T, np, lax.psum((r, r * 2), {name}))"
    elif which == "all_gather":
        rank = len(inner)
        ax = draw(st.integers(0, rank))
        tiled = draw(st.booleans()) and rank > 0
        if tiled:
            ax = min(ax, rank - 1)
        body = f"lax.all_gather(r, {name}, axis={ax}, tiled={tiled})"
    elif which == "ppermute":
        perm = list(zip(range(n), draw(st.permutations(range(n)))))
        perm = [p for p in perm if draw(st.booleans()) or p[0] == 0]
        body = f"lax.ppermute(r, {name}, perm={perm!r})"
    elif which == "all_to_all":
        if not inner:
            inner, x = (n,), _m((n, n), dt)
        sa = draw(st.integers(0, len(inner) - 1))
        ca = draw(st.integers(0, len(inner) - 1))
        tiled = draw(st.booleans())
        if not tiled and inner[sa] != n:
            inner = tuple(n if i == sa else d for i, d in enumerate(inner))
            x = _m((n, *inner), dt)
        body = f"lax.all_to_all(r, {name}, {sa}, {ca}, tiled={tiled})"
    elif which == "psum_scatter":
        inner = (n, *inner[1:]) if inner else (n,)
        x = _m((n, *inner), dt)
        body = f"lax.psum_scatter(r, {name}, scatter_dimension=0, tiled={draw(st.booleans())})"
    else:
        body = f"r * lax.axis_index({name}).astype(r.dtype)"
    return f"T.vmap(lambda r: {body}, axis_name='i')({x})"


# ----------------------------------------------------------------------------------------------
# Integer, complex and half-precision edges


_EXTREMES = {
    "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint8": (0, 255), "uint16": (0, 65535), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}  # fmt: skip


_INT_FNS = ["mul", "add", "sub", "neg", "abs", "div", "rem", "sign", "integer_pow", "shift_right_logical",
            "shift_right_arithmetic", "shift_left", "max", "square"]  # fmt: skip


def _intedge(draw):
    dt = draw(st.sampled_from(_INTS))
    lo, hi = _EXTREMES[dt]
    vals = [lo, hi, 0, 1, 2, 3, 7] + ([-1, lo + 1, -7] if lo < 0 else [hi - 1, 5, 128])
    perm = list(draw(st.permutations(vals)))
    # (built by NumPy: in 32-bit mode both libraries take the 64-bit values truncated alike)
    x, y = f"_onp.array({vals!r}, _onp.{dt})", f"_onp.array({perm!r}, _onp.{dt})"
    which = draw(st.sampled_from(_INT_FNS))
    if which in ("neg", "abs", "sign", "square"):
        return f"lax.{which}({x})"
    if which == "integer_pow":
        return f"lax.integer_pow({x}, {draw(st.integers(0, 5))})"
    if which.startswith("shift"):
        w = int("".join(c for c in dt if c.isdigit()))
        amounts = [0, 1, w - 1, w, w + 1, 2 * w, 3, 5, 7, w // 2]
        return f"lax.{which}({x}, _onp.array({amounts!r}, _onp.{dt}))"
    return f"lax.{which}({x}, {y})"


_CVALS = (
    "[complex(-1, 0.0), complex(-1, -0.0), complex(0.0, 0.0), complex(-0.0, 0.0), complex(0.0, -0.0), "
    "complex(-0.0, -0.0), complex(-np.inf, 0.0), complex(-np.inf, -0.0), complex(np.inf, np.nan), "
    "complex(np.nan, 0.0), complex(0.0, np.inf), complex(-2.0, 1e-30), complex(-2.0, -1e-30), "
    "complex(1.0, 0.0), complex(2.0, -0.0), complex(-1e-30, 0.0), complex(np.inf, np.inf), "
    "complex(1.5, -2.5)]"
)
_CFUNCS = ["sqrt", "log", "rsqrt", "log1p", "exp", "expm1", "tan", "atan", "asin", "acos", "atanh",
           "asinh", "acosh", "sin", "cos", "tanh", "sinh", "cosh", "abs", "sign"]  # fmt: skip


def _complex(draw):
    dt = draw(st.sampled_from(["complex64", "complex128"]))
    z = f"np.array({_CVALS}, np.{dt})"
    which = draw(st.sampled_from(_CFUNCS + ["pow", "pow", "integer_pow", "cbrt"]))
    call = f"lax.{which}({z})"
    if which == "integer_pow":
        call = f"lax.integer_pow({z}, {draw(st.integers(-3, 3))})"
    if which == "pow":
        e = draw(st.sampled_from(["0.5", "2", "-1", "complex(0, 1)", "complex(0.5, -0.0)", "0"]))
        ev = f"np.full(18, {e}, np.{dt})" if draw(st.booleans()) else f"np.flip({z})"
        call = f"lax.pow({z}, {ev})"
    if draw(st.booleans()):  # (the parts with their signs: signed zeros compared too)
        return f"_signed_parts(np, {call})"
    return call


def _nextafter(draw):
    dt = draw(st.sampled_from(_REALS))
    vals = "[0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 6e-8, 65504.0, 3.4e38]"
    x = f"np.array({vals}, np.{dt})"
    y = draw(st.sampled_from([f"np.flip({x})", f"np.zeros(11, np.{dt})", f"-np.zeros(11, np.{dt})",
                              f"np.full(11, np.inf, np.{dt})", f"np.full(11, -np.inf, np.{dt})",
                              f"np.full(11, np.nan, np.{dt})", x]))  # fmt: skip
    out = f"lax.nextafter({x}, {y})"
    return f"_bits(np, lax, {out})" if draw(st.booleans()) else out


_HALF_FUNCS = ["exp", "log1p", "tanh", "logistic", "erf", "expm1", "log", "sin", "cos", "sqrt", "rsqrt",
               "cbrt", "erfc", "erf_inv", "lgamma", "digamma", "atan", "tan", "exp2", "asinh", "acosh",
               "atanh", "sinh", "cosh", "asin", "acos", "square", "reciprocal"]  # fmt: skip


def _half(draw):
    dt = draw(st.sampled_from(["float16", "bfloat16", "float16", "bfloat16", "float32"]))
    shape = _shape(draw, 1, 2, 1, 4)
    fn = draw(st.sampled_from(_HALF_FUNCS))
    scale = draw(st.sampled_from(["1", "4", "0.01", "12", "100", "-3"]))
    x = f"({_m(shape, 'float64')} * {scale}).astype(np.{dt})"
    if draw(st.integers(0, 3)) == 0:
        vals = "[0.0, -0.0, 1e-5, -1e-5, 6e-8, 11.0, -11.0, 88.7, 65504.0, np.inf, -np.inf, np.nan]"
        x = f"np.array({vals}, np.{dt})"
    body = "lax.div(np.ones((), v.dtype), v)" if fn == "reciprocal" else f"lax.{fn}(v)"
    if fn == "erf_inv":
        body = "lax.erf_inv(np.tanh(v))"
    call = f"(lambda v: {body})({x})"
    if draw(st.booleans()):
        # bit for bit: half floats everywhere (eagerly too: their compiled steps); float32 as
        # compiled (funcgrad's eager float32 transcendentals are NumPy's, within an ulp or two)
        if dt == "float32":
            if EAGER:
                return call
            call = f"T.jit(lambda v: {body})({x})"
        return f"_bits(np, lax, {call})"
    return call


DRAWS = [_control, _control, _assoc, _precision, _convert, _convert, _linalg, _linalg, _fft, _ragged,
         _collective, _intedge, _complex, _nextafter, _half, _half]  # fmt: skip
