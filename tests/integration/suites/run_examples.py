"""Run the example programs of JAX's and HIPS autograd's repositories, unchanged, and report which
run: on funcgrad (``import jax`` aliased to funcgrad by
tests/integration/suites/examples/jax_alias.py; ``import autograd`` is
tests/integration/suites/autograd_shim) or, for comparison, on the real jax / autograd.

    python tests/integration/suites/run_examples.py --jax-repo J --autograd-repo A \
        [--backend funcgrad|reference] [--timeout 60] [--only NAME ...]

J and A are checkouts (or bare git dirs: the files are read with ``git show HEAD:...``).
The programs' data downloads are replaced by random data of the same shapes (examples/fake_data.py;
``--data-fraction 0.02`` keeps 2% of the examples so that training loops reach their evaluations).
A program that finishes, or is still running without an error when --timeout seconds have passed
(most train for many epochs), counts as running, as in autograd's own check_examples_run.sh.
Plots go to matplotlib's Agg backend.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

JAX_EXAMPLES = [
    "advi",
    "differentially_private_sgd",
    "gaussian_process_regression",
    "kernel_lsq",
    "mnist_classifier",
    "mnist_classifier_fromscratch",
    "mnist_vae",
    "onnx2xla",
    "spmd_mnist_classifier_fromscratch",
]
AUTOGRAD_SKIP = {"__init__.py", "data.py", "data_mnist.py"}


def _git_export(repo: str, subdir: str, dest: str) -> None:
    """Copy ``subdir`` of a checkout, or of a bare git dir at HEAD, to ``dest``."""
    if os.path.isdir(os.path.join(repo, subdir)):
        shutil.copytree(os.path.join(repo, subdir), dest)
        return
    os.makedirs(dest)
    archive = subprocess.run(
        ["git", "--git-dir", repo, "archive", "HEAD", subdir], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "--strip-components=1", "-C", dest], input=archive.stdout, check=True)


def _fake_data_source() -> str:
    with open(os.path.join(HERE, "examples", "fake_data.py")) as f:
        return f.read()


def _run(cmd, cwd, env, timeout):
    start = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:

        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")

        return "runs (stopped at timeout)", time.time() - start, text(e.stderr) + text(e.stdout)
    status = "runs (finished)" if p.returncode == 0 else "FAILS"
    return status, time.time() - start, p.stderr + p.stdout


def _last_error(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "Exception" in ln:
            return ln.strip()[:200]
    return lines[-1].strip()[:200] if lines else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jax-repo")
    ap.add_argument("--autograd-repo")
    ap.add_argument("--backend", choices=("funcgrad", "reference"), default="funcgrad")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--data-fraction", type=float, default=1.0, help="share of MNIST's examples to fake")
    ap.add_argument("--extra-path", default="", help="more sys.path entries (e.g. absl-py, dp_accounting)")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="fg-examples-")
    env = dict(
        os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore", FAKE_DATA_FRACTION=str(args.data_fraction)
    )
    paths = [p for p in args.extra_path.split(os.pathsep) if p]
    runner = [sys.executable, os.path.join(HERE, "examples", "runner.py")]
    jobs = []
    if args.jax_repo:
        jdir = os.path.join(work, "jax")
        _git_export(args.jax_repo, "examples", os.path.join(jdir, "examples"))
        with open(os.path.join(jdir, "examples", "datasets.py"), "w") as f:
            f.write(_fake_data_source())
        jenv = dict(env, PYTHONPATH=os.pathsep.join([ROOT, *paths]))
        alias = ["--alias-jax"] if args.backend == "funcgrad" else []
        for name in JAX_EXAMPLES:
            jobs.append((f"jax/{name}", runner + alias + ["-m", f"examples.{name}"], jdir, jenv))
    if args.autograd_repo:
        adir = os.path.join(work, "autograd")
        _git_export(args.autograd_repo, "examples", adir)
        with open(os.path.join(adir, "data_mnist.py"), "w") as f:
            f.write(
                _fake_data_source() + "\n\ndef mnist():  # autograd's data_mnist.mnist: the raw arrays\n"
                "    return mnist_raw()\n"
            )
        shim = [os.path.join(HERE, "autograd_shim"), ROOT] if args.backend == "funcgrad" else []
        aenv = dict(env, PYTHONPATH=os.pathsep.join([*shim, *paths]))
        names = sorted(f for f in os.listdir(adir) if f.endswith(".py") and f not in AUTOGRAD_SKIP)
        names += ["fluidsim/fluidsim.py", "fluidsim/wing.py"]
        for name in names:
            jobs.append(
                (
                    f"autograd/{name[:-3]}",
                    runner + [os.path.join(adir, name)],
                    os.path.dirname(os.path.join(adir, name)),
                    aenv,
                )
            )
    if args.only:
        jobs = [j for j in jobs if any(o in j[0] for o in args.only)]

    ok = 0
    print(f"backend: {args.backend}; timeout {args.timeout:.0f} s per program; work dir {work}", flush=True)
    for label, cmd, cwd, jenv in jobs:
        status, secs, out = _run(cmd, cwd, jenv, args.timeout)
        ok += status.startswith("runs")
        if status.startswith("runs"):
            lines = [ln for ln in out.strip().splitlines() if ln.strip()]
            detail = f"  last output: {lines[-1].strip()[:90]}" if lines else ""
        else:
            detail = "  " + _last_error(out)
        print(f"{label:48s} {status:26s} {secs:6.1f} s{detail}", flush=True)
    print(f"{ok} of {len(jobs)} programs run on {args.backend}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
