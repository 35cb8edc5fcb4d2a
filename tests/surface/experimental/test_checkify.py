"""funcgrad.experimental.checkify against jax.experimental.checkify (the oracle): the examples of
jax's "The checkify transformation" page in our own words, each composition (jit, vmap, grad,
control flow) and the error messages."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.experimental import checkify as C

# jax, the oracle, compiles and runs every case beside funcgrad: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_checkify = pytest.importorskip("jax.experimental.checkify")
jax.config.update("jax_enable_x64", True)


def positive_log(x):
    C.check(x > 0, "x must be positive, got {}", x)
    return fnp.log(x)


def jax_positive_log(x):
    jax_checkify.check(x > 0, "x must be positive, got {}", x)
    return jnp.log(x)


WRAPS = {
    "eager": lambda f: C.checkify(f),
    "jit(checkify)": lambda f: funcgrad.jit(C.checkify(f)),
    "checkify(jit)": lambda f: C.checkify(funcgrad.jit(f)),
}


@pytest.mark.parametrize("wrap", WRAPS.values(), ids=WRAPS.keys())
@pytest.mark.parametrize("x", [2.0, -3.0, 0.0])
def test_user_check_message_and_value_match_jax(wrap, x):
    err, y = wrap(positive_log)(fnp.asarray(x))  # (eagerly a NumPy scalar is refused, as by JAX)
    jerr, jy = jax.jit(jax_checkify.checkify(jax_positive_log))(np.float64(x))
    assert err.get() == jerr.get()
    np.testing.assert_allclose(np.asarray(y), np.asarray(jy))


def test_no_error_gives_none_and_throw_does_nothing():
    err, y = C.checkify(positive_log)(fnp.asarray(1.0))
    assert err.get() is None and str(err) == "Error(None)"
    err.throw()
    C.check_error(err)
    assert err.get_exception() is None
    assert C.init_error.get() is None


def test_throw_raises_jax_runtime_error():
    err, _ = funcgrad.jit(C.checkify(positive_log))(-1.0)
    assert isinstance(err.get_exception(), C.JaxRuntimeError)
    with pytest.raises(C.JaxRuntimeError, match=r"x must be positive, got -1.0 \(`check` failed\)"):
        err.throw()
    with pytest.raises(C.JaxRuntimeError, match="x must be positive"):
        C.check_error(err)
    assert issubclass(C.JaxRuntimeError, ValueError)


def test_format_with_keyword_and_pytree_arguments():
    def f(x):
        C.check(fnp.all(x < 10), "max {m} of {n} values; first {}", x[0], m=fnp.max(x), n=fnp.sum(x > 2))
        return x

    def jf(x):
        jax_checkify.check(
            jnp.all(x < 10), "max {m} of {n} values; first {}", x[0], m=jnp.max(x), n=jnp.sum(x > 2)
        )
        return x

    x = fnp.array([1.0, 12.0, 3.0])
    assert C.checkify(f)(x)[0].get() == jax_checkify.checkify(jf)(jnp.asarray(x))[0].get()
    assert C.checkify(f)(x)[0].get() == "max 12.0 of 2 values; first 1.0 (`check` failed)"
    # a value inside a container prints as the Array it is (chex's assert_tree_all_finite)
    g = lambda C, x: C.check(x[0] > 1, "tree {}", {"b": x[:2]})  # noqa: E731
    assert (
        C.checkify(lambda x: g(C, x))(x)[0].get()
        == jax_checkify.checkify(lambda x: g(jax_checkify, x))(jnp.asarray(x))[0].get()
    )


def test_first_failure_wins():
    def f(x):
        C.check(x > 0, "first {}", x)
        C.check(x > 1, "second {}", x)
        return x

    assert C.checkify(f)(fnp.asarray(0.5))[0].get() == "second 0.5 (`check` failed)"
    assert C.checkify(f)(fnp.asarray(-1.0))[0].get() == "first -1.0 (`check` failed)"
    assert funcgrad.jit(C.checkify(f))(-1.0)[0].get() == "first -1.0 (`check` failed)"


def test_eager_check_raises_at_once():
    with pytest.raises(C.JaxRuntimeError, match=r"^x must be positive, got -2.0 \(`check` failed\)$"):
        positive_log(fnp.asarray(-2.0))
    assert float(positive_log(fnp.asarray(np.e))) == pytest.approx(1.0)


def test_unfunctionalized_check_under_jit_says_to_use_checkify():
    with pytest.raises(ValueError, match="not functionalized.*checkify"):
        funcgrad.jit(positive_log)(1.0)


def test_vmap_of_eager_check_raises_the_first_failing_element():
    with pytest.raises(C.JaxRuntimeError, match="got -2.0"):
        funcgrad.vmap(positive_log)(np.array([1.0, -2.0, -3.0]))


def test_debug_check_only_under_checkify():
    def f(x):
        C.debug_check(x != 0, "cannot be zero! x={}", x)
        return x

    zero = fnp.asarray(0)  # (a Python int is refused as a formatting argument, as in JAX)
    assert f(zero) == 0  # eager: dropped
    assert funcgrad.jit(f)(0) == 0  # compiled: dropped, no functionalization error
    err, _ = funcgrad.jit(C.checkify(f))(0)
    assert err.get() == "cannot be zero! x=0 (`check` failed)"


# ----------------------------------------------------------------------------------------------
# vmap


def test_vmap_of_checkify_lists_every_failing_element_like_jax():
    x = np.array([1.0, -2.0, 3.0, -4.0])
    err, y = funcgrad.vmap(C.checkify(positive_log))(x)
    jerr, jy = jax.vmap(jax_checkify.checkify(jax_positive_log))(x)
    assert err.get() == jerr.get()
    assert err.get().splitlines()[0] == "at mapped index 1: x must be positive, got -2.0 (`check` failed)"
    np.testing.assert_allclose(np.asarray(y), np.asarray(jy))
    assert funcgrad.vmap(C.checkify(positive_log))(np.array([1.0, 2.0]))[0].get() is None


def test_jit_of_vmap_of_checkify_matches_a_loop():
    x = np.array([[1.0, -2.0], [3.0, 4.0], [-5.0, -6.0]])
    err, _ = funcgrad.jit(funcgrad.vmap(funcgrad.vmap(C.checkify(positive_log))))(x)
    lines = [
        f"at mapped index {i}, {j}: {C.checkify(positive_log)(fnp.asarray(x[i, j]))[0].get()}"
        for i in range(3)
        for j in range(2)
        if x[i, j] <= 0
    ]
    assert err.get() == "\n".join(lines)


def test_checkify_of_vmap_reports_the_first_failing_element():
    err, _ = C.checkify(funcgrad.vmap(positive_log))(np.array([1.0, -2.0, -3.0]))
    assert err.get() == "x must be positive, got -2.0 (`check` failed)"
    err, _ = funcgrad.jit(C.checkify(funcgrad.vmap(positive_log)))(np.array([1.0, 2.0]))
    assert err.get() is None


# ----------------------------------------------------------------------------------------------
# grad


def test_grad_passes_through_check():
    g = funcgrad.grad(positive_log)(np.float64(2.0))
    assert float(g) == pytest.approx(0.5)
    # grad of the checkified function's value, and a check on the input there
    g = funcgrad.grad(lambda x: C.checkify(positive_log)(x)[1])(np.float64(4.0))
    assert float(g) == pytest.approx(0.25)


def test_checkify_of_grad():
    def f(x):
        C.check(x > 0, "x must be positive, got {}", x)
        return fnp.sin(x) * x

    for wrap in (C.checkify, lambda h: funcgrad.jit(C.checkify(h))):
        err, g = wrap(funcgrad.grad(f))(np.float64(-1.5))
        assert err.get() == "x must be positive, got -1.5 (`check` failed)"
        assert float(g) == pytest.approx(np.cos(-1.5) * -1.5 + np.sin(-1.5))
        assert wrap(funcgrad.grad(f))(np.float64(1.5))[0].get() is None


def test_checkify_of_grad_finds_nan_in_the_backward_pass():
    # d/dx sqrt(x) at 0 is inf; times 0 gives nan in the backward program only.
    def f(x):
        return fnp.sqrt(x) * 0.0

    err, g = C.checkify(funcgrad.grad(f), errors=C.nan_checks)(np.float64(0.0))
    jerr, jg = jax_checkify.checkify(jax.grad(lambda x: jnp.sqrt(x) * 0.0), errors=jax_checkify.nan_checks)(
        jnp.float64(0.0)
    )
    assert np.isnan(g) and np.isnan(jg)
    # sqrt's derivative is JAX's t * (0.5 / sqrt x): 0.5 / 0 is inf, the nan comes from its product
    assert err.get() == jerr.get() == "nan generated by primitive: mul."


# ----------------------------------------------------------------------------------------------
# automatic checks


@pytest.mark.parametrize("jit", [False, True])
def test_nan_checks_name_the_primitive(jit):
    cases = [
        (lambda x: fnp.sin(x), np.inf, 0.5, "sin"),
        (lambda x: fnp.log(x - 2.0), 1.0, 3.0, "log"),
        (lambda x: fnp.sqrt(fnp.cos(x)), 3.0, 0.5, "sqrt"),
        (lambda x: fnp.exp(x) - fnp.exp(x), 1000.0, 0.5, "sub"),
    ]
    for f, bad, good, prim in cases:
        g = C.checkify(f, errors=C.nan_checks)
        g = funcgrad.jit(g) if jit else g
        assert g(np.float64(bad))[0].get() == f"nan generated by primitive: {prim}."
        assert g(np.float64(good))[0].get() is None


def test_nan_checks_are_off_by_default_and_user_checks_off_when_not_asked():
    assert C.checkify(fnp.log)(-1.0)[0].get() is None
    err, _ = C.checkify(positive_log, errors=C.nan_checks)(fnp.asarray(-1.0))
    assert err.get() == "nan generated by primitive: log."


@pytest.mark.parametrize("jit", [False, True])
def test_div_checks(jit):
    g = C.checkify(lambda x, y: x // y, errors=C.div_checks)
    g = funcgrad.jit(g) if jit else g
    # (Arrays: checkify closes over its arguments, as JAX's, so NumPy values compute in NumPy)
    assert g(fnp.int32(7), fnp.int32(0))[0].get() == "division by zero"
    assert g(fnp.int32(7), fnp.int32(2))[0].get() is None
    jerr, _ = jax_checkify.checkify(lambda x, y: x // y, errors=jax_checkify.div_checks)(
        jnp.int32(7), jnp.int32(0)
    )
    assert jerr.get() == "division by zero"
    v = C.checkify(lambda x: 1 // x, errors=C.div_checks)
    assert v(fnp.array([1, 0, 2]))[0].get() == "division by zero"


OOB_CASES = [
    ("getitem", lambda x, i: x[i], lambda x, i: x[i], np.arange(3.0), 5),
    ("getitem_2d", lambda x, i: x[1, i], lambda x, i: x[1, i], np.arange(12.0).reshape(3, 4), 7),
    ("getitem_3d", lambda x, i: x[i, -1, i + 3], lambda x, i: x[i, -1, i + 3], np.zeros((2, 3, 7)), 5),
    ("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i,), (2,)),
     lambda x, i: jax.lax.dynamic_slice(x, (i,), (2,)), np.arange(5.0), 4),
    ("dynamic_update_slice", lambda x, i: lax.dynamic_update_slice(x, np.ones(2), (i,)),
     lambda x, i: jax.lax.dynamic_update_slice(x, jnp.ones(2), (i,)), np.arange(5.0), -1),
    ("scatter", lambda x, i: x.at[i].set(1.0), lambda x, i: x.at[i].set(1.0), np.arange(3.0), 5),
    ("scatter_add", lambda x, i: x.at[i].add(1.0), lambda x, i: x.at[i].add(1.0), np.arange(3.0), 9),
]  # fmt: skip


@pytest.mark.parametrize("name, f, jf, x, i", OOB_CASES, ids=[c[0] for c in OOB_CASES])
@pytest.mark.parametrize("jit", [False, True])
def test_index_checks_match_jax(name, f, jf, x, i, jit):
    # checkify closes over its arguments (as JAX's), so the index is traced by a jit, inside
    # (as JAX's checkify_test) or outside
    g = (
        funcgrad.jit(C.checkify(f, errors=C.index_checks))
        if jit
        else C.checkify(funcgrad.jit(f), errors=C.index_checks)
    )
    err, y = g(fnp.asarray(x), np.int32(i))
    jerr, jy = jax_checkify.checkify(jf, errors=jax_checkify.index_checks)(jnp.asarray(x), jnp.int32(i))
    # (x[1, i] is one dynamic_slice of x, as JAX's: its error names axis 1 of the whole array)
    assert err.get() == jerr.get()
    assert err.get().startswith("out-of-bounds indexing for array of shape")
    np.testing.assert_allclose(np.asarray(y), np.asarray(jy))
    assert g(fnp.asarray(x), np.int32(1))[0].get() is None


def test_error_sets_are_unions():
    assert C.float_checks == C.nan_checks | C.div_checks
    assert C.automatic_checks == C.float_checks | C.index_checks
    assert C.all_checks == C.automatic_checks | C.user_checks
    assert len({*C.user_checks, *C.nan_checks, *C.div_checks, *C.index_checks}) == 4

    def f(x, i):
        C.check(x[0] > 0, "first must be positive")
        return fnp.log(x)[i]

    x, f = fnp.array([-1.0, 2.0]), funcgrad.jit(f)  # (the index traced: see test_index_checks_match_jax)
    assert C.checkify(f, errors=C.all_checks)(x, 5)[0].get() == "first must be positive (`check` failed)"
    assert C.checkify(f, errors=C.automatic_checks)(x, 5)[0].get() == "nan generated by primitive: log."
    assert C.checkify(f, errors=C.index_checks)(x, 5)[0].get().startswith("out-of-bounds")


# ----------------------------------------------------------------------------------------------
# control flow


def _body(i, x):
    C.check(x < 10, "x too big at step {}: {}", i, x)
    return x * 2.0


def _jbody(i, x):
    jax_checkify.check(x < 10, "x too big at step {}: {}", i, x)
    return x * 2.0


@pytest.mark.parametrize("jit", [False, True])
def test_fori_loop(jit):
    g = C.checkify(lambda x: lax.fori_loop(0, 6, _body, x))
    g = funcgrad.jit(g) if jit else g
    j = jax.jit(jax_checkify.checkify(lambda x: jax.lax.fori_loop(0, 6, _jbody, x)))
    for x in (1.0, 0.1, 100.0):
        err, y = g(np.float64(x))
        jerr, jy = j(np.float64(x))
        assert err.get() == jerr.get()
        np.testing.assert_allclose(np.asarray(y), np.asarray(jy))


@pytest.mark.parametrize("jit", [False, True])
def test_scan(jit):
    def step(c, xi):
        C.check(xi > 0, "bad x {}", xi)
        return c + fnp.log(xi), c

    def jstep(c, xi):
        jax_checkify.check(xi > 0, "bad x {}", xi)
        return c + jnp.log(xi), c

    g = C.checkify(lambda xs: lax.scan(step, 0.0, xs))
    g = funcgrad.jit(g) if jit else g
    for xs in (np.array([1.0, 2.0, -3.0, -4.0]), np.array([1.0, 2.0])):
        err, (c, ys) = g(xs)
        jerr, (jc, jys) = jax_checkify.checkify(lambda xs: jax.lax.scan(jstep, 0.0, xs))(jnp.asarray(xs))
        assert err.get() == jerr.get()
        np.testing.assert_allclose(np.asarray(ys), np.asarray(jys))


@pytest.mark.parametrize("jit", [False, True])
def test_cond_branches_with_different_checks(jit):
    def t(x):
        C.check(x > 0, "true branch {}", x)
        return x

    def f(x):
        C.check(x < -5, "false branch {}", x)
        return -x

    def jt(x):
        jax_checkify.check(x > 0, "true branch {}", x)
        return x

    def jf(x):
        jax_checkify.check(x < -5, "false branch {}", x)
        return -x

    g = C.checkify(lambda x: lax.cond(x > 1, t, f, x))
    g = funcgrad.jit(g) if jit else g
    for x in (2.0, -1.0, -10.0):
        jerr, _ = jax_checkify.checkify(lambda x: jax.lax.cond(x > 1, jt, jf, x))(jnp.float64(x))
        assert g(np.float64(x))[0].get() == jerr.get()


@pytest.mark.parametrize("jit", [False, True])
def test_while_loop_checks_in_cond_and_body(jit):
    def cond(c):
        C.check(c[1] < 100, "cond sees {}", c[1])
        return c[0] < 5

    def body(c):
        C.check(c[1] > 0, "body sees {}", c[1])
        return c[0] + 1, c[1] * 3.0

    def jcond(c):
        jax_checkify.check(c[1] < 100, "cond sees {}", c[1])
        return c[0] < 5

    def jbody(c):
        jax_checkify.check(c[1] > 0, "body sees {}", c[1])
        return c[0] + 1, c[1] * 3.0

    g = C.checkify(lambda x: lax.while_loop(cond, body, (0, x)))
    g = funcgrad.jit(g) if jit else g
    j = jax_checkify.checkify(lambda x: jax.lax.while_loop(jcond, jbody, (0, x)))
    for x in (0.1, 1.0, 1000.0, -1.0):
        err, (_, y) = g(np.float64(x))
        jerr, (_, jy) = j(jnp.float64(x))
        assert err.get() == jerr.get()
        np.testing.assert_allclose(np.asarray(y), np.asarray(jy))


def test_vmap_of_checkified_loop_matches_a_loop():
    g = C.checkify(lambda x: lax.fori_loop(0, 6, _body, x))
    xs = np.array([1.0, 0.1, 3.0])
    err, ys = funcgrad.vmap(g)(xs)
    expected = [f"at mapped index {i}: {g(x)[0].get()}" for i, x in enumerate(xs) if g(x)[0].get()]
    assert err.get() == "\n".join(expected)
    np.testing.assert_allclose(np.asarray(ys), [np.asarray(g(x)[1]) for x in xs])


def test_nested_jit_inside_loop_inside_checkify():
    inner = funcgrad.jit(lambda x: fnp.log(x))

    def f(x):
        return lax.fori_loop(0, 3, lambda i, v: inner(v - 1.0), x)

    err, _ = funcgrad.jit(C.checkify(f, errors=C.nan_checks))(np.float64(10.0))
    assert err.get() == "nan generated by primitive: log."
    assert C.checkify(f, errors=C.nan_checks)(np.float64(100.0))[0].get() is None


# ----------------------------------------------------------------------------------------------
# check_error and mistakes


def test_check_error_inside_a_traced_function_is_functionalized_again():
    checked = C.checkify(positive_log)

    def f(x):
        err, y = checked(x)
        C.check_error(err)
        return y

    err, _ = funcgrad.jit(C.checkify(f))(-2.0)
    assert err.get() == "x must be positive, got -2.0 (`check` failed)"
    with pytest.raises(ValueError, match="not functionalized"):
        funcgrad.jit(f)(1.0)


def test_get_inside_jit_is_a_clear_error():
    def f(x):
        err, y = C.checkify(positive_log)(x)
        err.get()
        return y

    with pytest.raises(ValueError, match=r"Error.get\(\) needs concrete values"):
        funcgrad.jit(f)(1.0)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match=r"check takes a scalar pred as argument, got 1.0"):
        C.check(np.float64(1.0), "msg")
    with pytest.raises(TypeError, match=r"scalar pred as argument, got bool\[2\].*numpy.all"):
        C.checkify(lambda x: C.check(x > 0, "msg"))(fnp.ones(2))
    with pytest.raises(TypeError, match=r"scalar pred as argument, got \[ True  True\]"):  # (JAX's)
        C.checkify(lambda x: C.check(x > 0, "msg"))(np.ones(2))
    with pytest.raises(
        TypeError, match="Formatting arguments to checkify.check need to be PyTrees of arrays"
    ):
        C.check(True, "msg {}", "a string")
    with pytest.raises(TypeError, match="errors must be a set of error categories"):
        C.checkify(positive_log, errors={"nan"})
    # (checkify closes over its arguments, as JAX's: a str reaches the function, whose `>` refuses it)
    with pytest.raises(TypeError, match="'>' not supported between instances of 'str' and 'int'"):
        C.checkify(positive_log)("x")
    with pytest.raises(TypeError, match="expected a checkify.Error"):
        C.check_error(None)


def _guide_check(lib, jnp_, checkify_):
    """JAX's checkify guide: a check formatting the index a checkified function is given."""

    def f(x, i):
        checkify_.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
        return jnp_.sin(x[i])

    return checkify_.checkify(f, errors=checkify_.user_checks | checkify_.index_checks)


