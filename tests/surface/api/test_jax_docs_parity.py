"""Behaviours JAX's documentation prints, as jax 0.10.2 prints them (expected values checked against
jax; tests/integration/suites/jax_docs/ runs the documents themselves)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import tree_util as tu


def test_vjp_residuals_keep_primal_inputs_first_then_first_reads():
    # gradient-checkpointing.md's print_fwd_bwd flattens the vjp function: jax's leaves are the
    # primal inputs the backward pass reads, in argument order, then the computed residuals in
    # the order the linear program first reads them (NOTE: [vjp residuals]).
    def g(w, x):
        return fnp.sin(fnp.dot(w, x))

    def f(w1, w2, x):
        return g(w2, g(w1, x))

    w1, w2, x = fnp.ones((3, 2)), fnp.ones((4, 3)), fnp.ones(2)
    _, f_vjp = funcgrad.vjp(f, w1, w2, x)
    leaves = tu.tree_leaves(f_vjp)
    assert leaves[0] is w1 and leaves[1] is w2 and leaves[2] is x
    h1 = np.ones((3, 2)) @ np.ones(2)
    h2 = np.ones((4, 3)) @ np.sin(h1)
    expected = [np.cos(h1), np.sin(h1), np.cos(h2)]  # jax's order: cos, then sin (dot's operand)
    assert len(leaves) == 3 + len(expected)
    for got, want in zip(leaves[3:], expected):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    # 0-d values the backward pass reads are residuals too, not literals of its program
    _, chain_vjp = funcgrad.vjp(lambda t: fnp.sin(fnp.sin(t)), 3.0)
    np.testing.assert_allclose(
        [float(r) for r in tu.tree_leaves(chain_vjp)], [np.cos(3.0), np.cos(np.sin(3.0))], rtol=1e-14
    )


def test_gradient_at_a_complex_input_is_strong():
    # complex-differentiation.md / the autodiff cookbook: jax prints Array(6.-8.j, dtype=complex128)
    # (a strong complex cotangent: JAX's real/imag transposes write a strong zero).
    def f(z):
        x, y = fnp.real(z), fnp.imag(z)
        return x**2 + y**2

    for fun, want in [
        (f, 6 - 8j),
        (fnp.real, 1 + 0j),
        (fnp.imag, -1j),
        (lambda z: fnp.real(z * z), 6 + 8j),
    ]:
        g = funcgrad.grad(fun)(3.0 + 4j)
        assert complex(g) == want and g.dtype == np.complex128 and not g.weak_type
    assert funcgrad.grad(lambda t: t**2)(3.0).weak_type  # a real input's gradient stays weak, as jax's


def test_debug_nans_raises_jax_words():
    # debugging/flags.md: `except FloatingPointError` and JAX's first line of the message
    def f(x):
        w = 3 * fnp.square(x)
        return fnp.log(-w)

    with funcgrad.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
            f(5.0)


def test_array_of_a_list_of_traced_values_stages_as_jax():
    # Common_Gotchas_in_JAX.md's permissive_sum: one convert/broadcast_in_dim per element, then
    # concatenate (jax 0.10.2's printed program); nested lists expand inner rows on axis 0.
    printed = str(funcgrad.make_jaxpr(lambda x: fnp.sum(fnp.array(x)))([0, 1]))
    assert printed == (
        "{ lambda ; a:i64[] b:i64[]. let\n"
        "    c:i64[] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    d:i64[1] = broadcast_in_dim c\n"
        "    e:i64[] = convert_element_type[new_dtype=int64 weak_type=False] b\n"
        "    f:i64[1] = broadcast_in_dim e\n"
        "    g:i64[2] = concatenate[dimension=0] d f\n"
        "    h:i64[] = reduce_sum[axes=(0,) out_sharding=None] g\n"
        "  in (h,) }"
    )
    nested = funcgrad.jit(lambda a, b: fnp.array([[a, b], [b, 1.0]]))(1.0, fnp.float32(2))
    assert nested.dtype == np.float32 and not nested.weak_type
    np.testing.assert_array_equal(np.asarray(nested), [[1, 2], [2, 1]])
    assert fnp.array([fnp.arange(2)] * 20).shape == (20, 2)  # (concatenations in groups of 16)


def test_where_staged_eager_and_differentiated():
    # key-concepts.md's selu. JAX stages jnp.where as a nested jit[name=_where] call; funcgrad
    # stages its select_n inline (a nested call per where doubled the tracing and compile time of
    # where-heavy programs: scipy.special's series), so only the values are JAX's here.
    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * fnp.where(x > 0, x, alpha * fnp.exp(x) - alpha)

    x = fnp.arange(5.0)
    assert "select_n" in str(funcgrad.make_jaxpr(selu)(x))
    want = np.where(np.arange(5.0) > 0, np.arange(5.0), 1.67 * np.exp(np.arange(5.0)) - 1.67) * 1.05
    np.testing.assert_allclose(np.asarray(funcgrad.jit(selu)(x)), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(selu(x)), want, rtol=1e-15)
    g = funcgrad.jit(funcgrad.grad(lambda t: fnp.where(t > 0, t, 0.0).sum()))(x)
    np.testing.assert_array_equal(np.asarray(g), [0, 1, 1, 1, 1])


def _print_fwd_bwd(lib, f, *args):
    """gradient-checkpointing.md's print_fwd_bwd, without rich: the two printed programs."""
    fwd = lib.make_jaxpr(lambda *a: lib.vjp(f, *a))(*args).jaxpr
    y, f_vjp = lib.vjp(f, *args)
    res, tree = lib.tree_util.tree_flatten(f_vjp)

    def g_(*a):
        *r, ct = a
        return lib.tree_util.tree_unflatten(tree, r)(ct)

    return str(fwd), str(lib.make_jaxpr(g_)(*res, y).jaxpr)


