"""``funcgrad.custom_batching``: ``custom_vmap`` and ``sequential_vmap``, with jax's as the oracle.

Eagerly and under ``jit`` the body runs; under ``vmap`` the rule does (checked by rules that compute
something else than the body, and by counting their calls); nested ``vmap`` applies the rule at
each level; ``grad``/``jvp`` are checked against finite differences in float64 and against jax
(which has ``jvp`` of a custom_vmap function but not ``grad``); ``vmap(grad(f))`` takes its
cotangents from the VJP of the rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from _checks import assert_close

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import custom_batching
from funcgrad.custom_batching import custom_vmap, sequential_vmap

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

XS = np.linspace(-1.0, 1.5, 5)
YS = np.linspace(0.5, 2.0, 5)


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def _doc_pair(np_like, decorator):
    """jax's documented example, written for funcgrad (``np_like=fnp``) or jax (``jnp``):
    the body adds, the rule multiplies."""

    @decorator
    def f(x, y):
        return x + y

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        assert all(in_batched)
        assert xs.shape[0] == axis_size and ys.shape[0] == axis_size
        return xs * ys, True

    return f


def _sin_pair(np_like, decorator, calls=None):
    """Body ``sin(x) * y``; the rule computes ``cos(xs) * ys`` (so its use shows)."""

    @decorator
    def f(x, y):
        return np_like.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        if calls is not None:
            calls.append(tuple(in_batched))
        return np_like.cos(xs) * ys, in_batched[0] or in_batched[1]

    return f


# ----------------------------------------------------------------------------------------------
# The documented behaviour


def test_namespace():
    import funcgrad.custom_batching as by_import  # noqa: PLC0415

    assert by_import is custom_batching is funcgrad.custom_batching
    assert custom_batching.__all__ == ["custom_vmap", "sequential_vmap"]


def test_doc_example_vmap_uses_the_rule_like_jax():
    f = _doc_pair(fnp, custom_vmap)
    g = _doc_pair(jnp, jax.custom_batching.custom_vmap)
    xs, ys = np.arange(3), np.arange(1, 4)
    ours = funcgrad.vmap(f)(xs, ys)
    assert_close(ours, jax.vmap(g)(xs, ys))
    assert ours.tolist() == [0, 2, 6]
    assert int(f(2, 3)) == 5  # eagerly: the body


def test_eager_and_jit_run_the_body():
    f = _sin_pair(fnp, custom_vmap)
    assert_close(f(0.3, 2.0), np.sin(0.3) * 2.0)
    assert_close(funcgrad.jit(f)(0.3, 2.0), f(0.3, 2.0))
    # A jitted loop over the elements is no vmap: the body, not the rule.
    looped = funcgrad.jit(lambda xs, ys: funcgrad.lax.map(lambda a: f(a[0], a[1]), (xs, ys)))
    assert_close(looped(XS, YS), np.sin(XS) * YS)


def test_vmap_of_a_faithful_rule_matches_a_loop_for_every_in_axes():
    calls = []

    @custom_vmap
    def f(x, y):
        return fnp.tanh(x) @ y, fnp.sum(y)

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append(tuple(in_batched))
        xb, yb = in_batched
        out0 = fnp.einsum(
            {(True, True): "bi,bij->bj", (True, False): "bi,ij->bj", (False, True): "i,bij->bj"}[(xb, yb)],
            fnp.tanh(x),
            y,
        )
        out1 = fnp.sum(y, axis=(1, 2)) if yb else fnp.sum(y)
        return (out0, out1), (True, yb)

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3, 2))
    for in_axes in [(0, 0), (0, None), (None, 0), (1, 2)]:
        xa = x.T if in_axes[0] == 1 else x
        ya = np.moveaxis(y, 0, 2) if in_axes[1] == 2 else y
        a = x[0] if in_axes[0] is None else xa
        b = y[0] if in_axes[1] is None else ya
        calls.clear()
        out = funcgrad.vmap(f, in_axes=in_axes)(a, b)
        assert calls == [(in_axes[0] is not None, in_axes[1] is not None)]
        for i in range(4):
            ai = a if in_axes[0] is None else np.take(xa, i, axis=in_axes[0])
            bi = b if in_axes[1] is None else np.take(ya, i, axis=in_axes[1])
            expected = f(ai, bi)
            assert_close(out[0][i], expected[0])
            assert_close(out[1][i], expected[1])  # an unbatched output is broadcast


def test_unbatched_output_stays_unbatched_with_out_axes_none():
    @custom_vmap
    def f(x, y):
        return x * y, y + 1.0

    @f.def_vmap
    def rule(axis_size, in_batched, xs, y):
        return (xs * y, y + 1.0), (True, False)

    out, unbatched = funcgrad.vmap(f, in_axes=(0, None), out_axes=(0, None))(XS, 2.0)
    assert_close(out, XS * 2.0)
    assert_close(unbatched, 3.0)


def test_in_batched_is_a_pytree_like_the_arguments():
    seen = []

    @custom_vmap
    def f(params, x):
        return params["w"] * x + params["b"]

    @f.def_vmap
    def rule(axis_size, in_batched, params, x):
        seen.append(in_batched)
        w = params["w"] if in_batched[0]["w"] else params["w"][None]
        return w * x + params["b"], True

    out = funcgrad.vmap(f, in_axes=({"w": None, "b": 0}, 0))({"w": 2.0, "b": YS}, XS)
    assert seen == [[{"b": True, "w": False}, True]]
    assert_close(out, 2.0 * XS + YS)


def test_keyword_arguments_are_resolved():
    f = _sin_pair(fnp, custom_vmap)
    assert_close(f(0.3, y=2.0), np.sin(0.3) * 2.0)
    assert_close(funcgrad.vmap(lambda x: f(x, y=2.0))(XS), np.cos(XS) * 2.0)


def test_jit_of_vmap_and_vmap_of_jit_use_the_rule():
    f = _sin_pair(fnp, custom_vmap)
    expected = np.cos(XS) * YS
    assert_close(funcgrad.jit(funcgrad.vmap(f))(XS, YS), expected)
    assert_close(funcgrad.vmap(funcgrad.jit(f))(XS, YS), expected)


def test_nested_vmap_applies_the_rule_at_each_level():
    calls = []

    @custom_vmap
    def f(x):
        return fnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        calls.append(xs.shape)
        return fnp.stack([f(xs[i]) for i in range(axis_size)]) + 1.0, True  # calls f: nested use

    x = np.arange(6.0).reshape(2, 3)
    out = funcgrad.vmap(funcgrad.vmap(f))(x)
    # The inner vmap's rule (its operations batched by the outer vmap, where f meets the outer
    # rule once more): sin + 1 per element, + 1 again from the outer level.
    assert_close(out, np.sin(x) + 2.0)
    assert (3,) in calls and (2,) in calls
    g = _sin_pair(jnp, jax.custom_batching.custom_vmap)
    ours = funcgrad.vmap(funcgrad.vmap(_sin_pair(fnp, custom_vmap)))(x, x + 1)
    assert_close(ours, jax.vmap(jax.vmap(g))(x, x + 1))


# ----------------------------------------------------------------------------------------------
# Differentiation


def test_grad_and_jvp_of_the_body_against_finite_differences_and_jax():
    f = _sin_pair(fnp, custom_vmap)
    g = _sin_pair(jnp, jax.custom_batching.custom_vmap)
    for x in (0.3, -1.2):
        assert_close(funcgrad.grad(f)(x, 2.0), _fd(lambda t: np.sin(t) * 2.0, x), rtol=1e-7)
        assert_close(funcgrad.grad(f, argnums=1)(x, 2.0), np.sin(x))
        assert_close(funcgrad.grad(funcgrad.grad(f))(x, 2.0), _fd(lambda t: np.cos(t) * 2.0, x), rtol=1e-7)
        ours = funcgrad.jvp(f, (x, 2.0), (1.0, 0.5))
        theirs = jax.jvp(g, (x, 2.0), (1.0, 0.5))
        assert_close(ours[0], theirs[0])
        assert_close(ours[1], theirs[1])
    assert_close(funcgrad.jit(funcgrad.grad(f))(0.3, 2.0), np.cos(0.3) * 2.0)


def test_vmap_of_jvp_uses_the_jvp_of_the_rule():
    f = _sin_pair(fnp, custom_vmap)
    g = _sin_pair(jnp, jax.custom_batching.custom_vmap)
    for in_axes in [(0, 0, 0), (0, None, None), (None, 0, 0), (None, 0, None)]:
        xs = XS if in_axes[0] == 0 else 0.7
        ts = YS if in_axes[1] == 0 else 0.5
        ys = YS + 1 if in_axes[2] == 0 else 2.0
        ours = funcgrad.vmap(lambda x, t, y: funcgrad.jvp(f, (x, y), (t, 0.25)), in_axes=in_axes)(xs, ts, ys)
        # The rule is cos(x) * y: the primal outputs and their JVP, lane by lane, as JAX's (one
        # call over primals and tangents whose rule is the JVP of the rule).
        n = len(XS)
        x, t, y = (np.broadcast_to(v, (n,)) for v in (xs, ts, ys))
        assert_close(ours[0], np.cos(x) * y)
        assert_close(ours[1], -np.sin(x) * y * t + np.cos(x) * 0.25)
        theirs = jax.vmap(lambda x, t, y: jax.jvp(g, (x, y), (t, 0.25)), in_axes=in_axes)(xs, ts, ys)
        for o, th in zip(ours, theirs):
            # (where a primal and its tangent are batched apart, y and its fixed tangent 0.25 in
            # the first case, jax 0.10 batches the outputs twice: a (5, 5) result whose diagonal
            # is the lanes; funcgrad broadcasts the value batched alone instead)
            assert_close(o, np.diagonal(np.asarray(th)) if np.ndim(th) == 2 else th)


def test_extra_batched_values_reach_the_rule_unbatched_as_jax():
    # (JAX's CustomVmapTest: primals batched under a fixed tangent, and jacfwd's tangents, are a
    # vmap around the rule's JVP; the rule sees in_batched=[False])
    seen = []

    def build(np_like, decorator):
        @decorator
        def f(x):
            return np_like.sin(x)

        @f.def_vmap
        def rule(axis_size, in_batched, xs):
            seen.append(list(in_batched))
            return np_like.cos(xs), in_batched[0]

        return f

    f, g = build(fnp, custom_vmap), build(jnp, jax.custom_batching.custom_vmap)
    ours = funcgrad.vmap(lambda x, t: funcgrad.jvp(f, [x], [t]), in_axes=(0, None))(XS, 4.0)
    theirs = jax.vmap(lambda x, t: jax.jvp(g, [x], [t]), in_axes=(0, None))(jnp.asarray(XS), 4.0)
    assert_close(ours, theirs)
    assert_close(funcgrad.jacfwd(f)(XS), jax.jacfwd(g)(jnp.asarray(XS)))
    assert seen == [[False]] * 4


def test_vmap_of_grad_takes_the_cotangents_from_the_rule():
    calls = []
    f = _sin_pair(fnp, custom_vmap, calls)
    # The rule is cos(xs) * ys: vmap(grad(f)) differentiates it (jax cannot linearize here).
    assert_close(funcgrad.vmap(funcgrad.grad(f))(XS, YS), -np.sin(XS) * YS)
    assert calls, "the rule was not used"
    dy = funcgrad.vmap(funcgrad.grad(f, argnums=1), in_axes=(0, None))(XS, 2.0)
    assert_close(dy, np.cos(XS))
    # A faithful rule: vmap(grad(f)) is a loop of grad(f), checked by finite differences.
    h = custom_vmap(lambda x, y: fnp.sin(x) * y)
    h.def_vmap(lambda n, b, xs, ys: (fnp.sin(xs) * ys, b[0] or b[1]))
    out = funcgrad.vmap(funcgrad.grad(h))(XS, YS)
    assert_close(out, np.array([_fd(lambda t, y=y: np.sin(t) * y, x) for x, y in zip(XS, YS)]), rtol=1e-7)
    assert_close(funcgrad.vmap(funcgrad.grad(funcgrad.grad(h)))(XS, YS), -np.sin(XS) * YS)
    assert_close(funcgrad.jit(funcgrad.vmap(funcgrad.grad(h)))(XS, YS), np.cos(XS) * YS)


def test_grad_of_vmap_differentiates_the_rule():
    f = _sin_pair(fnp, custom_vmap)
    out = funcgrad.grad(lambda xs: fnp.sum(funcgrad.vmap(f)(xs, YS)))(XS)
    assert_close(out, -np.sin(XS) * YS)


def test_custom_vjp_around_custom_vmap_like_jax():
    def build(np_like, vjp, vmap_):
        @vjp
        @vmap_
        def f(x, y):
            return np_like.sin(x) * y

        @f.def_vmap
        def f_vmap_rule(axis_size, in_batched, xs, ys):
            return np_like.cos(xs) * ys, True

        f.defvjp(
            lambda x, y: (f(x, y), (np_like.cos(x), np_like.sin(x), y)),
            lambda r, g: (r[0] * g * r[2], r[1] * g),
        )
        return f

    f = build(fnp, funcgrad.custom_vjp, custom_vmap)
    g = build(jnp, jax.custom_vjp, jax.custom_batching.custom_vmap)
    assert_close(funcgrad.vmap(f)(np.zeros(3), np.ones(3)), jax.vmap(g)(jnp.zeros(3), jnp.ones(3)))
    assert_close(funcgrad.grad(f)(0.0, 1.0), jax.grad(g)(0.0, 1.0))


# ----------------------------------------------------------------------------------------------
# sequential_vmap


def test_sequential_vmap_of_a_callback_without_vmap_method():
    seen = []

    def host(x):
        seen.append(np.shape(x))
        return np.sinc(x)

    def call(x, scale):
        out = funcgrad.ShapeDtypeStruct(np.shape(x), np.float64)
        return funcgrad.pure_callback(host, out, x) * scale

    with pytest.raises(Exception, match="vmap"):
        funcgrad.vmap(call, in_axes=(0, None))(XS, 2.0)
    f = sequential_vmap(call)
    seen.clear()
    out = funcgrad.vmap(f, in_axes=(0, None))(XS, 2.0)
    assert_close(out, np.sinc(XS) * 2.0)
    assert seen and all(s == () for s in seen)  # one element at a time
    assert_close(funcgrad.jit(funcgrad.vmap(f, in_axes=(0, None)))(XS, 2.0), np.sinc(XS) * 2.0)


def test_sequential_vmap_like_jax():
    ours = sequential_vmap(lambda x, y: fnp.sum(x) * y)
    theirs = jax.custom_batching.sequential_vmap(lambda x, y: jnp.sum(x) * y)
    x = np.arange(12.0).reshape(4, 3)
    for in_axes in [(0, None), (None, 0), (0, 0)]:
        y = YS[:4] if in_axes[1] == 0 else 2.0
        a = x if in_axes[0] == 0 else x[0]
        assert_close(funcgrad.vmap(ours, in_axes=in_axes)(a, y), jax.vmap(theirs, in_axes=in_axes)(a, y))
    nested = funcgrad.vmap(funcgrad.vmap(ours, in_axes=(0, None)), in_axes=(0, None))(x.reshape(2, 2, 3), 3.0)
    assert_close(nested, x.reshape(2, 2, 3).sum(-1) * 3.0)
    grads = funcgrad.vmap(funcgrad.grad(ours), in_axes=(0, None))(x, 2.0)
    assert_close(grads, np.full_like(x, 2.0))


# ----------------------------------------------------------------------------------------------
# Errors


def test_vmap_without_a_rule_is_an_error():
    f = custom_vmap(lambda x: x)
    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap function <lambda>"):
        funcgrad.vmap(f)(XS)


@pytest.mark.parametrize(
    "rule, error, message",
    [
        (lambda n, b, xs: xs, TypeError, "must return a pair"),
        (lambda n, b, xs: ((xs, xs), True), ValueError, "do not match"),
        (
            lambda n, b, xs: ((xs, xs), (True, True)),
            ValueError,
            "does not match that of original custom-vmapped",
        ),
        (
            lambda n, b, xs: (xs[0], True),
            ValueError,
            r"output 0 is f64\[\], but as a batched .* must be f64\[5\]",
        ),
    ],
)
def test_a_rule_returning_the_wrong_thing_is_an_error(rule, error, message):
    f = custom_vmap(lambda x: x * 2.0)
    f.def_vmap(rule)
    with pytest.raises(error, match=message):
        funcgrad.vmap(f)(XS)


def test_a_rule_may_return_other_shapes_and_dtypes_than_the_body_as_jax():
    # (JAX checks only the trees and the batch: JAX's test_closure returns z + cos(xs) for a body
    # z + sin(x) of a scalar x; a rule's unbatched output is broadcast by vmap's out_axes)
    for rule in (lambda n, b, xs: (xs, False), lambda n, b, xs: (xs.astype(np.float32), True)):
        f = custom_vmap(lambda x: x * 2.0)
        f.def_vmap(rule)
        g = jax.custom_batching.custom_vmap(lambda x: x * 2.0)
        g.def_vmap(rule)
        ours, theirs = funcgrad.vmap(f)(XS), jax.vmap(g)(jnp.asarray(XS))
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        assert_close(ours, theirs)


def test_a_batched_closed_over_value_is_an_error():
    def outer(a):
        f = custom_vmap(lambda x: x * a)
        f.def_vmap(lambda n, b, xs: (xs * 2.0, True))
        return f(1.0)

    assert_close(outer(3.0), 3.0)
    with pytest.raises(ValueError, match="closes over a value that this vmap batches"):
        funcgrad.vmap(outer)(XS)


def test_grad_of_a_closed_over_value_without_vmap_is_the_body_and_under_vmap_an_error():
    def outer(a, x):
        f = custom_vmap(lambda x: fnp.sin(x) * a)
        # (A rule that used ``a`` itself would let a tracer of the differentiation escape.)
        f.def_vmap(lambda n, b, xs: (fnp.sin(xs) * 2.0, True))
        return f(x)

    assert_close(funcgrad.grad(outer)(2.0, 0.3), np.sin(0.3))
    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        funcgrad.vmap(funcgrad.grad(outer), in_axes=(None, 0))(2.0, XS)


def test_stacked_custom_decorators_forward_their_def_methods_as_jax():
    # JAX's custom_api_test: custom_vmap(custom_jvp(f)) has defjvp (it raised AttributeError), and
    # the rules set through either decorator take effect.
    import funcgrad
    from funcgrad.custom_batching import custom_vmap

    f = custom_vmap(funcgrad.custom_jvp(lambda x: 2.0 * x))
    f.def_vmap(lambda size, in_batched, xs: (3.0 * xs, True))
    f.defjvp(lambda p, t: (2.0 * p[0], 5.0 * t[0]))
    assert float(funcgrad.jvp(f, (1.0,), (1.0,))[1]) == 5.0
    assert funcgrad.vmap(f)(funcgrad.numpy.ones(2)).tolist() == [3.0, 3.0]


def test_a_call_that_does_not_bind_says_jax_words():
    # JAX's custom_api_test test_resolve_kwargs_error_message for custom_vmap
    @custom_vmap
    def f(x, y, *, z=None):
        return x * y

    f.def_vmap(lambda n, b, xs, ys: (xs * ys, True))
    with pytest.raises(
        TypeError, match=r"custom_vmap-decorated function f(.*)\nmissing a required argument: 'y'"
    ):
        f(0.5)
    with pytest.raises(TypeError, match="keyword arguments could not be resolved to positions: z"):
        f(0.5, 0.1, z=1.0)


def test_jacfwd_batches_only_tangents_and_the_rule_sees_them_unbatched():
    # JAX's JVP of a rule (custom_api_test's test_jacfwd): tangents batched alone are a vmap
    # around the rule's JVP, so the rule sees in_batched [False], with jax's axis_size.
    def make(custom, np_like, seen):
        f = custom(lambda x: np_like.sin(x))

        @f.def_vmap
        def rule(axis_size, in_batched, xs):
            seen.append((axis_size, list(in_batched)))
            return np_like.cos(xs), in_batched[0]

        return f

    ours_seen, theirs_seen = [], []
    x = np.arange(3.0) + 0.72
    ours = funcgrad.jacfwd(make(custom_vmap, fnp, ours_seen))(x)
    theirs = jax.jacfwd(make(jax.custom_batching.custom_vmap, jax.numpy, theirs_seen))(x)
    assert_close(ours, theirs)
    assert_close(ours, -np.diag(np.sin(x)))
    assert ours_seen == theirs_seen == [(3, [False])]
