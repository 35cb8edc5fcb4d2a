"""Dense linear algebra benchmarks: funcgrad vs jax, torch (eager), HIPS autograd (eager) and
NumPy by hand, medians of repeats after warm-up.

Run: ``python bench/bench_linalg.py`` (``--quick`` for fewer rounds; ``--cases a,b`` to pick).
Cases (goals from issue 12):

- ``gp``: Gaussian-process negative log marginal likelihood, 500 points in 2-D, RBF kernel with
  3 hyperparameters (log length scale, log signal and noise variances), Cholesky + triangular
  solves + log-det, float64: steady ``jit(value_and_grad)`` (goal <= 1.0x jax; torch, autograd
  and NumPy-by-hand for reference);
- ``gp_first``: the first ``jit(value_and_grad)`` call in a fresh process, compile included
  (goal <= 1.0x jax);
- ``gp_eager``: the same ``value_and_grad`` without ``jit`` (torch: ``backward()``, autograd),
  steady state (goal <= 1.0x torch's eager time);
- ``solve``: ``jit(solve)`` of a 300x300 float64 system, steady (goal <= 1.0x jax; NumPy for
  reference); ``solve_first``: its first call, compile included (goal <= 1.2x jax);
  ``solve_eager``: eager ``solve`` (goal <= 1.5x NumPy);
- ``eigh_grad``: ``jit(grad(sum of the 3 smallest eigenvalues))`` of 200x200 (goal <= 1.1x jax);
- ``nuc_grad``: ``jit(grad(nuclear norm))`` of 100x100 via the SVD (goal <= 1.1x jax).

Every measurement runs in its own subprocess (one library per process) and the libraries take
turns (round-robin) so that load on the shared machine hits all of them alike; the reported number
is the median over rounds of each round's median. torch and autograd are skipped when missing.

``--single-thread`` runs every library on one thread (OpenBLAS, OpenMP, XLA's Eigen pool, torch):
on a loaded machine, idle BLAS threads spin-waiting for busy cores make multi-threaded timings of
the same LAPACK kernels vary tenfold between runs, so this is the setting that compares the
libraries' own work; it also pins each worker to one core. ``--cpu`` times each call by the
worker's CPU time (``time.process_time``, every thread of the process) instead of the wall clock:
with ``--single-thread`` on a loaded machine, the wall time counts the time a worker waited for a
core, the CPU time leaves it out (the first-call cases stay wall time).

Where the time goes (``--single-thread --cpu``, the shared 2-core machine at load 12-15):

- ``gp_eager`` (funcgrad 40-47 ms against torch's 35-41 ms in interleaved pairs of fresh
  processes): 23 ms are BLAS/LAPACK calls -- two 500x500 triangular solves with 500 right-hand
  sides in the Cholesky factor's backward rule (7-8 ms each), a 500^3 product (5 ms), the
  factorisation (2.3 ms) -- and 14 ms some 40 NumPy elementwise passes over 500x500 arrays. The
  gap is the BLAS: NumPy/SciPy's OpenBLAS runs ``dtrsm`` at half its ``dgemm`` rate (7.0-7.7 ms
  at n=500, ``dtrmm`` 3.8 ms), where torch's MKL solves the same system in 4.0 ms; XLA's
  triangular solve (Eigen, under ``jit``) takes 7-9 ms, and a recursive blocked solve (``dgemm``
  for the off-diagonal block) 9-11 ms, so neither replaces it. Session 8 (load 14-20): the
  second solve of that backward is a conjugated one, for which the eager solve copied the real
  factor through ``np.conj`` (0.3-0.8 ms, now skipped for real matrices); 1.11-1.16x torch in two
  runs. What is left needs a triangular product: the two solves share ``L^-1``, and LAPACK's
  ``dtrtri`` (3.1 ms) plus two ``dtrmm`` (2.8 ms each) would replace the two ``dtrsm`` (5.4-5.8 ms
  each) and ``dtrmm`` the backward's 500^3 ``L^T`` product (4.4 ms) -- a primitive JAX does not
  have, so not done; the ~25 elementwise passes are torch's count (the surface's symmetrisation
  ``(a + a^T) / 2`` and NOTE: [one triangle read] in ``primitives/linalg.py`` are JAX's semantics).
- ``eigh_grad``: funcgrad's optimised program is jax's with one product fewer (the backward
  ``V diag(g) V^T`` as one dot of a scaled ``V``; the forward's ``syevd`` call and its
  symmetrisation are the same HLO); the two measure level within this machine's noise (this
  script: 1.05-1.17x jax, 0.82-1.05x torch; 100-call medians in fresh processes, device or
  NumPy argument: 3.6-4.0 ms against jax's 3.6-3.9 ms).
- Session 9 (load 16-21): this script gave gp_eager 1.13x torch (29.3 against 26.0 ms) and
  eigh_grad 0.93x jax, 0.97x torch. The GP's two backward solves are 5.6 ms each of funcgrad's
  29 ms; every ``dtrsm`` variant was timed at n=500 with 500 right-hand sides (one thread):
  right-side solves 4.6-4.9 ms, left-side 5.2-5.5 (the eager solve of row-major operands already
  takes the right-side form, NOTE: [row-major BLAS operands]), NumPy's bundled OpenBLAS 0.3.31
  5.6 ms against SciPy's 0.3.30 5.4 ms, ``dgemm`` 4.4 ms, ``dtrmm`` 2.7 ms: no other route to
  the same solve is faster here. eigh_grad with funcgrad and jax in one process, calls
  interleaved (CPU time per call): a device-array argument 0.99-1.015x jax, a NumPy argument
  1.075-1.10x (funcgrad's synchronous CPU client runs the program on the calling thread, whose
  heap gives back ``syevd``'s workspace between calls: 15-40 page faults per call, none with
  ``FUNCGRAD_CPU_ASYNC_DISPATCH=1``).
- Session 10 (this script, load 1-16): gp_eager 0.80x, 0.90x and 0.82x torch in three runs
  (funcgrad 15.6-18.2 ms against torch's 19.6-20.6 ms); eigh_grad 0.99x and 1.09x jax. eigh_grad
  interleaved in one process, fresh processes (``time.process_time`` per call, 5 x 50 calls, load
  8-18): funcgrad 2.78-3.11 ms against jax's 2.85-3.15 ms, NumPy or device argument alike --
  except in some processes, where one state of glibc's heaps costs 200-440 page faults and
  0.6-0.8 ms a call (3.4-3.8 ms), with a NumPy argument or a device one (jax: none). strace of
  such a process: each call ``brk`` grows and shrinks the main heap and a PJRT worker thread's
  heap is trimmed by ``madvise(1.8 MB, MADV_DONTNEED)`` (XLA's per-call buffers and ``syevd``'s
  workspace freed into a heap whose top then passes glibc's trim threshold). The NumPy argument
  is passed zero-copy by jaxlib's dispatcher already (a misaligned one is copied on a worker
  thread, and the program runs there); ``funcgrad_malloc_tuning`` (or
  ``MALLOC_TRIM_THRESHOLD_``) removes the faults (3.0-3.1 ms), a process-wide setting that
  stays opt-in (NOTE: [eager allocations]).
- Session 21 (AMD Zen 4, load 2-6): gp_eager 1.26x torch (33.95 against 26.93 ms) -> 0.90x, 1.05x,
  0.95x, 1.00x in four runs (24.7-28.0 ms against 25.4-27.4). jnp.linalg.cholesky is jitted, so
  the cached grad held jit calls, and such a program ran equation by equation instead of in the
  NumPy interpreter: no buffer reuse or pool, every 500x500 temporary page-faulted each call
  (18 products ~10 ms); NOTE: [compiled calls in cached programs] in funcgrad/kernel/numpy_plan.py.
  What is left is BLAS at torch's rate: the backward's compiled program (two ``dtrsm`` 4.5 ms each,
  torch's 4.5; a 500^3 product 5.4, torch's 6.0) 16-18 ms, the factorisation 2.1 (torch 2.4).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # first line: "first call" cases count from here only the call itself

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from _timing import block as _block  # noqa: E402
from _timing import fmt  # noqa: E402
from _timing import median_time as _median_time  # noqa: E402


def median_time(fn, **kw):
    """``_timing.median_time`` with this run's clock: the process's CPU time under ``--cpu``
    (environment ``BENCH_CLOCK=cpu`` in the worker), else wall time."""
    clock = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else None
    return _median_time(fn, clock=clock, **kw)


N_GP, N_SOLVE, N_EIGH, N_SVD = 500, 300, 200, 100


def _gp_data():
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (N_GP, 2))
    y = np.sin(x[:, 0]) * np.cos(x[:, 1]) + 0.1 * rng.standard_normal(N_GP)
    sqdist = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    theta = np.array([0.0, 0.0, -2.0])  # log length scale, log signal variance, log noise variance
    return sqdist, y, theta


def _gp_nlml(np_, cholesky, solve_tri):
    """The NLML written once for the array libraries with NumPy's API."""

    def nlml(theta, sqdist, y):
        ell2, sf2, sn2 = np_.exp(2 * theta[0]), np_.exp(theta[1]), np_.exp(theta[2])
        k = sf2 * np_.exp(-0.5 * sqdist / ell2) + sn2 * np_.eye(y.shape[0])
        chol = cholesky(k)
        z = solve_tri(chol, y, lower=True)
        return (
            0.5 * np_.sum(z * z)
            + np_.sum(np_.log(np_.diagonal(chol, 0, -1, -2)))
            + 0.5 * y.shape[0] * np_.log(2 * np_.pi)
        )

    return nlml