# A Python int reaches the check as it is (a formatting argument must be an array); a NumPy scalar
# index makes a NumPy-bool predicate (a Python bool or an array is needed): JAX's TypeErrors.
@pytest.mark.parametrize("index", [100, np.int32(3), np.array(3), -1], ids=["int", "np.int32", "0-d", "neg"])
def test_check_argument_types_as_jaxs_guide(index):
    def outcome(lib, jnp_, checkify_):
        try:
            err, _ = _guide_check(lib, jnp_, checkify_)(jnp_.ones(5), index)
            return err.get()
        except TypeError as e:
            return str(e)

    assert outcome(funcgrad, fnp, C) == outcome(jax, jnp, jax_checkify)


def test_checkified_jaxpr_has_no_check_equations():
    text = str(funcgrad.make_jaxpr(C.checkify(positive_log))(1.0))
    assert "check[" not in text
    assert "check[" in str(funcgrad.make_jaxpr(positive_log)(1.0))


def _branchy(x):
    def t(x):
        C.check(x > 0, "true branch {}", x)
        return x

    def f(x):
        C.check(x < -5, "false branch {}", x)
        return -x

    return lax.cond(x > 1, t, f, x)


def test_vmap_of_cond_checks_only_the_lanes_that_take_each_branch():
    xs = np.array([2.0, -1.0, -10.0, 0.5])
    expected = (
        "at mapped index 1: false branch -1.0 (`check` failed)\n"
        "at mapped index 3: false branch 0.5 (`check` failed)"
    )
    assert funcgrad.vmap(C.checkify(_branchy))(xs)[0].get() == expected
    # a batched predicate runs both branches on every lane: lane 0 (x=2) must not fail the false branch
    assert C.checkify(funcgrad.vmap(_branchy))(xs)[0].get() == "false branch -1.0 (`check` failed)"
    assert funcgrad.jit(C.checkify(funcgrad.vmap(_branchy)))(np.array([2.0, -10.0]))[0].get() is None
    with pytest.raises(C.JaxRuntimeError, match="false branch 0.5"):
        funcgrad.vmap(_branchy)(np.array([2.0, -10.0, 0.5]))


