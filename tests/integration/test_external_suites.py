"""Bounded runs of the external-suite harnesses in tests/integration/suites/ (see its README.md): the autograd
import shim on programs written as for HIPS autograd, the ``jax`` -> funcgrad alias on a program
that uses JAX's own ``jax.example_libraries`` unchanged, and -- when checkouts of JAX's and
autograd's repositories are named by ``FUNCGRAD_JAX_REPO`` / ``FUNCGRAD_AUTOGRAD_REPO`` -- a few of
their cheap example programs. Each runs in a subprocess, so that the shim's ``autograd`` package
never shadows the real one (an oracle elsewhere in the tests)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIM = os.path.join(ROOT, "tests", "integration", "suites", "autograd_shim")


def _python(code: str, path: list[str], timeout: float = 300, args=()) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), MPLBACKEND="Agg")
    p = subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)] if not args else [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


SHIM_PROGRAMS = textwrap.dedent(
    """
        import numpy as onp
        import autograd
        import autograd.numpy as np
        import autograd.numpy.random as npr
        from autograd import grad, elementwise_grad, jacobian, hessian, value_and_grad
        from autograd.extend import primitive, defvjp
        from autograd.test_util import check_grads
        from autograd.misc.fixed_points import fixed_point
        from autograd.misc import flatten
        import funcgrad

        assert np.zeros(3).__class__ is onp.ndarray          # plain values give NumPy arrays
        f = lambda x: np.sum(np.tanh(x) ** 2)
        x = npr.RandomState(0).randn(4)
        g = grad(f)(x)
        onp.testing.assert_allclose(g, 2 * onp.tanh(x) * (1 - onp.tanh(x) ** 2), rtol=1e-12)
        onp.testing.assert_allclose(elementwise_grad(np.sin)(x), onp.cos(x), rtol=1e-12)
        assert jacobian(np.sin)(x).shape == (4, 4) and hessian(f)(x).shape == (4, 4)
        check_grads(f, modes=["fwd", "rev"], order=2)(x)

        @primitive
        def cube(x):
            return x ** 3
        defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
        assert float(grad(cube)(2.0)) == 12.0
        assert float(grad(grad(cube))(2.0)) == 12.0            # the rule is differentiated too
        try:
            check_grads(primitive(lambda x: 2.0 * x), modes=["rev"])(1.0)
        except NotImplementedError:
            pass
        else:
            raise AssertionError("a primitive without a VJP must say so")

        newton = lambda a: lambda x: 0.5 * (x + a / x)
        sqrt = lambda a: fixed_point(newton, a, 1.0, lambda x, y: np.abs(x - y), 1e-10)
        onp.testing.assert_allclose(grad(sqrt)(2.0), 0.5 / onp.sqrt(2.0), rtol=1e-8)
        onp.testing.assert_allclose(grad(grad(sqrt))(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-6)
        assert float(grad(np.abs)(0.0)) == 0.0                 # autograd's convention (JAX: 1)
        assert float(funcgrad.grad(funcgrad.numpy.abs)(0.0)) == 1.0
        v, unflatten = flatten({"a": 1.0, "b": [np.ones(2)]})
        assert v.shape == (3,) and unflatten(v)["b"][0].shape == (2,)
        val, g = value_and_grad(lambda w: np.sum(w ** 2))(np.ones(3))
        assert float(val) == 3.0 and g.tolist() == [2.0, 2.0, 2.0]
        print("ok")
        """
)

SHIM_SCIPY_EXTRAS = textwrap.dedent(
    """
        import numpy as onp, scipy.special as sps, scipy.signal as sig
        import autograd.numpy as np
        from autograd import grad
        import autograd.scipy.special as special
        import autograd.scipy.signal as signal
        from autograd.scipy.linalg import solve_sylvester, sqrtm

        x = onp.linspace(0.5, 3.0, 5)
        onp.testing.assert_allclose(special.j0(x), sps.j0(x), rtol=1e-12)
        onp.testing.assert_allclose(grad(lambda x: np.sum(special.j0(x)))(x), -sps.j1(x), rtol=1e-12)
        onp.testing.assert_allclose(grad(lambda x: np.sum(special.jn(2, x)))(x), sps.jvp(2, x), rtol=1e-10)
        a, b = onp.random.RandomState(0).randn(6, 7), onp.random.RandomState(1).randn(4, 2)
        for mode in ("full", "valid", "same"):
            expected = sig.convolve(a, b, mode=mode)
            onp.testing.assert_allclose(signal.convolve(a, b, mode=mode), expected, atol=1e-12)
        A = onp.array([[4.0, 1.0], [1.0, 3.0]])
        X = sqrtm(A)
        onp.testing.assert_allclose(X @ X, A, rtol=1e-10)
        # d/dA sum(sqrtm(A)) against central differences
        g = grad(lambda A: np.sum(sqrtm(A)))(A)
        E = onp.zeros((2, 2)); E[0, 1] = 1e-6
        fd = (onp.sum(sqrtm(A + E)) - onp.sum(sqrtm(A - E))) / 2e-6
        onp.testing.assert_allclose(g[0, 1], fd, rtol=1e-5)
        B, Q = onp.array([[2.0, 0.5], [0.0, 1.0]]), onp.eye(2)
        Y = solve_sylvester(A, B, Q)
        onp.testing.assert_allclose(A @ Y + Y @ B, Q, atol=1e-12)
        print("ok")
        """
)


@functools.cache
def _shim_outputs() -> dict:
    """What each of SHIM_PROGRAMS and SHIM_SCIPY_EXTRAS prints (or its traceback), both run in one
    process with the shim on the path (a process each cost about a CPU-second more)."""
    code = textwrap.dedent(
        """
        import json, sys, traceback, contextlib, io
        out = {}
        for name, script in json.loads(sys.argv[1]).items():
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(script, name, "exec"), {"__name__": "__main__"})
                out[name] = buf.getvalue()
            except BaseException:
                out[name] = buf.getvalue() + traceback.format_exc()
        print(json.dumps(out))
        """
    )
    scripts = json.dumps({"programs": SHIM_PROGRAMS, "scipy_extras": SHIM_SCIPY_EXTRAS})
    return json.loads(_python(code, [SHIM, ROOT], args=["-c", code, scripts]).strip().splitlines()[-1])


def test_autograd_shim_runs_autograd_programs():
    out = _shim_outputs()["programs"]
    assert out.strip() == "ok", out


def test_autograd_shim_scipy_extras_match_scipy():
    out = _shim_outputs()["scipy_extras"]
    assert out.strip() == "ok", out


def test_jax_alias_runs_jax_example_libraries_unchanged(tmp_path):
    pytest.importorskip("jax", reason="the alias loads jax.example_libraries' source from the installed jax")
    prog = tmp_path / "prog.py"
    prog.write_text(
        textwrap.dedent(
            """
            import numpy.random as npr
            import jax, jax.numpy as jnp
            from jax import jit, grad, random
            from jax.example_libraries import optimizers, stax
            from jax.example_libraries.stax import Dense, Relu, LogSoftmax
            import funcgrad
            assert jax.grad is funcgrad.grad and jnp is funcgrad.numpy

            init_random_params, predict = stax.serial(Dense(32), Relu, Dense(10), LogSoftmax)

            def loss(params, batch):
                inputs, targets = batch
                return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

            rs = npr.RandomState(0)
            x = rs.randn(64, 20).astype("float32")
            y = jnp.eye(10)[rs.randint(0, 10, 64)]
            opt_init, opt_update, get_params = optimizers.momentum(0.1, mass=0.9)
            _, params = init_random_params(random.PRNGKey(0), (-1, 20))
            opt_state = opt_init(params)

            @jit
            def update(i, opt_state, batch):
                return opt_update(i, grad(loss)(get_params(opt_state), batch), opt_state)

            before = float(loss(params, (x, y)))
            for i in range(30):
                opt_state = update(i, opt_state, (x, y))
            after = float(loss(get_params(opt_state), (x, y)))
            assert after < 0.5 * before, (before, after)
            print("ok")
            """
        )
    )
    runner = os.path.join(ROOT, "tests", "integration", "suites", "examples", "runner.py")
    out = _python("", [ROOT], args=(runner, "--alias-jax", str(prog)))
    assert out.strip() == "ok"


CHEAP = [
    "jax/kernel_lsq",
    "autograd/define_gradient",
    "autograd/fixed_points",
    "autograd/rosenbrock",
    "autograd/tanh",
]


@pytest.mark.skipif(
    not (os.environ.get("FUNCGRAD_JAX_REPO") and os.environ.get("FUNCGRAD_AUTOGRAD_REPO")),
    reason="FUNCGRAD_JAX_REPO and FUNCGRAD_AUTOGRAD_REPO name checkouts of JAX and autograd",
)
def test_cheap_example_programs_run():
    cmd = [
        sys.executable,
        os.path.join(ROOT, "tests", "integration", "suites", "run_examples.py"),
        "--jax-repo",
        os.environ["FUNCGRAD_JAX_REPO"],
        "--autograd-repo",
        os.environ["FUNCGRAD_AUTOGRAD_REPO"],
        "--timeout",
        "120",
        "--only",
        *CHEAP,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert f"{len(CHEAP)} of {len(CHEAP)} programs run" in p.stdout, p.stdout
