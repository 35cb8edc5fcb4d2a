"""Parameters are honoured or refused, never ignored: ``holomorphic``, ``device_put(device=)``,
``symbolic_zeros`` of ``custom_jvp``/``custom_vjp``, and the cotangent a vjp function is given.
JAX is the oracle for values and for which calls are errors."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.custom_derivatives import CustomVJPPrimal, SymbolicZero, custom_jvp, custom_vjp

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jcd = jax.custom_derivatives

# ----------------------------------------------------------------------------------------------
# holomorphic


def _poly_exp(np_):
    return lambda z: z * z * z + np_.exp(z) * z


def _sin_mul(np_):
    return lambda z: np_.sin(z) * z + 2.0 * z


@pytest.mark.parametrize("make", [_poly_exp, _sin_mul])
@pytest.mark.parametrize("z", [1.0 + 2.0j, -0.5 + 0.25j])
def test_holomorphic_grad_matches_jax(make, z):
    ours, theirs = make(fnp), make(jnp)
    np.testing.assert_allclose(
        complex(funcgrad.grad(ours, holomorphic=True)(z)),
        complex(jax.jit(jax.grad(theirs, holomorphic=True))(z)),
    )
    v, g = funcgrad.value_and_grad(ours, holomorphic=True)(z)
    jv, jg = jax.jit(jax.value_and_grad(theirs, holomorphic=True))(z)  # (one program, not one per op)
    np.testing.assert_allclose([complex(v), complex(g)], [complex(jv), complex(jg)])


@pytest.mark.parametrize("make", [_poly_exp, _sin_mul])
def test_holomorphic_jacobians_and_hessian_match_jax(make):
    z = np.array([1.0 + 2.0j, 0.5 - 1.0j, -0.3j])
    ours, theirs = make(fnp), make(jnp)
    for name in ("jacfwd", "jacrev"):
        got = getattr(funcgrad, name)(ours, holomorphic=True)(z)
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(jax.jit(getattr(jax, name)(theirs, holomorphic=True))(z))
        )
    scalar = lambda np_: lambda z: make(np_)(z).sum()  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(funcgrad.hessian(scalar(fnp), holomorphic=True)(z)),
        np.asarray(jax.jit(jax.hessian(scalar(jnp), holomorphic=True))(z)),
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda m, np_: m.grad(lambda x: x * x, holomorphic=True)(1.5),  # real input
        lambda m, np_: m.grad(lambda z: np_.sum(np_.ones(2)), holomorphic=True)(1j),  # real output
        lambda m, np_: m.grad(lambda z: z * z)(1.0 + 2.0j),  # complex output, no holomorphic
        lambda m, np_: m.grad(lambda x: x * 1j)(1.0),  # complex output from a real input
        lambda m, np_: m.jacfwd(lambda z: z * z)(np.array([1.0 + 1.0j])),  # complex input to jacfwd
        lambda m, np_: m.jacrev(lambda z: z * z)(np.array([1.0 + 1.0j])),  # complex output, jacrev
        lambda m, np_: m.jacrev(lambda x: x * x, holomorphic=True)(np.array([1.0])),
        lambda m, np_: m.jacfwd(lambda x: x * x, holomorphic=True)(np.array([1.0])),
    ],
)
def test_dtype_refusals_match_jax(call):
    with pytest.raises(TypeError) as theirs:
        call(jax, jnp)
    with pytest.raises(TypeError, match="holomorphic|real-valued") as ours:
        call(funcgrad, fnp)
    if "holomorphic=True requires" in str(theirs.value):
        assert "holomorphic=True requires" in str(ours.value)


def test_real_input_and_output_unchanged_by_the_checks():
    assert float(funcgrad.grad(lambda x: x * x)(3.0)) == 6.0
    assert funcgrad.jacfwd(lambda x: x * 2.0)(np.ones(2)).tolist() == [[2.0, 0.0], [0.0, 2.0]]
    g = funcgrad.grad(lambda x, n: x * n, allow_int=True, argnums=(0, 1))(2.0, 3)
    assert float(g[0]) == 3.0 and g[1].dtype == funcgrad.dtypes.float0


@pytest.mark.parametrize(
    "call",
    [
        lambda m, np_, x: m.jacfwd(lambda a: a.astype(np_.uint8) + 1)(x),  # integer output
        lambda m, np_, x: m.jacfwd(lambda a: (a.astype(np_.int8), a * 2))(x),
        lambda m, np_, x: m.jit(m.jacfwd(lambda a: np_.sum(a > 0, axis=0)))(x),
        lambda m, np_, x: m.jacfwd(lambda a: 3)(x),  # a Python int output: weak int zeros
        lambda m, np_, x: m.jacrev(lambda a, n: a * n, argnums=(0, 1), allow_int=True)(x, 3),
        lambda m, np_, x: m.jacrev(lambda a, n: a * n, argnums=(0, 1), allow_int=True)(x, np.int16(3)),
    ],
)
def test_jacobian_of_integer_leaves_is_zeros_of_their_dtype_as_jax(call):
    # (the fuzzer's random programs: funcgrad gave float0 blocks; JAX casts each block to the
    # leaf's dtype, jacfwd's output leaf and jacrev's input leaf)
    x = np.array([1.5, -2.0], np.float32)
    ours, theirs = call(funcgrad, fnp, x), call(jax, jnp, x)
    for a, b in zip(funcgrad.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_jacfwd_of_a_boolean_output_raises_type_error_as_jax():
    for m in (jax, funcgrad):
        with pytest.raises(TypeError):
            m.jacfwd(lambda a: a > 0)(np.ones(2, np.float32))


# ----------------------------------------------------------------------------------------------
# device_put


def test_device_put_places_on_the_device():
    device = funcgrad.devices()[0]
    out = funcgrad.device_put({"w": np.arange(3.0), "b": 2.0}, device)
    assert isinstance(out["w"], funcgrad.Array) and out["w"]._buffer is not None
    assert out["w"].tolist() == [0.0, 1.0, 2.0] and out["b"].weak_type
    assert funcgrad.jit(lambda t: t["w"] * t["b"])(out).tolist() == [0.0, 2.0, 4.0]


@pytest.mark.parametrize("device", ["cpu", 3, object()])
def test_device_put_refuses_what_is_not_a_device(device):
    with pytest.raises((TypeError, ValueError)):
        jax.device_put(1.0, device)  # JAX refuses too (with a ValueError)
    with pytest.raises(ValueError, match="device must be one of funcgrad.devices"):
        funcgrad.device_put(1.0, device)


def test_device_put_refuses_what_is_not_an_array():
    with pytest.raises(TypeError):
        jax.device_put("abc")
    with pytest.raises(
        TypeError, match=r"Argument 'abc' of type <class 'str'> is not a valid JAX type .*x\['k'\]"
    ):
        funcgrad.device_put({"k": "abc"})
    with pytest.raises(ValueError, match="numpy masked arrays are not supported"):  # (JAX's words)
        funcgrad.device_put(np.ma.array([1, 2, 3], mask=[True, False, True]))


# ----------------------------------------------------------------------------------------------
# the cotangent given to a vjp function


@pytest.mark.parametrize(
    "out_dtype, ct",
    [
        (np.float64, np.ones(3, np.float32)),  # wrong dtype: no silent cast
        (np.float32, np.ones(3, np.float64)),
        (np.float64, np.ones(3, np.int32)),
        (np.float64, np.ones(4)),  # wrong shape
        (np.float64, np.float64(1.0)),
    ],
)
def test_vjp_refuses_a_cotangent_of_the_wrong_type(out_dtype, ct):
    x = np.ones(3, out_dtype)
    _, f_jax = jax.vjp(jnp.sin, x)
    with pytest.raises(ValueError):
        f_jax(ct)
    _, f_vjp = funcgrad.vjp(fnp.sin, x)
    want = "f32[3]" if out_dtype == np.float32 else "f64[3]"
    got = funcgrad.core.ShapedArray(np.shape(ct), np.asarray(ct).dtype).str_short()
    with pytest.raises(
        ValueError, match=rf"has type {got.replace('[', '.')}.*cotangent type {want.replace('[', '.')}"
    ):
        f_vjp(ct)


def test_vjp_accepts_the_cotangents_jax_accepts():
    _, f_vjp = funcgrad.vjp(fnp.sin, 0.0)
    assert float(f_vjp(1.0)[0]) == 1.0  # a Python float is a float64 cotangent
    _, f_vjp = funcgrad.vjp(lambda x: (x > 0).astype(np.int32), np.ones(3))
    for ct in (np.zeros(3, funcgrad.dtypes.float0), np.zeros(3, np.int32), np.zeros(3)):
        assert f_vjp(ct)[0].tolist() == [0.0, 0.0, 0.0]  # any dtype stands for float0
    _, f_vjp = funcgrad.vjp(lambda x: {"a": x, "b": x * 2.0}, np.ones(2))
    with pytest.raises(ValueError, match=r"cotangent \['b'\] has type f32\[2\]"):
        f_vjp({"a": np.ones(2), "b": np.ones(2, np.float32)})


# ----------------------------------------------------------------------------------------------
# symbolic_zeros


def _sin_mul_custom_jvp(lib, cd, seen):
    @cd.custom_jvp
    def f(x, y):
        return lib.sin(x) * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append((type(tx) is cd.SymbolicZero, type(ty) is cd.SymbolicZero))
        t = lib.zeros_like(x)
        if type(tx) is not cd.SymbolicZero:
            t = t + lib.cos(x) * y * tx
        if type(ty) is not cd.SymbolicZero:
            t = t + lib.sin(x) * ty
        return f(x, y), t

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_custom_jvp_symbolic_zeros_match_jax(argnums):
    ours_seen, jax_seen = [], []
    ours = _sin_mul_custom_jvp(fnp, funcgrad.custom_derivatives, ours_seen)
    theirs = _sin_mul_custom_jvp(jnp, jcd, jax_seen)
    got = funcgrad.grad(ours, argnums)(0.7, 2.0)
    want = jax.grad(theirs, argnums)(0.7, 2.0)
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float))
    assert ours_seen == jax_seen and ours_seen
    ours_seen.clear()
    jitted = funcgrad.jit(funcgrad.grad(ours, argnums))(0.7, 2.0)
    np.testing.assert_allclose(np.asarray(jitted, dtype=float), np.asarray(want, dtype=float))
    batched = funcgrad.grad(lambda x, y: funcgrad.vmap(ours)(x, y).sum(), argnums)(
        np.full(2, 0.7), np.full(2, 2.0)
    )
    np.testing.assert_allclose(np.asarray(batched, dtype=float)[..., 0], np.asarray(want, dtype=float))


def test_custom_jvp_rule_may_return_a_symbolic_zero():
    @custom_jvp
    def g(x, y):
        return x * y, y

    @g.defjvp
    def g_jvp(primals, tangents):
        (x, y), (tx, _) = primals, tangents
        return g(x, y), (tx * y, SymbolicZero.from_primal_value(y))

    _, (t0, t1) = funcgrad.jvp(g, (1.0, 2.0), (1.0, 5.0))
    assert float(t0) == 2.0 and float(t1) == 0.0
    assert float(funcgrad.grad(lambda x: g(x, 2.0)[0])(1.0)) == 2.0


def test_custom_jvp_without_symbolic_zeros_sees_arrays_only():
    seen = []

    @custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        seen.extend(type(t) is SymbolicZero for t in tangents)
        (x, y), (tx, ty) = primals, tangents
        return x * y, tx * y + x * ty

    assert float(funcgrad.grad(f)(2.0, 3.0)) == 3.0 and seen == [False, False]


def _pair_custom_vjp(lib, cd, seen, bwd_returns_none=False):
    @cd.custom_vjp
    def h(x, y):
        return x * y, x + y

    def h_fwd(x, y):
        seen.append(("fwd", x.perturbed, y.perturbed))
        return h(x.value, y.value), (x.value, y.value)

    def h_bwd(res, cts):
        (x, y), (ca, cb) = res, cts
        seen.append(("bwd", type(ca) is cd.SymbolicZero, type(cb) is cd.SymbolicZero))
        ca = 0.0 if type(ca) is cd.SymbolicZero else ca
        cb = 0.0 if type(cb) is cd.SymbolicZero else cb
        return (ca * y + cb, None) if bwd_returns_none else (ca * y + cb, ca * x + cb)

    h.defvjp(h_fwd, h_bwd, symbolic_zeros=True)
    return h


@pytest.mark.parametrize("output, argnums", [(0, 0), (1, 1), (0, (0, 1)), (1, (0, 1))])
@pytest.mark.parametrize("bwd_returns_none", [False, True])
def test_custom_vjp_symbolic_zeros_match_jax(output, argnums, bwd_returns_none):
    ours_seen, jax_seen = [], []
    ours = _pair_custom_vjp(fnp, funcgrad.custom_derivatives, ours_seen, bwd_returns_none)
    theirs = _pair_custom_vjp(jnp, jcd, jax_seen, bwd_returns_none)
    got = funcgrad.grad(lambda x, y: ours(x, y)[output], argnums)(1.5, 2.0)
    want = jax.grad(lambda x, y: theirs(x, y)[output], argnums)(1.5, 2.0)
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float))
    assert ours_seen == jax_seen


def test_custom_vjp_symbolic_zeros_under_vmap_and_jit():
    seen = []
    h = _pair_custom_vjp(fnp, funcgrad.custom_derivatives, seen)
    g = funcgrad.vmap(funcgrad.grad(lambda x, y: h(x, y)[0]))(np.ones(2), np.full(2, 3.0))
    assert g.tolist() == [3.0, 3.0]
    assert funcgrad.jit(funcgrad.grad(lambda x, y: h(x, y)[0]))(1.0, 3.0).tolist() == 3.0
    assert ("fwd", True, False) in seen


def test_custom_vjp_primal_tree_values():
    tree = {"a": CustomVJPPrimal(1.0, True), "b": [CustomVJPPrimal(2.0, False)]}
    assert funcgrad.custom_derivatives.custom_vjp_primal_tree_values(tree) == {"a": 1.0, "b": [2.0]}


def test_custom_vjp_without_symbolic_zeros_sees_values():
    seen = []
    f = custom_vjp(lambda x, y: x * y)

    def fwd(x, y):
        seen.append((type(x), type(y)))
        return x * y, (x, y)

    f.defvjp(fwd, lambda res, g: (g * res[1], g * res[0]))
    assert float(funcgrad.grad(f)(2.0, 3.0)) == 3.0
    assert CustomVJPPrimal not in seen[0]


# ----------------------------------------------------------------------------------------------
# ShapeDtypeStruct(weak_type=)


def test_shape_dtype_struct_weak_type_is_part_of_the_type_as_in_jax():
    ours = funcgrad.eval_shape(lambda x: x * 2, 1.0)
    theirs = jax.eval_shape(lambda x: x * 2, 1.0)
    assert ours.weak_type and theirs.weak_type
    assert (ours == funcgrad.ShapeDtypeStruct((), np.float64)) == (
        theirs == jax.ShapeDtypeStruct((), np.float64)
    )
    assert ours == funcgrad.ShapeDtypeStruct((), np.float64, weak_type=True)
    assert repr(ours) == "ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)"


# ----------------------------------------------------------------------------------------------
# has_aux: aux may hold non-array leaves


def _with_metrics(x):
    return fnp.sum(x**2), {"name": "l2", "count": 3, "v": x[0], "note": None, "tag": ("a", 1.5)}


@pytest.mark.parametrize(
    "how",
    [
        lambda: funcgrad.grad(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
        lambda: funcgrad.value_and_grad(_with_metrics, has_aux=True)(fnp.arange(3.0))[0][1],
        lambda: funcgrad.vjp(_with_metrics, fnp.arange(3.0), has_aux=True)[2],
        lambda: funcgrad.jvp(_with_metrics, (fnp.arange(3.0),), (fnp.ones(3),), has_aux=True)[2],
        lambda: funcgrad.linearize(_with_metrics, fnp.arange(3.0), has_aux=True)[2],
        lambda: funcgrad.jacfwd(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
        lambda: funcgrad.jacrev(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
    ],
)
def test_aux_may_hold_non_array_leaves(how):
    # As in JAX: strings and other Python objects in aux come back as they are; arrays and
    # numbers come back as arrays.
    aux = how()
    assert aux["name"] == "l2" and aux["note"] is None and aux["tag"][0] == "a"
    assert float(aux["v"]) == 0.0 and int(aux["count"]) == 3 and float(aux["tag"][1]) == 1.5


@pytest.mark.parametrize("name", ["grad", "value_and_grad"])
def test_reduce_axes_is_accepted_empty_and_refused_otherwise_as_jax(name):
    # (jaxlie's manifold helpers pass reduce_axes=() through)
    f = lambda x: (x**2).sum()  # noqa: E731
    x = np.arange(3.0)
    ours = getattr(funcgrad, name)(f, reduce_axes=())(fnp.asarray(x))
    theirs = getattr(jax, name)(f, reduce_axes=())(jax.numpy.asarray(x))
    np.testing.assert_allclose(
        np.asarray(ours[-1] if name != "grad" else ours), np.asarray(theirs[-1] if name != "grad" else theirs)
    )
    for mod in (funcgrad, jax):
        with pytest.raises(NotImplementedError, match="^reduce_axes argument to grad is deprecated"):
            getattr(mod, name)(f, reduce_axes=("batch",))


# ----------------------------------------------------------------------------------------------
# argnums=() (JAX raises ValueError from inside: "max() arg is an empty sequence"; funcgrad names it)


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian"])
def test_empty_argnums_is_a_value_error_as_jax(name):
    with pytest.raises(ValueError):
        getattr(jax, name)(lambda x: x * 2.0, argnums=())(1.0)
    with pytest.raises(ValueError, match=r"argnums=\(\) selects no argument"):
        getattr(funcgrad, name)(lambda x: x * 2.0, argnums=())(1.0)