def test_grad_through_a_checkified_scan_matches_finite_differences():
    def sc(x):
        def step(c, xi):
            C.check(xi > 0, "bad x {}", xi)
            return c * fnp.sin(xi) + 1.0, c

        return lax.scan(step, x, fnp.array([1.0, 2.0, 3.0]) * x)[0]

    g = funcgrad.grad(lambda x: C.checkify(sc, errors=C.all_checks)(x)[1])
    eps = 1e-6
    checked = lambda x: float(C.checkify(sc)(x)[1])  # noqa: E731
    fd = (checked(0.7 + eps) - checked(0.7 - eps)) / (2 * eps)
    assert float(g(0.7)) == pytest.approx(fd, rel=1e-6)
    assert float(funcgrad.jit(g)(0.7)) == pytest.approx(fd, rel=1e-6)
    err, dg = C.checkify(funcgrad.grad(sc))(-0.7)
    assert err.get() == "bad x -0.7 (`check` failed)"
    assert float(dg) == pytest.approx(float(funcgrad.grad(lambda x: C.checkify(sc)(x)[1])(-0.7)))
    # An eager scan is compiled (as JAX's): a check in its body, not functionalized, is JAX's
    # ValueError whatever the values (JAX raises it for sc(0.7) and sc(-0.7) too).
    with pytest.raises(ValueError, match="check which was not functionalized"):
        sc(0.7)


