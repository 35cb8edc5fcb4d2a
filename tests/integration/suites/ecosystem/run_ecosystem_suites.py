"""Run optax's, equinox's and flax's own tests, unchanged, on jax 0.10.2 and on funcgrad (through
``python -m funcgrad.as_jax``), side by side, and report passed / failed / errors for both.

Not part of the library (see tests/integration/suites/README.md). The upstream test trees are not
in this repository: point the harness at checkouts of the libraries at the installed versions::

    git clone -b v0.2.8  https://github.com/google-deepmind/optax   /tmp/ecosystem/optax
    git clone -b v0.13.8 https://github.com/patrick-kidger/equinox  /tmp/ecosystem/equinox
    git clone https://github.com/google/flax /tmp/ecosystem/flax
    git -C /tmp/ecosystem/flax checkout 3a491108   # "update to v0.12.8" (the repository has no tag)

Any other library joins with ``--add NAME=FOLDER:GLOB`` (its checkout at ``ROOT/NAME``, the library
itself importable, e.g. ``pip install --no-deps --target SITE`` and ``PYTHONPATH=SITE``)::

    PYTHONPATH=/tmp/eco2/site python tests/integration/suites/ecosystem/run_ecosystem_suites.py \\
        --root /tmp/eco2 --add lineax=tests:test_*.py chex=chex/_src:*_test.py --sample 6

``--sample N`` keeps at most N tests of each file (evenly spread, the same on both sides): breadth
over depth when a suite takes hours.

Libraries whose wheels ship their tests (dm-haiku, distrax, rlax, mctx, jraph) need no checkout: the
checkout is a folder holding a link to the installed package. pytest runs in the checkout, so it
must not be the package folder itself when the package has a module named like the standard
library's (haiku/typing.py): link it one level down::

    mkdir -p CHECKOUTS/hk && ln -s SITE/haiku CHECKOUTS/hk/haiku
    ... --root CHECKOUTS --add hk=haiku/_src:*_test.py mctx=_src/tests:*_test.py --sample 2

    python tests/integration/suites/ecosystem/run_ecosystem_suites.py --root /tmp/ecosystem \\
        [--libs optax equinox flax] [--files PATTERN ...] [--timeout 900] [--out report.json]

For each library and each backend it starts one pytest process per test file (so one file that
hangs or crashes costs only itself, within ``--timeout`` seconds), with ``-p no:cacheprovider
-o addopts=`` and a JUnit XML report, and reads the outcome of every test from it. A file whose
process dies without a report counts as one error. The report lists, per library, the counts on
both sides and every test that passes on jax and not on funcgrad, with the first line of its
failure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import glob
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# Where each library keeps its tests inside its checkout, and how they are named.
LIBRARIES = {
    "optax": ("optax", "**/*_test.py"),
    "equinox": ("tests", "**/test_*.py"),
    "flax": ("tests", "**/*_test.py"),
}
SAMPLE = [0]  # --sample: tests kept per file (0: all)
BACKENDS = {
    "jax": [sys.executable, "-m", "pytest"],
    "funcgrad": [sys.executable, "-m", "funcgrad.as_jax", "-m", "pytest"],
}


def test_files(checkout: str, library: str, patterns: list[str] | None) -> list[str]:
    folder, pattern = LIBRARIES[library]
    # (once each: a GLOB that starts with ``**`` matches a file at several depths of the ``**``)
    files = sorted(set(glob.glob(os.path.join(checkout, folder, pattern), recursive=True)))
    files = [os.path.relpath(f, checkout) for f in files]
    if patterns:
        files = [f for f in files if any(p in f for p in patterns)]
    return files


def run_file(checkout: str, backend: str, file: str, *, timeout: float, extra: list[str]) -> dict[str, tuple]:
    """{test id: (outcome, message)} for one file on one backend."""
    with tempfile.TemporaryDirectory(prefix="ecosystem-") as tmp:
        xml = os.path.join(tmp, "report.xml")
        command = [
            *BACKENDS[backend],
            file,
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            f"--junitxml={xml}",
        ]
        env = dict(os.environ, JAX_PLATFORMS="cpu", FUNCGRAD_PLATFORM="cpu")
        if SAMPLE[0]:  # (the plugin beside this script keeps N tests per file: ecosystem_sample.py)
            here = os.path.dirname(os.path.abspath(__file__))
            env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
            env["ECOSYSTEM_SAMPLE"] = str(SAMPLE[0])
            extra = ["-p", "ecosystem_sample", *extra]
        try:
            proc = subprocess.run(
                [*command, *extra], cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout
            )
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        except subprocess.TimeoutExpired:
            return {f"{file}::<file>": ("error", f"timed out after {timeout:.0f} s")}
        if not os.path.exists(xml):
            return {f"{file}::<file>": ("error", f"no report (exit {proc.returncode}): {tail[0]}")}
        return parse_junit(xml, file)


def parse_junit(xml: str, file: str) -> dict[str, tuple]:
    results = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{file}::{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = message[0][:300] if message else ""
                break
        if outcome == "error" and name in results:  # a teardown error after a test: keep the worse
            name += "::teardown"
        results[name] = (outcome, message)
    if not results:  # collected nothing (a collection error is a <testcase> too, so: none)
        results[f"{file}::<file>"] = ("skipped", "no tests collected")
    return results


def run_pair(checkout, backends, file, timeout, extra):
    return {b: run_file(checkout, b, file, timeout=timeout, extra=extra) for b in backends}


def summary(results: dict[str, tuple]) -> str:
    c = counts(results)
    return f"{c['passed']}p {c['failed']}f {c['error']}e {c['skipped']}s"


def write(path: str, report: dict) -> None:
    with open(path, "w") as f:
        json.dump({lib: {b: {t: list(r) for t, r in res.items()} for b, res in side.items()}
                   for lib, side in report.items()}, f, indent=1)  # fmt: skip


def counts(results: dict[str, tuple]) -> dict[str, int]:
    out = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for outcome, _ in results.values():
        out[outcome] += 1
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", default="/tmp/ecosystem", help="folder holding the checkouts optax/ equinox/ flax/"
    )
    parser.add_argument(
        "--add",
        nargs="*",
        default=[],
        metavar="NAME=FOLDER:GLOB",
        help="another library: its checkout is ROOT/NAME, its tests FOLDER/GLOB inside it "
        "(lineax=tests:test_*.py); it joins --libs",
    )
    parser.add_argument("--libs", nargs="+", help=f"libraries to run (default: {' '.join(LIBRARIES)})")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--files", nargs="*", help="only test files whose path contains one of these")
    parser.add_argument(
        "--exclude", nargs="*", default=[], help="leave out files whose path contains one of these"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per test file and backend")
    parser.add_argument(
        "--sample", type=int, default=0, help="run at most N tests of each file, evenly spread (0: all)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="test files run at once")
    parser.add_argument("--out", help="write the full per-test results as JSON here")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args(argv)
    SAMPLE[0] = args.sample
    for spec in args.add:
        name, _, where = spec.partition("=")
        folder, _, pattern = where.partition(":")
        if not (name and folder and pattern):
            parser.error(f"--add {spec!r}: expected NAME=FOLDER:GLOB, e.g. lineax=tests:test_*.py")
        LIBRARIES[name] = (folder, os.path.join("**", pattern))
    # (--add alone runs the added libraries; --libs alone or neither, the named or the three)
    added = [spec.partition("=")[0] for spec in args.add]
    args.libs = list(dict.fromkeys([*(args.libs or ([] if added else [*LIBRARIES])), *added]))  # (once each)
    unknown = [lib for lib in args.libs if lib not in LIBRARIES]
    if unknown:
        parser.error(f"--libs {unknown}: not one of {list(LIBRARIES)} (add one with --add)")

    report = {}
    for library in args.libs:
        checkout = os.path.join(args.root, library)
        files = [
            f for f in test_files(checkout, library, args.files) if not any(x in f for x in args.exclude)
        ]
        side = report[library] = {b: {} for b in args.backends}
        # File by file, every backend in turn, the JSON rewritten after each: a run cut short
        # still reports both sides of the files it finished.
        one = functools.partial(
            run_pair, checkout, args.backends, timeout=args.timeout, extra=args.pytest_args
        )
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for file, pair in zip(files, pool.map(one, files)):
                for backend, results in pair.items():
                    side[backend].update(results)
                line = "  ".join(f"{b}: {summary(pair[b])}" for b in args.backends)
                print(f"{library:8s} {file}: {line}", flush=True)
                if args.out:
                    write(args.out, report)
        for backend in args.backends:
            print(f"{library:8s} {backend:9s} {len(files)} files: {counts(side[backend])}", flush=True)
        if set(side) == set(BACKENDS):
            regressions = sorted(
                t
                for t, (o, _) in side["jax"].items()
                if o == "passed" and side["funcgrad"].get(t, ("missing",))[0] != "passed"
            )
            print(f"{library}: {len(regressions)} tests pass on jax and not on funcgrad")
            for t in regressions:
                outcome, message = side["funcgrad"].get(t, ("missing", ""))
                print(f"  {t}: {outcome}: {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