def _array_lib(lib):
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as jsl

        jax.config.update("jax_enable_x64", True)
        return dict(np=jnp, jit=jax.jit, grad=jax.grad, vg=jax.value_and_grad, sl=jsl)
    import funcgrad
    import funcgrad.numpy as fnp
    import funcgrad.scipy.linalg as fsl

    return dict(np=fnp, jit=funcgrad.jit, grad=funcgrad.grad, vg=funcgrad.value_and_grad, sl=fsl)


# ----------------------------------------------------------------------------------------------
# Workers (one library per process)


def work_gp(lib, repeats, first=False, eager=False):
    import numpy as np

    sqdist, y, theta = _gp_data()
    if lib in ("jax", "funcgrad"):
        L = _array_lib(lib)
        f = L["vg"](_gp_nlml(L["np"], L["np"].linalg.cholesky, L["sl"].solve_triangular))
        f = f if eager else L["jit"](f)
        if first:
            t0 = time.perf_counter()
            _block(f(theta, sqdist, y))
            return time.perf_counter() - t0
        return median_time(lambda: _block(f(theta, sqdist, y)), warmup=3, repeats=repeats)
    if lib == "torch":
        import torch

        torch.set_default_dtype(torch.float64)
        _torch_threads(torch)
        tsq, ty = torch.tensor(sqdist), torch.tensor(y)

        def step():
            th = torch.tensor(theta, requires_grad=True)
            nlml = _gp_nlml(
                _TorchNp(), torch.linalg.cholesky,
                lambda a, b, lower: torch.linalg.solve_triangular(a, b[:, None], upper=not lower)[:, 0],
            )(th, tsq, ty)  # fmt: skip
            nlml.backward()
            return nlml.item(), th.grad.numpy()

        return median_time(step, warmup=3, repeats=repeats)
    if lib == "autograd":
        import autograd
        import autograd.numpy as anp
        import autograd.scipy.linalg as asl

        f = autograd.value_and_grad(_gp_nlml(anp, anp.linalg.cholesky, asl.solve_triangular))
        return median_time(lambda: f(theta, sqdist, y), warmup=2, repeats=repeats)
    import scipy.linalg as sl  # NumPy by hand: the value and the gradient 0.5 tr((K^-1 - a a^T) dK)

    def step():
        ell2, sf2, sn2 = np.exp(2 * theta[0]), np.exp(theta[1]), np.exp(theta[2])
        kf = sf2 * np.exp(-0.5 * sqdist / ell2)
        k = kf + sn2 * np.eye(N_GP)
        c = sl.cho_factor(k, lower=True)
        alpha = sl.cho_solve(c, y)
        value = 0.5 * y @ alpha + np.log(np.diag(c[0])).sum() + 0.5 * N_GP * np.log(2 * np.pi)
        w = sl.cho_solve(c, np.eye(N_GP)) - np.outer(alpha, alpha)
        grads = [0.5 * np.sum(w * kf * sqdist / ell2), 0.5 * np.sum(w * kf), 0.5 * sn2 * np.trace(w)]
        return value, grads

    return median_time(step, warmup=2, repeats=repeats)


