"""Run JAX's own test files (``tests/*_test.py`` of the JAX repository at a tag) on jax and on
funcgrad, side by side, and list every test that passes on jax and not on funcgrad.

Each file runs in its own pytest process per side (``--timeout`` seconds), with the same
``JAX_NUM_GENERATED_CASES`` (JAX's parameterized tests sample that many cases with a fixed seed, so
a test name is the same case on both sides) and the same ``JAX_ENABLE_X64``. The funcgrad side
loads ``jaxshim_plugin`` (this folder on ``PYTHONPATH``): the alias ``funcgrad.as_jax`` plus the
``jax._src`` modules the files import (``jaxshim/``). Outcomes are read from JUnit XML; a side that
runs past ``--timeout`` gets SIGINT (pytest then writes the XML of the tests it finished), and if no
XML comes, the outcomes are read from the per-test lines of its log (``<workdir>/<file>.<side>.log``).
A file that does not load on funcgrad (one error, ``::<file>``) runs whole on jax.

    python tests/integration/suites/jax_tests/run_jax_tests.py --jax-repo /work/.mirror/jax-ml+jax/repo \\
        [--tag jax-v0.10.2] [--files lax_numpy_operators_test ...] [--x64] [--cases 10] \\
        [--side both|jax|funcgrad] [--timeout 900] [-k EXPR] [--out report.json]

``--rerun-failed`` (with ``--side funcgrad``) reruns on funcgrad only the tests that did not pass on
it in the earlier ``--out`` and keeps the other outcomes: a cheap "after fixes" count (a file that
did not load then runs whole).
``-k EXPR`` runs only the tests pytest's ``-k`` selects (a piece of a big file such as
lax_numpy_test); the report keeps the piece under its own key.

With ``--side funcgrad`` the jax side is read from an earlier ``--out`` report (same file, cases
and x64 setting), so that rerunning funcgrad after a fix does not rerun jax.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_FILES = [
    "lax_numpy_operators_test", "lax_numpy_reducers_test", "lax_autodiff_test", "lax_numpy_test",
    "lax_numpy_indexing_test", "lax_numpy_einsum_test", "lax_numpy_setops_test", "lax_numpy_ufuncs_test",
    "lax_numpy_vectorize_test", "lax_test", "lax_vmap_test", "lax_vmap_op_test", "linalg_test", "fft_test",
    "random_lax_test", "lax_scipy_test", "lax_scipy_special_functions_test", "scipy_stats_test", "nn_test",
    "custom_api_test", "polynomial_test", "image_test", "scipy_signal_test", "scipy_fft_test",
]  # fmt: skip


def _outcomes(xml_path: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of the failure) from pytest's JUnit XML."""
    out = {}
    if not xml_path.exists():
        return out
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = message[0][:300] if message else ""
                break
            if child.tag == "skipped":
                outcome = "skipped"
        out[name] = (outcome, message)
    return out


def _run_side(side: str, test_file: Path, args, workdir: Path, only: list[str] | None = None) -> dict:
    xml = workdir / f"{test_file.stem}.{side}.xml"
    xml.unlink(missing_ok=True)
    env = dict(
        os.environ, JAX_NUM_GENERATED_CASES=str(args.cases), JAX_PLATFORMS="cpu", FUNCGRAD_PLATFORM="cpu"
    )
    env["JAX_ENABLE_X64"] = "1" if args.x64 else "0"
    # -v: a line per test in the log as it ends, read when a timeout leaves no XML
    cmd = [sys.executable, "-m", "pytest", "-v", "-n0", "-p", "no:cacheprovider", "-o", "addopts=",
           f"--junitxml={xml}"]  # fmt: skip
    cmd += [f"{test_file}::{t}" for t in only] if only is not None else [str(test_file)]
    if args.k and only is None:  # (the ids of `only` are already the piece)
        cmd += ["-k", args.k]
    if side == "funcgrad":
        cmd[3:3] = ["-p", "jaxshim_plugin"]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    start = time.time()
    log = workdir / f"{test_file.stem}.{side}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["nice", "-n", "5", *cmd], cwd=workdir, env=env, stdout=out, stderr=out)
        try:
            proc.wait(timeout=args.timeout)
            status = f"rc={proc.returncode}"
        except subprocess.TimeoutExpired:
            # SIGINT: pytest stops after the running test and still writes its JUnit XML, so the
            # tests finished before the timeout count (a kill would lose them all).
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            status = f"timeout after {args.timeout}s (partial)"
    text = log.read_text(errors="replace")
    tests = _outcomes(xml) if xml.exists() else _outcomes_from_log(text)
    return {"status": status, "seconds": round(time.time() - start, 1), "tests": tests, "tail": text[-2000:]}


_LOG_LINE = re.compile(r"^\S+?\.py::(\S+) (PASSED|FAILED|ERROR|SKIPPED)\b")


