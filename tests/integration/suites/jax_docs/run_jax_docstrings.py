"""Run the ``>>>`` examples of JAX's API docstrings on jax and on funcgrad; compare what they print.

Harness only (nothing under ``funcgrad/`` imports it; run by hand, not in the CI suite). For every
public name of ``../shared/jax-api.txt`` and ``../shared/jax-api-extra.txt`` (``funcgrad.X`` there is
``jax.X`` here), the examples of jax 0.10.2's docstring of that name (and of the public methods of a
class) are run as one doctest session, the way JAX's own doctests run them (``jax``, ``lax``,
``jnp`` and ``np`` in the namespace, ``# doctest: +SKIP`` honoured): once on jax, once on funcgrad
through ``funcgrad.as_jax``. Both sides in JAX's default mode (32-bit), one subprocess per module
and side; a name's examples share one namespace, and an example that raises does not stop the next.

Every example is then classified by what it printed (its echoed value and its stdout):

- ``same``: the same text (memory addresses aside);
- ``last-place``: the same words, every number within float32 printing (rtol 1e-5, atol 1e-6);
- ``numeric``: the same words, some number beyond that (a wrong value);
- ``text``: other words (a repr, a dtype, a shape, a missing keyword's effect);
- ``fails``: raised on funcgrad only; ``no-error``: raised on jax only;
- ``error-type``: raised on both, with different exception types; ``error-same``: same type.

A name JAX documents but funcgrad lacks counts as ``missing`` (its examples are not run).

``--doc export/export.md`` (repeatable, with ``--jax-repo``; ``--doc all``: every page of
``run_jax_docs.DOCTEST_PAGES``) runs the ``>>>`` examples of a page of JAX's documentation
instead (``docs/<path>`` at ``--ref``), the page as one session, as ``pytest --doctest-glob``
runs them. ``--public`` adds the public names the API lists leave out, and ``EXTRA_MODULES``.

Usage::

    python tests/integration/suites/jax_docs/run_jax_docstrings.py [--report r.md] [--json r.json]
        [--module jax.numpy ...] [--public] [--limit N] [--name roots ...] [--timeout S]
        [--doc export/shape_poly.md --jax-repo JAX_GIT_DIR [--ref jax-v0.10.2]]
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
API_FILES = [os.path.join(ROOT, "..", "shared", f) for f in ("jax-api.txt", "jax-api-extra.txt")]

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# (a number, not the digits of a name: float32's 32 is part of a word)
# (the imaginary part of 1.+0.j starts right after the real part: a sign there starts a number)
_NUMBER = re.compile(
    r"(?:(?<![\w.])|(?<=[\d.])(?=[-+]))[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?j?(?!\w)"
    r"|[-+]?\b(?:nan|inf)j?\b"
)
# Public modules of jax 0.10.2 with documented examples that the API lists do not name.
EXTRA_MODULES = ["jax.ref", "jax.experimental.random", "jax.experimental.key_reuse", "jax.typing"]
DEVICES = 8  # virtual CPU devices on both sides (--devices)
STATUSES = ("same", "last-place", "numeric", "text", "fails", "no-error", "error-type", "error-same")


def read_api(files=API_FILES) -> dict[str, list[str]]:
    """``{jax module: [names]}`` from the API lists (``NAMESPACE: name name ...`` lines).

    >>> api = read_api()
    >>> "sin" in api["jax.numpy"] and "checkpoint_name" in api["jax.ad_checkpoint"]
    True
    """
    out: dict[str, list[str]] = {}
    for path in files:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                if line.startswith("#") or ":" not in line:
                    continue
                ns, names = line.split(":", 1)
                module = "jax" + ns.strip()[len("funcgrad") :]
                bucket = out.setdefault(module, [])
                bucket.extend(n for n in names.split() if n not in bucket)
    return out


# ---------------------------------------------------------------------------------------------
# The worker: runs in a subprocess, one per module and side.


def _resolve(module, dotted: str):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _docstrings(module, name: str) -> list[tuple[str, str]]:
    """``(label, docstring)`` of a public name: its own, and its class's public methods'."""
    obj = getattr(module, name)
    out = []
    doc = getattr(obj, "__doc__", None)
    if isinstance(doc, str) and ">>>" in doc and not isinstance(obj, (int, float, str)):
        out.append((name, doc))
    if isinstance(obj, type) and (obj.__module__ or "").startswith("jax"):
        for attr, member in sorted(vars(obj).items()):
            if attr.startswith("_"):
                continue
            doc = getattr(member, "__doc__", None)
            if isinstance(doc, str) and ">>>" in doc:
                out.append((f"{name}.{attr}", doc))
    return out


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout("example ran past the harness's time limit")


def _run_examples(examples: list[dict], namespace: dict, timeout: float) -> list[dict]:
    """Run one session's examples in ``namespace``; what each printed and raised."""
    results = []
    for ex in examples:
        if ex.get("skip"):
            results.append({"got": "", "exc": "", "skipped": True})
            continue
        buf = io.StringIO()
        exc = ""
        signal.alarm(int(max(1, timeout)))
        try:
            with contextlib.redirect_stdout(buf):
                code = compile(ex["source"], "<doctest>", "single")
                exec(code, namespace)  # noqa: S102 (the documentation's example, as doctest runs it)
        except _Timeout as e:
            exc = f"Timeout: {e}"
        except BaseException as e:  # an example's error is a result, not the harness's
            if isinstance(e, KeyboardInterrupt):
                raise
            msg = str(e).strip().splitlines()
            exc = f"{type(e).__name__}: {msg[0] if msg else ''}"[:400]
        finally:
            signal.alarm(0)
        results.append({"got": buf.getvalue(), "exc": exc})
    return results