@pytest.mark.parametrize("xs", [[1.0], [-2.0]])
def test_checkify_of_pmap_checks_the_body_on_each_device_as_jax(xs):
    # JAX's shard_map rule (and so pmap's): the body is checkified on every device; chex's
    # chexify of a pmapped function. On one device here; tests/surface/spmd has the 8-device case.
    # JAX reports each failing device ("at mapped index i: ..."); funcgrad the first one's message.
    def f(x):
        C.check(fnp.all(x > 0), "bad {}", x.sum())
        return lax.pmean(fnp.log(fnp.abs(x)), "i")

    def jf(x):
        jax_checkify.check(jnp.all(x > 0), "bad {}", x.sum())
        return jax.lax.pmean(jnp.log(jnp.abs(x)), "i")

    xs = np.array(xs)
    for wrap, jwrap in [(lambda g: g, lambda g: g), (funcgrad.jit, jax.jit)]:
        err, out = wrap(C.checkify(funcgrad.pmap(f, axis_name="i")))(xs)
        jerr, jout = jwrap(jax_checkify.checkify(jax.pmap(jf, axis_name="i")))(xs)
        np.testing.assert_allclose(out, jout)
        want = jerr.get()
        assert err.get() == (None if want is None else want.removeprefix("at mapped index 0: "))


