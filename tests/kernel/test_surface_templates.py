"""Surface templates (NOTE: [surface templates]) and the NumPy interpreter's liberties with cached
programs (broadcasts left to NumPy, reshapes read back from the original).

Every eager ``grad`` below runs several times -- the first calls stage the templates and the
program, later ones replay them -- and each call is held to the answer of the path without
recording (``uncached``), or to a closed form: values, dtypes and weak types.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import numpy_plan, templates
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var
from funcgrad.kernel.simplify import simplify


def _leaves(tree):
    return [
        (np.asarray(a), np.asarray(a).dtype, getattr(a, "weak_type", False))
        for a in funcgrad.tree_util.tree_leaves(tree)
    ]


def _same(got, want, rtol=1e-13):
    for (g, gd, gw), (w, wd, ww) in zip(_leaves(got), _leaves(want), strict=True):
        assert (gd, gw) == (wd, ww)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-15)


RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3,))
C32 = RNG.standard_normal((4, 3)).astype(np.float32)

# (name, loss, argument): each loss goes through several templated surface functions with
# static arguments of every kind the key takes (Python scalars of each type, axes, dtypes, strings).
CASES = [
    ("ufuncs and scalars", lambda x: fnp.sum(fnp.tanh(x) * 2 + 1.5 - x / 3.0 + (-x) ** 2), A),
    ("bool and int scalars", lambda x: fnp.sum(x * True + x * 2 - 1), A),
    ("bias broadcast", lambda x: fnp.sum(fnp.exp(x + B) * B), A),
    ("outer broadcast", lambda x: fnp.sum(fnp.sin(x[:, None] + x[None, :])), B),
    ("reductions", lambda x: fnp.mean(fnp.max(x, axis=1, keepdims=True) * fnp.sum(x, axis=0)), A),
    ("var and std", lambda x: fnp.var(x, axis=0).sum() + fnp.std(x, axis=(0, 1), ddof=1), A),
    ("reduction dtype", lambda x: fnp.sum(x, dtype=np.float64) * fnp.prod(x[0]), C32),
    ("matmul", lambda x: fnp.sum(fnp.tanh(x @ x.T) @ x), A),
    ("einsum", lambda x: fnp.einsum("ij,kj->ik", x, x).sum() + fnp.tensordot(x, x, axes=2), A),
    ("weak input", lambda x: x * 2.0 + fnp.square(x), 1.5),
    ("float32 with weak scalars", lambda x: fnp.sum(fnp.maximum(x, 0.1) * 0.5), C32),
    ("powers", lambda x: fnp.sum(fnp.power(x, 2) + fnp.power(fnp.abs(x) + 1, 0.5) + x**3), A),
    (
        "shapes",
        lambda x: fnp.sum(
            fnp.squeeze(fnp.expand_dims(x, 0), axis=0).T.reshape(-1)
            * fnp.ravel(fnp.moveaxis(fnp.swapaxes(x[None], 1, 2), 0, -1))
        ),
        A,
    ),
    (
        "indexing",
        lambda x: (
            fnp.sum(x[:, 0] * x[1, :][:, None] + x[..., ::-1][0, 1:].sum())
            + fnp.sum(x[None, :, 2] ** 2)
            + fnp.sum(x[np.array([0, 2, 2])] * x[-1])
            + x[3, 2] * x[(0, 1)]
        ),
        A,
    ),
    # A boolean mask needs its value (staging it fails: the call indexes itself); an index past
    # the end clamps, as in jax.
    ("masks and clamping", lambda x: fnp.sum(x[x > 0] ** 2) + fnp.sum(x[A < 0]) + x[0, 10] * x[-9, 1], A),
    ("where and clip", lambda x: fnp.sum(fnp.where(x > 0, x**2, fnp.clip(x, -0.5, 0.5)) * x), A),
    (
        "nn",
        lambda x: (
            fnp.sum(
                funcgrad.nn.log_softmax(x, axis=1) * funcgrad.nn.softmax(x, axis=0)
                + funcgrad.nn.gelu(x)
                + funcgrad.nn.sigmoid(x) * funcgrad.nn.silu(x)
                + funcgrad.nn.softplus(x)
            )
            + funcgrad.nn.logsumexp(x)
            + funcgrad.scipy.special.logsumexp(x, axis=0).sum()
        ),
        A,
    ),
    # Functions covered by the rule, never marked one by one (NOTE: [surface templates]).
    (
        "covered by the rule",
        lambda x: (
            fnp.sum(fnp.hypot(x, 2.0) + fnp.arctan2(x, 1.5) + fnp.nan_to_num(x) * fnp.floor(x))
            + fnp.sum(fnp.concatenate([x, x]) * fnp.stack([x, x]).sum(0).sum())  # lists: the call itself
            + fnp.sum(fnp.roll(x, 1, axis=0) * fnp.flip(x) + fnp.tile(x, (2, 1))[:4])
            + fnp.sum(funcgrad.nn.relu(x) + funcgrad.nn.elu(x) + funcgrad.nn.standardize(x))
            + fnp.trace(x[:3])
            + fnp.sum(fnp.take(x, np.array([2, 0]), axis=1))
            + funcgrad.scipy.special.xlogy(2.0, fnp.abs(x) + 1).sum()
        ),
        A,
    ),
]


def test_every_public_function_of_a_covered_module_is_templated():
    # The rule, not a mark per function: each module that ends with template_public_functions
    # has all its public functions templated -- those added later too.
    import importlib
    import inspect
    import types

    covered = 0
    for name in (
        "funcgrad.numpy.ufuncs",
        "funcgrad.numpy.transcendental",
        "funcgrad.numpy.reductions",
        "funcgrad.numpy.contractions",
        "funcgrad.numpy.manipulation",
        "funcgrad.numpy.rearrangement",
        "funcgrad.numpy.indexing",
        "funcgrad.numpy.index_update",
        "funcgrad.numpy.lookup",
        "funcgrad.nn",
        "funcgrad.nn._normalizations",
        "funcgrad.nn._attention",
        "funcgrad.scipy.special._elementary",
    ):
        module = importlib.import_module(name)
        assert "template_public_functions(globals())" in inspect.getsource(module), name
        for attr, value in vars(module).items():
            original = getattr(value, "__wrapped__", value)
            if (
                attr.startswith("_")
                or type(original) is not types.FunctionType
                or original.__module__ != name
            ):
                continue
            assert hasattr(value, "template_cache"), f"{name}.{attr}"
            covered += 1
    assert covered > 200
    g = funcgrad.grad(lambda x: fnp.sum(fnp.hypot(x, 2.0) * funcgrad.nn.elu(x)))
    for _ in range(2):
        g(A)
    assert fnp.hypot.template_cache and funcgrad.nn.elu.template_cache  # used while eager grad records
    source = "".join(
        inspect.getsource(importlib.import_module(m))
        for m in ("funcgrad.numpy.ufuncs", "funcgrad.nn", "funcgrad.numpy.reductions")
    )
    assert "@surface_template" not in source  # no function is marked by hand


@pytest.mark.parametrize("name,loss,x", CASES, ids=[c[0] for c in CASES])
def test_templated_gradients_equal_the_unrecorded_ones(uncached, name, loss, x):
    with uncached:
        want = funcgrad.value_and_grad(loss)(x)
    g = funcgrad.value_and_grad(loss)
    for _ in range(4):
        _same(g(x), want)
    gg = funcgrad.grad(loss)
    for _ in range(3):
        _same(gg(x), want[1])


def test_templates_are_used_and_staged_once_per_key():
    fn = fnp.tanh  # one templated function: its cache holds a key per (aval, statics)
    cache = fn.template_cache
    g = funcgrad.grad(lambda x: fnp.sum(fnp.tanh(x)))
    x = np.linspace(-1, 1, 7)
    g(x)
    n = len(cache)
    for _ in range(3):
        np.testing.assert_allclose(g(x), 1 - np.tanh(x) ** 2, rtol=1e-14)
    assert len(cache) == n  # replayed, not staged again
    g(x.astype(np.float32))
    assert len(cache) == n + 1  # another aval: another template


@pytest.mark.parametrize(
    "scalars",
    [(2, 3), (2, 2.0), (1, True), (0.0, -0.0), (np.float32(2), np.float64(2)), (1.0, 1.0 + 0j)],
)
def test_static_scalars_are_keyed_by_type_and_exact_value(uncached, scalars):
    x = np.array([0.5, -2.0, 3.0])
    for k in (*scalars, *scalars):
        loss = lambda x, k=k: fnp.sum(fnp.power(x, k) if type(k) is int else fnp.real(x * k))  # noqa: E731
        with uncached:
            want = funcgrad.value_and_grad(loss)(x)
        got = funcgrad.value_and_grad(loss)(x)
        _same(got, want)
        assert np.signbit(np.asarray(got[1])).tolist() == np.signbit(np.asarray(want[1])).tolist()


def test_constant_arrays_are_arguments_never_part_of_a_template():
    g = funcgrad.grad(lambda w, c: fnp.sum(fnp.tanh(w @ c) + w * c[0]))
    w = RNG.standard_normal((3, 3))
    for _ in range(4):
        c = RNG.standard_normal((3, 3))
        t = np.tanh(w @ c)
        want = (1 - t**2) @ c.T + c[0]
        np.testing.assert_allclose(g(w, c), want, rtol=1e-12)


def test_errors_come_from_the_call_itself_every_time():
    g = funcgrad.grad(lambda x: fnp.sum(x + np.ones(4)))
    for _ in range(3):
        with pytest.raises((ValueError, TypeError), match="broadcast|shape"):
            g(np.ones(3))
    h = funcgrad.grad(lambda x: fnp.sum(fnp.sum(x, axis=3)))
    for _ in range(3):
        with pytest.raises(Exception, match="axis"):
            h(np.ones((2, 2)))


def test_promotion_rules_other_than_the_defaults_are_checked_on_every_call():
    g = funcgrad.grad(lambda x: fnp.sum(x + np.ones(3)))
    x = np.ones((2, 3))
    for _ in range(3):
        g(x)  # rank promotion, allowed: templated
    with funcgrad.numpy_rank_promotion("raise"):
        for _ in range(2):
            with pytest.raises(ValueError, match="rank"):
                g(x)
    with funcgrad.numpy_rank_promotion("warn"):
        for _ in range(2):
            with pytest.warns(UserWarning, match="rank"):
                g(x)
    with funcgrad.numpy_dtype_promotion("strict"):
        for _ in range(2):
            with pytest.raises(TypeError, match="promotion"):
                funcgrad.grad(lambda x: fnp.sum(x * np.ones(3, np.float32)))(x)
    np.testing.assert_allclose(g(x), np.ones_like(x))


def test_nested_grads_replay_templates_in_the_inner_recording(uncached):
    def f(x):
        return fnp.sum(fnp.tanh(x) ** 2 * x)

    h = funcgrad.grad(lambda x: fnp.sum(funcgrad.grad(f)(x) * fnp.cos(x)))
    x = np.linspace(-1.0, 1.0, 5)
    with uncached:
        want = h(x)
    for _ in range(4):
        np.testing.assert_allclose(h(x), want, rtol=1e-12)


def test_outside_a_recording_a_templated_function_is_the_function():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(fnp.sum(x, axis=1), [3.0, 12.0])
    cj = funcgrad.make_jaxpr(lambda x: fnp.tanh(x) + 1.0)(x)  # staged as before, not replayed
    assert [e.primitive.name for e in cj.jaxpr.eqns] == ["tanh", "add"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(funcgrad.jit(lambda x: fnp.mean(x * 2))(x)) == 5.0


# -- the NumPy interpreter of cached programs


def _view_then_last_use(x):
    y = fnp.sin(x) * 2.0
    v = fnp.reshape(y, (2, 2))  # a view of y's buffer, read after y's last ufunc use
    z = y + 1.0
    return fnp.sum(z * 3.0) + fnp.sum(v @ v)


@pytest.mark.parametrize(
    "loss",
    [
        lambda x: fnp.sum(fnp.exp(x[:, None] * x[None, :])),  # both operands broadcast
        lambda x: fnp.sum(fnp.tanh(x + fnp.sum(x)) * x[:, None]),  # a scalar and a column
        lambda x: fnp.sum((fnp.reshape(x, (2, 2)) + 1.0).reshape(4) * x),  # reshape and back
        lambda x: fnp.sum(fnp.broadcast_to(x, (3, 4)) * fnp.broadcast_to(x[:, None], (4, 4))[0]),
        # Dead buffers reused in place (NOTE: [eager buffer reuse]); a ufunc result read later
        # through a view (reshape, transpose) is never written over.
        lambda x: fnp.sum(fnp.reshape(fnp.sin(x) * 2.0, (2, 2)).T @ fnp.reshape(fnp.cos(x) + x, (2, 2))),
        lambda x: _view_then_last_use(x),
        lambda x: fnp.sum((x + 1.0) * (x + 1.0) - fnp.exp(x) * fnp.exp(x)),  # one value read twice
        lambda x: fnp.sum(fnp.tanh(fnp.tanh(fnp.tanh(x) * x) * x) * x),  # chains of dead temporaries
    ],
)
def test_the_numpy_interpreters_liberties_match_the_unrecorded_path(uncached, loss):
    x = np.array([0.3, -1.2, 2.0, 0.7])
    with uncached:
        want = funcgrad.value_and_grad(loss)(x)
    for _ in range(4):
        _same(funcgrad.value_and_grad(loss)(x), want, rtol=1e-12)


def test_simplify_joins_reshapes_and_broadcasts_and_drops_round_trips():
    from funcgrad.primitives import structure as st

    def build(x, v):
        y = st.reshape(st.reshape(x, (6,)), (2, 3))  # back to x's shape: x itself
        z = st.broadcast_in_dim(st.broadcast_in_dim(v, (4, 3), (1,)), (5, 4, 3), (1, 2))
        return y * 2.0, z

    cj = funcgrad.make_jaxpr(build)(np.zeros((2, 3)), np.zeros(3))
    out = simplify(cj)
    names = [e.primitive.name for e in out.jaxpr.eqns]
    assert names.count("reshape") == 0 and names.count("broadcast_in_dim") == 1
    (bid,) = [e for e in out.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"]
    assert bid.params["broadcast_dimensions"] == (2,) and bid.params["shape"] == (5, 4, 3)
    x, v = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    got = numpy_plan.eager_call_impl(x, v, jaxpr=out)
    np.testing.assert_array_equal(got[0], x * 2.0)
    np.testing.assert_array_equal(got[1], np.broadcast_to(v, (5, 4, 3)))


def test_the_interpreter_keeps_a_broadcast_whose_reader_needs_its_shape():
    # add(broadcast(a), broadcast(b)): neither operand has the result's shape, so neither
    # broadcast may be left to NumPy (the result would come out too small).
    from funcgrad.primitives import elementwise as ew
    from funcgrad.primitives import structure as st

    a, b = Var(ShapedArray((3,), np.float64)), Var(ShapedArray((2,), np.float64))
    ab = Var(ShapedArray((2, 3), np.float64))
    bb = Var(ShapedArray((2, 3), np.float64))
    out = Var(ShapedArray((2, 3), np.float64))
    eqns = [
        JaxprEqn(st.broadcast_in_dim_p, [a], {"shape": (2, 3), "broadcast_dimensions": (1,)}, [ab]),
        JaxprEqn(st.broadcast_in_dim_p, [b], {"shape": (2, 3), "broadcast_dimensions": (0,)}, [bb]),
        JaxprEqn(ew.add_p, [ab, bb], {}, [out]),
    ]
    closed = ClosedJaxpr(Jaxpr([], [a, b], eqns, [out]), [])
    (got,) = numpy_plan.eager_call_impl(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0]), jaxpr=closed)
    np.testing.assert_array_equal(got, [[11.0, 12.0, 13.0], [21.0, 22.0, 23.0]])
    assert templates.enabled


def test_values_returned_with_the_gradient_are_not_overwritten(uncached):
    def loss(x):
        e = fnp.exp(x) * 2.0
        return fnp.sum(e * x), (e, e + 1.0)

    x = np.array([0.5, -1.0, 1.5])
    with uncached:
        want = funcgrad.value_and_grad(loss, has_aux=True)(x)
    for _ in range(4):
        (v, (e, e1)), g = funcgrad.value_and_grad(loss, has_aux=True)(x)
        _same(((v, (e, e1)), g), want, rtol=1e-13)
        np.testing.assert_allclose(e, 2 * np.exp(x), rtol=1e-15)


def test_threads_staging_at_once_get_their_answers_and_leave_the_warning_filters_alone():
    import threading

    before = list(warnings.filters)
    errors: list = []

    def work(k):
        try:
            x = np.linspace(-1.0, 1.0, 3 + k)  # a shape of its own: every thread stages templates
            g = funcgrad.grad(lambda x: fnp.sum(fnp.tanh(x) * fnp.exp(x)))
            want = (1 - np.tanh(x) ** 2) * np.exp(x) + np.tanh(x) * np.exp(x)
            for _ in range(3):
                np.testing.assert_allclose(g(x), want, rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert warnings.filters == before