@pytest.mark.slow
def test_print_fwd_bwd_tables_print_jaxs_programs():
    # The forward and backward programs of the gradient-checkpointing tutorial, against jax 0.10.2:
    # residual order (NOTE: [vjp residuals]), the checkpoint's saved-value rounding and argument
    # order, no barrier in the jaxpr (NOTE: [remat barrier]).
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jax.config.update("jax_enable_x64", True)

    def cases(lib, np_):
        def g(w, x):
            return np_.sin(np_.dot(w, x))

        def f(w1, w2, w3, x):
            return g(w3, g(w2, g(w1, x)))

        def chain(x):
            for _ in range(4):
                x = np_.sin(x)
            return x

        policy = lib.checkpoint_policies.dots_with_no_batch_dims_saveable
        args = (np_.ones((5, 4)), np_.ones((6, 5)), np_.ones((7, 6)), np_.ones(4))
        return [(lib.checkpoint(f, policy=policy), args), (chain, (3.0,))]

    for (ours, a), (theirs, b) in zip(cases(funcgrad, fnp), cases(jax, jax.numpy)):
        assert _print_fwd_bwd(funcgrad, ours, *a) == _print_fwd_bwd(jax, theirs, *b)


def _literal_reprs(lib, np_):
    import re

    programs = [
        (lambda x: x + 1, np_.int32(1)),  # a weak int constant: JAX's TypedInt
        (lambda x: x * 2, np_.ones(3, np_.int32)),  # converted to the array's dtype: strong
        (lambda x: x + 1.0, np_.float32(1)),  # TypedFloat prints as the float
        (lambda x: x + (1 + 2j), np_.complex64(1)),  # TypedComplex
        (lambda x: x + np.int16(3), np_.int16(1)),  # a NumPy scalar: strong
        (lambda x: x & True, True),
    ]
    out = []
    for f, a in programs:
        eqns = lib.make_jaxpr(f)(a).jaxpr.eqns
        out.append([re.sub(r"id=\d+", "id", repr(v)) for e in eqns for v in e.invars])
    return out


