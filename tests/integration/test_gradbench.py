"""The funcgrad GradBench tool (bench/gradbench): each eval's module answers a small input correctly.

Two kinds of check:

- against independent oracles written here (NumPy closed forms, float64 finite differences, the
  evals' published answers for particle and saddle), needing nothing outside the repository;
- against GradBench's own validation (the eval program's ``expect``, which runs the C++ ``manual``
  tool, compared by GradBench's ``mismatch``), when a GradBench checkout with built ``manual``
  binaries is named by ``GRADBENCH_DIR`` and its Python package is importable (see
  bench/gradbench/README.md). Those are marked slow, and opt-in: a checkout that merely happens to
  lie somewhere on the machine is not used, because the suite must give the same answer on a
  clean machine as here.

Heavy compiles (gmm, lstm, ba, ht, ode, particle, saddle) are marked slow.
"""

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "gradbench"))


def tool(name):
    return importlib.import_module(f"funcgrad_tool.{name}")


def rng():
    return np.random.default_rng(31337)


# ---------------------------------------------------------------------------------------------
# Oracles (fast tier)


def test_hello():
    m = tool("hello")
    assert m.square(3.0) == 9.0
    assert m.double(3.0) == 6.0


def test_evaluate_times_each_run_and_waits():
    m = tool("lse")
    reply = m.primal.evaluate({"x": [0.0, 1.0], "min_runs": 3, "min_seconds": 0})
    assert reply["success"] and len(reply["timings"]) == 3
    assert all(t["name"] == "evaluate" and t["nanoseconds"] > 0 for t in reply["timings"])
    assert reply["output"] == pytest.approx(np.log(1 + np.e))


def test_lse():
    x = rng().uniform(-100, 100, size=50)
    m = tool("lse")
    mx = x.max()
    ref = mx + np.log(np.sum(np.exp(x - mx)))
    assert m.primal({"x": x.tolist()}) == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(m.gradient({"x": x.tolist()}), np.exp(x - ref), rtol=1e-10, atol=1e-300)


def test_llsq():
    n, x = 40, rng().random(8)
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    P = t[:, None] ** np.arange(8)
    r = np.sign(t) - P @ x
    m = tool("llsq")
    assert m.primal({"x": x.tolist(), "n": n}) == pytest.approx(0.5 * r @ r, rel=1e-12)
    np.testing.assert_allclose(m.gradient({"x": x.tolist(), "n": n}), -P.T @ r, rtol=1e-10)


def test_kmeans():
    points = rng().random((60, 3))
    centroids = points[-4:]
    d2 = ((points[:, None, :] - centroids[None]) ** 2).sum(-1)
    nearest = d2.argmin(1)
    m = tool("kmeans")
    inp = {"points": points.tolist(), "centroids": centroids.tolist()}
    assert m.cost(inp) == pytest.approx(d2.min(1).sum(), rel=1e-12)
    # grad_k = 2 sum (c_k - p), Hessian diagonal 2 count_k: the direction is c_k - mean(p)
    expected = np.stack([centroids[k] - points[nearest == k].mean(0) for k in range(4)])
    np.testing.assert_allclose(m.dir(inp), expected, rtol=1e-10)