def _torch_threads(torch):
    if os.environ.get("OMP_NUM_THREADS") == "1":
        torch.set_num_threads(1)


class _TorchNp:
    """The few NumPy names the NLML uses, for torch tensors."""

    pi = 3.141592653589793

    def __getattr__(self, name):
        import torch

        return {
            "exp": lambda x: torch.exp(torch.as_tensor(x)),
            "log": lambda x: torch.log(torch.as_tensor(x, dtype=torch.float64)),
            "eye": torch.eye,
            "sum": torch.sum,
            "diagonal": torch.diagonal,
        }[name]


def _system():
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.standard_normal((N_SOLVE, N_SOLVE)) + N_SOLVE**0.5 * np.eye(N_SOLVE), rng.standard_normal(
        N_SOLVE
    )


def work_solve(lib, repeats, mode):
    import numpy as np

    a, b = _system()
    if lib == "numpy":
        return median_time(lambda: np.linalg.solve(a, b), warmup=3, repeats=repeats, inner=5)
    if lib == "torch":
        import torch

        _torch_threads(torch)
        ta, tb = torch.tensor(a), torch.tensor(b)
        return median_time(lambda: torch.linalg.solve(ta, tb), warmup=3, repeats=repeats, inner=5)
    L = _array_lib(lib)
    solve = L["np"].linalg.solve
    if mode == "eager":
        return median_time(lambda: _block(solve(a, b)), warmup=3, repeats=repeats, inner=5)
    f = L["jit"](solve)
    if mode == "first":
        t0 = time.perf_counter()
        _block(f(a, b))
        return time.perf_counter() - t0
    return median_time(lambda: _block(f(a, b)), warmup=3, repeats=repeats, inner=5)