def public_names(module) -> list[str]:
    """The public names a jax module defines itself (``--public``: the API lists leave out some
    documented names, ``jax.lax.composite``, ``jax.ref.get``); not submodules nor the names it
    imports from elsewhere (``np``, ``namedtuple``).

    >>> import json
    >>> "dumps" in public_names(json) and "codecs" not in public_names(json)
    True
    """
    import inspect

    home = module.__name__.split(".")[0]
    out = []
    for n in dir(module):
        obj = getattr(module, n, None)
        if n.startswith("_") or inspect.ismodule(obj):
            continue
        if (getattr(obj, "__module__", None) or "").split(".")[0] == home:
            out.append(n)
    return out


def worker(
    side: str,
    module_name: str,
    names: list[str],
    examples_in: str | None,
    out: str,
    timeout: float,
    public: bool = False,
):
    """Collect (jax side) and run the examples of ``names`` of ``module_name`` (``public``: and of
    its other public names); write JSON."""
    import importlib

    import numpy as np

    if side == "funcgrad":
        import funcgrad.as_jax

        funcgrad.as_jax.install()
    import jax

    try:
        module = importlib.import_module(module_name)
    except Exception:
        module = _resolve(jax, module_name[len("jax.") :]) if module_name != "jax" else jax
    signal.signal(signal.SIGALRM, _on_alarm)
    sessions: dict[str, list[dict]] = {}
    if examples_in:
        with open(examples_in) as f:
            sessions = json.load(f)
    else:
        parser = doctest.DocTestParser()
        if public:
            names = names + [n for n in public_names(module) if n not in names]
        for name in names:
            if not hasattr(module, name):
                continue
            for label, doc in _docstrings(module, name):
                try:
                    exs = parser.get_examples(doc)
                except ValueError:  # a malformed docstring: nothing to run
                    continue
                if exs:
                    sessions[label] = [
                        {
                            "source": e.source,
                            "want": e.want,
                            "line": e.lineno,
                            "skip": bool(e.options.get(doctest.SKIP)),
                        }
                        for e in exs
                    ]
    results: dict[str, dict] = {}
    for label, exs in sessions.items():
        # A method's examples run on instances (jax.Array is abstract in both libraries): only the
        # public name itself must exist (a documentation page's session is labelled by its path).
        if not label.endswith((".md", ".rst")) and not hasattr(module, label.split(".")[0]):
            results[label] = {"missing": True}
            continue
        # JAX's doctests run in the globals of the module that defines the name (pytest
        # --doctest-modules), so its examples may name their module's functions bare
        # (``dynamic_update_slice(...)``, ``vmap(...)``): here the public module's names stand in
        # for them on both sides, then conftest's four.
        namespace = {k: getattr(module, k, None) for k in dir(module) if not k.startswith("__")}
        namespace.update(jax=jax, lax=jax.lax, jnp=jax.numpy, np=np, __name__="__main__")
        try:
            results[label] = {"results": _run_examples(exs, namespace, timeout)}
        except Exception:
            results[label] = {"harness_error": traceback.format_exc()[-600:]}
    with open(out, "w") as f:
        json.dump({"sessions": sessions, "results": results}, f)


