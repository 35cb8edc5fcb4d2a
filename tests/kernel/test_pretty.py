"""The jaxpr printer reads exactly as JAX 0.10 prints the same program (NOTE: [printed jaxprs]):
its layout engine against JAX's own, and printed programs against jax's text (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel import pretty as pp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def test_layout_breaks_where_jax_printer_does():
    from jax._src import pretty_printer as jpp

    def build(m, n, width):
        # The same document in both engines: a group that fits or breaks, nested groups, a trailer.
        def doc(m):
            items = [m.text(f"k{i}={'v' * i}") for i in range(n)]
            inner = m.group(
                m.concat(
                    [
                        m.nest(2, m.concat([m.text("["), m.brk(""), m.join(m.brk(), items)])),
                        m.brk(""),
                        m.text("]"),
                    ]
                )
            )
            return m.group(
                m.concat(
                    [m.nest(2, m.concat([m.text("x = f"), inner, m.brk(), m.text("tail")])), m.text(" }")]
                )
            )

        return doc(m)

    class J:  # jax's engine under the same names
        text, brk, group, nest, concat = jpp.text, jpp.brk, jpp.group, jpp.nest, jpp.concat
        join = staticmethod(lambda sep, docs: jpp.join(sep, docs))

    class F:
        text, brk, group, nest, concat, join = pp.text, pp.brk, pp.group, pp.nest, pp.concat, pp.join

    for n in (1, 4, 9):
        for width in (10, 30, 60, 80):
            assert pp.layout(build(F, n, width), width) == build(J, n, width).format(width=width), (n, width)


def _cases(m):
    # Programs funcgrad stages equation for equation as JAX does (``m`` is jax or funcgrad): the
    # text must be JAX's.
    np_, lax_ = m.numpy, m.lax

    def custom():
        @m.custom_jvp
        def f(x):
            return np_.sin(x)

        f.defjvp(lambda p, t: (f(p[0]), np_.cos(p[0]) * t[0]))
        return f

    return {
        "reduce_sum": (lambda x: np_.sum(np_.sin(x)), (np.ones(3),)),
        "mean": (lambda x: np_.mean(x), (np.ones(3),)),
        "fori_loop": (lambda x: lax_.fori_loop(0, 3, lambda i, c: c + i, x), (1.0,)),
        "while": (lambda x: lax_.while_loop(lambda c: c < 10, lambda c: c * 2, x), (1.0,)),
        "cond": (lambda p, x: lax_.cond(p, np_.sin, np_.cos, x), (True, 1.0)),
        "dot_general": (
            lambda a, b: lax_.dot_general(a, b, (((1,), (0,)), ((), ()))),
            (np.ones((2, 3)), np.ones((3, 4))),
        ),
        "reshape_transpose": (lambda x: x.reshape(3, 2).T, (np.ones(6),)),
        "select_literal": (lambda x: lax_.select(x > 0, x, lax_.full_like(x, 0.0)), (np.ones(3),)),
        "dropped_outputs": (
            lambda x: lax_.scan(lambda c, y: (c + y, c * y), np.float64(0.0), x)[1],
            (np.ones(3),),
        ),
        "jit_names": (lambda x: m.jit(np_.sin)(x) * 2, (1.0,)),
        "weak_promotion": (lambda x, i: x + i, (1.0, np.int64(1))),
        "complex_literal": (lambda z: z * (1 + 2j), (1j,)),
        "argmax_82_columns": (lambda x: np_.argmax(x), (np.ones(3),)),
        "custom_jvp": (custom(), (1.0,)),
        "hoisted_shared_jaxpr": (lambda x: (g := m.jit(lambda y: y * 2.0))(g(x)), (1.0,)),
        "dead_equation_kept": (lambda x: (np_.sin(x), x * 2)[1], (1.0,)),
        "grad_keeps_primal_output": (m.grad(lambda x: np_.sin(x) * x), (1.0,)),
        "switch_literal_index": (lambda x: lax_.switch(1, [np_.sin, np_.cos], x), (1.0,)),
        "checkpoint": (m.checkpoint(lambda x: np_.sin(np_.sin(x))), (1.0,)),
        "ones_staged": (lambda x: x + np_.ones(3) * np_.zeros_like(x), (np.ones(3),)),
        "dot_preferred_type": (lambda a, b: np_.dot(a, b), (np.ones((2, 3)), np.ones(3))),
        # NOTE: [constants made while tracing]: an Array made before the trace is a constvar; one
        # made in the trace is a literal there and a constant of an inner trace closing over it.
        "array_made_before": ((lambda c: lambda x: x * c)(np_.asarray(2.0)), (1.0,)),
        "array_copies_a_traced_value": (lambda x: np_.array(x, np_.float32) * 2, (1.0,)),
        "branch_closes_constant": (
            lambda p, x: (lambda k: lax_.cond(p, lambda y: y * k, np_.sin, x))(np_.asarray(3.0)),
            (True, 1.0),
        ),
    }


def test_printed_jaxprs_equal_jax():
    ours, theirs = _cases(funcgrad), _cases(jax)
    failures = []
    for name, (f, args) in ours.items():
        expected = str(jax.make_jaxpr(theirs[name][0])(*args))
        got = str(funcgrad.make_jaxpr(f)(*args))
        if got != expected:
            failures.append(f"{name}:\n--- jax\n{expected}\n--- funcgrad\n{got}")
    assert not failures, "\n".join(failures)


def test_name_stack_and_source_annotations_align_in_one_column():
    def f(x):
        with funcgrad.named_scope("layer"):
            y = fnp.tanh(x)
        return fnp.sin(y) * 2.0

    text = funcgrad.make_jaxpr(f)(1.0).pretty_print(name_stack=True)
    assert text == (
        "{ lambda ; a:f64[]. let\n"
        "    b:f64[] = tanh a          # [layer]\n"
        "    c:f64[] = sin b           # []\n"
        "    d:f64[] = mul c 2.0:f64[] # []\n"
        "  in (d,) }"
    )
    both = funcgrad.make_jaxpr(f)(1.0).pretty_print(name_stack=True, source_info=True).splitlines()
    assert both[2].strip() == "# [layer]" and "test_pretty.py" in both[1]


def test_fori_loop_values_and_bound_types():
    for n in (0, 4):
        ours = funcgrad.jit(lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x))(n, 1.0)
        theirs = jax.jit(lambda n, x: jax.lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x))(n, 1.0)
        assert float(ours) == float(theirs)
    assert float(lax.fori_loop(np.int32(1), 4, lambda i, c: c + i, 0)) == 6.0
    with pytest.raises(TypeError, match="equal types"):
        lax.fori_loop(np.int32(0), np.int64(3), lambda i, c: c, 0.0)
    with pytest.raises(ValueError, match="unroll"):
        funcgrad.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 0.0, unroll=2))(3)


def test_loops_keep_weak_carries_and_literal_inits_as_jax():
    # A Python-scalar initial carry stays a literal (promoted without an equation when the body
    # changes its dtype); a weak carry whose body makes it strong is not retraced (JAX's typematch).
    def prog(m):
        def f(arr, n):
            ones = m.numpy.ones(arr.shape)
            total = m.lax.fori_loop(0, n, lambda i, c: c + ones * 3.0 + arr, arr + ones)
            c, ys = m.lax.scan(lambda c, a: (c + a * 2.0, c), 0.0, arr)
            return total, c, ys

        return f

    args = (np.ones(4), 3)
    assert str(funcgrad.make_jaxpr(prog(funcgrad))(*args)) == str(jax.make_jaxpr(prog(jax))(*args))
    ours, theirs = funcgrad.jit(prog(funcgrad))(*args), jax.jit(prog(jax))(*args)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    g = lambda m: m.grad(lambda x: m.lax.scan(lambda c, y: (c * y + m.numpy.sin(c), c), 0.5, x)[0])
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(g(funcgrad)(x), g(jax)(x), rtol=1e-12)


def test_zero_cotangent_of_a_python_scalar_is_weak_as_jax():
    # (Printed arrays show weak_type=True: the docs' custom-derivative cells print such zeros.)
    for m in (funcgrad, jax):
        gx, gy = m.grad(lambda x, y: x * 2.0, argnums=(0, 1))(1.0, 2.0)
        assert (gx.weak_type, gy.weak_type, float(gy)) == (True, True, 0.0), m.__name__


def test_expand_dims_is_a_broadcast_in_dim_as_jax():
    f = lambda m: m.grad(lambda x: m.numpy.expand_dims(x, (0, 2)).sum() * 2.0)
    assert str(funcgrad.make_jaxpr(f(funcgrad))(np.ones(3))) == str(jax.make_jaxpr(f(jax))(np.ones(3)))
    np.testing.assert_array_equal(fnp.expand_dims(np.arange(3.0), 1), np.arange(3.0)[:, None])