def _outcomes_from_log(text: str) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, '') from pytest's ``-v`` lines, for a run stopped at the timeout before
    it wrote its XML (a test stuck in compiled code can outlast the SIGINT's grace period)."""
    out = {}
    for line in text.splitlines():
        m = _LOG_LINE.match(line)
        if m:
            name, kind = m.groups()
            name = name if "::" in name else f"::{name}"
            out[name] = (kind.lower() if kind != "FAILED" else "failed", "")
    return out


def _count(tests: dict) -> dict:
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for outcome, _ in tests.values():
        counts[outcome] = counts.get(outcome, 0) + 1  # (and 'missing': not run on that side)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jax-repo", required=True, help="a JAX git checkout or bare mirror")
    parser.add_argument("--tag", default="jax-v0.10.2")
    parser.add_argument("--files", nargs="*", default=DEFAULT_FILES, help="test file stems under tests/")
    parser.add_argument("--x64", action="store_true", help="JAX_ENABLE_X64=1 on both sides")
    parser.add_argument("--cases", type=int, default=10, help="JAX_NUM_GENERATED_CASES")
    parser.add_argument("--side", choices=("both", "jax", "funcgrad"), default="both")
    parser.add_argument(
        "--jax-scope",
        choices=("all", "failed"),
        default="failed",
        help="jax runs the whole file, or only what failed on funcgrad (default)",
    )
    parser.add_argument("--timeout", type=int, default=900, help="seconds per file and side")
    parser.add_argument(
        "--rerun-failed", action="store_true", help="funcgrad reruns only what failed in --out"
    )
    parser.add_argument("-k", dest="k", default=None, help="pytest -k expression: run a piece of each file")
    parser.add_argument("--out", default=None, help="JSON report (read back for --side funcgrad)")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="jax_tests_"))
    workdir.mkdir(parents=True, exist_ok=True)
    report = {}
    if args.out and Path(args.out).exists():
        report = json.loads(Path(args.out).read_text())
    piece = f"|k={args.k}" if args.k else ""
    key_of = lambda stem: f"{stem}|x64={int(args.x64)}|cases={args.cases}{piece}"  # noqa: E731
    for stem in args.files:
        text = subprocess.run(
            ["git", "-C", args.jax_repo, "show", f"{args.tag}:tests/{stem}.py"],
            capture_output=True,
            text=True,
        )
        if text.returncode:
            print(f"{stem}: not in {args.tag}")
            continue
        test_file = workdir / f"{stem}.py"
        test_file.write_text(text.stdout)
        entry = report.get(key_of(stem), {})
        loaded = "funcgrad" in entry and not any(t.startswith("::") for t in entry["funcgrad"]["tests"])
        if args.rerun_failed and loaded:
            old = entry["funcgrad"]["tests"]
            again = [t for t, (o, _) in old.items() if o in ("failed", "error")]
            if again:
                new = _run_side("funcgrad", test_file, args, workdir, again)
                new["tests"] = {**old, **new["tests"]}
                entry["funcgrad"] = new
        elif args.side in ("funcgrad", "both") or "funcgrad" not in entry or args.rerun_failed:
            # (with --rerun-failed, a file that did not load before runs whole)
            entry["funcgrad"] = _run_side("funcgrad", test_file, args, workdir)
        if args.side in ("jax", "both") or "jax" not in entry:
            # --jax-scope failed: jax runs only the tests that did not pass on funcgrad (a test
            # that passes on funcgrad is counted as passing on jax), a fraction of jax's time.
            ft = entry["funcgrad"]["tests"]
            only = None
            # (A file that did not load on funcgrad has one id, '::<file>': jax runs all of it.)
            if args.jax_scope == "failed" and ft and not any(t.startswith("::") for t in ft):
                only = [t for t, (o, _) in ft.items() if o in ("failed", "error")]
            if only == []:
                entry["jax"] = {
                    "status": "not run (all passed on funcgrad)",
                    "seconds": 0,
                    "tests": {},
                    "tail": "",
                }
            else:
                entry["jax"] = _run_side("jax", test_file, args, workdir, only)
            entry["jax"]["scope"] = "all" if only is None else "failed on funcgrad"
            if only is not None:  # complete the jax side with funcgrad's passes
                for t, (o, m) in ft.items():
                    entry["jax"]["tests"].setdefault(
                        t, (o, m) if o in ("passed", "skipped") else ("missing", "")
                    )
        report[key_of(stem)] = entry
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))
        j, f = entry["jax"], entry["funcgrad"]
        print(
            f"{stem}: jax {_count(j['tests'])} ({j['status']}, {j['seconds']}s) | "
            f"funcgrad {_count(f['tests'])} ({f['status']}, {f['seconds']}s)",
            flush=True,
        )
    print("\n== passes on jax, not on funcgrad ==")
    for stem in args.files:
        entry = report.get(key_of(stem))
        if not entry:
            continue
        jt, ft = entry["jax"]["tests"], entry["funcgrad"]["tests"]
        lost = [t for t, (o, _) in jt.items() if o == "passed" and ft.get(t, ("missing", ""))[0] != "passed"]
        print(f"-- {stem}: {len(lost)}")
        for t in lost:
            outcome, msg = ft.get(t, ("missing", ""))
            print(f"   {t}: {outcome}: {msg}")


if __name__ == "__main__":
    main()
