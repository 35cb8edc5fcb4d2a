"""The twelfth part of the fuzzer's surface table: ``jax.lax`` primitives with random parameters (session 16).

The other tables call ``lax`` with a few fixed parameter sets; a generator written from JAX's API
reference draws the parameters themselves. For one operand ``a`` (its elements feed every array
built here through ``_mat``, so derivatives reach it), a call is drawn with:

- ``dot_general``: random batch/contracting dimension numbers over operands of rank 1-3 in random
  dimension orders, mixed operand dtypes, ``preferred_element_type``, ``precision``;
- ``conv_general_dilated``: random ``dimension_numbers`` strings (letters in random orders, 1 or 2
  spatial dimensions), strides, padding (pairs, ``'SAME'``, ``'VALID'``, ``'SAME_LOWER'``), lhs/rhs
  dilation, ``feature_group_count``, ``batch_group_count``;
- ``gather`` and ``scatter``/``scatter_add``/``_mul``/``_min``/``_max``/``_sub``: random
  ``GatherDimensionNumbers``/``ScatterDimensionNumbers`` (``operand_batching_dims`` too),
  indices in and out of bounds, each ``mode`` (``promise_in_bounds`` with indices in bounds only),
  ``unique_indices``/``indices_are_sorted`` where they hold, ``fill_value``;
- ``reduce_window`` (add/max/min/mul, a generic lambda) with random windows, strides, padding,
  base and window dilations (``select_and_scatter_add`` under ``grad``), ``reduce_precision``;
- ``dynamic_slice``/``dynamic_update_slice``/``dynamic_index_in_dim`` with starts out of range and
  of every integer dtype; ``pad`` with negative and interior padding;
- ``sort`` of several operands with ``num_keys``/``is_stable``, ``top_k`` (``axis``), the
  cumulative reductions with ``reverse``, ``rev``, ``transpose``, ``broadcast_in_dim``, ``squeeze``,
  ``expand_dims``, ``clamp``, ``select_n`` with 1-4 cases, ``argmax``/``argmin`` with
  ``index_dtype``, ``reduce`` with a custom (also variadic) computation;
- bit-level and integer ops: ``bitcast_convert_type`` between widths, ``population_count``,
  ``clz``, the three shifts on signed and unsigned operands with amounts past the width,
  ``div``/``rem`` with negative operands, ``nextafter``, ``round`` with both methods;
- special functions: ``erf_inv``, ``igamma``/``igammac``, ``lgamma``, ``digamma``, ``polygamma``,
  ``bessel_i0e``/``bessel_i1e``, ``betainc``, ``zeta``;

in float16/bfloat16/float32/float64 and integer dtypes, then 0-3 of ops_prog's transformations
(jit, grad/jvp/vjp/jacfwd/jacrev/hessian, vmap with random axes, control flow). Where jax's
abstract evaluation rejects the drawn parameters (some are drawn wrong on purpose: sizes that do not
match, dimensions out of range or repeated, group counts that do not divide), the call runs under
``_err`` (ops_shard's helper), whose value is the exception's class name: both libraries must
raise the same type.

Long run only (as the other session tables).

>>> LAX[0].name
'laxp.call'
"""

from __future__ import annotations

import os

from hypothesis import strategies as st

from _fuzz.ops_lax2 import DRAWS as _DRAWS2
from _fuzz.ops_lax2 import ONLY_DRAWS as _ONLY_DRAWS
from _fuzz.ops_prog import _ok, _ProgOp, _wrap

_FLOATS = ["float32", "float32", "float64", "float16", "bfloat16"]
_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
_PETS = [None, None, "float32", "float64", "int32", "bfloat16", "float16", "int64"]


def _m(shape, dtype, src="a"):
    """An array of ``shape``/``dtype`` from the operand's elements (``src``: a or b)."""
    return f"_mat(np, {src}, {tuple(shape)!r}, np.{dtype})"


def _dt(name):
    return "None" if name is None else f"np.{name}"