# ---------------------------------------------------------------------------------------------
# The driver.


def _numbers_agree(a: str, b: str, rtol: float, atol: float) -> bool:
    x, y = float(a.rstrip("j")), float(b.rstrip("j"))
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def classify(jax_got: str, jax_exc: str, fg_got: str, fg_exc: str, rtol=1e-5, atol=1e-6) -> str:
    """One example's status from what both sides printed and raised.

    >>> classify("Array([1., 2.], dtype=float32)\\n", "", "Array([1., 2.], dtype=float32)\\n", "")
    'same'
    >>> classify("Array(0.84147096, dtype=float32)", "", "Array(0.841471, dtype=float32)", "")
    'last-place'
    >>> classify("Array(0.5, dtype=float32)", "", "Array(0.6, dtype=float32)", "")
    'numeric'
    >>> classify("Array(1, dtype=int32)", "", "Array(1, dtype=int64)", "")
    'text'
    >>> classify("Array([1.e-05, 2.], dtype=float32)", "", "Array([1.0000001e-05, 2.], dtype=float32)", "")
    'last-place'
    >>> classify("Array([1.+0.j], dtype=complex64)", "", "Array([1.-0.j], dtype=complex64)", "")
    'last-place'
    >>> classify("", "TypeError: x", "", "ValueError: y")
    'error-type'
    """
    if jax_exc or fg_exc:
        if jax_exc and fg_exc:
            same = jax_exc.split(":")[0] == fg_exc.split(":")[0]
            return "error-same" if same else "error-type"
        return "no-error" if jax_exc else "fails"
    a, b = (_ADDRESS.sub("0x", t).rstrip() for t in (jax_got, fg_got))
    if a == b or [ln.rstrip() for ln in a.splitlines()] == [ln.rstrip() for ln in b.splitlines()]:
        return "same"
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    words_a = " ".join(_NUMBER.sub(" # ", a).split())
    words_b = " ".join(_NUMBER.sub(" # ", b).split())
    if words_a != words_b or len(na) != len(nb):
        return "text"
    if all(_numbers_agree(p, q, rtol, atol) for p, q in zip(na, nb)):
        return "last-place"
    return "numeric"


def _run_worker(side, module, names, examples_in, timeout, total_timeout, public=False):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.pop("JAX_ENABLE_X64", None)  # JAX's default mode on both sides
    # The docstrings' multi-device examples (pmap over 4, a (2, 4) mesh) assume 8 devices.
    flags = env.get("XLA_FLAGS", "")
    if "device_count" not in flags:
        env["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={DEVICES}").strip()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", side, "--module", module, "--out", out]
    cmd += ["--names", ",".join(names), "--timeout", str(timeout)]
    if examples_in:
        cmd += ["--examples", examples_in]
    if public:
        cmd += ["--public"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=total_timeout)
        err = proc.stderr[-2000:] if proc.returncode else ""
    except subprocess.TimeoutExpired:
        err = "worker timed out"
    seconds = time.perf_counter() - start
    data = {"sessions": {}, "results": {}}
    if os.path.exists(out) and os.path.getsize(out):
        with open(out) as f:
            data = json.load(f)
    os.unlink(out)
    return data, err, seconds