def _symmetric(n):
    import numpy as np

    x = np.random.default_rng(0).standard_normal((n, n))
    return (x + x.T) / 2


def work_spectral(lib, repeats, case):
    import numpy as np

    n = N_EIGH if case == "eigh_grad" else N_SVD
    a = _symmetric(n) if case == "eigh_grad" else np.random.default_rng(1).standard_normal((n, n))
    if lib == "torch":
        import torch

        _torch_threads(torch)

        def step():
            t = torch.tensor(a, requires_grad=True)
            out = (
                torch.linalg.eigvalsh(t)[:3].sum()
                if case == "eigh_grad"
                else torch.linalg.matrix_norm(t, "nuc")
            )
            out.backward()
            return t.grad.numpy()

        return median_time(step, warmup=2, repeats=repeats)
    if lib == "autograd":
        import autograd
        import autograd.numpy as anp

        if case == "eigh_grad":
            g = autograd.grad(lambda m: anp.sum(anp.linalg.eigh(m)[0][:3]))
        else:
            g = autograd.grad(lambda m: anp.linalg.norm(m, "nuc"))
        return median_time(lambda: g(a), warmup=2, repeats=repeats)
    L = _array_lib(lib)
    jnp = L["np"]
    if case == "eigh_grad":
        g = L["jit"](L["grad"](lambda m: jnp.sum(jnp.linalg.eigvalsh(m)[:3])))
    else:
        g = L["jit"](L["grad"](lambda m: jnp.linalg.norm(m, "nuc")))
    return median_time(lambda: _block(g(a)), warmup=3, repeats=repeats)


