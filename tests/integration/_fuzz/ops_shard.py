"""The eleventh part of the fuzzer's surface table: random *sharded* programs on 8 devices (session 15).

Both sides must see 8 devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8`` in the
environment of the run and of a reproducer); with fewer, jax's abstract evaluation rejects every
program of this table and none is drawn. For an operand ``a`` (any dtype), arrays of shapes that
meshes divide are built from ``a``'s elements (``_mat``: derivatives reach ``a``), and one of
ops_prog's random chains ``f(a, b)`` (elementwise, reductions, dots, reshapes, ``.at[]``, sorting,
casts, ...) runs:

- under ``jit`` with random ``in_shardings``/``out_shardings`` (``NamedSharding`` over 1-, 2- and
  3-axis meshes, ``PartitionSpec``s with ``None``, tuples of axes and replicated), or with
  ``with_sharding_constraint`` inside, or on arguments placed by ``device_put``;
- under ``shard_map`` with random ``in_specs``/``out_specs`` and ``check_vma`` both ways, a
  collective (``psum``/``pmean``/``pmax``/``all_gather``/``ppermute``/``axis_index``/
  ``psum_scatter``/``all_to_all``) before or after the chain;
- in explicit sharding: an ``AxisType.Explicit`` mesh set by ``set_mesh``, operands ``reshard``-ed,
  a dot/``einsum``/``matmul``/``dot_general`` with ``out_sharding=``, a ``reshard`` of the result;

then 0-2 of ops_prog's transformations on top (grad, vmap, jit, cond, scan, ...). In one case of
four the specs are drawn to be wrong (axes used twice, an unknown axis, more entries than the rank,
dimensions they do not divide) and the program runs under ``_err``, whose value is the exception's
class name: both libraries must raise the same type.

The result is compared with its sharding (``_sh`` in ``HELPERS``: the result's elements followed by
a code of its sharding -- the shard shape and each device's shard offsets, and the spec's text --
so the comparison's exact integer check covers ``.sharding``; under a tracer, ``typeof(x)``'s spec).

Long run only (as the other session tables).

>>> SHARD[0].name
'shard.jit'
"""

from __future__ import annotations

from hypothesis import strategies as st

from _fuzz.ops_prog import _chain, _ok, _ProgOp, _wrap

# Helpers the scripts define (programs.HELPERS appends them): each takes the side's modules.
HELPERS = """

def _mesh(T, shape, names, kind="Auto"):
    axis_type = getattr(T.sharding.AxisType, kind)
    return T.make_mesh(shape, names, axis_types=(axis_type,) * len(names))


def _p(T, spec):
    return T.sharding.PartitionSpec(*spec)


def _ns(T, mesh, spec):
    return T.sharding.NamedSharding(mesh, T.sharding.PartitionSpec(*spec))


def _in_mesh(T, mesh, fn):
    with T.set_mesh(mesh):
        return fn()


def _err(fn):
    # fn's value, or the class name of what it raised (as bytes): both libraries must raise alike
    try:
        return fn()
    except Exception as e:
        return _onp.frombuffer(type(e).__name__.encode(), _onp.uint8).copy()


def _sh(T, np, x):
    # x's elements, then a code of its sharding in x's dtype (bool as uint8): the shard shape and
    # each device's shard offsets (4 dimensions, 8 devices; -1 for none), its weak type, then the
    # spec's text (40 bytes). A concrete result comes back as a NumPy array; under a tracer the code
    # is typeof(x)'s spec and no layout (an explicitly sharded tracer is resharded to replicated
    # first, in the mesh set around the case's step, so that it can be flattened)
    layout = -_onp.ones(37, _onp.int64)
    if isinstance(x, T.core.Tracer):
        spec = T.typeof(x).sharding.spec
        if any(e is not None for e in spec):
            x = T.sharding.reshard(x, T.sharding.PartitionSpec())
        spec = str(spec)
    elif hasattr(x, "sharding"):
        s = x.sharding
        spec = str(getattr(s, "spec", type(s).__name__))
        for d, idx in s.devices_indices_map(x.shape).items():
            starts = [sl.indices(n)[0] for sl, n in zip(idx, x.shape)][:4]
            layout[4 + 4 * d.id : 4 + 4 * d.id + len(starts)] = starts
            layout[: len(starts)] = [len(range(*sl.indices(n))) for sl, n in zip(idx, x.shape)][:4]
    else:
        spec = type(x).__name__
    layout[36] = bool(getattr(x, "weak_type", False))
    text = _onp.frombuffer(spec.encode()[:40].ljust(40), _onp.uint8)
    code = _onp.concatenate([layout, text.astype(_onp.int64)])
    dtype = _onp.uint8 if _onp.dtype(x.dtype) == bool else x.dtype
    if isinstance(x, T.core.Tracer):
        return np.concatenate([np.ravel(x).astype(dtype), np.asarray(code).astype(dtype)])
    return _onp.concatenate([_onp.ravel(_onp.asarray(x)).astype(dtype), code.astype(dtype)])
"""

