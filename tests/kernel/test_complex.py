"""Complex numbers end to end: the NumPy surface against NumPy, the transformations against jax (the
oracle for JAX's conventions), derivatives to second order against finite differences
(autograd-style ``check_grads``), and the errors for complex values where a real one is required.

The per-primitive checks (values, derivatives in complex128, vmap, jit, the transpose dot-product
test) are op_db's (tests/primitives/op_db/complex.py and the complex dtypes of the other families).
"""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import XLA_DEFAULT_OPTIONS, xla_default_compiles

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.testing import check_grads

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(0)
Z = RNG.uniform(0.2, 1.5, 5) + 1j * RNG.uniform(0.2, 1.5, 5)
W = RNG.uniform(-1, 1, 5) + 1j * RNG.uniform(-1, 1, 5)


def _close(got, want, rtol=1e-10, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


# ----------------------------------------------------------------------------------------------
# The NumPy surface: values (eager and jit) against NumPy

SURFACE = {
    "real": (lambda m: m.real(Z), None),
    "imag": (lambda m: m.imag(Z), None),
    "conj": (lambda m: m.conj(Z), None),
    "conjugate_real": (lambda m: m.conjugate(Z.real), None),
    "angle": (lambda m: m.angle(Z), None),
    "angle_deg": (lambda m: m.angle(Z, deg=True), None),
    "angle_real": (lambda m: m.angle(np.array([-1.0, 2.0])), None),
    "iscomplex": (lambda m: m.iscomplex(np.array([1 + 1j, 2 + 0j])), None),
    "isreal": (lambda m: m.isreal(np.array([1 + 1j, 2 + 0j])), None),
    "iscomplex_real": (lambda m: m.iscomplex(np.array([1.0])), None),
    "sort_complex": (lambda m: m.sort_complex(np.array([2 + 1j, 1 + 3j, 1 - 1j, 2 + 0j])), None),
    "abs": (lambda m: m.abs(Z), None),
    "sign": (lambda m: m.sign(Z), None),
    "sqrt": (lambda m: m.sqrt(-Z), None),
    "log10": (lambda m: m.log10(Z), None),
    "exp2": (lambda m: m.exp2(Z), None),
    "power": (lambda m: m.power(Z, 0.5 + 1j), None),
    "reciprocal": (lambda m: m.reciprocal(Z), None),
    "vdot": (lambda m: m.vdot(Z, W), None),
    "vecdot": (lambda m: m.vecdot(np.stack([Z, W]), W), None),
    "vecmat": (lambda m: m.vecmat(Z[:2], np.outer(Z[:2], W)), None),
    "inner": (lambda m: m.inner(Z, W), None),
    "matmul": (lambda m: m.outer(Z, W) @ Z, None),
    "correlate": (lambda m: m.correlate(Z, W[:3]), None),
    "correlate_full": (lambda m: m.correlate(Z[:3], W, "full"), None),
    "cov": (lambda m: m.cov(np.stack([Z, W])), None),
    "corrcoef": (lambda m: m.corrcoef(np.stack([Z, W])), None),
    "norm": (lambda m: m.linalg.norm(Z), None),
    "norm_1": (lambda m: m.linalg.norm(Z, 1), None),
    "norm_3": (lambda m: m.linalg.norm(Z, 3), None),
    "norm_fro": (lambda m: m.linalg.norm(np.outer(Z, W)), None),
    "norm_nuc_free_matrix_1": (lambda m: m.linalg.norm(np.outer(Z, W), 1), None),
    "vector_norm_c64": (lambda m: m.linalg.vector_norm(Z.astype(np.complex64)), 1e-6),
    "var": (lambda m: m.var(Z), None),
    "std": (lambda m: m.std(np.stack([Z, W]), axis=1, ddof=1), None),
    "mean": (lambda m: m.mean(Z), None),
    "prod": (lambda m: m.prod(Z), None),
    "cumprod": (lambda m: m.cumprod(Z), None),
    "less": (lambda m: m.less(np.array([1 + 2j, 1 + 1j, 2 - 5j]), np.array([1 + 3j, 1 + 1j, 1 + 9j])), None),
    "greater_equal": (lambda m: m.greater_equal(np.array([1 + 2j, 1 + 1j]), 1 + 1j), None),
    "maximum": (
        lambda m: m.maximum(np.array([1 + 2j, 1 + 1j, 2 - 5j]), np.array([1 + 3j, 1 + 1j, 1 + 9j])),
        None,
    ),
    # (minimum with NaN parts: JAX's pick, not NumPy's propagation; test_lax_complex_parts_follow_jax)
    "max": (lambda m: m.max(np.array([1 + 2j, 1 + 3j, -5 + 9j])), None),
    # (argmin/argmax of complex values: JAX's TypeError, test_numpy_errors.py)
    "sort": (lambda m: m.sort(np.array([2 + 1j, 1 + 3j, 1 - 1j, np.nan + 0j, 1 + np.nan * 1j])), None),
    "argsort": (lambda m: m.argsort(np.array([2 + 1j, 1 + 3j, 1 - 1j, 2 + 0j])), None),
    "searchsorted": (
        lambda m: m.searchsorted(np.array([1 + 1j, 1 + 2j, 2 + 0j]), np.array([1 + 1.5j, 3j])),
        None,
    ),
    "isfinite": (lambda m: m.isfinite(np.array([1 + 1j, np.inf + 0j, 1j * np.nan])), None),
    "isinf": (lambda m: m.isinf(np.array([1 + 1j, -np.inf + 0j, 1j * np.inf, np.nan + 0j])), None),
    "isnan": (lambda m: m.isnan(np.array([1 + 1j, np.nan + 0j, 1j * np.nan])), None),
    "round": (lambda m: m.round(np.array([1.5 + 2.5j, -0.5 - 1.26j]), 1), None),
    "rint": (lambda m: m.rint(np.array([1.5 + 2.5j, -0.5 - 1.6j])), None),
    "nan_to_num": (lambda m: m.nan_to_num(np.array([np.nan + 1j, np.inf - 1j * np.inf])), None),
    "isclose": (lambda m: m.isclose(Z, Z + 1e-9j), None),
    "allclose": (lambda m: m.allclose(Z, Z * (1 + 1e-9j)), None),
    "linspace": (lambda m: m.linspace(0, 1 + 2j, 5), None),
    "geomspace": (lambda m: m.geomspace(1j, 1000j, 4), None),
    "eye": (lambda m: m.eye(3, dtype=m.complex64), None),
    "full": (lambda m: m.full((2,), 1 + 2j), None),
    "asarray": (lambda m: m.asarray([1, 2.5], dtype=m.complex64), None),
    "promote_f32": (lambda m: m.ones(2, m.float32) * 1j, None),
    "promote_i32": (lambda m: m.ones(2, m.int32) + 2j, None),
    "real_f32": (lambda m: m.real(np.ones(2, np.complex64)), None),
    "sum_c64": (lambda m: m.sum(Z.astype(np.complex64)), 1e-6),
}


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_numpy_surface_matches_numpy_eager_and_jit(name):
    fn, tol = SURFACE[name]
    want = fn(np)
    kw = dict(rtol=tol, atol=tol) if tol else {}
    _close(fn(fnp), want, **kw)
    _close(funcgrad.jit(lambda: fn(fnp))(), want, **kw)


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sine_and_cosine_at_a_signed_zero_real_part_as_jax(name):
    # (the lax-parameter fuzzer's complex probe) JAX's formula selects a +0 part where the real
    # part is 0 or -0: sin(-0+0j) is 0+0j, cos(-0+0j) 1+0j (C99 and NumPy keep the -0)
    z = np.array([complex(-0.0, 0.0), complex(-0.0, -0.0), complex(0.0, -2.0), complex(-0.0, np.inf), 1 + 1j])
    want = np.asarray(getattr(jax.lax, name)(z))
    for got in (getattr(lax, name)(z), funcgrad.jit(getattr(lax, name))(z)):
        got = np.asarray(got)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


def test_array_methods_and_properties():
    z = fnp.asarray(Z)
    _close(z.real, Z.real)
    _close(z.imag, Z.imag)
    _close(z.conj(), Z.conj())
    _close(z.conjugate(), Z.conjugate())
    assert complex(fnp.asarray(1 + 2j)) == 1 + 2j
    assert fnp.asarray(1 + 2j).weak_type and fnp.abs(fnp.asarray(3 + 4j)).weak_type


def test_python_complex_scalars_are_weak():
    # NEP 50: a Python complex takes the array's precision (float32 -> complex64).
    assert (fnp.ones(2, fnp.float32) * 1j).dtype == np.complex64
    assert (fnp.ones(2, fnp.complex64) * 2.0).dtype == np.complex64
    assert (fnp.ones(2, fnp.complex64) + np.ones(2)).dtype == np.complex128
    assert fnp.result_type(fnp.float32, 1j) == np.complex64


# ----------------------------------------------------------------------------------------------
# Transformations against jax


def _loss(m, f):
    """A real loss of complex intermediates: sum(sin(Re f + 0.3 Im f))."""

    def g(z):
        out = f(m, z)
        if m.iscomplexobj(out):
            out = m.real(out) + 0.3 * m.imag(out)
        return m.sum(m.sin(out))

    return g


REAL_LOSSES = {
    "abs_squared": lambda m, z: m.abs(z) ** 2,
    "abs": lambda m, z: m.abs(z),
    "angle": lambda m, z: m.angle(z),
    "parts": lambda m, z: m.real(z) * m.imag(z),
    "conj": lambda m, z: m.conj(z) * (1 + 2j),
    "holomorphic_mix": lambda m, z: m.exp(z) * m.log(z) + m.sqrt(z) / z,
    "trig": lambda m, z: m.tan(z) + m.arcsinh(z) * m.cos(z),
    "vdot": lambda m, z: m.vdot(z, W),
    "norm": lambda m, z: m.linalg.norm(z),
    "var": lambda m, z: m.var(z),
    "prod": lambda m, z: m.prod(z),
    "maximum": lambda m, z: m.maximum(z, W),
    "sort": lambda m, z: m.sort(z) * m.arange(5),
    "sign": lambda m, z: m.sign(z) * z,
    "power": lambda m, z: z ** (0.5 + 0.3j) + (1.5 + 0.5j) ** z,
    "fft": lambda m, z: m.fft.fft(z) * W,
    "rfft_of_parts": lambda m, z: m.abs(m.fft.rfft(m.real(z) * m.imag(z))),
    "matrix": lambda m, z: m.outer(z, W) @ z,
    "where": lambda m, z: m.where(m.abs(z) > 1, z, m.conj(z)),
}


@pytest.mark.parametrize("name", sorted(REAL_LOSSES))
def test_grad_of_real_loss_of_complex_input_matches_jax(name):
    f = REAL_LOSSES[name]
    want = jax.jit(jax.grad(_loss(jnp, f)))(Z)  # (jax's side compiled whole, not a program per op)
    _close(funcgrad.grad(_loss(fnp, f))(Z), want, rtol=1e-9, atol=1e-11)
    _close(funcgrad.jit(funcgrad.grad(_loss(fnp, f)))(Z), want, rtol=1e-9, atol=1e-11)


def test_jax_documented_conventions():
    # jax's autodiff cookbook: f(z) = |z|^2 has grad 2 conj(z); abs has conj(z) / |z|.
    z = 3.0 + 4.0j
    assert complex(funcgrad.grad(lambda z: fnp.abs(z) ** 2)(z)) == pytest.approx(6 - 8j)
    assert complex(funcgrad.grad(fnp.abs)(z)) == pytest.approx(0.6 - 0.8j)
    assert complex(funcgrad.grad(lambda z: fnp.real(z) ** 2 + fnp.imag(z) ** 2)(z)) == pytest.approx(6 - 8j)
    # holomorphic: f'(z)
    assert complex(funcgrad.grad(fnp.sin, holomorphic=True)(z)) == pytest.approx(complex(np.cos(z)))
    assert complex(funcgrad.grad(lambda z: z**2, holomorphic=True)(1.0 + 1.0j)) == pytest.approx(2 + 2j)


def _holo(m, z):
    return m.exp(z) * z**2 + m.fft.fft(z)[::-1] * 1j


def test_holomorphic_jacobians_and_second_derivatives_match_jax():
    for ours, theirs in (
        (funcgrad.jacfwd, jax.jacfwd),
        (funcgrad.jacrev, jax.jacrev),
        (funcgrad.hessian, jax.hessian),
    ):
        f = (
            (lambda m: lambda z: m.sum(_holo(m, z)))
            if ours is funcgrad.hessian
            else (lambda m: lambda z: _holo(m, z))
        )
        want = jax.jit(theirs(f(jnp), holomorphic=True))(Z)
        _close(ours(f(fnp), holomorphic=True)(Z), want, rtol=1e-9, atol=1e-11)
    g2 = funcgrad.grad(
        lambda z: funcgrad.grad(lambda w: fnp.sum(_holo(fnp, w)), holomorphic=True)(z).sum(), holomorphic=True
    )
    j2 = jax.grad(
        lambda z: jax.grad(lambda w: jnp.sum(_holo(jnp, w)), holomorphic=True)(z).sum(), holomorphic=True
    )
    _close(g2(Z), jax.jit(j2)(Z), rtol=1e-9, atol=1e-11)


def test_second_order_real_loss_matches_jax():
    f = REAL_LOSSES["holomorphic_mix"]
    ours = funcgrad.grad(lambda z: fnp.sum(fnp.abs(funcgrad.grad(_loss(fnp, f))(z)) ** 2))
    theirs = jax.grad(lambda z: jnp.sum(jnp.abs(jax.grad(_loss(jnp, f))(z)) ** 2))
    _close(ours(Z), jax.jit(theirs)(Z), rtol=1e-8, atol=1e-10)


def test_jvp_vjp_linearize_linear_transpose_match_jax():
    t = W
    f = lambda m: lambda z: m.fft.fft(z * m.conj(z) + m.sin(z))  # noqa: E731
    # (jax's side of each as one compiled program: eagerly jax compiles one per operation)
    _close(funcgrad.jvp(f(fnp), (Z,), (t,))[1], jax.jit(lambda z, t: jax.jvp(f(jnp), (z,), (t,))[1])(Z, t))
    _close(funcgrad.vjp(f(fnp), Z)[1](t)[0], jax.jit(lambda z, t: jax.vjp(f(jnp), z)[1](t)[0])(Z, t))
    _close(funcgrad.linearize(f(fnp), Z)[1](t), jax.jit(lambda z, t: jax.linearize(f(jnp), z)[1](t))(Z, t))
    for lin in (
        lambda m, x: m.real(x) * 2 - m.imag(x),
        lambda m, x: m.conj(x) * (1 + 2j),
        lambda m, x: m.fft.ifft(x, n=7),
    ):
        ct = lin(np, Z)
        _close(
            funcgrad.linear_transpose(lambda x, lin=lin: lin(fnp, x), Z)(ct)[0],
            jax.linear_transpose(lambda x, lin=lin: lin(jnp, x), Z)(ct)[0],
        )
    # A real-to-complex linear map: its transpose takes complex cotangents to real ones.
    real_in = Z.real
    _close(
        funcgrad.linear_transpose(lambda x: fnp.fft.rfft(x) * (1 + 2j), real_in)(W[:3])[0],
        jax.linear_transpose(lambda x: jnp.fft.rfft(x) * (1 + 2j), real_in)(W[:3])[0],
    )


def test_vmap_and_jit_of_complex_gradients_match_jax():
    f = REAL_LOSSES["trig"]
    batch = np.stack([Z, W, Z * W])
    want = jax.jit(jax.vmap(jax.grad(_loss(jnp, f))))(batch)
    _close(funcgrad.vmap(funcgrad.grad(_loss(fnp, f)))(batch), want, rtol=1e-9, atol=1e-11)
    _close(funcgrad.jit(funcgrad.vmap(funcgrad.grad(_loss(fnp, f))))(batch), want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(
    "name, f",
    [
        ("holomorphic", lambda z: fnp.exp(z) * fnp.sin(z) / z),
        ("real_out", lambda z: fnp.sum(fnp.abs(z) ** 3 * fnp.angle(z))),
        ("parts", lambda z: fnp.real(z) * fnp.conj(z) + 1j * fnp.imag(z) ** 2),
        ("fft", lambda z: fnp.fft.ifft(fnp.fft.fft(z) ** 2)),
        ("mixed", lambda z: fnp.vdot(z, fnp.sqrt(z)) * fnp.linalg.norm(z)),
    ],
)
def test_complex_derivatives_to_second_order_fwd_and_rev(name, f):
    # autograd's check: forward and reverse derivatives, and their derivatives, against central
    # finite differences in complex128 (funcgrad.testing.check_grads, jax.test_util semantics).
    check_grads(f, (Z,), order=2, modes=("fwd", "rev"))


def test_check_grads_catches_a_wrong_complex_rule():
    @funcgrad.custom_jvp
    def bad_conj(z):
        return fnp.conj(z)

    bad_conj.defjvp(lambda primals, tangents: (bad_conj(primals[0]), tangents[0]))  # forgot to conjugate
    with pytest.raises(AssertionError):
        check_grads(bad_conj, (Z,), order=1, modes=("fwd",))


# ----------------------------------------------------------------------------------------------
# Errors: complex where a real value is required


def test_grad_of_complex_output_requires_holomorphic_as_in_jax():
    for transform in (funcgrad.grad, funcgrad.value_and_grad):
        with pytest.raises(TypeError, match="holomorphic=True"):
            transform(lambda z: z**2)(1.0 + 1.0j)
        with pytest.raises(TypeError):
            getattr(jax, transform.__name__)(lambda z: z**2)(1.0 + 1.0j)
    with pytest.raises(TypeError, match="holomorphic=True"):
        funcgrad.jacrev(lambda z: z * 2)(Z)
    with pytest.raises(TypeError, match="holomorphic=True"):
        funcgrad.jacfwd(lambda z: z * 2)(Z)  # complex input without holomorphic
    with pytest.raises(TypeError, match="complex"):
        funcgrad.grad(lambda x: x, holomorphic=True)(1.0)  # holomorphic needs complex input


@pytest.mark.parametrize(
    "call, names, error",
    [
        (lambda: fnp.floor(Z), ("floor", "complex128"), TypeError),
        (lambda: fnp.ceil(Z), ("ceil", "complex128"), TypeError),
        (lambda: fnp.trunc(Z.astype(np.complex64)), ("trunc", "complex64"), TypeError),
        (lambda: fnp.clip(Z, 0, 1), ("clip", "complex128"), ValueError),
        (lambda: fnp.remainder(Z, 2), ("remainder", "complex128"), TypeError),
        (lambda: fnp.floor_divide(Z, 2), ("floor_divide", "complex128"), TypeError),
        (lambda: fnp.hypot(Z, Z), ("hypot", "complex128"), ValueError),
        (lambda: fnp.signbit(Z), ("signbit", "complex128"), TypeError),
        (lambda: fnp.isposinf(Z), ("isposinf", "complex128"), TypeError),
        (lambda: fnp.median(Z), ("quantile", "complex128"), TypeError),
        (lambda: fnp.fft.rfft(Z), ("rfft", "complex128"), ValueError),
        (lambda: lax.lt(Z, Z), ("lt", "complex128"), TypeError),
        (lambda: lax.floor(Z), ("floor", "complex128"), TypeError),
        (lambda: lax.real(Z.real), ("real", "f64"), TypeError),
        (lambda: lax.complex(Z, Z), ("complex", "c128"), TypeError),
    ],
)
def test_complex_where_real_is_required_is_a_clear_error_of_jaxs_type(call, names, error):
    # clip and hypot raise ValueError, as jax.numpy's do; the others JAX's TypeError.
    with pytest.raises(error) as info:
        call()
    for name in names:
        assert name in str(info.value), (name, str(info.value))
    with pytest.raises(error) as info:
        funcgrad.jit(call)()  # the same error when traced, before anything reaches XLA
    assert names[0] in str(info.value)


def test_arctan2_of_complex_values_as_jax():
    # jnp.arctan2/lax.atan2 take complex values (XLA's -i log((x + i y) / sqrt(x^2 + y^2))), where
    # NumPy refuses them; found by the fuzzer (funcgrad raised TypeError)
    w = np.array([0.3 - 1j, 2 + 0j, 1j, -1 + 0.5j])
    for y, x in ((Z[:4], w), (w.astype(np.complex64), 2.0)):
        want = jax.numpy.arctan2(y, x)
        for got in (fnp.arctan2(y, x), funcgrad.jit(lax.atan2)(y, np.asarray(x, y.dtype))):
            _close(got, want, rtol=1e-5, atol=1e-6)
            assert got.dtype == want.dtype
    _close(
        funcgrad.jacfwd(lambda a: fnp.arctan2(a, w), holomorphic=True)(Z[:4]),
        jax.jacfwd(lambda a: jax.numpy.arctan2(a, w), holomorphic=True)(Z[:4]),
    )


def test_lax_complex_parts_follow_jax():
    _close(lax.real(Z), np.real(Z))
    _close(lax.imag(Z), np.imag(Z))
    _close(lax.conj(Z), np.conj(Z))
    _close(lax.complex(Z.real, Z.imag), Z)
    _close(lax.conj(Z.real), np.asarray(jax.lax.conj(Z.real)))  # a real operand gives complex
    _close(lax.max(Z, W), np.asarray(jax.lax.max(Z, W)))
    # NaN parts: JAX's lexicographic pick (the first operand where it compares larger/smaller, else
    # the second), not NumPy's propagation; reductions fold it from the identity
    a, b = np.array([np.nan + 0j, 1j, np.nan - 1j, 2.0]), np.array([1 + 0j, 1j * np.nan, 3.0, np.nan])
    for f in (lambda m: m.minimum(a, b), lambda m: m.maximum(b, a), lambda m: m.max(a), lambda m: m.min(b)):
        want = np.asarray(f(jnp))
        for got in (f(fnp), funcgrad.jit(lambda f=f: f(fnp))()):
            assert np.asarray(got).tobytes() == want.tobytes()
    # Without NaN parts the eager reductions take whole-array steps, not the element-by-element
    # fold: the same element as XLA's reduce (ties of 0.0 and -0.0, infinities), along each axis
    inf = np.inf
    c = np.array(
        [[complex(0.0, 1), complex(-0.0, 1), complex(2, -inf)], [complex(inf, 0), complex(-inf, 2), 2]]
    )
    assert not np.isnan(c).any()
    for axis in (None, 0, 1):
        for f in (fnp.max, fnp.min):
            eager, jitted = f(c, axis=axis), funcgrad.jit(lambda v, f=f, axis=axis: f(v, axis=axis))(c)
            assert np.asarray(eager).tobytes() == np.asarray(jitted).tobytes(), (f, axis)


# ----------------------------------------------------------------------------------------------
# linalg of complex matrices


def test_linalg_of_complex_matrices_matches_numpy_and_jax():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    _close(fnp.linalg.det(a), np.linalg.det(a))
    _close(fnp.linalg.inv(a), np.linalg.inv(a), rtol=1e-9)
    _close(fnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-9)
    sign, logabsdet = fnp.linalg.slogdet(a)
    _close(sign, np.linalg.slogdet(a)[0])
    _close(logabsdet, np.linalg.slogdet(a)[1])  # real
    _close(fnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), rtol=1e-9)
    _close(fnp.linalg.norm(a, 2), np.linalg.norm(a, 2), rtol=1e-9)
    _close(fnp.linalg.matrix_norm(a, ord="nuc"), np.linalg.norm(a, "nuc"), rtol=1e-9)
    for loss in (
        lambda m: lambda x: m.abs(m.linalg.det(x)),
        lambda m: lambda x: m.sum(m.linalg.svdvals(x)),
        lambda m: lambda x: m.real(m.sum(m.linalg.inv(x) * b)),
    ):
        _close(funcgrad.grad(loss(fnp))(a), jax.jit(jax.grad(loss(jnp)))(a), rtol=1e-8, atol=1e-10)


def test_random_normal_of_complex_dtype_follows_jax():
    import funcgrad.random as fr

    for dtype in (np.complex64, np.complex128):
        # (both programs at XLA's default options: NOTE: [oracle compile options])
        with xla_default_compiles():
            ours = funcgrad.jit(lambda k, d=dtype: fr.normal(k, (64,), d))(fr.PRNGKey(3))
        normal = jax.jit(
            lambda k, d=dtype: jax.random.normal(k, (64,), d), compiler_options=XLA_DEFAULT_OPTIONS
        )
        theirs = np.asarray(normal(jax.random.PRNGKey(3)))
        assert np.asarray(ours).dtype == dtype
        np.testing.assert_array_equal(np.asarray(ours), theirs)  # compiled: bit for bit
        np.testing.assert_allclose(np.asarray(fr.normal(fr.PRNGKey(3), (64,), dtype)), theirs, rtol=1e-5)


def test_sigmoid_of_complex_is_holomorphic_as_in_jax():
    z = Z - 0.5
    _close(funcgrad.nn.sigmoid(z), np.asarray(jax.nn.sigmoid(z)))
    got = funcgrad.grad(lambda z: fnp.sum(funcgrad.nn.sigmoid(z)), holomorphic=True)(z)
    _close(got, jax.jit(jax.grad(lambda z: jnp.sum(jax.nn.sigmoid(z)), holomorphic=True))(z))


def test_complex_logaddexp_differentiates_by_jaxs_rule():
    # Found by the fuzzer: JAX's logaddexp/logaddexp2 are one custom_jvp for real and complex
    # operands, so the second derivative at a tie x1 == x2 is the rule's (1/4), not 0.
    for fn in ("logaddexp", "logaddexp2"):
        for a, z in ((0.0, 0.0 + 0j), (0.3 + 0.2j, -1.0 + 2.0j), (2.0, 2.0 + 0.5j)):
            f, g = (
                lambda x, np_=np_: getattr(np_, fn)(np_.asarray(a, "complex128"), x)  # noqa: B023
                for np_ in (fnp, jax.numpy)
            )
            z = np.complex128(z)
            for api, h in ((funcgrad, f), (jax, g)):
                d2 = api.jacfwd(api.jacfwd(h, holomorphic=True), holomorphic=True)(z)
                if api is funcgrad:
                    got = d2
            _close(got, d2, rtol=1e-9)


_SPECIAL_PARTS = (0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e30, float(np.finfo(np.float32).max))
_SPECIAL = np.array([complex(a, b) for a in _SPECIAL_PARTS for b in _SPECIAL_PARTS], np.complex64)
_UNARY_AT_SPECIALS = (
    *("exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "reciprocal"),
    *(
        "sin",
        "cos",
        "tan",
        "tanh",
        "sinh",
        "cosh",
        "arcsin",
        "arccos",
        "arctan",
        "arcsinh",
        "arccosh",
        "arctanh",
        "abs",
        "sign",
    ),
)
_BINARY_AT_SPECIALS = ("divide", "power", "logaddexp", "logaddexp2")


def test_eager_complex_special_values_are_xlas_as_jax():
    # Found by the fuzzer: NumPy's complex functions follow C99 at infinities, NaNs and signed
    # zeros, XLA's (jax's, eager or jitted) do not: (inf+0j) ** (2+0j) is inf+0j, exp(-inf+infj)
    # NaN, sqrt(-2.5-0j) 1.58j, log10(0j) -inf+0j, logaddexp2(-inf, 2+3j) NaN (NOTE: [complex
    # special values]). funcgrad's eager values, and its jitted ones, are jax's.
    x, y = _SPECIAL[:, None], _SPECIAL[None, :]
    for name in (*_UNARY_AT_SPECIALS, *_BINARY_AT_SPECIALS):
        args = (_SPECIAL,) if name in _UNARY_AT_SPECIALS else (x, y)
        # (jax's side one program per function, operands passed in: XLA folds a program's
        # constants with its C++ arithmetic, and fuses a larger program's parts differently, so
        # their NaN parts differ again: abs(inf+nanj) folded is inf, computed NaN)
        want = np.asarray(jax.jit(getattr(jnp, name))(*args))
        for how, got in (
            ("eager", getattr(fnp, name)(*args)),
            ("jit", funcgrad.jit(getattr(fnp, name))(*args)),
        ):
            got = np.asarray(got)
            assert got.dtype == want.dtype, (how, name)
            for part in (np.real, np.imag):  # (part by part: inf+nanj is not nan+nanj)
                np.testing.assert_allclose(
                    part(got), part(want), rtol=2e-6, atol=0, equal_nan=True, err_msg=f"{how} {name}"
                )


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_eager_complex_product_beside_an_infinity_is_xlas_as_jax(dtype):
    # Fuzzer leftover: NumPy's complex product is fused, so a part that overflows beside an infinite
    # one differs from XLA's ((1e30 - infj) * (1 + 1e30j): inf-infj in NumPy, NaN parts in jax).
    # funcgrad's eager product is recomputed by XLA there, as its other special values.
    big = 1e30 if dtype == np.complex64 else 1e300
    x = np.array([complex(big, -np.inf), complex(-big, np.inf), 1 + 1j], dtype)
    y = np.array([complex(1, big), complex(1, big), 2 - 1j], dtype)
    want = np.asarray(jax.jit(jnp.multiply)(x, y))
    for how, got in (("eager", fnp.asarray(x) * fnp.asarray(y)), ("jit", funcgrad.jit(fnp.multiply)(x, y))):
        got = np.asarray(got)
        assert got.dtype == want.dtype
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(part(got), part(want), err_msg=how)


def test_complex_logaddexp2_wraps_large_imaginary_parts_as_jax():
    # Fuzzer leftover: the imaginary part is wrapped into [-pi / log 2, pi / log 2]; with JAX's
    # constant pi / log(2) (funcgrad had pi * (1 / log 2), an ulp away), parts near 1e30 land on
    # jax's angle.
    x = np.array([1e30j, 3e29j, 1e15j, -7e30 + 1e30j, 1 + 2j])
    y = np.array([0j, 1 + 0j, -1e30j, 2.5 + 0j, 1e300j])
    want = np.asarray(jax.jit(jnp.logaddexp2)(x, y))
    _close(fnp.logaddexp2(x, y), want, rtol=1e-12)
    _close(funcgrad.jit(fnp.logaddexp2)(x, y), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "radians", "degrees"])
def test_angle_conversions_scale_complex_values_as_jax(name):
    # (the random-program fuzzer) JAX scales a complex value where NumPy refuses it
    jax = pytest.importorskip("jax")
    z = np.complex64(1 + 2j)
    ours, theirs = getattr(fnp, name)(z), getattr(jax.numpy, name)(z)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(funcgrad.jit(getattr(fnp, name))(z), theirs, rtol=1e-6)