def worker_main(lib, case, repeats):
    if case in ("gp", "gp_first", "gp_eager"):
        return work_gp(lib, repeats, first=case == "gp_first", eager=case == "gp_eager")
    if case.startswith("solve"):
        return work_solve(
            lib, repeats, {"solve": "steady", "solve_first": "first", "solve_eager": "eager"}[case]
        )
    return work_spectral(lib, repeats, case)


# ----------------------------------------------------------------------------------------------
# Driver


CASES = {
    # case: (title, libraries, goal as (reference library, max ratio))
    "gp": (
        "GP NLML jit(value_and_grad) n=500",
        ["funcgrad", "jax", "torch", "autograd", "numpy"],
        ("jax", 1.0),
    ),
    "gp_first": ("GP NLML first call (compile)", ["funcgrad", "jax"], ("jax", 1.0)),
    "gp_eager": (
        "GP NLML eager value_and_grad n=500",
        ["funcgrad", "jax", "torch", "autograd"],
        ("torch", 1.0),
    ),
    "solve": ("jit(solve) 300x300 steady", ["funcgrad", "jax", "numpy"], ("jax", 1.0)),
    "solve_first": ("jit(solve) 300x300 first call", ["funcgrad", "jax"], ("jax", 1.2)),
    "solve_eager": ("eager solve 300x300", ["funcgrad", "numpy", "torch"], ("numpy", 1.5)),
    "eigh_grad": ("jit(grad(3 smallest eigh)) 200", ["funcgrad", "jax", "torch", "autograd"], ("jax", 1.1)),
    "nuc_grad": ("jit(grad(nuclear norm)) 100", ["funcgrad", "jax", "torch", "autograd"], ("jax", 1.1)),
}


def _available(lib):
    return lib in ("funcgrad", "numpy") or importlib.util.find_spec(lib) is not None


SINGLE_THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
}


def run_worker(lib, case, repeats, single_thread=False, cpu=False):
    env = {k: v for k, v in os.environ.items() if k != "FUNCGRAD_COMPILATION_CACHE_DIR"}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if single_thread:
        env.update(SINGLE_THREAD_ENV)
    if cpu:
        env["BENCH_CLOCK"] = "cpu"
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", lib, case, str(repeats)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{lib}/{case} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument(
        "--single-thread", action="store_true", help="one thread per library (see the module docs)"
    )
    ap.add_argument("--cpu", action="store_true", help="CPU time per call instead of wall time")
    args = ap.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 7 if args.quick else 15
    results = {}
    for case in args.cases.split(","):
        libs = [lib for lib in CASES[case][1] if _available(lib)]
        samples = {lib: [] for lib in libs}
        for _ in range(rounds):
            for lib in libs:
                samples[lib].append(run_worker(lib, case, repeats, args.single_thread, args.cpu))
        results[case] = {lib: statistics.median(v) for lib, v in samples.items()}
        print(f"  {case}: " + ", ".join(f"{k}={fmt(v)}" for k, v in results[case].items()), file=sys.stderr)
    report(results, "CPU time" if args.cpu else "wall time")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def report(results, clock="wall time"):
    print(f"\n(median {clock} per call)")
    print(f"\n{'case':<36} {'library':<10} {'median':>10} {'funcgrad / this':>16}  goal")
    print("-" * 96)
    for case, r in results.items():
        title, _, (ref, goal) = CASES[case]
        fg = r["funcgrad"]
        for lib, t in r.items():
            ratio = "" if lib == "funcgrad" else f"{fg / t:.2f}x"
            mark = f"<= {goal}x {ref}" if lib == ref else ""
            print(f"{title if lib == 'funcgrad' else '':<36} {lib:<10} {fmt(t):>10} {ratio:>16}  {mark}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        if os.environ.get("OMP_NUM_THREADS") == "1" and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # --single-thread: one core
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps({"seconds": worker_main(lib, case, repeats)}))
    else:
        main()
