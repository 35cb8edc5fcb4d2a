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
  bit for bit (their results bitcast to integers);
- session 18's: ``conv_transpose`` (random layouts, strides, padding, ``rhs_dilation``,
  ``transpose_kernel``), ``rng_bit_generator`` (each algorithm, shapes and widths, keys of the
  wrong length), ``dynamic_slice``/``dynamic_update_slice``/``dynamic_*_index_in_dim`` with starts
  mapped by ``vmap`` and out of range, ``argmax``/``argmin``/``sort``/``top_k`` (k = n too) of
  inputs with NaNs, signed zeros and ties, chains of ``expand_dims``/``squeeze``/``rev``/
  ``transpose``/``reshape``/``broadcast_in_dim`` under ``vmap`` with negative in/out axes,
  ``select_n`` with up to 7 cases under ``vmap``, ``reduce_window`` with every reducer and the
  cumulative reductions under ``jvp``/``grad``/``vjp``, ``pad`` with negative and interior padding
  differentiated. ``FUNCGRAD_FUZZ_ONLY_DRAWS=_conv_transpose,_rng_bits`` samples only the draws so
  named (ops_lax's and these).

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


# ----------------------------------------------------------------------------------------------
# Session 18: where a generator written from the lax API reference goes (each under ops_lax's
# random transformation stacks, as every draw here)


def _conv_transpose(draw):
    nsp = draw(st.integers(1, 2))
    sp = "HW"[:nsp] if nsp == 2 else draw(st.sampled_from(["H", "W", "X"]))
    tk = draw(st.booleans())
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    # (the kernel's I meets the input's features; transpose_kernel swaps the kernel's I and O)
    kdims = {"I": c, "O": o} if not tk else {"I": o, "O": c}
    if _wrong(draw):
        kdims["O" if tk else "I"] += 1
    sizes = [draw(st.integers(1, 4)) for _ in range(nsp)]
    ksizes = [draw(st.integers(1, 3)) for _ in range(nsp)]
    if draw(st.integers(0, 2)):
        lhs_spec = "".join(draw(st.permutations(list("NC" + sp))))
        rhs_spec = "".join(draw(st.permutations(list("OI" + sp))))
        out_spec = "".join(draw(st.permutations(list("NC" + sp))))
        dn = f"({lhs_spec!r}, {rhs_spec!r}, {out_spec!r})"
    else:  # None: jax's defaults for the rank (NHC/HIO/NHC, NHWC/HWIO/NHWC)
        sp = "HW"[:nsp]
        lhs_spec, rhs_spec, dn = "N" + sp + "C", sp + "IO", "None"
    lhs_shape = [{"N": n, "C": c, **dict(zip(sp, sizes))}[k] for k in lhs_spec]
    rhs_shape = [{**kdims, **dict(zip(sp, ksizes))}[k] for k in rhs_spec]
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    kind = draw(st.sampled_from(["SAME", "VALID", "pairs", "pairs"]))
    padding = (
        repr([(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)])
        if kind == "pairs"
        else repr(kind)
    )
    rdil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    dt = draw(st.sampled_from(_REALS))
    pet = draw(st.sampled_from(["None", "None", "np.float32"]))
    prec = draw(st.sampled_from(["None", "lax.Precision.HIGHEST"]))
    return (
        f"lax.conv_transpose({_m(lhs_shape, dt)}, {_m(rhs_shape, dt, 'b')}, {strides}, {padding}, "
        f"rhs_dilation={rdil}, dimension_numbers={dn}, transpose_kernel={tk}, precision={prec}, "
        f"preferred_element_type={pet})"
    )


def _rng_bits(draw):
    alg = draw(st.sampled_from(["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(draw(st.integers(0, 3))))
    dt = draw(st.sampled_from(["uint8", "uint16", "uint32", "uint64"] + (["int32"] if _wrong(draw) else [])))
    klen = 4 if not _wrong(draw) else draw(st.sampled_from([2, 3, 5]))
    key = f"(np.abs({_m((klen,), 'float64')}) * 1e9 + 7).astype(np.uint32)"
    alg_s = f"lax.RandomAlgorithm.{alg}" if draw(st.integers(0, 3)) else ""
    kw = f", algorithm={alg_s}" if alg_s else ""
    return f"_pack(T, np, lax.rng_bit_generator({key}, {shape}, np.{dt}{kw}))"


def _dynamic_vmap(draw):
    """dynamic_slice/dynamic_update_slice/dynamic_index_in_dim with starts mapped by vmap (out of
    range: clamped), the operand mapped or not."""
    nd = draw(st.integers(1, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(nd)]
    n = draw(st.integers(0, 3))
    idt = draw(st.sampled_from(["int32", "int8", "int64", "uint8", "int16"]))
    starts = [[draw(st.integers(-6, 6)) for _ in range(nd)] for _ in range(n)]
    if idt.startswith("u"):
        starts = [[abs(v) for v in row] for row in starts]
    s = f"np.array({starts!r}, np.{idt}).reshape({(n, nd)!r})"
    dt = draw(st.sampled_from(_REALS + ["int32", "bool"]))
    mapped = draw(st.booleans())
    x = _m((n, *shape) if mapped else shape, dt)
    ia = "0" if mapped else "None"
    sizes = [draw(st.integers(0, d)) for d in shape]
    if _wrong(draw):
        sizes[0] += 1
    which = draw(st.sampled_from(["slice", "slice", "update", "update", "index", "update_index"]))
    unpacked = "[" + ", ".join(f"s[{i}]" for i in range(nd)) + "]"
    sts = draw(st.sampled_from([unpacked, "s"]))  # (a list of scalars, or one vector)
    if which == "slice":
        body = f"lax.dynamic_slice(x, {sts}, {tuple(sizes)})"
        return f"T.vmap(lambda x, s: {body}, in_axes=({ia}, 0))({x}, {s})"
    if which == "update":
        umapped = draw(st.booleans())
        u = _m((n, *sizes) if umapped else sizes, dt, "b")
        body = f"lax.dynamic_update_slice(x, u, {sts})"
        return (
            f"T.vmap(lambda x, u, s: {body}, in_axes=({ia}, {'0' if umapped else 'None'}, 0))({x}, {u}, {s})"
        )
    ax = draw(st.integers(-nd, nd - 1))
    if which == "index":
        body = f"lax.dynamic_index_in_dim(x, s[0], axis={ax}, keepdims={draw(st.booleans())})"
        return f"T.vmap(lambda x, s: {body}, in_axes=({ia}, 0))({x}, {s})"
    upd = list(shape)
    upd[ax] = 1
    body = f"lax.dynamic_update_index_in_dim(x, u, s[0], axis={ax})"
    return f"T.vmap(lambda x, u, s: {body}, in_axes=({ia}, None, 0))({x}, {_m(upd, dt, 'b')}, {s})"


_NAN_TIES = (
    "(lambda v: np.where(np.abs(v) > 0.8, np.array(np.nan, v.dtype), np.where(np.abs(v) < 0.2, "
    "np.zeros((), v.dtype) * np.sign(v), np.round(v * 2) / 2)))"
)  # (NaNs, signed zeros and ties from the operand's elements)


def _nan_ties(draw):
    """argmax/argmin, sort and top_k of inputs with NaNs, signed zeros and ties."""
    shape = list(_shape(draw, 1, 3, 1, 4))
    nd = len(shape)
    dt = draw(st.sampled_from(_REALS + ["int32", "uint8"]))
    x = _m(shape, "float64" if dt in _REALS else "float32")
    x = f"{_NAN_TIES}({x}).astype(np.{dt})" if dt in _REALS else f"np.round(np.abs({x}) * 2).astype(np.{dt})"
    which = draw(st.sampled_from(["argmax", "argmin", "sort", "sort2", "top_k"]))
    if which in ("argmax", "argmin"):
        ax = draw(st.integers(0, nd - 1 + (1 if _wrong(draw) else 0)))
        idt = draw(st.sampled_from(["int32", "int8", "uint8", "int64", "int16", "uint32"]))
        return f"lax.{which}({x}, {ax}, np.{idt})"
    dim = draw(st.integers(-nd, nd - 1))
    if which == "sort":
        return f"lax.sort({x}, dimension={dim}, is_stable={draw(st.booleans())})"
    if which == "sort2":  # (the keys' ties broken by the second operand, stably)
        y = f"lax.broadcasted_iota(np.int32, {tuple(shape)}, {dim % nd})"
        nk = draw(st.sampled_from([1, 2]))
        return f"_one_dtype(T, np, lax.sort(({x}, {y}), dimension={dim}, is_stable=True, num_keys={nk}))"
    if nd > 1 and draw(st.booleans()):
        x = f"np.moveaxis({x}, {dim}, -1)"
        shape.append(shape.pop(dim))
    k = shape[-1] if draw(st.booleans()) else draw(st.integers(0, shape[-1]))
    return f"_one_dtype(T, np, lax.top_k({x}, {k}))"


def _shape_chain(draw):
    """expand_dims/squeeze/rev/transpose/reshape chains (negative axes where jax takes them)
    under vmap with random in/out axes."""
    shape = list(_shape(draw, 0, 3, 1, 3))
    n = draw(st.integers(1, 3))
    ia = draw(st.integers(-len(shape) - 1, len(shape)))
    full = list(shape)
    full.insert(ia % (len(shape) + 1), n)
    dt = draw(st.sampled_from(_REALS + ["int32", "bool"]))
    body, cur = "r", list(shape)
    for _ in range(draw(st.integers(2, 4))):
        op = draw(st.sampled_from(["expand", "squeeze", "rev", "transpose", "reshape", "bid"]))
        nd = len(cur)
        if op == "expand":
            k = draw(st.integers(1, 2))
            dims = sorted(draw(st.permutations(range(nd + k)))[:k])
            neg = [d - (nd + k) if draw(st.booleans()) else d for d in dims]
            body = f"lax.expand_dims({body}, {tuple(neg)})"
            for d in dims:
                cur.insert(d, 1)
        elif op == "squeeze":
            ones = [i for i, d in enumerate(cur) if d == 1]
            dims = _subset_of(draw, ones)
            body = f"lax.squeeze({body}, {tuple(d - nd if draw(st.booleans()) else d for d in dims)})"
            cur = [d for i, d in enumerate(cur) if i not in dims]
        elif op == "rev":
            dims = _subset_of(draw, range(nd))
            body = f"lax.rev({body}, {tuple(dims)})"
        elif op == "transpose":
            perm = list(draw(st.permutations(range(nd))))
            body = f"lax.transpose({body}, {tuple(perm)})"
            cur = [cur[p] for p in perm]
        elif op == "reshape":
            size = 1
            for d in cur:
                size *= d
            new = [size] if draw(st.booleans()) else [size, 1]
            dims = f", dimensions={tuple(reversed(range(nd)))}" if nd and draw(st.booleans()) else ""
            body = f"lax.reshape({body}, {tuple(new)}{dims})"
            cur = new
        else:
            out = [1 + draw(st.integers(0, 1)), *cur]
            body = f"lax.broadcast_in_dim({body}, {tuple(out)}, {tuple(range(1, nd + 1))})"
            cur = out
    oa = draw(st.integers(-len(cur) - 1, len(cur)))
    return f"T.vmap(lambda r: {body}, in_axes={ia}, out_axes={oa})({_m(full, dt)})"


def _subset_of(draw, items):
    items = list(items)
    return sorted(draw(st.permutations(items))[: draw(st.integers(0, len(items)))])


def _select_many(draw):
    """select_n with 1-7 cases under vmap, the selector and the cases each mapped or not."""
    shape = list(_shape(draw, 0, 2, 1, 3))
    n = draw(st.integers(1, 7))
    b = draw(st.integers(1, 3))
    dt = draw(st.sampled_from(_REALS + ["int32", "bool", "uint8"]))
    pred_mapped = draw(st.booleans())
    pshape = [b, *shape] if pred_mapped else shape
    if n <= 2 and draw(st.booleans()):
        which = f"{_m(pshape, 'float32', 'b')} > 0"
    else:
        which = f"np.clip(np.round({_m(pshape, 'float32', 'b')} * {n}), 0, {n - 1}).astype(np.int32)"
    if _wrong(draw):
        which = f"{which}.astype(np.int8)" if n > 2 else f"{which}.astype(np.float32)"
    mapped = [draw(st.booleans()) for _ in range(n)]
    if not pred_mapped and not any(mapped):
        mapped[0] = True
    cases = [_m([b, *shape] if m else shape, dt, "a") for m in mapped]
    cases = [f"({c} * {k + 1}).astype(np.{dt})" if dt != "bool" else c for k, c in enumerate(cases)]
    names = [f"c{k}" for k in range(n)]
    axes = ", ".join("0" if m else "None" for m in mapped)
    return (
        f"T.vmap(lambda p, {', '.join(names)}: lax.select_n(p, {', '.join(names)}), "
        f"in_axes=({'0' if pred_mapped else 'None'}, {axes}))({which}, {', '.join(cases)})"
    )


def _window_grads(draw):
    """reduce_window with every reducer (add/max/min/mul and the generic forms), padding, strides
    and dilations, and the cumulative reductions reversed, both under a derivative here."""
    shape = list(_shape(draw, 1, 3, 1, 4))
    nd = len(shape)
    dt = draw(st.sampled_from(["float32", "float64", "float32", "bfloat16", "float16"]))
    x = _m(shape, dt)
    if draw(st.integers(0, 2)) == 0:
        fn = draw(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]))
        # (a non-negative axis: jax's derivative rules take a negative one where its shape rule
        # refuses it, the documented jax-cumulative-negative-axis-under-derivatives)
        ax = draw(st.integers(0, nd - 1))
        call = f"lax.{fn}(v, axis={ax}, reverse={draw(st.booleans())})"
    else:
        fn, init = draw(st.sampled_from([("lax.add", "0.0"), ("lax.max", "-np.inf"), ("lax.min", "np.inf"),
                                         ("lax.mul", "1.0"), ("(lambda p, q: p + q)", "0.0"),
                                         ("(lambda p, q: lax.max(p, q))", "-np.inf")]))  # fmt: skip
        win = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        strides = tuple(draw(st.integers(1, 2)) for _ in range(nd))
        pad = draw(st.sampled_from(["'VALID'", "'SAME'", "pairs"]))
        if pad == "pairs":
            pad = repr([(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd)])
        bd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
        wd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
        call = f"lax.reduce_window(v, np.array({init}, v.dtype), {fn}, {win}, {strides}, {pad}, {bd}, {wd})"
    how = draw(st.sampled_from(["jvp", "grad", "vjp"]))
    if how == "jvp":
        return f"_pack(T, np, T.jvp(lambda v: {call}, ({x},), (_probe(np, {x}),)))"
    if how == "grad":
        return f"T.grad(lambda v: np.sum(np.sin({call}).astype(np.float32)))({x})"
    return f"(lambda o, pb: _pack(T, np, (o, pb(_probe(np, o)))))(*T.vjp(lambda v: {call}, {x}))"


def _pad_grad(draw):
    """pad with negative and interior padding under a derivative (its transpose slices)."""
    shape = _shape(draw, 0, 3, 0, 4)
    cfg = [(draw(st.integers(-3, 2)), draw(st.integers(-3, 2)), draw(st.integers(0, 2))) for _ in shape]
    dt = draw(st.sampled_from(["float32", "float64", "bfloat16", "float16"]))
    x = _m(shape, dt)
    val = draw(st.sampled_from(["0.0", "-1.5", "np.inf"]))
    call = f"lax.pad(v, np.array({val}, v.dtype), {cfg!r})"
    if draw(st.booleans()):
        return f"_pack(T, np, T.jvp(lambda v: {call}, ({x},), (_probe(np, {x}),)))"
    return f"T.grad(lambda v: np.sum(np.cos({call}).astype(np.float32)))({x})"


DRAWS = [_control, _control, _assoc, _precision, _convert, _convert, _linalg, _linalg, _fft, _ragged,
         _collective, _intedge, _complex, _nextafter, _half, _half,
         _conv_transpose, _conv_transpose, _rng_bits, _dynamic_vmap, _dynamic_vmap, _nan_ties, _nan_ties,
         _shape_chain, _shape_chain, _select_many, _window_grads, _window_grads, _pad_grad]  # fmt: skip

# FUNCGRAD_FUZZ_ONLY_DRAWS=_conv_transpose,_rng_bits: ops_lax samples only these draws (a corner run
# long; empty: all of ops_lax's and these)
ONLY_DRAWS = [d for d in os.environ.get("FUNCGRAD_FUZZ_ONLY_DRAWS", "").split(",") if d]