def _shape(draw, rank_lo=0, rank_hi=3, lo=0, hi=3):
    # (an empty dimension in one draw of five at most: the rest are the sizes 1..hi)
    sizes = st.one_of(st.integers(max(lo, 1), hi), st.integers(lo, hi))
    return tuple(draw(sizes) for _ in range(draw(st.integers(rank_lo, rank_hi))))


def _wrong(draw):
    """Whether to draw this parameter wrong (about one in eight)."""
    return draw(st.integers(0, 7)) == 0


# ----------------------------------------------------------------------------------------------
# The draws: each returns the call's text over ``a``, ``b``.


def _dot_general(draw):
    nb, nc = draw(st.integers(0, 1)), draw(st.integers(0, 2))
    fl, fr = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    bs = [draw(st.integers(1, 3)) for _ in range(nb)]
    cs = [draw(st.integers(0, 3)) for _ in range(nc)]
    lf = [draw(st.integers(1, 3)) for _ in range(fl)]
    rf = [draw(st.integers(1, 3)) for _ in range(fr)]
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(fl)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(fr)]
    lroles, rroles = draw(st.permutations(lroles)), draw(st.permutations(rroles))
    size = {"b": bs, "c": cs}
    lshape = [size[k][i] if k != "f" else lf[i] for k, i in lroles]
    rshape = [size[k][i] if k != "f" else rf[i] for k, i in rroles]
    lc = tuple(lroles.index(("c", i)) for i in range(nc))
    rc = tuple(rroles.index(("c", i)) for i in range(nc))
    lb = tuple(lroles.index(("b", i)) for i in range(nb))
    rb = tuple(rroles.index(("b", i)) for i in range(nb))
    if _wrong(draw) and rshape:
        rshape[0] += 1  # sizes that do not match (or a free dimension one larger)
    if _wrong(draw):
        lc = lc + lc[:1] if lc else (len(lshape),)
    ld, rd = draw(st.sampled_from(_FLOATS + ["int8", "int32", "bool"])), None
    rd = ld if draw(st.integers(0, 3)) else draw(st.sampled_from(_FLOATS + ["int8", "int32"]))
    pet = draw(st.sampled_from(_PETS))
    prec = draw(st.sampled_from(["None", "lax.Precision.HIGHEST", "'default'", "('high', 'highest')"]))
    return (
        f"lax.dot_general({_m(lshape, ld)}, {_m(rshape, rd, 'b')}, (({lc}, {rc}), ({lb}, {rb})), "
        f"precision={prec}, preferred_element_type={_dt(pet)})"
    )