_MESHES = [((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y")), ((2, 2, 2), ("x", "y", "z"))]
_SHAPES = [(8,), (4,), (2, 4), (4, 2), (8, 2), (2, 2, 2), (4, 4), (2, 8), (2,)]
_BAD_SHAPES = [(6,), (3, 4), (5, 2), (2, 3), (1,)]
_COLLECTIVES = [
    "lax.psum(X, A)", "lax.pmean(X, A)", "lax.pmax(X, A)", "lax.pmin(X, A)",
    "lax.all_gather(X, A, axis=0, tiled={t})", "lax.ppermute(X, A, perm={perm})",
    "X + lax.axis_index(A)", "lax.psum_scatter(X, A, scatter_dimension=0, tiled=True)",
    "lax.all_to_all(X, A, 0, 0, tiled=True)", "lax.psum(X, {axes})", "X",
]  # fmt: skip
_DOTS = [
    "np.dot(X, Y, out_sharding={o})", "np.matmul(X, Y, out_sharding={o})",
    "np.einsum('ij,jk->ik', X, Y, out_sharding={o})", "np.einsum('ij,kj->ik', X, Y, out_sharding={o})",
    "lax.dot_general(X, Y, (((X.ndim - 1,), (0,)), ((), ())), out_sharding={o})",
    "np.einsum('i,i->', X, Y, out_sharding={o})", "np.multiply(X, Y, out_sharding={o})",
]  # fmt: skip


def _spec(draw, rank, names, bad):
    """A spec (a tuple text) of at most ``rank`` entries over mesh axes ``names``; ``bad``: maybe
    wrong (an axis twice, an unknown axis, too many entries)."""
    free, out = list(names), []
    for _ in range(draw(st.integers(0, rank + (1 if bad else 0)))):
        choices = [None, None, *free] + ([tuple(free[:2]), tuple(free[-2:][::-1])] if len(free) >= 2 else [])
        if bad:
            choices += ["w", names[0]]
        e = draw(st.sampled_from(choices))
        if not bad:
            for n in e if isinstance(e, tuple) else (e,):
                if n in free:
                    free.remove(n)
        out.append(e)
    return repr(tuple(out))


def _mesh_text(draw, kind="Auto"):
    shape, names = draw(st.sampled_from(_MESHES))
    return f"_mesh(T, {shape}, {names}, {kind!r})", shape, names


def _sharded(draw, avals, bad):
    """A function text of (a, b) running a random chain sharded one of three ways, its call, and the
    explicit mesh to set around the step (or None)."""
    sa, sb = (draw(st.sampled_from(_SHAPES + (_BAD_SHAPES if bad else []))) for _ in range(2))
    dt = "np.result_type(\x000)"
    call = f"(_mat(np, \x000, {sa}, {dt}), _mat(np, \x000, {sb}, {dt}))"
    f = _chain(draw, call, avals)
    if f is None:
        return None, call, None
    out = _ok(f"{f}{call}", avals)
    rank_out = len(out[0]) if out else 0
    way = draw(
        st.sampled_from(["jit", "jit", "constraint", "device_put", "shard_map", "shard_map", "explicit"])
    )
    kind = "Explicit" if way == "explicit" or (way != "shard_map" and draw(st.booleans())) else "Auto"
    m, mshape, names = _mesh_text(draw, kind)
    pa, pb, po = (_spec(draw, r, names, bad) for r in (len(sa), len(sb), rank_out))
    ctx = m if kind == "Explicit" else None
    if way == "jit":
        ins = f"(_ns(T, {m}, {pa}), {draw(st.sampled_from(['None', f'_ns(T, {m}, {pb})']))})"
        outs = draw(st.sampled_from(["None", f"_ns(T, {m}, {po})", f"_ns(T, {m}, ())"]))
        return f"T.jit({f}, in_shardings={ins}, out_shardings={outs})", call, ctx
    if way == "constraint":
        return f"T.jit(lambda a, b: lax.with_sharding_constraint({f}(a, b), _ns(T, {m}, {po})))", call, ctx
    if way == "device_put":
        g = draw(st.sampled_from([f, f"T.jit({f})"]))
        g = f"(lambda a, b: {g}(T.device_put(a, _ns(T, {m}, {pa})), T.device_put(b, _ns(T, {m}, {pb}))))"
        return g, call, ctx
    if way == "shard_map":
        ax = draw(st.sampled_from([repr(n) for n in names]))
        n = mshape[list(names).index(eval(ax))]
        coll = draw(st.sampled_from(_COLLECTIVES)).format(
            t=draw(st.booleans()), perm=[(i, (i + 1) % n) for i in range(n)], axes=tuple(names[:2])
        )
        body = (
            f"lambda a, b: {coll.replace('X', f'{f}(a, b)').replace('A', ax)}"
            if draw(st.booleans())
            else f"lambda a, b: {f}({coll.replace('X', 'a').replace('A', ax)}, b)"
        )
        cv = draw(st.booleans())
        return (
            (
                f"T.shard_map({body}, mesh={m}, in_specs=(_p(T, {pa}), _p(T, {pb})), "
                f"out_specs=_p(T, {po}), check_vma={cv})"
            ),
            call,
            ctx,
        )
    # explicit sharding: operands resharded, a dot with out_sharding, the result resharded
    dot = draw(st.sampled_from(_DOTS + ["X"])).format(o=f"_p(T, {po})")
    body = dot.replace("X", f"{f}(a, b)").replace("Y", "b")
    if draw(st.booleans()):
        body = f"T.sharding.reshard({body}, _p(T, {po}))"
    inner = f"(lambda a, b: {body})"
    if draw(st.booleans()):
        inner = f"T.jit({inner})"
    return (
        f"(lambda a, b: {inner}(T.sharding.reshard(a, _p(T, {pa})), T.sharding.reshard(b, _p(T, {pb}))))",
        call,
        ctx,
    )


def _program(avals):
    @st.composite
    def strategy(draw):
        bad = draw(st.sampled_from([False, False, False, True]))
        for _attempt in range(4):
            g, call, ctx = _sharded(draw, avals, bad)
            if g is None:
                continue

            def step(g, ctx=ctx, call=call):
                e = f"_sh(T, np, {g}{call})"
                return e if ctx is None else f"_in_mesh(T, {ctx}, lambda: {e})"

            if bad:
                e = f"_err(lambda: {step(g)})"
                if _ok(e, avals) is not None:
                    return {"e": e}
                continue
            if _ok(step(g), avals) is None:
                continue
            for _ in range(draw(st.integers(0, 2))):
                for _attempt in range(3):
                    h = _wrap(draw, g)
                    if _ok(step(h), avals) is not None:
                        g = h
                        break
            return {"e": step(g)}
        return {"e": "None"}  # (jax's abstract evaluation rejects them all: not kept)

    return strategy()


SHARD: list = [
    _ProgOp("shard.jit", "", arity=1, kinds="bifc", mixes_dtypes=True, drawn=_program),
]
