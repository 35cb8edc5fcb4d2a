"""check_finite / debug_nans: the first NaN or Inf, forward or backward, at the right line."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad._control_flow import cond, scan, while_loop
from funcgrad.api import grad, jit, value_and_grad
from funcgrad.debug import NonFiniteError, check_finite, debug_nans
from funcgrad.kernel import core
from funcgrad.kernel.core import source_info_config

_THIS = open(__file__).read().splitlines()


def line_of(marker: str) -> int:
    (n,) = [i + 1 for i, text in enumerate(_THIS) if text.rstrip().endswith(f"# {marker}")]
    return n


def planted_log(x):
    y = x * 2.0
    z = fnp.log(y)  # planted:log
    return (z * x).sum()


def planted_sqrt(x):
    y = x * 3.0
    z = fnp.sqrt(y)  # planted:sqrt
    return z.sum()


@pytest.fixture(autouse=True)
def clean_state():
    yield
    # Whatever happened, the tools leave the kernel as they found it.
    assert type(core.current_trace()) is core.EvalTrace
    assert source_info_config.override is None and source_info_config.backward_depth == 0
    assert source_info_config.in_linearize is False


def test_log_of_zero_is_reported_in_the_forward_pass_at_its_line():
    with pytest.raises(NonFiniteError) as info:
        check_finite(planted_log)(np.array([1.0, 0.0, 2.0]))
    e = info.value
    assert isinstance(e, FloatingPointError)
    assert (e.phase, e.primitive) == ("forward", "log")
    assert e.source_info.file == __file__ and e.source_info.line == line_of("planted:log")
    assert e.inputs[0].min == 0.0 and e.inputs[0].max == 4.0 and e.inputs[0].nan == 0
    assert e.outputs[0].inf == 1
    message = str(e)
    assert "forward pass produced inf in `log`" in message
    assert "z = fnp.log(y)" in message and "f64[3]" in message


def test_sqrt_at_zero_is_reported_in_the_forward_pass_at_the_sqrt_line():
    # sqrt(0) = 0 is finite; its derivative is not. sqrt's rule is JAX's t * (0.5 / sqrt(x)): the
    # factor 0.5 / sqrt(x) is computed with the value (the forward pass), where the inf appears.
    with pytest.raises(NonFiniteError) as info:
        check_finite(planted_sqrt)(np.array([0.0, 4.0]))
    e = info.value
    assert e.phase == "forward"
    assert e.source_info.file == __file__ and e.source_info.line == line_of("planted:sqrt")
    assert e.primitive == "div"
    assert "forward pass produced inf in `div`" in str(e) and "z = fnp.sqrt(y)" in str(e)


def test_finite_programs_return_value_and_gradient():
    x = np.array([1.0, 4.0])
    value, g = check_finite(planted_sqrt)(x)
    v_ref, g_ref = value_and_grad(planted_sqrt)(x)
    assert float(value) == float(v_ref)
    np.testing.assert_allclose(g, g_ref)
    # Several arguments.
    (value, (g0, g1)) = check_finite(lambda a, b: (a * fnp.exp(b)).sum(), argnums=(0, 1))(x, x)
    np.testing.assert_allclose(g0, np.exp(x))


def test_non_scalar_outputs_are_checked_forward_only():
    out = check_finite(fnp.sin)(np.array([0.0, 1.0]))
    np.testing.assert_allclose(out, np.sin([0.0, 1.0]))
    with pytest.raises(NonFiniteError, match="`div`"):
        check_finite(lambda x: fnp.divide(1.0, x))(np.array([0.0, 1.0]))
    # backward=False on a scalar function: just the value.
    assert float(check_finite(planted_sqrt, backward=False)(np.array([0.0]))) == 0.0


def test_equations_inside_jit_are_checked_one_by_one():
    with pytest.raises(NonFiniteError) as info:
        check_finite(jit(planted_sqrt))(np.array([0.0, 4.0]))
    assert info.value.phase == "forward" and info.value.source_info.line == line_of("planted:sqrt")
    with pytest.raises(NonFiniteError) as info:
        check_finite(jit(planted_log))(np.array([0.0]))
    assert info.value.primitive == "log" and info.value.source_info.line == line_of("planted:log")


def test_a_nan_out_of_a_jit_prints_jaxs_deoptimized_notice(capsys):
    # JAX's flags.md: under jax_debug_nans a jit whose output holds a NaN says so (stdout), then the
    # de-optimized run raises a FloatingPointError at the primitive.
    with debug_nans():
        with pytest.raises(FloatingPointError, match="invalid value"):
            jit(lambda x: fnp.log(-3 * fnp.square(x)))(np.float32(5.0))
        # (twice, as JAX's flags.md: the jit's notice, then the eager log's in the de-optimized run)
        assert capsys.readouterr().out.count("Calling the de-optimized version.") == 2
        with pytest.raises(FloatingPointError, match="invalid value"):
            fnp.log(-3 * fnp.square(np.float32(5.0)))
        assert capsys.readouterr().out.count("Calling the de-optimized version.") == 1
        assert float(jit(lambda x: fnp.log(x))(np.float32(1.0))) == 0.0
    assert capsys.readouterr().out == ""


def test_debug_nans_reruns_a_jitted_functions_python_as_jax(capsys):
    # JAX's api_util.maybe_recursive_nan_check: the de-optimized call runs the Python function
    # again (its print runs again, on the call's Python values), and the error's traceback reaches
    # the user's line; a jit inside it is treated the same way.
    import traceback

    import jax
    import jax.numpy as jnp

    def run(api, np_):
        @api.jit
        def inner(y):
            return np_.log(y)  # the NaN

        @api.jit
        def f(x, y):
            print("running f on", type(x).__name__)
            return x * 2 + inner(y)

        with api.debug_nans(True):
            try:
                f(1.0, -2.0)
            except FloatingPointError as e:
                frames = [fr.line for fr in traceback.extract_tb(e.__traceback__) if fr.filename == __file__]
                return type(e), str(e), frames, capsys.readouterr().out.replace("Tracer", "").splitlines()

    got, want = run(funcgrad, fnp), run(jax, jnp)
    assert got[:3] == want[:3] and got[2][-1] == "return np_.log(y)  # the NaN"
    notices = [[line for line in out if "running f" not in line] for out in (got[3], want[3])]
    assert notices[0] == notices[1]
    assert got[3].count("running f on float") == want[3].count("running f on float") == 1


def test_non_finite_inputs_are_reported_as_inputs():
    with pytest.raises(NonFiniteError, match=r"input args\[0\]\['x'\] is not finite") as info:
        check_finite(lambda d: d["x"].sum())({"x": np.array([1.0, np.nan])})
    assert info.value.phase == "input" and info.value.inputs[0].nan == 1


def test_debug_nans_context_and_decorator():
    with debug_nans():
        assert float(grad(planted_sqrt)(np.array(4.0))) == pytest.approx(3 / (2 * np.sqrt(12.0)))
        # NaNs only, as JAX's jax_debug_nans: an infinite gradient is returned (jax: inf)
        assert float(grad(planted_sqrt)(np.array(0.0))) == np.inf

    @debug_nans()
    def step(x):
        return grad(planted_log)(x)

    # log(0) is -inf (not reported); -inf * 0 is the NaN, in `mul` (jax: "... encountered in mul")
    with pytest.raises(FloatingPointError) as info:
        step(np.array([0.0]))
    # (str, not match=: pytest matches the notes too, and grad's traceback boundary adds JAX's)
    assert str(info.value) == "invalid value (nan) encountered in mul"
    assert type(info.value) is FloatingPointError and info.value.primitive == "mul"  # (JAX's type)
    assert funcgrad.check_finite is check_finite and funcgrad.debug_nans is debug_nans


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_debug_nans_sees_half_precision_nans_as_jax(dtype):
    # (bfloat16's NumPy kind is 'V': the NaN checks read dtype.kind in 'fc' and let its NaNs pass)
    x = fnp.asarray(np.array([0.0, 1.0]), dtype=dtype)
    with debug_nans():
        with pytest.raises(FloatingPointError) as eager:
            fnp.log(x) * 0
        with pytest.raises(FloatingPointError) as jitted:
            jit(lambda x: 0.0 / x)(x)
    assert str(eager.value) == "invalid value (nan) encountered in mul"
    assert str(jitted.value) == "invalid value (nan) encountered in div"


def test_debug_nans_inside_a_transformation_is_an_error():
    def f(x):
        with debug_nans():
            return x * 2.0

    with pytest.raises(RuntimeError, match="outside transformations"):
        grad(f)(1.0)


def test_loops_are_searched_for_the_equation_and_iteration():
    def scanned(xs):
        def step(c, x):
            y = fnp.log(x)  # loop:log
            return c + y, y

        return scan(step, 0.0, xs)[0]

    with pytest.raises(NonFiniteError, match=r"`log` in iteration 2 of `scan`") as info:
        check_finite(scanned)(np.array([1.0, 2.0, 0.0, 3.0]))
    assert info.value.source_info.line == line_of("loop:log") and info.value.loop_iterations == [("scan", 2)]

    def sqrt_scan(xs):
        return scan(lambda c, x: (c + fnp.sqrt(x), x), 0.0, xs)[0]

    with pytest.raises(NonFiniteError, match=r"iteration 1 of `scan`") as info:
        check_finite(sqrt_scan)(np.array([1.0, 0.0, 3.0]))
    assert info.value.phase == "forward"  # (sqrt's 0.5 / sqrt(x), computed with the value)

    def looped(x):
        # x / (x - 3) at x = 3: the fourth iteration (i = 3) divides by zero.
        return while_loop(lambda c: c[0] < 5.0, lambda c: (c[0] + 1.0, c[1] + 1.0 / (c[0] - 3.0)), (x, 0.0))[
            1
        ]

    with pytest.raises(NonFiniteError, match=r"iteration 3 of `while_loop`"):
        check_finite(looped)(np.array(0.0))

    def branchy(x):
        return cond(x > 0, lambda x: fnp.log(x - 1.0), lambda x: x, x)

    with pytest.raises(NonFiniteError, match=r"`log` in `cond`"):
        check_finite(branchy, backward=False)(np.array(1.0))


def test_debug_nans_checks_nans_only_and_calls_on_their_outputs_as_jax():
    # JAX's scipy_stats_test testGammaDebugNans and lax_scipy_test testLogSumExpOnes: debug_nans
    # ignores infinities, and a library function's internal -inf that no output carries is not
    # reported under debug_infs (jax 0.10.2: 0.0 and log(4) + 1).
    with debug_nans():
        assert float(funcgrad.scipy.stats.gamma.pdf(0.0, 1.0, 1.0)) == 0.0
        assert float(fnp.log(0.0)) == -np.inf
    with funcgrad.debug_infs():
        np.testing.assert_allclose(
            float(funcgrad.scipy.special.logsumexp(np.ones(4, "float32"))), np.log(4) + 1, rtol=1e-6
        )
    with pytest.raises(NonFiniteError, match="inf"):
        check_finite(lambda x: fnp.log(x))(np.array(0.0))  # (check_finite: NaN and Inf)


def test_debug_nans_of_a_sharded_computation():
    # pmap (a jit of shard_map): the sharded computation's outputs are checked, in JAX's words
    # (debug_nans_test's testPmap; funcgrad recursed, checking shard_map's own jit inside it).
    f = funcgrad.pmap(lambda x: 0.0 / x)
    with debug_nans():
        np.testing.assert_array_equal(np.asarray(f(fnp.array([1.0]))), [0.0])
        with pytest.raises(
            FloatingPointError, match=r"Invalid value \(nan\) encountered in sharded computation"
        ):
            f(fnp.array([0.0]))


def test_debug_nans_of_a_jit_whose_nan_no_equation_makes(capsys):
    # A NaN literal among a jit's outputs: the de-optimized run finds no equation making it, and
    # JAX says so (debug_nans_test's testDebugNansDoesntReturnDeoptimizedResult).
    with debug_nans():
        with pytest.raises(FloatingPointError, match="the de-optimized function did not .*literal"):
            jit(lambda x: (fnp.nan, x + 2))(3)
    assert "Calling the de-optimized version." in capsys.readouterr().out