def _conv(draw):
    nsp = draw(st.integers(1, 2))
    sp = "HW"[:nsp] if nsp == 2 else draw(st.sampled_from(["H", "W", "X"]))
    lhs_spec = "".join(draw(st.permutations(list("NC" + sp))))
    rhs_spec = "".join(draw(st.permutations(list("OI" + sp))))
    out_spec = "".join(draw(st.permutations(list("NC" + sp))))
    g = draw(st.sampled_from([1, 1, 2]))
    bg = 1 if g > 1 else draw(st.sampled_from([1, 1, 2]))
    n = bg * draw(st.integers(1, 2))
    c = g * draw(st.integers(1, 2))
    o = g * bg * draw(st.integers(1, 2))
    if _wrong(draw):
        o += 1  # a feature or batch group count that does not divide the output features
    sizes = [draw(st.integers(1, 5)) for _ in range(nsp)]
    ksizes = [draw(st.integers(1, 3)) for _ in range(nsp)]
    lhs_dims = {"N": n, "C": c, **dict(zip(sp, sizes))}
    rhs_dims = {"O": o, "I": c // g, **dict(zip(sp, ksizes))}
    lhs_shape = [lhs_dims[k] for k in lhs_spec]
    rhs_shape = [rhs_dims[k] for k in rhs_spec]
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    kind = draw(st.sampled_from(["pairs", "SAME", "VALID", "SAME_LOWER", "pairs"]))
    padding = (
        repr([(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)])
        if kind == "pairs"
        else repr(kind)
    )
    ld = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    rdil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    dt = draw(st.sampled_from(_FLOATS + ["int32", "int8"]))
    pet = draw(st.sampled_from(_PETS[:4]))
    dn = draw(st.sampled_from([f"({lhs_spec!r}, {rhs_spec!r}, {out_spec!r})", "NCHW"]))
    if dn == "NCHW":  # None: the default layout (NC + spatial, OI + spatial)
        lhs_shape = [n, c, *sizes]
        rhs_shape = [o, c // g, *ksizes]
        dn = "None"
    return (
        f"lax.conv_general_dilated({_m(lhs_shape, dt)}, {_m(rhs_shape, dt, 'b')}, {strides}, {padding}, "
        f"lhs_dilation={ld}, rhs_dilation={rdil}, dimension_numbers={dn}, feature_group_count={g}, "
        f"batch_group_count={bg}, preferred_element_type={_dt(pet)})"
    )


def _subset(draw, items, lo=0):
    items = list(items)
    k = draw(st.integers(min(lo, len(items)), len(items)))
    return sorted(draw(st.permutations(items))[:k])


def _indices(draw, batch_shape, index_sizes, in_bounds):
    """An int array literal of ``batch_shape + (len(index_sizes),)``, each entry a start for the
    operand dimension of that size (in bounds, or anywhere from -size-2 to size+2)."""
    n = len(index_sizes)
    count = 1
    for d in batch_shape:
        count *= d
    vals = []
    for _ in range(count):
        for s in index_sizes:
            vals.append(
                draw(st.integers(0, max(s - 1, 0))) if in_bounds else draw(st.integers(-s - 2, s + 2))
            )
    dtype = draw(st.sampled_from(["int32", "int32", "int8", "uint8", "int64"]))
    if dtype == "uint8":
        vals = [abs(v) for v in vals]
    return f"np.array({vals!r}, np.{dtype}).reshape({tuple(batch_shape) + (n,)!r})", vals


def _gather_dims(draw, scatter=False):
    """Operand shape, dimension numbers (as a dict of tuples), batch shape of the indices, slice
    sizes (the window), and the output shape's offset placement."""
    oshape = list(_shape(draw, 1, 3, 1, 3))
    rank = len(oshape)
    dims = list(range(rank))
    obatch = _subset(draw, dims) if draw(st.integers(0, 3)) == 0 else []
    rest = [d for d in dims if d not in obatch]
    sim = list(draw(st.permutations(rest)))[: draw(st.integers(0, len(rest)))]
    collapsed = _subset(draw, sim)  # (collapsed dimensions are indexed: in start_index_map)
    nbatch = len(obatch) + draw(st.integers(0, 1))
    ishape = [draw(st.integers(0, 3)) for _ in range(nbatch)]
    ibatch = list(draw(st.permutations(range(nbatch))))[: len(obatch)]
    for od, idim in zip(obatch, ibatch):
        ishape[idim] = oshape[od]
    window = [1 if d in collapsed or d in obatch else draw(st.integers(0, oshape[d])) for d in dims]
    nwin = rank - len(collapsed) - len(obatch)
    out_rank = nbatch + nwin
    offset = sorted(draw(st.permutations(range(out_rank)))[:nwin])
    return oshape, obatch, ibatch, sim, collapsed, ishape, window, offset


def _gather(draw):
    oshape, obatch, ibatch, sim, collapsed, ishape, window, offset = _gather_dims(draw)
    mode = draw(st.sampled_from(["'clip'", "'fill'", "'promise_in_bounds'", "None", "'clip'"]))
    inb = mode == "'promise_in_bounds'" or draw(st.booleans())
    idx, vals = _indices(draw, ishape, [oshape[d] - (window[d] - 1) for d in sim], inb)
    if _wrong(draw):
        window[0] += 1
    if _wrong(draw):
        offset = offset[::-1] if len(offset) > 1 else offset + [0]
    dt = draw(st.sampled_from(_FLOATS + ["int32", "bool", "uint8"]))
    sorted_ = draw(st.booleans()) and vals == sorted(vals) and len(sim) == 1
    fill = ", fill_value=-7" if mode == "'fill'" and draw(st.booleans()) else ""
    dn = (
        f"lax.GatherDimensionNumbers(offset_dims={tuple(offset)}, collapsed_slice_dims={tuple(collapsed)}, "
        f"start_index_map={tuple(sim)}, operand_batching_dims={tuple(obatch)}, "
        f"start_indices_batching_dims={tuple(ibatch)})"
    )
    return (
        f"lax.gather({_m(oshape, dt)}, {idx}, {dn}, {tuple(window)}, mode={mode}, "
        f"indices_are_sorted={sorted_}{fill})"
    )


_SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter_sub"]


def _scatter(draw):
    oshape, obatch, ibatch, sim, collapsed, ishape, window, offset = _gather_dims(draw, scatter=True)
    mode = draw(st.sampled_from(["'clip'", "'drop'", "'promise_in_bounds'", "None", "'fill'"]))
    inb = mode == "'promise_in_bounds'" or draw(st.booleans())
    idx, vals = _indices(draw, ishape, [oshape[d] - (window[d] - 1) for d in sim], inb)
    # updates: the indices' batch dimensions with the window's (non-inserted, non-batching) sizes at
    # the offset positions
    wsizes = [window[d] for d in range(len(oshape)) if d not in collapsed and d not in obatch]
    ushape, bi, wi = [], iter(ishape), iter(wsizes)
    for pos in range(len(ishape) + len(wsizes)):
        ushape.append(next(wi) if pos in offset else next(bi))
    if _wrong(draw):
        ushape = ushape + [1]
    which = draw(st.sampled_from(_SCATTERS))
    dt = draw(st.sampled_from(_FLOATS + ["int32", "uint8"]))
    count = 1
    for d in ishape:
        count *= d
    single = count <= 1 or (
        all(w <= 1 for w in window) and len(set(map(tuple, _chunks(vals, len(sim))))) == count
    )
    unique = single and inb and draw(st.booleans())
    sorted_ = draw(st.booleans()) and vals == sorted(vals) and len(sim) == 1
    dn = (
        f"lax.ScatterDimensionNumbers(update_window_dims={tuple(offset)}, "
        f"inserted_window_dims={tuple(collapsed)}, "
        f"scatter_dims_to_operand_dims={tuple(sim)}, operand_batching_dims={tuple(obatch)}, "
        f"scatter_indices_batching_dims={tuple(ibatch)})"
    )
    if which == "scatter" and not unique and count > 1:
        # (a plain scatter onto one place twice keeps one of the updates: which one is not
        # specified, so that draw adds instead)
        which = "scatter_add"
    return (
        f"lax.{which}({_m(oshape, dt)}, {idx}, {_m(ushape, dt, 'b')}, {dn}, mode={mode}, "
        f"unique_indices={unique}, indices_are_sorted={sorted_})"
    )


def _chunks(vals, n):
    n = max(n, 1)
    return [vals[i : i + n] for i in range(0, len(vals), n)]


_WINDOW_FNS = [
    ("lax.add", ["0", "0.0", "np.zeros((), np.{d})"]),
    ("lax.max", ["-np.inf", "np.array(-np.inf, np.{d})", "0"]),
    ("lax.min", ["np.inf", "np.array(np.inf, np.{d})"]),
    ("lax.mul", ["1", "np.ones((), np.{d})"]),
    ("(lambda x, y: x + y)", ["np.zeros((), np.{d})"]),
    ("(lambda x, y: lax.max(x, y))", ["np.array(-np.inf, np.{d})"]),
]


def _reduce_window(draw):
    shape = list(_shape(draw, 1, 3, 1, 4))
    nd = len(shape)
    win = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    kind = draw(st.sampled_from(["VALID", "SAME", "pairs", "pairs"]))
    pad = (
        repr([(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd)])
        if kind == "pairs"
        else repr(kind)
    )
    bd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    wd = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    dt = draw(st.sampled_from(_FLOATS + ["int32"]))
    fn, inits = draw(st.sampled_from(_WINDOW_FNS))
    init = draw(st.sampled_from(inits)).format(d=dt)
    if dt == "int32" and "inf" in init:
        init = "np.array(-2 ** 31, np.int32)" if "-" in init else "np.array(2 ** 31 - 1, np.int32)"
    if _wrong(draw):
        win = win + (1,)
    if draw(st.integers(0, 4)) == 0:
        e, m = draw(st.integers(1, 8)), draw(st.integers(0, 23))
        return f"lax.reduce_precision({_m(shape, dt if dt != 'int32' else 'float32')} * 37.5, {e}, {m})"
    return f"lax.reduce_window({_m(shape, dt)}, {init}, {fn}, {win}, {strides}, {pad}, {bd}, {wd})"


def _dynamic(draw):
    shape = list(_shape(draw, 1, 3, 0, 4))
    nd = len(shape)
    idt = draw(st.sampled_from(["int32", "int8", "uint8", "int64", "int16", "uint32"]))
    starts = [draw(st.integers(-6, 6)) for _ in range(nd)]
    if idt.startswith("u"):
        starts = [abs(s) for s in starts]
    traced = draw(st.booleans())
    sts = (
        "["
        + ", ".join(f"np.{idt}({s})" if not traced else f"np.asarray({s}, np.{idt})" for s in starts)
        + "]"
    )
    if draw(st.booleans()):
        sts = f"np.array({starts!r}, np.{idt})"
    dt = draw(st.sampled_from(_FLOATS + ["int32", "bool"]))
    sizes = [draw(st.integers(0, d)) for d in shape]
    if _wrong(draw):
        sizes[0] += 1
    neg = draw(st.sampled_from(["", "", ", allow_negative_indices=False"]))
    if neg:
        sts = f"np.array({[abs(s) for s in starts]!r}, np.{idt})"
    which = draw(st.sampled_from(["slice", "update", "index", "slice_in_dim", "update_in_dim"]))
    op = _m(shape, dt)
    if which == "slice":
        return f"lax.dynamic_slice({op}, {sts}, {tuple(sizes)}{neg})"
    if which == "update":
        return f"lax.dynamic_update_slice({op}, {_m(sizes, dt, 'b')}, {sts}{neg})"
    ax = draw(st.integers(-nd, nd - 1))
    i = starts[0]
    if which == "index":
        return f"lax.dynamic_index_in_dim({op}, {i}, axis={ax}, keepdims={draw(st.booleans())})"
    if which == "slice_in_dim":
        return f"lax.dynamic_slice_in_dim({op}, np.int32({i}), {sizes[ax]}, axis={ax})"
    upd = list(shape)
    upd[ax] = sizes[ax]
    return f"lax.dynamic_update_slice_in_dim({op}, {_m(upd, dt, 'b')}, {i}, axis={ax})"


def _pad(draw):
    shape = _shape(draw, 0, 3, 0, 4)
    cfg = [(draw(st.integers(-3, 2)), draw(st.integers(-3, 2)), draw(st.integers(0, 2))) for _ in shape]
    if _wrong(draw):
        cfg = cfg + [(0, 0, 0)] if draw(st.booleans()) else [(lo, hi, -1) for lo, hi, _ in cfg] or [(0, 0, 0)]
    dt = draw(st.sampled_from(_FLOATS + ["int32", "bool", "uint8"]))
    val = draw(st.sampled_from(["0", "-1.5", "np.array(2, np.{d})", "True", "np.array(7, np.int32)"])).format(
        d=dt
    )
    return f"lax.pad({_m(shape, dt)}, {val}, {cfg!r})"


def _sort(draw):
    shape = _shape(draw, 1, 3, 0, 4)
    nops = draw(st.integers(1, 3))
    dts = [draw(st.sampled_from(_FLOATS + ["int32", "bool", "uint8"])) for _ in range(nops)]
    srcs = ["a", "b", "a"]
    ops_ = [_m(shape, d, s) for d, s in zip(dts, srcs)]
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    if _wrong(draw):
        dim = len(shape)
    nk = draw(st.integers(1, nops + (1 if _wrong(draw) else 0)))
    stable = draw(st.booleans())
    if not stable:  # (an unstable sort orders ties as it likes: keys with ties only when one operand)
        nk = nops
    arg = ops_[0] if nops == 1 and draw(st.booleans()) else "(" + ", ".join(ops_) + ",)"
    return f"_one_dtype(T, np, lax.sort({arg}, dimension={dim}, is_stable={stable}, num_keys={nk}))"


def _topk(draw):
    shape = _shape(draw, 1, 3, 1, 4)
    ax = draw(st.integers(-len(shape), len(shape) - 1))
    k = draw(st.integers(0, shape[ax] + (1 if _wrong(draw) else 0)))
    dt = draw(st.sampled_from(_FLOATS + ["int32", "uint8"]))
    axis = "" if ax == -1 and draw(st.booleans()) else f", axis={ax}"
    return f"_one_dtype(T, np, lax.top_k({_m(shape, dt)}, {k}{axis}))"


def _cumulative(draw):
    shape = _shape(draw, 1, 3, 0, 4)
    fn = draw(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]))
    ax = draw(st.integers(-len(shape), len(shape) - 1 + (1 if _wrong(draw) else 0)))
    dt = draw(st.sampled_from(_FLOATS + ["int32", "uint8", "bool"]))
    return f"lax.{fn}({_m(shape, dt)}, axis={ax}, reverse={draw(st.booleans())})"


