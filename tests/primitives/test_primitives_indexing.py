"""jax.lax semantics of the indexing primitives, pinned with hand-checked values: gather and scatter
modes and defaults, fill values, duplicate indices and their derivatives, dynamic_slice clamping and
negative starts, pad with negative and interior padding, batching with traced start indices, and
the shape errors users see. (The generic checks of every primitive are in tests/primitives/test_op_db.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from _checks import assert_close
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as stc
from funcgrad.primitives.elementwise import mul

import funcgrad

ROWS = ix.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SROWS = ix.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
POINTS = ix.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
OPERAND = np.arange(12.0).reshape(4, 3)
IDX = np.array([[5], [-1], [1]])


def total(x, w=None):
    """sum(x * w), from primitives (a scalar loss for grad)."""
    x = x if w is None else mul(x, w)
    return red.reduce_sum(x, tuple(range(np.ndim(x))))


def test_gather_default_mode_is_promise_in_bounds_which_clamps_like_xla():
    out = ix.gather(OPERAND, IDX, ROWS, (1, 3))
    assert np.asarray(out).tolist() == [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_gather_fill_fills_whole_out_of_bounds_windows_with_dtype_defaults():
    out = np.asarray(ix.gather(OPERAND, IDX, ROWS, (1, 2), mode="fill"))
    assert np.isnan(out[:2]).all() and out[2].tolist() == [3.0, 4.0]
    ints = ix.gather(OPERAND.astype(np.int32), IDX, ROWS, (1, 2), mode="fill")
    assert np.asarray(ints).tolist() == [[-(2**31)] * 2, [-(2**31)] * 2, [3, 4]]
    assert np.asarray(ix.gather(OPERAND, IDX, ROWS, (1, 2), mode="fill", fill_value=-1.0))[0].tolist() == [
        -1,
        -1,
    ]
    assert ix.default_fill_value(np.uint8) == 255 and ix.default_fill_value(np.bool_) is True


def test_gather_clip_and_mode_spellings():
    clip = ix.gather(OPERAND, IDX, ROWS, (1, 2), mode="clip")
    assert np.asarray(clip).tolist() == [[9.0, 10.0], [0.0, 1.0], [3.0, 4.0]]
    assert ix.GatherScatterMode.from_any("drop") is ix.GatherScatterMode.FILL_OR_DROP
    assert ix.GatherScatterMode.from_any(None) is ix.GatherScatterMode.FILL_OR_DROP
    with pytest.raises(ValueError, match="Unknown"):
        ix.GatherScatterMode.from_any("wrap")


def test_gather_gradient_is_a_scatter_add_that_accumulates_repeated_rows():
    idx = np.array([[1], [1], [3]])
    g = funcgrad.grad(lambda x: total(ix.gather(x, idx, ROWS, (1, 3))))(OPERAND)
    assert np.asarray(g).tolist() == [[0, 0, 0], [2, 2, 2], [0, 0, 0], [1, 1, 1]]
    jaxpr = str(funcgrad.make_jaxpr(funcgrad.grad(lambda x: total(ix.gather(x, idx, ROWS, (1, 3)))))(OPERAND))
    assert "scatter-add" in jaxpr


def test_scatter_defaults_drop_out_of_bounds_updates_and_clip_clamps():
    upd = np.ones((3, 3)) * np.array([[1.0], [2.0], [3.0]])
    dropped = ix.scatter_add(OPERAND, IDX, upd, SROWS)
    assert np.asarray(dropped).tolist() == [[0, 1, 2], [6, 7, 8], [6, 7, 8], [9, 10, 11]]
    clipped = ix.scatter_add(OPERAND, IDX, upd, SROWS, mode="clip")
    assert np.asarray(clipped).tolist() == [[2, 3, 4], [6, 7, 8], [6, 7, 8], [10, 11, 12]]


def test_scatter_combiners_with_duplicate_indices():
    idx = np.array([[1], [1], [0]])
    u = np.array([2.0, 3.0, -1.0])
    assert np.asarray(ix.scatter_add(np.zeros(3), idx, u, POINTS)).tolist() == [-1.0, 5.0, 0.0]
    assert np.asarray(ix.scatter_mul(np.ones(3), idx, u, POINTS)).tolist() == [-1.0, 6.0, 1.0]
    assert np.asarray(ix.scatter_min(np.zeros(3), idx, u, POINTS)).tolist() == [-1.0, 0.0, 0.0]
    assert np.asarray(ix.scatter_max(np.zeros(3), idx, u, POINTS)).tolist() == [0.0, 3.0, 0.0]


def test_scatter_set_derivative_follows_the_update_that_won():
    # Duplicates: the last update wins (NumPy impl) and only it receives a cotangent, like JAX.
    w = np.arange(12.0).reshape(4, 3)
    f = lambda o, u: total(ix.scatter(o, np.array([[1], [1]]), u, SROWS), w)  # noqa: E731
    g_op, g_u = funcgrad.grad(f, argnums=(0, 1))(OPERAND, np.ones((2, 3)))
    assert np.asarray(g_op).tolist() == [[0, 1, 2], [0, 0, 0], [6, 7, 8], [9, 10, 11]]
    assert np.asarray(g_u).tolist() == [[0, 0, 0], [3, 4, 5]]


def test_scatter_max_ties_share_the_gradient_equally():
    f = lambda o, u: total(ix.scatter_max(o, np.array([[0], [0]]), u, POINTS))  # noqa: E731
    g_op, g_u = funcgrad.grad(f, argnums=(0, 1))(np.array([2.0, 1.0]), np.array([2.0, 2.0]))
    assert_close(g_op, np.array([1 / 3, 1.0]))
    assert_close(g_u, np.array([1 / 3, 1 / 3]))


def test_scatter_mul_updates_gradient_needs_unique_indices():
    f = lambda u: total(ix.scatter_mul(np.ones(3), np.array([[1], [1]]), u, POINTS))  # noqa: E731
    with pytest.raises(NotImplementedError, match="unique_indices"):
        funcgrad.grad(f)(np.array([2.0, 3.0]))
    g = funcgrad.grad(
        lambda u: total(ix.scatter_mul(np.full(3, 5.0), np.array([[2], [0]]), u, POINTS, unique_indices=True))
    )
    assert np.asarray(g(np.array([2.0, 3.0]))).tolist() == [5.0, 5.0]


def test_dynamic_slice_counts_negative_starts_from_the_end_then_clamps():
    x = np.arange(5.0)
    assert np.asarray(ix.dynamic_slice(x, [-2], [3])).tolist() == [2.0, 3.0, 4.0]
    assert np.asarray(ix.dynamic_slice(x, [4], [3])).tolist() == [2.0, 3.0, 4.0]
    assert np.asarray(ix.dynamic_slice(x, [-9], [2])).tolist() == [0.0, 1.0]
    assert np.asarray(ix.dynamic_slice(x, np.array([1]), [2])).tolist() == [1.0, 2.0]
    assert np.asarray(ix.dynamic_update_slice(np.zeros(5), np.ones(2), [-1])).tolist() == [0, 0, 0, 1, 1]
    g = funcgrad.grad(lambda v: total(ix.dynamic_slice(v, [3], [3])))(x)
    assert np.asarray(g).tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]


def test_dynamic_slice_with_traced_negative_start_under_jit_free_tracing():
    jaxpr = funcgrad.make_jaxpr(lambda v, i: ix.dynamic_slice(v, [i], [2]))(np.arange(5.0), np.int32(-1))
    assert "select_n" in str(jaxpr) and "dynamic_slice" in str(jaxpr)


def test_vmap_over_start_indices_becomes_a_clamped_gather_and_scatter():
    x = np.arange(10.0).reshape(2, 5)
    starts = np.array([-1, 0, 4], np.int32)
    got = funcgrad.vmap(lambda i: ix.dynamic_slice(x, [0, i], [2, 2]))(starts)
    assert np.asarray(got)[:, 0].tolist() == [[3.0, 4.0], [0.0, 1.0], [3.0, 4.0]]
    upd = funcgrad.vmap(lambda i: ix.dynamic_update_slice(x, -np.ones((1, 2)), [1, i]))(starts)
    assert np.asarray(upd)[0, 1].tolist() == [5.0, 6.0, 7.0, -1.0, -1.0]
    jaxpr = str(funcgrad.make_jaxpr(funcgrad.vmap(lambda i: ix.dynamic_slice(x, [0, i], [2, 2])))(starts))
    assert "gather" in jaxpr


def test_pad_negative_and_interior_and_its_transpose():
    out = stc.pad(np.arange(1.0, 4.0), 0.0, [(-1, 2, 1)])
    assert np.asarray(out).tolist() == [0.0, 2.0, 0.0, 3.0, 0.0, 0.0]
    g_x, g_v = funcgrad.grad(lambda x, v: total(stc.pad(x, v, [(-1, 2, 1)]), np.arange(6.0)), argnums=(0, 1))(
        np.arange(1.0, 4.0), np.float64(0.0)
    )
    assert np.asarray(g_x).tolist() == [0.0, 1.0, 3.0] and float(g_v) == 0 + 2 + 4 + 5


def test_slice_concatenate_rev_iota_values():
    x = np.arange(10)
    assert np.asarray(stc.slice_(x, (1,), (8,), (3,))).tolist() == [1, 4, 7]
    assert np.asarray(stc.rev(x[:3], (0,))).tolist() == [2, 1, 0]
    assert stc.concatenate([np.zeros((1, 2)), np.ones((2, 2))], 0).shape == (3, 2)
    assert np.asarray(stc.iota(np.int32, 3)).tolist() == [0, 1, 2]
    assert np.asarray(stc.broadcasted_iota(np.float32, (2, 2), 0)).dtype == np.float32
    assert np.asarray(stc.index_in_dim(np.arange(6).reshape(2, 3), -1, 1, keepdims=False)).tolist() == [2, 5]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: stc.concatenate([np.zeros((2, 3)), np.zeros((2, 4))], 0), "concatenate"),
        (lambda: stc.concatenate([np.zeros(2), np.zeros(2, np.float32)], 0), "one dtype"),
        (lambda: stc.pad(np.zeros(2), 0.0, [(-2, -1, 0)]), "negative size"),
        (lambda: stc.slice_(np.zeros(4), (3,), (2,)), "slice"),
        (lambda: ix.dynamic_slice(np.zeros(4), [0], [5]), "slice_sizes"),
        (lambda: ix.gather(OPERAND, np.array([[0]]), ROWS, (2, 3)), "collapse slice dims"),
        (lambda: ix.gather(OPERAND, np.array([[0.0]]), ROWS, (1, 3)), "integer"),
        (lambda: ix.scatter_add(OPERAND, np.array([[0]]), np.ones((1, 4)), SROWS), "Bounds of the window"),
        (lambda: ix.scatter_add(OPERAND, np.array([[0], [1]]), np.ones((1, 3)), SROWS), "scatter dimensions"),
    ],
)
def test_shape_errors_name_the_op(call, match):
    with pytest.raises(TypeError, match=match):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda lax, x: lax.dynamic_slice_in_dim(x, 0, 1, axis=2),
        lambda lax, x: lax.dynamic_slice_in_dim(x, 0, 1, axis=-3),
        lambda lax, x: lax.dynamic_update_slice_in_dim(x, x[:, :1], 0, axis=3),
        lambda lax, x: lax.dynamic_index_in_dim(x, 0, axis=2, keepdims=False),
        lambda lax, x: lax.slice_in_dim(x, 0, 1, axis=2),
        lambda lax, x: lax.index_in_dim(x, 0, axis=2),
        lambda lax, x: lax.dynamic_slice_in_dim(x[0, 0], 0, 1),
    ],
)
def test_in_dim_axis_out_of_range_raises_index_error_as_jax(call):
    # (the differential fuzzer) the *_in_dim functions took axis % ndim: axis 2 of a rank-2 operand
    # sliced axis 0 silently, a 0-d operand raised ZeroDivisionError; jax raises IndexError
    jax = pytest.importorskip("jax")
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError):
        call(jax.lax, x)
    with pytest.raises(IndexError, match="out of range"):
        call(funcgrad.lax, x)


@pytest.mark.parametrize("method", ["min", "max"])
def test_scatter_extremal_jvp_at_nan_and_ties_as_jax(method):
    # (the fuzzer's random programs) JAX's rule computes the coefficients at the scattered windows
    # only: an element no update reaches keeps its tangent (funcgrad's share was 0/0 = NaN at a
    # NaN there), and a NaN window matched by neither side gets 0; ties average.
    jax = pytest.importorskip("jax")
    import funcgrad.numpy as fnp

    a = np.array([np.nan, 1.0, 2.0, 0.0, np.nan], np.float32)
    u = np.array([3.0, 2.0, np.nan, 0.0], np.float32)
    idx = np.array([1, 2, 0, 3])
    ta, tu = np.array([0.5, 1.0, 1.5, 2.0, 4.0], np.float32), np.array([0.25, 0.75, 1.25, 3.0], np.float32)
    ours = funcgrad.jvp(lambda a, u: getattr(fnp.asarray(a).at[idx], method)(u), (a, u), (ta, tu))
    theirs = jax.jvp(lambda a, u: getattr(a.at[idx], method)(u), (a, u), (ta, tu))
    for x, y in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_gather_without_indices_takes_any_slice_size_as_jax():
    # JAX checks slice sizes against the operand only when there are indices, and lowers an empty
    # result as a constant (funcgrad raised TypeError eagerly; the lax-parameter fuzzer's seed 18007)
    jax = pytest.importorskip("jax")
    import funcgrad

    x = np.ones((1,), np.float32)
    for lib in (jax, funcgrad):
        dn = lib.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))

        def f(x, lib=lib, dn=dn):
            return lib.lax.gather(x, np.zeros((0, 1), np.int32), dn, (2,), mode="clip")

        assert np.asarray(f(x)).shape == np.asarray(lib.jit(f)(x)).shape == (0, 2)