def test_checkify_closes_over_its_arguments_as_jax():
    # JAX's checkify_test test_checkify_static_args / test_checkify_non_jax_type_input: Python
    # control flow on a (static) argument, and a non-array argument, work as in JAX.
    def f(x):
        if x:
            return fnp.ones(2)
        return fnp.zeros(2)

    err, y = funcgrad.jit(C.checkify(f), static_argnums=0)(True)
    assert err.get() is None and np.asarray(y).tolist() == [1.0, 1.0]
    jerr, jy = jax.jit(jax_checkify.checkify(lambda x: jnp.ones(2) if x else jnp.zeros(2)), static_argnums=0)(
        True
    )
    assert jerr.get() is None and np.asarray(jy).tolist() == [1.0, 1.0]
    assert float(C.checkify(lambda x: 1.0)("hi")[1]) == float(jax_checkify.checkify(lambda x: 1.0)("hi")[1])


def test_checkify_of_vmap_of_while_refused_as_jax():
    # JAX's checkify_test test_checkify_of_vmap_of_while_errors / _masked_errors: a while loop
    # vmapped with a batched predicate is refused by checkify (JAX's ValueError), under jit too
    def run(lib, chk):
        def body(x):
            chk.check(x < 5, "should never happen")
            return x + 1

        def loop(x):
            return lib.lax.while_loop(lambda x: x < 5, body, x)

        with pytest.raises(ValueError, match="checkify-of-vmap-of-while"):
            chk.checkify(lib.vmap(loop))(np.arange(5))
        with pytest.raises(ValueError, match="checkify-of-vmap-of-while"):
            chk.checkify(lib.jit(lib.vmap(loop)))(np.arange(5))
        return loop

    run(jax, jax_checkify)
    # (vmap of checkify of the loop: no check fails; jax 0.10.2 fails there in 64-bit mode)
    assert funcgrad.vmap(C.checkify(run(funcgrad, C)))(np.arange(5))[0].get() is None