def _structural(draw):
    shape = _shape(draw, 0, 3, 0, 3)
    nd = len(shape)
    dt = draw(st.sampled_from(_FLOATS + ["int32", "bool"]))
    x = _m(shape, dt)
    which = draw(
        st.sampled_from(
            ["rev", "transpose", "bid", "squeeze", "expand", "clamp", "select_n", "arg", "reduce", "reduce2"]
        )
    )
    bad = _wrong(draw)
    if which == "rev":
        dims = _subset(draw, range(nd)) + ([nd] if bad else [])
        return f"lax.rev({x}, {tuple(dims)})"
    if which == "transpose":
        perm = list(draw(st.permutations(range(nd))))
        return f"lax.transpose({x}, {tuple(perm + [0] if bad else perm)})"
    if which == "bid":
        out_rank = nd + draw(st.integers(0, 2))
        bdims = sorted(draw(st.permutations(range(out_rank)))[:nd])
        out = [draw(st.integers(1, 2)) for _ in range(out_rank)]
        for d, b in zip(shape, bdims):
            out[b] = d if d != 1 or draw(st.booleans()) else draw(st.integers(1, 3))
        if bad:
            bdims = bdims[::-1]
        return f"lax.broadcast_in_dim({x}, {tuple(out)}, {tuple(bdims)})"
    if which == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        dims = _subset(draw, ones) + ([0] if bad and nd else [])
        dims = [d - nd if draw(st.booleans()) else d for d in dims]
        return f"lax.squeeze({x}, {tuple(dims)})"
    if which == "expand":
        k = draw(st.integers(1, 2))
        dims = sorted(draw(st.permutations(range(nd + k)))[:k])
        return f"lax.expand_dims({x}, {tuple(dims + ([nd + k + 1] if bad else []))})"
    if which == "clamp":
        lo = draw(st.sampled_from(["-0.5", f"{_m(shape, dt, 'b')} - 1", "np.array(-1, np.{d})"])).format(d=dt)
        hi = draw(st.sampled_from(["0.75", f"{_m(shape, dt, 'b')} + 1", "np.array(1, np.{d})"])).format(d=dt)
        return f"lax.clamp({lo}, {x}, {hi})"
    if which == "select_n":
        n = draw(st.integers(1, 4))
        if n <= 2 and draw(st.booleans()):
            which_ = f"{_m(shape, 'float32', 'b')} > 0"
        else:
            which_ = f"np.clip({_m(shape, 'int32', 'b')}, 0, {n - 1}).astype(np.int32)"
        if draw(st.integers(0, 3)) == 0:
            which_ = draw(st.sampled_from(["True", "np.int32(0)", f"np.int32({n - 1})"]))
        cases = [f"{x} * {k + 1}" if dt != "bool" else x for k in range(n)]
        if bad:
            cases[-1] = _m(shape, "int8" if dt != "int8" else "float32")
        return f"lax.select_n({which_}, {', '.join(cases)})"
    if which == "arg":
        if not nd:
            shape, nd, x = (2,), 1, _m((2,), dt)
        fn = draw(st.sampled_from(["argmax", "argmin"]))
        idt = draw(
            st.sampled_from(["int32", "int8", "uint8", "int64", "int16"] + (["float32"] if bad else []))
        )
        ax = draw(st.integers(0, nd - 1 + (1 if bad else 0)))
        return f"lax.{fn}({x}, {ax}, np.{idt})"
    dims = tuple(_subset(draw, range(nd)) + ([nd] if bad else []))
    if which == "reduce":
        comp, init = draw(
            st.sampled_from(
                [
                    ("lax.add", "0"),
                    ("(lambda x, y: lax.max(x, y))", "-np.inf"),
                    ("lax.min", "np.inf"),
                    ("lax.mul", "1"),
                    ("(lambda x, y: x * y)", "1.0"),
                    ("lax.bitwise_or", "False"),
                ]
            )
        )
        if dt in ("int32",) and "inf" in init:
            init = init.replace("np.inf", "2147483647").replace("-2147483647", "-2147483648")
        init = f"np.array({init}, np.{dt})" if dt != "bool" or init in ("False",) else init
        return f"lax.reduce({x}, {init}, {comp}, {dims})"
    # a variadic reduce: the maximum and where it first is
    iota = f"lax.broadcasted_iota(np.int32, {tuple(shape)}, {dims[0] if dims and dims[0] < nd else 0})"
    return (
        f"_pack(T, np, lax.reduce(({x}.astype(np.float32), {iota}), (np.float32(-np.inf), np.int32(0)), "
        "lambda p, q: (lax.max(p[0], q[0]), lax.select(p[0] > q[0], p[1], lax.select(p[0] == q[0], "
        f"lax.min(p[1], q[1]), q[1]))), {dims}))"
    )