def doc_sessions(text: str, label: str) -> dict[str, list[dict]]:
    """A documentation page's ``>>>`` examples as one session (the page shares its namespace).

    >>> s = doc_sessions("Text\\n\\n```python\\n>>> 1 + 1\\n2\\n\\n```\\n", "p.md")
    >>> [(e["source"], e["want"]) for e in s["p.md"]]
    [('1 + 1\\n', '2\\n')]
    """
    exs = doctest.DocTestParser().get_examples(text)
    return {
        label: [
            {"source": e.source, "want": e.want, "line": e.lineno, "skip": bool(e.options.get(doctest.SKIP))}
            for e in exs
        ]
    }


def run_module(
    module: str,
    names: list[str],
    timeout: float = 60.0,
    total_timeout: float = 1800.0,
    sessions: dict | None = None,
    public: bool = False,
) -> dict:
    """Both sides of one module: ``{"examples": [...], "missing": [...], "seconds": {...}}``
    (``sessions``: given examples, run on both sides, instead of the names' docstrings)."""
    examples_in = None
    if sessions is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(sessions, f)
            examples_in = f.name
    jax_data, jerr, tj = _run_worker("jax", module, names, examples_in, timeout, total_timeout, public)
    if examples_in:
        os.unlink(examples_in)
    sessions = jax_data["sessions"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sessions, f)
        examples_in = f.name
    fg_data, ferr, tf = _run_worker("funcgrad", module, names, examples_in, timeout, total_timeout)
    os.unlink(examples_in)
    examples, missing = [], []
    for label, exs in sessions.items():
        jr = jax_data["results"].get(label, {})
        fr = fg_data["results"].get(label, {})
        if fr.get("missing"):
            missing.append(label)
            continue
        jres, fres = jr.get("results", []), fr.get("results")
        if fres is None:  # the funcgrad worker died: every example of the name fails
            fres = [{"got": "", "exc": ferr[-300:] or fr.get("harness_error", "no result")}] * len(exs)
        for i, ex in enumerate(exs):
            if ex["skip"] or i >= len(jres):
                continue
            j, g = jres[i], fres[i] if i < len(fres) else {"got": "", "exc": "no result"}
            status = classify(j["got"], j["exc"], g["got"], g["exc"])
            examples.append(
                dict(
                    name=label,
                    index=i,
                    source=ex["source"],
                    status=status,
                    jax=(j["exc"] or j["got"])[:800],
                    funcgrad=(g["exc"] or g["got"])[:800],
                )
            )
    return {
        "module": module,
        "examples": examples,
        "missing": missing,
        "seconds": {"jax": round(tj, 1), "funcgrad": round(tf, 1)},
        "worker_errors": {"jax": jerr, "funcgrad": ferr},
    }


