"""Every collective inside shard_map on 8 devices (1-d and 2x4 meshes) against NumPy, and
gradients through them against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.sharding import AxisType, P, make_mesh
from funcgrad.testing import check_grads

MESH = make_mesh((8,), ("x",), (AxisType.Auto,))  # the Auto mode: XLA decides
MESH2 = make_mesh((2, 4), ("a", "b"), (AxisType.Auto,) * 2)


def sm(f, in_specs=P("x"), out_specs=P("x"), mesh=MESH, **kw):
    return funcgrad.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


@pytest.fixture
def x(rng):
    return rng.standard_normal((16, 3))


def blocks(x, n=8):
    return x.reshape(n, -1, *x.shape[1:])


def test_psum_pmean_pmax_pmin(x):
    b = blocks(x)
    assert np.allclose(sm(lambda a: lax.psum(a, "x"), out_specs=P())(x), b.sum(0))
    assert np.allclose(sm(lambda a: lax.pmean(a, "x"), out_specs=P())(x), b.mean(0))
    assert np.allclose(sm(lambda a: lax.pmax(a, "x"), out_specs=P())(x), b.max(0))
    assert np.allclose(sm(lambda a: lax.pmin(a, "x"), out_specs=P())(x), b.min(0))
    # psum(1, name) is the axis size; an integer psum stays an integer
    out = sm(lambda a: a * 0 + lax.psum(1, "x"))(x)
    assert np.all(np.asarray(out) == 8)
    ints = sm(lambda a: lax.psum(a, "x"), out_specs=P())(np.arange(16, dtype=np.int32))
    assert (
        np.asarray(ints).dtype == np.int32
        and np.asarray(ints).tolist() == np.arange(16).reshape(8, 2).sum(0).tolist()
    )


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (0, True), (1, True)])
def test_all_gather(x, axis, tiled):
    b = blocks(x)
    # all_gather's result varies along its axis for check_vma (JAX 0.10): P() needs check_vma=False
    got = np.asarray(
        sm(lambda a: lax.all_gather(a, "x", axis=axis, tiled=tiled), out_specs=P(), check_vma=False)(x)
    )
    want = np.moveaxis(b, 0, axis)
    if tiled:
        want = np.concatenate(list(b), axis=axis)
    assert got.shape == want.shape and np.allclose(got, want)


@pytest.mark.parametrize("dim,tiled", [(0, False), (1, False), (1, True)])
def test_psum_scatter(rng, dim, tiled):
    shape = [2, 3]
    shape[dim] = 8 * (2 if tiled else 1)
    y = rng.standard_normal((8 * shape[0], shape[1]))
    f = sm(lambda a: lax.psum_scatter(a, "x", scatter_dimension=dim, tiled=tiled))
    got = np.asarray(f(y))
    total = blocks(y).sum(0)
    if tiled:
        pieces = np.split(total, 8, axis=dim)
    else:
        pieces = [np.take(total, i, axis=dim) for i in range(8)]
    assert np.allclose(got, np.concatenate(pieces, axis=0))


@pytest.mark.parametrize("split,concat,tiled", [(0, 0, False), (1, 0, False), (0, 1, False), (1, 0, True)])
def test_all_to_all(rng, split, concat, tiled):
    blk = [2, 2]
    blk[split] = 8 * (2 if tiled else 1)
    y = rng.standard_normal((8 * blk[0], blk[1]))
    f = lambda a: lax.all_to_all(a, "x", split, concat, tiled=tiled)  # noqa: E731
    got = np.asarray(sm(f)(y))
    want = np.asarray(funcgrad.vmap(f, axis_name="x")(blocks(y)))  # the same collective over 8 lanes
    assert np.allclose(got, want.reshape(got.shape))


def test_ppermute_pshuffle_pswapaxes_pbroadcast(x):
    b = blocks(x)
    perm = [(i, (i + 1) % 8) for i in range(8)]
    assert np.allclose(sm(lambda a: lax.ppermute(a, "x", perm))(x), np.roll(b, 1, 0).reshape(x.shape))
    partial = sm(lambda a: lax.ppermute(a, "x", [(0, 3)]))(x)
    want = np.zeros_like(b)
    want[3] = b[0]
    assert np.allclose(partial, want.reshape(x.shape))
    order = [3, 1, 4, 0, 5, 2, 7, 6]
    assert np.allclose(sm(lambda a: lax.pshuffle(a, "x", order))(x), b[order].reshape(x.shape))
    y = np.arange(8 * 8 * 2.0).reshape(64, 2)
    got = sm(lambda a: lax.pswapaxes(a, "x", 0))(y)
    want = np.asarray(funcgrad.vmap(lambda a: lax.pswapaxes(a, "x", 0), axis_name="x")(y.reshape(8, 8, 2)))
    assert np.allclose(got, want.reshape(64, 2))
    assert np.allclose(sm(lambda a: lax.pbroadcast(a, "x", 5), out_specs=P())(x), b[5])


def test_axis_index_and_size_on_a_2d_mesh():
    f = funcgrad.shard_map(
        lambda a: a * 0 + fnp.stack([lax.axis_index("a"), lax.axis_index("b"), lax.axis_index(("a", "b"))]),
        mesh=MESH2,
        in_specs=P(("a", "b")),
        out_specs=P(("a", "b")),
    )
    out = np.asarray(f(np.zeros(24, np.int32))).reshape(8, 3)
    assert out[:, 0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert out[:, 1].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert out[:, 2].tolist() == list(range(8))
    g = funcgrad.shard_map(
        lambda a: a * lax.axis_size("b") + lax.axis_size(("a", "b")), mesh=MESH2, in_specs=P(), out_specs=P()
    )
    assert float(g(1.0)) == 12.0


def test_collectives_over_one_axis_of_a_2d_mesh(rng):
    y = rng.standard_normal((8, 4))  # blocks (4, 1): rows split over a, columns over b
    f = funcgrad.shard_map(
        lambda a: (lax.psum(a, "b"), lax.all_gather(a, "a", tiled=True)),
        mesh=MESH2,
        in_specs=P("a", "b"),
        out_specs=(P("a", None), P(None, "b")),
        check_vma=False,  # all_gather's result still varies along "a" (JAX 0.10)
    )
    s, g = f(y)
    assert np.allclose(s, np.repeat(y.sum(1, keepdims=True), 1, axis=1))
    assert np.allclose(g, y)


def test_gradients_through_collectives_match_finite_differences(x):
    w = np.linspace(-1, 1, 3)
    fns = {
        "psum": sm(lambda a, w: lax.psum(fnp.sin(a) @ w, "x"), in_specs=(P("x"), P()), out_specs=P("x")),
        "pmean": sm(
            lambda a, w: lax.pmean(fnp.sum(fnp.tanh(a * w)), "x"), in_specs=(P("x"), P()), out_specs=P()
        ),
        "all_gather": sm(
            lambda a, w: lax.all_gather(a * w, "x", tiled=True) ** 2,
            in_specs=(P("x"), P()),
            out_specs=P(),
            check_vma=False,
        ),
        "psum_scatter": sm(
            lambda a, w: lax.psum_scatter(
                fnp.outer(a @ w, fnp.ones(8)), "x", scatter_dimension=1, tiled=True
            ),
            in_specs=(P("x"), P()),
            out_specs=P("x"),
        ),
        "ppermute": sm(
            lambda a, w: lax.ppermute(a, "x", [(i, (i + 3) % 8) for i in range(8)]) * w,
            in_specs=(P("x"), P()),
        ),
        "all_to_all": sm(
            lambda a, w: lax.all_to_all(fnp.outer(a @ w, fnp.ones(16)), "x", 1, 0, tiled=True),
            in_specs=(P("x"), P()),
        ),
    }
    # pmax has no derivative in JAX (its NotImplementedError here too)
    pmax = sm(lambda a, w: lax.pmax(a @ w, "x"), in_specs=(P("x"), P()), out_specs=P())
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'pmax' not implemented"):
        funcgrad.grad(lambda a, w: fnp.sum(pmax(a, w) ** 2))(x, w)
    for name, f in fns.items():
        check_grads(f, (x, w), order=2, modes=("fwd", "rev"), rtol=1e-4, atol=1e-5)
        # reverse mode of the jitted program too
        jg = funcgrad.jit(funcgrad.grad(lambda a, w, f=f: fnp.sum(f(a, w) ** 2), argnums=(0, 1)))(x, w)
        eg = funcgrad.grad(lambda a, w, f=f: fnp.sum(f(a, w) ** 2), argnums=(0, 1))(x, w)
        assert all(np.allclose(p, q) for p, q in zip(jg, eg)), name


def test_collectives_under_vmap_inside_shard_map(x):
    # a vmap axis and a mesh axis in one body: each collective reduces over its own axis
    f = sm(
        lambda a: funcgrad.vmap(lambda r: lax.psum(r, "x") - lax.psum(r, "v"), axis_name="v")(a),
        out_specs=P("x"),
    )
    b = blocks(x)
    want = np.broadcast_to(b.sum(0), b.shape) - b.sum(1, keepdims=True)
    assert np.allclose(f(x), want.reshape(x.shape))


def test_complex_psum_under_jit_of_grad():
    # (the sharded-program fuzzer, seed 17019) the cotangent of a complex psum is a broadcast
    # complex constant, and XLA's CPU simplifier aborted the process on its all-reduce (jax's
    # jit(grad) aborts too); a complex psum reduces its two parts
    b = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 2, 2)

    def f(b):
        body = lambda v: lax.psum(fnp.sinh(fnp.asarray(v, fnp.complex64) / 3), "x")  # noqa: E731
        return fnp.sum(fnp.real(sm(body, in_specs=P(), out_specs=P(), check_vma=False)(b)))

    want = 8 / 3 * np.cosh(b / 3)
    for run in (funcgrad.grad(f), funcgrad.jit(funcgrad.grad(f))):
        np.testing.assert_allclose(np.asarray(run(b)), want, rtol=1e-6)
    z = np.array([1 + 2j, -0.5j], np.complex64)
    out = funcgrad.jit(sm(lambda v: lax.psum(v, "x"), in_specs=P(), out_specs=P(), check_vma=False))(z)
    np.testing.assert_allclose(np.asarray(out), 8 * z)
