"""JAX's "How primitives work" tutorial, the funcgrad way: a ``multiply_add`` primitive defined
through ``funcgrad.extend.core`` with its rules registered in JAX's tables
(``ad.primitive_jvps``, ``ad.primitive_transposes``, ``batching.primitive_batchers``,
``mlir.register_lowering``), then run through every transformation as a built-in primitive is:
values against NumPy, derivatives against finite differences in float64, vmap against a loop, jit
against eager, grad of grad, under scan, cond, while_loop and checkpoint, and jet."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.core import ShapedArray
from funcgrad.experimental.jet import jet
from funcgrad.extend.core import Primitive
from funcgrad.interpreters import ad, batching, mlir

RNG = np.random.default_rng(28)

# ----------------------------------------------------------------------------------------------
# The primitive, as the tutorial defines it

multiply_add_p = Primitive("tutorial_multiply_add")


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


@multiply_add_p.def_impl
def _impl(x, y, z):
    # Eager evaluation: NumPy values in, a NumPy value out.
    return np.add(np.multiply(x, y), z)


@multiply_add_p.def_abstract_eval
def _abstract_eval(xs, ys, zs):
    assert isinstance(xs, ShapedArray), type(xs)
    assert xs.shape == ys.shape == zs.shape, (xs, ys, zs)
    return ShapedArray(xs.shape, xs.dtype)


SEEN_TANGENT_TYPES: list = []


def _jvp(primals, tangents):
    x, y, z = primals
    SEEN_TANGENT_TYPES.append(tuple(type(t) for t in tangents))
    xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
    out = multiply_add(x, y, z)
    # d(x*y + z) = xt*y + x*yt + zt, written with the primitive itself (so it is linear in the
    # tangents and needs the transpose below).
    return out, multiply_add(xt, y, multiply_add(x, yt, zt))


def _transpose(ct, x, y, z):
    # Linear in x (y known) or in y (x known), and in z.
    assert not (ad.is_undefined_primal(x) and ad.is_undefined_primal(y))
    if type(ct) is ad.Zero:
        return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in (x, y, z)]

    def zeros(a):
        return fnp.zeros(a.aval.shape, a.aval.dtype)

    ct_x = multiply_add(ct, y, zeros(x)) if ad.is_undefined_primal(x) else None
    ct_y = multiply_add(x, ct, zeros(y)) if ad.is_undefined_primal(y) else None
    ct_z = ct if ad.is_undefined_primal(z) else None
    return ct_x, ct_y, ct_z


def _batch(batched_args, batch_dims):
    # The tutorial's rule assumes equal batch dims; this one brings every operand's to the front.
    size = next(np.shape(a)[d] for a, d in zip(batched_args, batch_dims) if d is not batching.not_mapped)
    args = [batching.bdim_at_front(a, d, size) for a, d in zip(batched_args, batch_dims)]
    return multiply_add(*args), 0


ad.primitive_jvps[multiply_add_p] = _jvp
ad.primitive_transposes[multiply_add_p] = _transpose
batching.primitive_batchers[multiply_add_p] = _batch
mlir.register_lowering(multiply_add_p, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))


def square_add(a, b):
    return multiply_add(a, a, b)


def _fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


# ----------------------------------------------------------------------------------------------
# The registries are views of the primitive's rule slots


def test_tables_set_and_return_the_rules():
    assert ad.primitive_jvps[multiply_add_p] is _jvp and multiply_add_p.jvp is not None
    assert ad.primitive_transposes[multiply_add_p] is _transpose
    assert ad.get_primitive_transpose(multiply_add_p) is _transpose
    assert batching.primitive_batchers[multiply_add_p] is _batch
    assert multiply_add_p in ad.primitive_jvps and multiply_add_p.traits.linear


def test_builtin_rules_are_readable_in_jax_signatures():
    from funcgrad.primitives.elementwise import mul_p, sin_p

    x = np.array([0.3, 1.2])
    out, t = ad.primitive_jvps[sin_p]((x,), (np.ones(2),))
    np.testing.assert_allclose(np.asarray(t), np.cos(x))
    # JAX's batching signature on a built-in: (batched_args, batch_dims) -> (out, out_dim).
    y, d = batching.primitive_batchers[mul_p]((np.ones((3, 2)), np.arange(2.0)), (0, None))
    np.testing.assert_allclose(np.moveaxis(np.asarray(y), d, 0), np.tile(np.arange(2.0), (3, 1)))
    with pytest.raises(KeyError):
        batching.primitive_batchers[Primitive("no_rules")]
    with pytest.raises(NotImplementedError, match="no_rules"):
        ad.get_primitive_transpose(Primitive("no_rules"))


# ----------------------------------------------------------------------------------------------
# Evaluation, jit


def test_eager_and_jit_values_match_numpy():
    x, y, z = (RNG.normal(size=(3, 4)) for _ in range(3))
    expected = x * y + z
    np.testing.assert_allclose(np.asarray(multiply_add(x, y, z)), expected, rtol=1e-14)
    jitted = funcgrad.jit(multiply_add)
    np.testing.assert_allclose(np.asarray(jitted(x, y, z)), expected, rtol=1e-14)
    assert "tutorial_multiply_add" in str(funcgrad.make_jaxpr(multiply_add)(x, y, z))
    assert float(square_add(2.0, 10.0)) == 14.0 == float(funcgrad.jit(square_add)(2.0, 10.0))


def test_abstract_eval_checks_shapes_under_jit():
    with pytest.raises(AssertionError):
        funcgrad.jit(multiply_add)(np.ones(2), np.ones(3), np.ones(2))


# ----------------------------------------------------------------------------------------------
# Derivatives


def test_grad_matches_finite_differences_in_float64():
    x0 = RNG.normal(size=(4,))
    b = RNG.normal(size=(4,))

    def f(x):
        return fnp.sum(fnp.sin(square_add(x, b)))

    np.testing.assert_allclose(np.asarray(funcgrad.grad(f)(x0)), _fd_grad(f, x0), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(funcgrad.grad(f))(x0)), np.asarray(funcgrad.grad(f)(x0)), rtol=1e-13
    )


def test_symbolic_zero_tangents_reach_the_rule():
    SEEN_TANGENT_TYPES.clear()
    funcgrad.jvp(lambda x: multiply_add(x, 2.0, 3.0), (1.0,), (1.0,))
    (types,) = SEEN_TANGENT_TYPES
    assert types[0] is not ad.Zero and types[1] is ad.Zero and types[2] is ad.Zero


def test_jvp_and_vjp_against_closed_forms():
    x, y, z = 1.5, -2.0, 0.25
    out, t = funcgrad.jvp(multiply_add, (x, y, z), (1.0, 10.0, 100.0))
    assert float(out) == x * y + z and float(t) == y + x * 10.0 + 100.0
    out, vjp = funcgrad.vjp(multiply_add, x, y, z)
    assert [float(c) for c in vjp(1.0)] == [y, x, 1.0]


def test_grad_of_grad_matches_the_closed_form():
    # d²/da² sin(a² + b) = 2 cos(a² + b) - 4 a² sin(a² + b)
    def f(a):
        return fnp.sin(square_add(a, 0.5))

    a = 0.7
    expected = 2 * np.cos(a * a + 0.5) - 4 * a * a * np.sin(a * a + 0.5)
    np.testing.assert_allclose(float(funcgrad.grad(funcgrad.grad(f))(a)), expected, rtol=1e-12)
    np.testing.assert_allclose(float(funcgrad.jit(funcgrad.grad(funcgrad.grad(f)))(a)), expected, rtol=1e-12)


def test_jet_through_the_jvp_rule():
    # a(t) = 2 + t: f(a) = a² + 1 has derivatives 4 and 2 along t; against the built-in ops.
    primal, series = jet(lambda a: square_add(a, 1.0), (2.0,), ((1.0, 0.0),))
    ref_primal, ref_series = jet(lambda a: a * a + 1.0, (2.0,), ((1.0, 0.0),))
    assert float(primal) == float(ref_primal) == 5.0
    np.testing.assert_allclose([float(s) for s in series], [float(s) for s in ref_series], rtol=1e-14)


# ----------------------------------------------------------------------------------------------
# Batching


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (1, None, 0), (None, 1, None)])
def test_vmap_matches_a_loop(in_axes):
    shapes = [(3,) if ax is None else ((5, 3) if ax == 0 else (3, 5)) for ax in in_axes]
    args = [RNG.normal(size=s) for s in shapes]
    out = funcgrad.vmap(multiply_add, in_axes=in_axes)(*args)
    lanes = [
        np.asarray(
            multiply_add(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
        )
        for i in range(5)
    ]
    np.testing.assert_allclose(np.asarray(out), np.stack(lanes), rtol=1e-14)
    jitted = funcgrad.jit(funcgrad.vmap(multiply_add, in_axes=in_axes))(*args)
    np.testing.assert_allclose(np.asarray(jitted), np.stack(lanes), rtol=1e-14)


def test_per_example_gradients_vmap_of_grad():
    xs, bs = RNG.normal(size=(4,)), RNG.normal(size=(4,))
    g = funcgrad.vmap(funcgrad.grad(lambda a, b: fnp.sin(square_add(a, b))))(xs, bs)
    np.testing.assert_allclose(np.asarray(g), 2 * xs * np.cos(xs * xs + bs), rtol=1e-13)


# ----------------------------------------------------------------------------------------------
# Control flow and checkpoint


def test_under_scan_values_and_grad():
    xs = RNG.normal(size=(5,))

    def loop(c0):
        c, ys = lax.scan(lambda c, x: (square_add(c, x) * 0.5, c), c0, xs)
        return c + fnp.sum(ys)

    def reference(c):
        total = 0.0
        for x in xs:
            total += c
            c = (c * c + x) * 0.5
        return c + total

    np.testing.assert_allclose(float(loop(0.3)), reference(0.3), rtol=1e-13)
    np.testing.assert_allclose(float(funcgrad.grad(loop)(0.3)), _fd_grad(reference, 0.3), rtol=1e-7)
    np.testing.assert_allclose(float(funcgrad.jit(funcgrad.grad(loop))(0.3)), float(funcgrad.grad(loop)(0.3)))


def test_under_cond_and_while_loop():
    def branchy(a):
        return lax.cond(a > 0, lambda v: square_add(v, 1.0), lambda v: -v, a)

    assert float(branchy(2.0)) == 5.0 and float(funcgrad.grad(branchy)(2.0)) == 4.0
    assert float(funcgrad.jit(branchy)(-2.0)) == 2.0

    def grow(a):
        return lax.while_loop(lambda v: v < 100.0, lambda v: square_add(v, 1.0), a)

    assert float(grow(1.0)) == 677.0 == float(funcgrad.jit(grow)(1.0))


def test_under_checkpoint():
    def f(a):
        return fnp.sin(square_add(a, 1.0))

    a = 0.9
    g = funcgrad.grad(funcgrad.checkpoint(f))(a)
    np.testing.assert_allclose(float(g), 2 * a * np.cos(a * a + 1.0), rtol=1e-14)
    jaxpr = str(funcgrad.make_jaxpr(funcgrad.grad(funcgrad.checkpoint(f)))(a))
    assert "tutorial_multiply_add" in jaxpr


def test_missing_rules_raise_jaxs_errors():
    # (api_test test_unimplemented_interpreter_rules: JAX's words start each message, in its order
    # of checks: the JVP rule before the abstract evaluation under grad)
    jax = pytest.importorskip("jax")
    jax_core = pytest.importorskip("jax.extend.core")
    jax_ad = pytest.importorskip("jax.interpreters.ad")

    def run(lib_jax, lib_core, lib_ad):
        p = lib_core.Primitive("foo")
        got = []

        def attempt(f):
            with pytest.raises(NotImplementedError) as e:
                f()
            got.append(str(e.value))

        attempt(lambda: p.bind(1.0))
        attempt(lambda: lib_jax.jit(p.bind)(1.0))
        attempt(lambda: lib_jax.grad(p.bind)(1.0))
        p.def_abstract_eval(lambda x: x)
        attempt(lambda: lib_jax.jit(p.bind)(1.0))
        p.def_impl(lambda x: x)
        lib_ad.defjvp(p, lambda g, x: p.bind(g))
        attempt(lambda: lib_jax.grad(p.bind)(1.0))
        return got

    want = run(jax, jax_core, jax_ad)
    got = run(funcgrad, funcgrad.extend.core, ad)
    assert [g.startswith(w) for g, w in zip(got, want)] == [True] * 5, (got, want)


def test_eager_result_weak_type_as_jaxs_bind():
    # JAX's bind returns a library primitive's impl result as it is: a NumPy value computed from
    # Python scalars is strong (the tutorial's jvp of its primitive printed Traced<~float32[]>
    # where JAX prints Traced<float32[]>), a Python scalar weak. Catalog primitives unchanged.
    jax = pytest.importorskip("jax")
    jax_core = pytest.importorskip("jax.extend.core")
    jax_ad = pytest.importorskip("jax.interpreters.ad")

    def run(lib, lib_core, lib_ad, lib_numpy):
        madd = lib_core.Primitive("numpy_madd")
        madd.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
        madd.def_abstract_eval(lambda x, y, z: x.update(weak_type=False))
        double = lib_core.Primitive("scalar_double")
        double.def_impl(lambda x: 2 * x)
        seen = []

        def value_and_jvp(primals, tangents):  # (the tutorial's rule, for primals as bound)
            x, y, z = primals
            xt, yt, zt = (lib_ad.instantiate_zeros(t) for t in tangents)
            return madd.bind(x, y, z), xt * y + x * yt + zt

        lib_ad.primitive_jvps[madd] = value_and_jvp

        def f(a, b):
            out = madd.bind(a, a, b)
            seen.append(lib.typeof(out).weak_type)
            return out

        primal, tangent = lib.jvp(f, (2.0, 10.0), (1.0, 1.0))
        weak = lambda v: bool(lib_numpy.asarray(v).weak_type)  # noqa: E731
        eager = madd.bind(2.0, 2.0, 10.0)
        return [float(eager), weak(eager), weak(double.bind(3.0)), weak(lib_numpy.sin(2.0))] + [
            float(primal),
            float(tangent),
            weak(primal),
            seen,
        ]

    want = run(jax, jax_core, jax_ad, jax.numpy)
    got = run(funcgrad, funcgrad.extend.core, ad, fnp)
    assert got == want == [14.0, False, True, True, 14.0, 5.0, False, [False]], (got, want)