def report(results: list[dict]) -> str:
    """A Markdown table by module, then every example that is not ``same``/``last-place``."""
    head = (
        "| module | names with examples | missing | examples | "
        + " | ".join(STATUSES)
        + " | jax s | funcgrad s |"
    )
    lines = [head, "|" + "---|" * (len(STATUSES) + 6)]
    totals = dict.fromkeys(STATUSES, 0)
    n_names = n_missing = n_ex = 0
    for r in results:
        counts = dict.fromkeys(STATUSES, 0)
        for e in r["examples"]:
            counts[e["status"]] += 1
        names = len({e["name"] for e in r["examples"]}) + len(r["missing"])
        n_names += names
        n_missing += len(r["missing"])
        n_ex += len(r["examples"])
        for k in STATUSES:
            totals[k] += counts[k]
        cells = " | ".join(str(counts[k]) for k in STATUSES)
        lines.append(
            f"| {r['module']} | {names} | {len(r['missing'])} | {len(r['examples'])} | {cells} "
            f"| {r['seconds']['jax']} | {r['seconds']['funcgrad']} |"
        )
    cells = " | ".join(str(totals[k]) for k in STATUSES)
    lines.append(f"| **all** | {n_names} | {n_missing} | {n_ex} | {cells} | | |")
    lines.append("")
    for r in results:
        bad = [e for e in r["examples"] if e["status"] not in ("same", "last-place", "error-same")]
        if not bad and not r["missing"] and not any(r["worker_errors"].values()):
            continue
        lines.append(f"### {r['module']}")
        for side, err in r["worker_errors"].items():
            if err:
                lines.append(f"- worker error ({side}): `{err[-300:]!r}`")
        if r["missing"]:
            lines.append(f"- missing on funcgrad: {', '.join(r['missing'])}")
        for e in bad:
            src = e["source"].strip().splitlines()[0][:100]
            lines.append(
                f"- {e['name']}[{e['index']}] ({e['status']}) `{src}`: jax {e['jax'][:240]!r} / "
                f"funcgrad {e['funcgrad'][:240]!r}"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--module", action="append", help="jax modules to run (default: every module listed)")
    p.add_argument("--limit", type=int, help="only the first N names of each module")
    p.add_argument("--name", action="append", help="only these names (of the modules run; repeatable)")
    p.add_argument("--report", help="write the Markdown report here")
    p.add_argument("--json", help="write every example's result here")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per example")
    p.add_argument("--devices", type=int, default=8, help="virtual CPU devices (default 8)")
    p.add_argument(
        "--doc",
        action="append",
        help="a page under JAX's docs/ (with --jax-repo); 'all': every page of >>> examples",
    )
    p.add_argument("--jax-repo", help="JAX's git directory (for --doc)")
    p.add_argument("--ref", default="jax-v0.10.2", help="the tag of JAX's docs (for --doc)")
    p.add_argument(
        "--public",
        action="store_true",
        help="also every public name the module defines (not only the API lists'), and the modules "
        "of EXTRA_MODULES",
    )
    p.add_argument("--worker", choices=("jax", "funcgrad"), help=argparse.SUPPRESS)
    p.add_argument("--names", help=argparse.SUPPRESS)
    p.add_argument("--examples", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        names = [n for n in (args.names or "").split(",") if n]
        worker(args.worker, args.module[0], names, args.examples, args.out, args.timeout, args.public)
        return 0
    global DEVICES
    DEVICES = args.devices
    results = []
    pages = list(args.doc or ())
    if "all" in pages:  # every page of >>> examples (run_jax_docs.DOCTEST_PAGES)
        sys.path.insert(0, HERE)
        from run_jax_docs import DOCTEST_PAGES

        pages = [p for p in pages if p != "all"] + DOCTEST_PAGES
    for doc in pages:
        if not args.jax_repo:
            p.error("--doc needs --jax-repo")
        show = ["git", "-C", args.jax_repo, "show", f"{args.ref}:docs/{doc}"]
        text = subprocess.run(show, capture_output=True, text=True, check=True).stdout
        print(f"docs/{doc} ...", file=sys.stderr, flush=True)
        r = run_module("jax", [], timeout=args.timeout, sessions=doc_sessions(text, doc))
        r["module"] = f"docs/{doc}"
        results.append(r)
    api = read_api()
    modules = args.module or ([] if args.doc else sorted(api) + (EXTRA_MODULES if args.public else []))
    for module in modules:
        names = api.get(module, [])[: args.limit] if args.limit else api.get(module, [])
        if args.name:  # a targeted re-run: the given names only
            names = [n for n in names if n in args.name]
        print(f"{module} ({len(names)} names) ...", file=sys.stderr, flush=True)
        r = run_module(module, names, timeout=args.timeout, public=args.public)
        counts: dict = {}
        for e in r["examples"]:
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        print(f"  {counts} missing={len(r['missing'])} {r['seconds']}", file=sys.stderr, flush=True)
        results.append(r)
    text = report(results)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