def test_literal_reprs_as_jax():
    # Writing_custom_interpreters_in_Jax.md prints an equation's invars: JAX 0.10.2 keeps a weakly
    # typed int/complex constant as TypedInt/TypedComplex, shown by Literal's repr.
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jax.config.update("jax_enable_x64", True)
    assert _literal_reprs(funcgrad, fnp) == _literal_reprs(jax, jax.numpy)


def _grad_tracer_reprs(lib, np_):
    seen = []

    def f(x, y):
        z = x * x + y
        seen.append(repr(z))
        w = np_.sin(np_.ones(3) * x)
        seen.append(repr(w))
        return z + w.sum()

    lib.grad(f)(2.0, 10.0)
    return seen


def test_grad_tracer_repr_shows_its_primal_as_jax():
    # jax-primitives.md prints the values inside grad: 'GradTracer(primal=14.0, typeof(tangent)=
    # f32[])', a result's primal included (funcgrad's recorded grad computes it to show it).
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    jax.config.update("jax_enable_x64", True)
    assert _grad_tracer_reprs(funcgrad, fnp) == _grad_tracer_reprs(jax, jax.numpy)


def test_symbolic_zero_and_undefined_primal_reprs_as_jax():
    # jax-primitives.md prints a JVP rule's Zero tangents and a transpose rule's UndefinedPrimal
    # operands: 'Zero(~float32[])', 'UndefinedPrimal(float32[3])' (the aval's str)
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    from funcgrad.interpreters import ad as fad

    def reprs(ad, shaped):
        avals = [shaped((), np.float32, weak_type=True), shaped((2, 3), np.int32), shaped((3,), np.float32)]
        return [repr(ad.Zero(a)) for a in avals] + [repr(ad.UndefinedPrimal(a)) for a in avals]

    assert reprs(fad, funcgrad.core.ShapedArray) == reprs(jax.interpreters.ad, jax.core.ShapedArray)


def _jacobian_of_a_validating_tree(lib, np_):
    # custom_pytrees.md: a node whose __init__ converts its child refuses the None children that
    # JAX's jacfwd/jacrev rebuild it with (their dtype checks are tree_maps)
    class MyTree:
        def __init__(self, a):
            self.a = np_.asarray(a)

    lib.tree_util.register_pytree_node(MyTree, lambda t: ((t.a,), None), lambda _, c: MyTree(*c))
    out = []
    for jac in (lib.jacfwd, lib.jacrev):
        with pytest.raises(ValueError) as e:
            jac(lambda x: x)(MyTree(np_.arange(3.0)))
        out.append(str(e.value))
    return out


def test_jacobians_rebuild_custom_nodes_as_jax():
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    assert _jacobian_of_a_validating_tree(funcgrad, fnp) == _jacobian_of_a_validating_tree(jax, jax.numpy)


def _array_reprs(np_):
    # explicit dtypes: the oracle's x64 mode may differ from funcgrad's in this process
    f32 = np.float32
    x = np_.array([[1, 2, 5, 7], [4, 1, 3, 9]], dtype=f32)
    values = [
        np_.fft.ifft(x),  # jnp.fft.ifft's docstring: the dtype does not fit beside the last line
        np_.ones((2, 5), np.complex64) * np.complex64(1.5 + 2.25j),
        np_.arange(30, dtype=f32).reshape(2, 15) / f32(7),  # with the ',' a last line fits or not
        np_.arange(24, dtype=f32) / f32(7),
        np_.arange(3, dtype=f32),
        np_.asarray(f32(2.5)),
        np_.arange(19, dtype=f32),
        np_.arange(40, dtype=np.int32).reshape(4, 10),
    ]
    out = [repr(v) for v in values]
    with np.printoptions(linewidth=40):
        out += [repr(v) for v in values[2:]]
    return out


def test_array_repr_layout_as_jax():
    # JAX's docstring examples print wide arrays as 'Array([[...]],      dtype=complex64)': the
    # last line keeps room for the ',' and a dtype that does not fit is padded on the same line
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    assert _array_reprs(fnp) == _array_reprs(jax.numpy)