_WIDTH = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "bfloat16": 16, "int32": 32,
          "uint32": 32, "float32": 32, "int64": 64, "uint64": 64, "float64": 64}  # fmt: skip


def _bits(draw):
    shape = _shape(draw, 0, 2, 1, 3)
    which = draw(st.sampled_from(["bitcast", "popcnt", "clz", "shift", "divrem", "nextafter", "round"]))
    idt = draw(st.sampled_from(_INTS))
    if which == "bitcast":
        src = draw(st.sampled_from(list(_WIDTH)))
        dst = draw(st.sampled_from(list(_WIDTH) + ["bool"] if _wrong(draw) else list(_WIDTH)))
        ws, wd = _WIDTH[src], _WIDTH[dst] if dst in _WIDTH else 8
        shape = tuple(shape)
        if ws < wd and not _wrong(draw):
            shape = shape + (wd // ws,)
        x = f"({_m(shape, 'float32')} * 1234.5).astype(np.{src})"
        return f"lax.bitcast_convert_type({x}, np.{dst})"
    x = f"({_m(shape, 'float32')} * 37).astype(np.{idt})"
    if which == "popcnt":
        return f"lax.population_count({x})"
    if which == "clz":
        return f"lax.clz({x})"
    if which == "shift":
        fn = draw(st.sampled_from(["shift_left", "shift_right_arithmetic", "shift_right_logical"]))
        w = _WIDTH[idt]
        amount = draw(st.sampled_from([0, 1, 3, w - 1, w, w + 1, -1, 2 * w]))
        y = (
            f"np.array({amount}, np.{idt})"
            if amount >= 0 or idt.startswith("i")
            else f"np.array({w + 5}, np.{idt})"
        )
        if draw(st.booleans()):
            y = f"({_m(shape, 'float32', 'b')} * 9).astype(np.{idt})"
        return f"lax.{fn}({x}, {y})"
    if which == "divrem":
        fn = draw(st.sampled_from(["div", "rem"]))
        y = f"({_m(shape, 'float32', 'b')} * -5 + 1).astype(np.{idt})"
        y = f"np.where({y} == 0, np.array(3, np.{idt}), {y})"  # (division by zero: XLA's, tested elsewhere)
        if draw(st.booleans()):
            x, y = f"lax.neg({x})", y
        return f"lax.{fn}({x}, {y})"
    fdt = draw(st.sampled_from(_FLOATS))
    xf = f"{_m(shape, fdt)} * {draw(st.sampled_from(['1', '2.5', '0.5', '1e-30']))}"
    if which == "nextafter":
        return f"lax.nextafter({xf}, {_m(shape, fdt, 'b')} * {draw(st.sampled_from(['1', '-1', 'np.inf']))})"
    rm = draw(
        st.sampled_from(["0", "1", "lax.RoundingMethod.TO_NEAREST_EVEN", "lax.RoundingMethod.AWAY_FROM_ZERO"])
    )
    return f"lax.round({_m(shape, fdt)} * 2.5, {rm})"


_SPECIAL = [
    ("erf_inv", 1), ("lgamma", 1), ("digamma", 1), ("bessel_i0e", 1), ("bessel_i1e", 1), ("igamma", 2),
    ("igammac", 2), ("polygamma", 2), ("betainc", 3), ("zeta", 2), ("erfc", 1), ("random_gamma_grad", 2),
]  # fmt: skip


def _special(draw):
    shape = _shape(draw, 0, 2, 1, 3)
    name, arity = draw(st.sampled_from(_SPECIAL))
    dt = draw(st.sampled_from(_FLOATS + (["int32"] if _wrong(draw) else [])))
    x = _m(shape, dt)
    pos = f"(np.abs({x}) + np.array({draw(st.sampled_from(['0.5', '0.1', '1.5', '3.0']))}, np.{dt}))"
    if name == "erf_inv":
        return f"lax.erf_inv(np.tanh({x}))"
    if arity == 1:
        return f"lax.{name}({x if name != 'lgamma' or draw(st.booleans()) else pos})"
    if name == "polygamma":
        m = draw(st.sampled_from(["0", "1", "2", "3"]))
        return f"lax.polygamma(np.full({tuple(shape)}, {m}, np.{dt}), {pos})"
    y = _m(shape, dt, "b")
    ypos = f"(np.abs({y}) + np.array(0.25, np.{dt}))"
    if name == "betainc":
        z = f"lax.logistic({_m(shape, dt, 'b')} * 2)"
        return f"lax.betainc({pos}, {ypos}, {z})"
    if name == "zeta":
        return f"lax.zeta({pos} + np.array(1, np.{dt}), {ypos})"
    return f"lax.{name}({pos}, {ypos})"


_DRAWS = [_dot_general, _conv, _gather, _scatter, _reduce_window, _dynamic, _pad, _sort, _topk, _cumulative,
          _structural, _bits, _special, *_DRAWS2]  # fmt: skip
if _ONLY_DRAWS:  # (FUNCGRAD_FUZZ_ONLY_DRAWS: ops_lax2's docstring)
    _DRAWS = [d for d in _DRAWS if d.__name__ in _ONLY_DRAWS]

# FUNCGRAD_FUZZ_EAGER=1: no jit anywhere in a case (nor in the outer stack: programs.cases), so
# funcgrad's eager interpreter computes every step; its results must be jax's bits all the same
EAGER = os.environ.get("FUNCGRAD_FUZZ_EAGER", "0") != "0"


def _program(avals):
    @st.composite
    def strategy(draw):
        call = "(\x000, np.cos(\x000 * 1.0))"
        gen = draw(st.sampled_from(_DRAWS))
        for _attempt in range(4):
            expr = gen(draw)
            f = f"(lambda a, b: {expr})"
            if _ok(f"{f}{call}", avals) is None:
                e = f"_err(lambda: {f}{call})"
                if _ok(e, avals) is not None:
                    return {"e": e}
                continue
            for _ in range(draw(st.integers(0, 3))):
                for _attempt2 in range(3):
                    g = _wrap(draw, f)
                    if EAGER and "T.jit(" in g:
                        continue
                    if _ok(f"{g}{call}", avals) is not None:
                        f = g
                        break
            return {"e": f"{f}{call}"}
        return {"e": "None"}  # (nothing jax's abstract evaluation accepts: not kept)

    return strategy()


LAX: list = [
    _ProgOp("laxp.call", "", arity=1, kinds="bif", mixes_dtypes=True, drawn=_program),
]