def test_det():
    A = rng().random((6, 6))
    m = tool("det")
    inp = {"A": A.ravel().tolist(), "ell": 6}
    assert m.primal(inp) == pytest.approx(np.linalg.det(A), rel=1e-10)
    cofactors = np.linalg.det(A) * np.linalg.inv(A).T
    np.testing.assert_allclose(np.reshape(m.gradient(inp), (6, 6)), cofactors, rtol=1e-9)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of a scalar NumPy function, float64."""
    x = np.asarray(x, np.float64)
    g = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        g[i] = (f((x.ravel() + e).reshape(x.shape)) - f((x.ravel() - e).reshape(x.shape))) / (2 * eps)
    return g.reshape(x.shape)


def ode_numpy(x, s):
    h = 2.0 / s

    def rhs(y):
        return x * np.concatenate([[1.0], y[:-1]])

    y = np.zeros_like(x)
    for _ in range(s):
        k1 = rhs(y)
        k2 = rhs(y + h / 2 * k1)
        k3 = rhs(y + h / 2 * k2)
        k4 = rhs(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.mark.slow
def test_ode():
    x = rng().random(7)
    m = tool("ode")
    # The tool computes in float32, as GradBench's jax tool does: float32 tolerances.
    np.testing.assert_allclose(m.primal({"x": x.tolist(), "s": 5}), ode_numpy(x, 5), rtol=1e-5)
    expected = fd_grad(lambda v: ode_numpy(v, 5)[-1], x)
    np.testing.assert_allclose(m.gradient({"x": x.tolist(), "s": 5}), expected, rtol=1e-5, atol=1e-7)


def gmm_numpy(alpha, mu, q, l, x, m, gamma):
    """The GMM log posterior written directly (per point, per component)."""
    from scipy.special import logsumexp as lse
    from scipy.special import multigammaln

    k, d = mu.shape
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        terms = []
        for c in range(k):
            Q = np.diag(np.exp(q[c]))
            ii = 0
            for j in range(d):
                for r in range(j + 1, d):
                    Q[r, j] = l[c, ii]
                    ii += 1
            v = Q @ (x[i] - mu[c])
            terms.append(alpha[c] + q[c].sum() - 0.5 * v @ v)
        total += lse(terms)
    wn = d + m + 1
    prior = sum(
        0.5 * gamma**2 * (np.sum(np.exp(q[c]) ** 2) + np.sum(l[c] ** 2)) - m * q[c].sum() for c in range(k)
    )
    const = -n * d * 0.5 * np.log(2 * np.pi)
    c_w = wn * d * np.log(gamma / np.sqrt(2))
    return const + total - n * lse(alpha) - prior + k * (c_w - multigammaln(0.5 * wn, d))


@pytest.mark.slow
def test_gmm():
    g = rng()
    d, k, n = 3, 2, 5
    p = {
        "alpha": g.normal(size=k),
        "mu": g.uniform(size=(k, d)),
        "q": g.normal(size=(k, d)),
        "l": g.normal(size=(k, d * (d - 1) // 2)),
    }
    x = g.normal(size=(n, d))
    inp = {"d": d, "k": k, "n": n, "x": x.tolist(), "m": 0, "gamma": 1.0} | {
        a: v.tolist() for a, v in p.items()
    }
    m = tool("gmm")
    assert m.objective(inp) == pytest.approx(gmm_numpy(*p.values(), x, 0, 1.0), rel=1e-10)
    out = m.jacobian(inp)
    for name in p:

        def f(v, name=name):
            return gmm_numpy(*[v if a == name else p[a] for a in p], x, 0, 1.0)

        np.testing.assert_allclose(out[name], fd_grad(f, p[name]), rtol=1e-5, atol=1e-6)


def lstm_numpy(main, extra, state, seq):
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    b = state.shape[1]
    state = state.copy()
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t] * extra[0]
        for i in range(main.shape[0] // 2):
            gates = np.concatenate([x, state[2 * i], x, state[2 * i]]) * main[2 * i] + main[2 * i + 1]
            c = state[2 * i + 1] * sig(gates[:b]) + sig(gates[b : 2 * b]) * np.tanh(gates[3 * b :])
            h = sig(gates[2 * b : 3 * b]) * np.tanh(c)
            state[2 * i], state[2 * i + 1] = h, c
            x = h
        y = x * extra[1] + extra[2]
        total += np.sum(seq[t + 1] * (y - np.log(2 + np.sum(np.exp(y)))))
    return -total / ((seq.shape[0] - 1) * b)


@pytest.mark.slow
def test_lstm():
    g = rng()
    layers, b, c = 2, 3, 5
    main, extra = g.random((2 * layers, 4 * b)), g.random((3, b))
    state, seq = g.random((2 * layers, b)), (g.random((c, b)) > 0.5).astype(float)
    inp = {
        "main_params": main.tolist(),
        "extra_params": extra.tolist(),
        "state": state.tolist(),
        "sequence": seq.tolist(),
    }
    m = tool("lstm")
    assert m.objective(inp) == pytest.approx(lstm_numpy(main, extra, state, seq), rel=1e-12)
    expected = np.concatenate(
        [
            fd_grad(lambda v: lstm_numpy(v, extra, state, seq), main).ravel(),
            fd_grad(lambda v: lstm_numpy(main, v, state, seq), extra).ravel(),
        ]
    )
    np.testing.assert_allclose(m.jacobian(inp), expected, rtol=1e-6, atol=1e-8)


def ba_residual_numpy(cam, X, w, feat):
    rot, C = cam[0:3], cam[3:6]
    theta = np.linalg.norm(rot)
    Xc = X - C
    k = rot / theta
    Xr = Xc * np.cos(theta) + np.cross(k, Xc) * np.sin(theta) + k * (k @ Xc) * (1 - np.cos(theta))
    p = Xr[:2] / Xr[2]
    rsq = p @ p
    return w * (p * (1 + cam[9] * rsq + cam[10] * rsq * rsq) * cam[6] + cam[7:9] - feat)


@pytest.mark.slow
def test_ba():
    g = rng()
    cam = np.concatenate([g.normal(size=3) * 0.1, g.normal(size=3), [500.0], g.normal(size=2), [1e-3, 1e-6]])
    X = g.normal(size=3) + np.array([0, 0, 10.0])
    inp = {"n": 3, "m": 4, "p": 5, "cam": cam.tolist(), "x": X.tolist(), "w": 0.8, "feat": [1.0, 2.0]}
    m = tool("ba")
    out = m.objective(inp)
    r = ba_residual_numpy(cam, X, 0.8, np.array([1.0, 2.0]))
    np.testing.assert_allclose(out["reproj_error"]["elements"], r, rtol=1e-12)
    assert out["reproj_error"]["repeated"] == 5 and out["w_err"]["repeated"] == 5
    assert out["w_err"]["element"] == pytest.approx(1 - 0.8 * 0.8, rel=1e-15)
    J = m.jacobian(inp)
    params = np.concatenate([cam, X, [0.8]])
    for row in range(2):

        def f(v, row=row):
            return ba_residual_numpy(v[:11], v[11:14], v[14], np.array([1.0, 2.0]))[row]

        np.testing.assert_allclose(
            J["vals"][15 * row : 15 * row + 15], fd_grad(f, params), rtol=1e-5, atol=1e-7
        )
    # compressed rows: observation 0 reads camera 0 (cols 0..10), point 0 (33..35), weight 0 (45)
    assert J["cols"][:15] == list(range(11)) + [33, 34, 35, 45]
    assert J["rows"][:3] == [0, 15, 30] and J["rows"][-1] == 31 * 5
    assert J["cols"][-1] == 11 * 3 + 3 * 4 + 4 and J["vals"][-1] == pytest.approx(-1.6)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["rr", "rf", "fr", "ff"])
def test_particle(variant):
    # the eval's published answer (GradBench validates against this constant)
    assert getattr(tool("particle"), variant)({"w": 0.0}) == pytest.approx(0.2071918746486116, rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["rr", "rf", "fr", "ff"])
def test_saddle(variant):
    out = getattr(tool("saddle"), variant)({"start": [1.0, 1.0]})
    np.testing.assert_allclose(out, [8.246324826140356e-06] * 4, rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# GradBench's own validation (needs a checkout with manual built)

GRADBENCH = os.environ.get("GRADBENCH_DIR", "")


def _manual_built(module):
    return bool(GRADBENCH) and os.path.exists(os.path.join(GRADBENCH, "tools/manual/bin", module))


def _gradbench_importable():
    probe = subprocess.run(
        [sys.executable, "-c", "import gradbench.eval"], cwd=GRADBENCH, capture_output=True
    )
    return probe.returncode == 0


SMALL_INPUTS = {
    # eval: python snippet (run in the checkout) printing one small input as JSON
    "gmm": "from gradbench.evals.gmm.run import generate; "
    "print(json.dumps(generate(seed=1, d=3, k=4, n=20, m=0, gamma=1.0)))",
    "ba": "from gradbench.evals.ba.run import parse; from pathlib import Path; "
    "print(json.dumps(parse(next(Path('evals/ba/data').glob('ba1_*.txt')))))",
    "ht": "from gradbench.evals.ht import io; from pathlib import Path; "
    "d = Path('evals/ht/data/complicated_small'); "
    "h = io.read_hand_instance(d / 'model', next(d.glob('hand1_*.txt')), True); "
    "print(json.dumps(h.to_dict()))",
    "lstm": "import numpy as np; from gradbench.evals.lstm.run import gen_lstm; np.random.seed(1); "
    "print(json.dumps(gen_lstm('the quick brown fox jumps over the lazy dog' * 3, 2, 64).to_dict()))",
    "kmeans": "import numpy as np; p = np.random.default_rng(1).random((200, 4)).tolist(); "
    "print(json.dumps({'points': p, 'centroids': p[-10:]}))",
    "llsq": "import numpy as np; x = np.random.default_rng(1).random(16).tolist(); "
    "print(json.dumps({'x': x, 'n': 64}))",
    "lse": "import numpy as np; x = np.random.default_rng(1).random(1000).tolist(); "
    "print(json.dumps({'x': x}))",
    "ode": "import numpy as np; x = np.random.default_rng(1).random(100).tolist(); "
    "print(json.dumps({'x': x, 's': 10}))",
    "det": "import numpy as np; a = np.random.default_rng(1).random(49).tolist(); "
    "print(json.dumps({'A': a, 'ell': 7}))",
}
FUNCTIONS = {
    "gmm": ("objective", "jacobian"),
    "ba": ("objective", "jacobian"),
    "ht": ("objective", "jacobian"),
    "lstm": ("objective", "jacobian"),
    "kmeans": ("cost", "dir"),
    "llsq": ("primal", "gradient"),
    "lse": ("primal", "gradient"),
    "ode": ("primal", "gradient"),
    "det": ("primal", "gradient"),
}

VALIDATE = """
import json, sys
from gradbench.eval import mismatch
from importlib import import_module
ev, function = sys.argv[1], sys.argv[2]
data = json.load(sys.stdin)
expect = import_module(f"gradbench.evals.{ev}.run").expect
analysis = mismatch(expect)(function, data["input"], data["output"])
print(json.dumps({"valid": analysis.valid, "error": analysis.error}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("ev", sorted(SMALL_INPUTS))
def test_validates_against_gradbench(ev):
    if not _manual_built(ev):
        pytest.skip(f"no GradBench checkout with tools/manual/bin/{ev} named by GRADBENCH_DIR")
    if not _gradbench_importable():
        pytest.skip(f"GRADBENCH_DIR={GRADBENCH}: its Python package does not import here (pip install -e it)")
    py = sys.executable
    make = subprocess.run(
        [py, "-c", "import json; " + SMALL_INPUTS[ev]],
        cwd=GRADBENCH,
        capture_output=True,
        text=True,
        check=True,
    )
    inp = json.loads(make.stdout)
    for function in FUNCTIONS[ev]:
        output = getattr(tool(ev), function)(inp)
        check = subprocess.run(
            [py, "-c", VALIDATE, ev, function],
            cwd=GRADBENCH,
            input=json.dumps({"input": inp, "output": output}),
            capture_output=True,
            text=True,
            check=True,
        )
        verdict = json.loads(check.stdout)
        assert verdict["valid"], f"{ev}.{function}: {verdict['error']}"


@pytest.mark.slow
def test_server_speaks_the_protocol():
    """start / define / evaluate / analysis through the real entry point, one line each."""
    messages = [
        {"id": 0, "kind": "start", "eval": "hello"},
        {"id": 1, "kind": "define", "module": "hello"},
        {"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 3.0},
        {"id": 3, "kind": "analysis", "of": 2, "valid": True},
        {"id": 4, "kind": "define", "module": "no_such_eval"},
    ]
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench/gradbench/tool.py")],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 1, 2, 3, 4]
    assert replies[0]["tool"] == "funcgrad" and replies[1]["success"]
    assert replies[2]["output"] == 9.0 and replies[2]["timings"][0]["name"] == "evaluate"
    assert replies[4]["success"] is False and "no_such_eval" in replies[4]["error"]


def test_bounded_solver_reports_nonconvergence_as_nan():
    """A reverse-differentiable (bounded) solve that hits its bound must not return a wrong point."""
    import funcgrad.numpy as jnp

    solver = tool("solver")
    f = lambda x: jnp.sum((x - 3.0) ** 2)  # noqa: E731
    x0 = jnp.array([0.0, 0.0])
    vg = solver.value_and_grad_reverse
    assert np.isnan(np.asarray(solver.argmin(vg, f, x0, max_steps=3))).all()
    np.testing.assert_allclose(solver.argmin(vg, f, x0, max_steps=5000), [3.0, 3.0], atol=1e-4)
    # the forward-mode value and gradient: f and its gradient 2 (x - 3) at x = (1, 2)
    val, grad = solver.value_and_grad_forward(f)(jnp.array([1.0, 2.0]))
    assert float(val) == 5.0 and np.asarray(grad).tolist() == [-4.0, -2.0]
