"""Run JAX's documentation notebooks unchanged, cell by cell, on jax and on funcgrad; compare.

Harness only (nothing under ``funcgrad/`` imports it). Each MyST document of JAX's ``docs/`` is
converted with jupytext and executed twice with nbclient on the ``python3`` kernel: once as
written (real jax), once with funcgrad answering ``import jax`` (``funcgrad.as_jax``). Every code
cell is then classified (both run in JAX's default mode, 32-bit: the alias switches funcgrad to
it, and ``JAX_ENABLE_X64`` is removed from the kernels' environment unless ``--x64`` is given):

- ``same``: ran on both, and the printed text (stdout and the cell's value) agrees, numbers to a
  relative 1e-4 (float32 printing), memory addresses and timings ignored;
- ``differs``: ran on both, printed something else (the two texts are in the report);
- ``fails``: ran on jax, raised on funcgrad (the exception is in the report);
- ``expected-error``: raised on jax too (a cell that demonstrates an error); funcgrad's exception
  type is compared and reported;
- ``jax-fails``: raised on jax only (a cell that needs an accelerator, a dataset, a network).

Usage::

    python tests/integration/suites/jax_docs/run_jax_docs.py --jax-repo /path/to/jax \\
        [--ref jax-v0.10.2] [--report report.md] [--json out.json] [--settle] [DOC ...]

``DOC`` is a path under ``docs/`` (``notebooks/autodiff_cookbook.md``); without one, the
documents of ``TUTORIALS`` run. A document file may also be given by its path on disk
(``--file x.md``), which is how the suite's bounded test drives the harness. Each cell's wall
seconds on each side are kept, and the report lists the cells funcgrad ran much slower; with
``--settle`` a hidden cell after each one waits for the work it left in flight and times that
apart (jax's asynchronous dispatch returns before a long program ends).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime

X64 = False  # --x64: both sides 64-bit instead of JAX's default mode
SETTLE = False  # --settle: after each cell, wait for the work it left in flight (timed apart)
ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
)

# The tutorials issue 30 names, and the other user-facing MyST documents of JAX 0.10.2 that run on
# a CPU (Pallas and CUTLASS need accelerators; the TFDS notebook downloads a dataset).
TUTORIALS = [
    "key-concepts.md",
    "jit-compilation.md",
    "automatic-vectorization.md",
    "automatic-differentiation.md",
    "random-numbers.md",
    "pytrees.md",
    "custom_pytrees.md",
    "control-flow.md",
    "stateful-computations.md",
    "jaxpr.md",
    "tracing.md",
    "debugging.md",
    "debugging/flags.md",
    "external-callbacks.md",
    "gradient-checkpointing.md",
    "higher-order.md",
    "jacobian-vector-products.md",
    "complex-differentiation.md",
    "jax-primitives.md",
    "ffi.md",
    "parallel.md",
    "jep/9407-type-promotion.md",
    "notebooks/autodiff_cookbook.md",
    "notebooks/Custom_derivative_rules_for_Python_code.md",
    "notebooks/autodiff_remat.md",
    "notebooks/thinking_in_jax.md",
    "notebooks/Common_Gotchas_in_JAX.md",
    "notebooks/convolutions.md",
    "notebooks/vmapped_log_probs.md",
    "notebooks/Writing_custom_interpreters_in_Jax.md",
    "notebooks/Neural_Network_and_Data_Loading.md",
    "notebooks/shard_map.md",
    # MyST documents added later (autodidax builds its own JAX: its cells test funcgrad's NumPy
    # surface and the few jax calls it makes; host offloading and layouts run in part on a CPU)
    "array_refs.md",
    "autodidax.md",
    "autodidax2_part1.md",
    "notebooks/layout.md",
    "notebooks/host-offloading.md",
    "distributed_data_loading.md",
    # (session 21: colocated Python runs on CPU devices)
    "notebooks/colocated-python.md",
    # Pages whose examples are plain ```python fences (or reST code-blocks): JAX's build shows
    # them without running them, so each block runs as a cell (a fragment that does not run on
    # jax counts as jax-fails, not against funcgrad). Multi-process, GPU and TPU pages are left out.
    "debugging/index.md",
    "debugging/print_breakpoint.md",
    "debugging/checkify_guide.md",
    "debugging/xla_metadata.md",
    "buffer_donation.md",
    "persistent_compilation_cache.md",
    "config_options.rst",
    "profiling.md",
    "benchmarking.md",
    "migrate_pmap.md",
    "device_memory_profiling.md",
    # (session 21: XLA flags' one example; the GPU tips' three, two of which run on a CPU)
    "xla_flags.md",
    "gpu_performance_tips.md",
]

# Pages whose examples are ``>>>`` doctests: run_jax_docstrings.py --doc runs them (each page one
# session, as JAX's ``pytest --doctest-glob``).
DOCTEST_PAGES = [
    "aot.md",
    "export/export.md",
    "export/shape_poly.md",
    "faq.rst",
    "type_promotion.rst",
    "default_dtypes.md",
    "async_dispatch.rst",
    "rank_promotion_warning.rst",
    "transfer_guard.rst",
    "jax.numpy.rst",
    "jax.random.rst",
    "notebooks/Common_Gotchas_in_JAX.md",
]

# Run first in each kernel: a headless matplotlib, and (funcgrad's run) the alias.
_PRELUDE = "import matplotlib\nmatplotlib.use('Agg')\n"
_ALIAS = f"""try:
    import funcgrad.as_jax
except ModuleNotFoundError:  # before the public alias existed: the examples harness's alias
    import sys
    sys.path.insert(0, {os.path.join(ROOT, "tests", "integration", "suites", "examples")!r})
    import jax_alias
    jax_alias.install()
"""

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours (jax prints jaxprs and rich tables in colour)
_CELL_FILE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")  # a cell's file name differs per kernel
_WORKDIR = re.compile(r"/tmp/tmp\w+")  # each kernel's working directory (tempfile's name)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b")
_TIMING = re.compile(r"(per loop|loops? each|[µmn]s ±|\d+(\.\d+)? ?(µs|ms|ns)\b)")


@dataclass
class CellResult:
    index: int
    first_line: str
    status: str
    jax_text: str = ""
    funcgrad_text: str = ""
    jax_error: str = ""
    funcgrad_error: str = ""
    seconds: dict = field(default_factory=dict)  # each side's wall time for the cell (nbclient's)


@dataclass
class DocResult:
    doc: str
    seconds: dict = field(default_factory=dict)
    cells: list = field(default_factory=list)

    def counts(self) -> dict:
        out: dict = {}
        for c in self.cells:
            out[c.status] = out.get(c.status, 0) + 1
        return out


def read_document(jax_repo: str | None, ref: str, doc: str, file: str | None = None):
    """The notebook of one document, from a git checkout at ``ref`` or from a file: a MyST
    notebook's cells, or the code blocks of a plain page (``fenced_notebook``)."""
    import jupytext  # (here: the harness's one extra dependency, needed only to read MyST)

    if file is not None:
        with open(file) as f:
            text = f.read()
    else:
        text = subprocess.run(
            ["git", "-C", jax_repo, "show", f"{ref}:docs/{doc}"], check=True, capture_output=True, text=True
        ).stdout
    if "{code-cell}" in text:
        return jupytext.reads(text, fmt="md:myst")
    return fenced_notebook(text, rst=(file or doc).endswith(".rst"))


_FENCE = re.compile(r"^```(?:python|py|\{code-block\} python)[ \t]*\n(.*?)^```", re.M | re.S)
_RST_BLOCK = re.compile(r"^([ \t]*)\.\. (?:code-block|code|sourcecode):: python[ \t]*\n((?:[ \t]*:.*\n)*)")


def fenced_blocks(text: str, rst: bool = False) -> list[str]:
    r"""The Python code blocks of a page that is not a MyST notebook: Markdown ```python fences, or
    reST ``.. code-block:: python`` directives (their indented body); blocks of ``>>>`` examples
    are left to the doctest runner.

    >>> fenced_blocks("a\n```python\nx = 1\n```\nb\n```bash\nls\n```\n")
    ['x = 1\n']
    >>> fenced_blocks("T\n\n .. code-block:: python\n\n    import jax\n    x = 2\n\n back\n", rst=True)
    ['import jax\nx = 2\n']
    """
    import textwrap

    if not rst:
        blocks = [m.group(1) for m in _FENCE.finditer(text)]
    else:
        blocks = []
        lines = text.splitlines(keepends=True)
        i = 0
        while i < len(lines):
            m = _RST_BLOCK.match("".join(lines[i : i + 1]))
            if not m:
                i += 1
                continue
            indent = len(m.group(1).expandtabs())
            i += 1
            while i < len(lines) and lines[i].strip().startswith(":"):  # the directive's options
                i += 1
            body = []
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("".join(body)).strip("\n") + "\n")
    return [b for b in blocks if b.strip() and not b.lstrip().startswith(">>>")]


def fenced_notebook(text: str, rst: bool = False):
    """A notebook of a page's code blocks (``fenced_blocks``), one code cell each."""
    import nbformat

    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(b) for b in fenced_blocks(text, rst)])


def _cell_outcome(cell) -> tuple[str, str]:
    """(printed text, error) of an executed cell: stdout, the value's text/plain; the exception."""
    text, error = [], ""
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream" and out.get("name") == "stdout":
            text.append(out.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            plain = out.get("data", {}).get("text/plain")
            if plain and "<Figure" not in plain and "matplotlib" not in plain:
                text.append(plain if isinstance(plain, str) else "".join(plain))
        elif kind == "error":
            error = f"{out.get('ename')}: {out.get('evalue', '')}".strip()
    return "".join(text), error


# Appended to each run: the kernel's CPU seconds (all its threads, XLA's included) after the last
# cell, printed on a line of its own and removed from the cells compared. Wall times follow the
# machine's load; CPU times much less. Work still in flight (JAX's asynchronous dispatch returns
# before a long program ends) counts in neither.
_CPU_MARK = "__kernel_cpu_seconds__"
_CPU_CELL = (
    "import resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\n"
    f"print({_CPU_MARK!r}, _u.ru_utime + _u.ru_stime)\n"
)


# --settle: after each cell a hidden one waits for every live array, so the work a cell left in
# flight (JAX's asynchronous dispatch returns before a long program ends; a notebook whose later
# cells never read the results shuts its kernel down with the work undone) is timed on its own:
# the cell's wall seconds say when the user got the prompt back, these when the work was done.
_SETTLE_MARK = "__settle_seconds__"
_SETTLE_CELL = (
    "import sys as _s, time as _t\n_t0 = _t.perf_counter()\n"
    "if 'jax' in _s.modules:\n    _s.modules['jax'].block_until_ready(_s.modules['jax'].live_arrays())\n"
    f"print({_SETTLE_MARK!r}, round(_t.perf_counter() - _t0, 2))\n"
)


def settle_seconds(cell) -> float | None:
    """The seconds a ``_SETTLE_CELL`` waited (None when it did not run).

    >>> settle_seconds({"outputs": [{"output_type": "stream", "text": "__settle_seconds__ 2.5\\n"}]})
    2.5
    """
    text = "".join(out.get("text", "") for out in cell.get("outputs", []))
    m = re.search(re.escape(_SETTLE_MARK) + r"\s+([0-9.eE+-]+)", text)
    return float(m.group(1)) if m else None


def cell_seconds(cell) -> float | None:
    """The wall time nbclient recorded for an executed cell (input received to reply sent)."""
    ex = cell.get("metadata", {}).get("execution", {})
    start, end = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
    if not (start and end):
        return None
    t0, t1 = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (start, end))
    return round((t1 - t0).total_seconds(), 2)


def kernel_cpu_seconds(cell) -> float | None:
    """The CPU seconds printed by ``_CPU_CELL``'s run (None when the kernel stopped before it)."""
    # (the streams' texts joined: a printed line may arrive in two outputs)
    text = "".join(out.get("text", "") for out in cell.get("outputs", []))
    m = re.search(re.escape(_CPU_MARK) + r"\s+([0-9.eE+-]+)", text)
    return round(float(m.group(1)), 1) if m else None


def execute(nb, *, alias: bool, workdir: str, timeout: float) -> tuple[list, float, float | None]:
    """Execute a copy of ``nb`` (errors allowed); the executed code cells, the wall time and the
    kernel's CPU seconds."""
    # Imported here, not at the top: nbformat's import (jsonschema's format checkers) takes seconds,
    # and tests/integration/test_jax_docs_runner.py imports this module in every pytest worker.
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    prelude = _PRELUDE + (_ALIAS if alias else "")
    if SETTLE:
        cells = []
        for c in nb.cells:
            cells.append(c)
            if c.cell_type == "code":
                cells.append(nbformat.v4.new_code_cell(_SETTLE_CELL, metadata={"fg_settle": True}))
        nb.cells = cells
    nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    nb.cells.append(nbformat.v4.new_code_cell(_CPU_CELL))
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("JAX_PLATFORMS", "cpu")
    # The documents' shell commands (ffi.md's cmake asks `python -c "from jax import ffi"` for XLA's
    # headers) find the harness's interpreter first, the one with jax and funcgrad installed.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    # Both sides in one mode: JAX's default (32-bit; funcgrad.as_jax switches funcgrad to it), or
    # both 64-bit with --x64.
    env.pop("JAX_ENABLE_X64", None)
    if X64:
        env["JAX_ENABLE_X64"] = "1"
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": workdir}},
    )
    start = time.perf_counter()
    old = dict(os.environ)
    os.environ.update(env)  # the kernel inherits the harness's environment
    try:
        client.execute(cwd=workdir)
    except Exception as e:  # a dead kernel or a timeout ends the document; later cells count as not run
        print(f"  kernel stopped: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    finally:
        os.environ.clear()
        os.environ.update(old)
    wall = time.perf_counter() - start
    cells = [c for c in nb.cells[1:-1] if c.cell_type == "code" and not c.metadata.get("fg_settle")]
    if SETTLE:
        for c, settle in zip(cells, [c for c in nb.cells if c.metadata.get("fg_settle")]):
            c.metadata["fg_settle_seconds"] = settle_seconds(settle)
    return cells, wall, kernel_cpu_seconds(nb.cells[-1])


def _numbers_agree(a: str, b: str, rtol: float, atol: float) -> bool:
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def texts_agree(jax_text: str, funcgrad_text: str, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    """Whether two printed outputs say the same: same words, numbers to ``rtol``/``atol``.

    >>> texts_agree("Array([1.0000001, 2.], dtype=float32)", "Array([1.       , 2.], dtype=float32)")
    True
    >>> texts_agree("[1. 2.]", "[1. 3.]")
    False
    >>> texts_agree("[0.5+3.5423026j , 1.+0.j       ]", "[0.5+3.542303j, 1.+0.j      ]")
    True
    >>> texts_agree("\x1b[34;1mlambda\x1b[39;22m a", "lambda a")
    True
    """
    a, b = (
        _WORKDIR.sub("<work>", _CELL_FILE.sub("<cell>", _ADDRESS.sub("0x", _ANSI.sub("", t))))
        for t in (jax_text, funcgrad_text)
    )
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    # (the words without their spacing: NumPy pads columns to the widest number printed, so a
    # last-place difference moves the spaces of a whole array)
    words_a = "".join(_NUMBER.sub(" # ", a).split())
    words_b = "".join(_NUMBER.sub(" # ", b).split())
    if words_a != words_b or len(na) != len(nb):
        return False
    return all(_numbers_agree(p, q, rtol, atol) for p, q in zip(na, nb))


def compare(doc: str, jax_cells, funcgrad_cells) -> DocResult:
    result = DocResult(doc)
    for i, (jc, fc) in enumerate(zip(jax_cells, funcgrad_cells)):
        first = next((ln for ln in jc.source.splitlines() if ln.strip() and not ln.startswith("#")), "")[:80]
        jt, je = _cell_outcome(jc)
        ft, fe = _cell_outcome(fc)
        ran_j, ran_f = bool(jc.get("execution_count")), bool(fc.get("execution_count"))
        if not ran_j or je:
            status = "jax-fails" if not (ran_f and fe) else "expected-error"
            if je and fe and je.split(":")[0] != fe.split(":")[0]:
                status = "expected-error (other type)"
            if je and not fe and ran_f:
                status = "jax-fails"
        elif not ran_f or fe:
            status = "fails"
        elif _TIMING.search(jt) or texts_agree(jt, ft):
            status = "same"
        else:
            status = "differs"
        seconds = {"jax": cell_seconds(jc), "funcgrad": cell_seconds(fc)}
        if SETTLE:  # (the work each cell left in flight, waited for after it)
            seconds["jax_settle"] = jc.metadata.get("fg_settle_seconds")
            seconds["funcgrad_settle"] = fc.metadata.get("fg_settle_seconds")
        result.cells.append(CellResult(i, first, status, jt[:4000], ft[:4000], je[:600], fe[:600], seconds))
    return result


def support_files(jax_repo, ref, doc, workdir: str) -> None:
    """The folder a document works in, beside it in ``docs/`` and named after it (``docs/ffi/`` of
    ``ffi.md``: the C++ kernel and the CMakeLists its cells build), copied into ``workdir``."""
    if jax_repo is None:
        return
    folder = os.path.join("docs", os.path.splitext(doc)[0])
    listed = subprocess.run(
        ["git", "-C", jax_repo, "ls-tree", "-r", "--name-only", ref, folder + "/"],
        capture_output=True,
        text=True,
    ).stdout.split()
    for path in listed:
        data = subprocess.run(["git", "-C", jax_repo, "show", f"{ref}:{path}"], capture_output=True).stdout
        target = os.path.join(workdir, os.path.relpath(path, "docs"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)


def run_document(jax_repo, ref, doc, *, file=None, timeout=240.0) -> DocResult:
    nb = read_document(jax_repo, ref, doc, file)
    with tempfile.TemporaryDirectory() as work:
        support_files(jax_repo, ref, doc, work)
        jax_cells, tj, cj = execute(nb, alias=False, workdir=work, timeout=timeout)
    with tempfile.TemporaryDirectory() as work:
        support_files(jax_repo, ref, doc, work)
        fg_cells, tf, cf = execute(nb, alias=True, workdir=work, timeout=timeout)
    result = compare(doc, jax_cells, fg_cells)
    result.seconds = {"jax": round(tj, 1), "funcgrad": round(tf, 1), "jax_cpu": cj, "funcgrad_cpu": cf}
    return result


def report(results: list[DocResult]) -> str:
    lines = [
        "| document | cells | ran on jax | same | differs | fails on funcgrad | jax s | funcgrad s "
        "| jax CPU s | funcgrad CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    totals = dict.fromkeys(("cells", "ran", "same", "differs", "fails"), 0)
    for r in results:
        c = r.counts()
        ran = c.get("same", 0) + c.get("differs", 0) + c.get("fails", 0)
        row = dict(
            cells=len(r.cells),
            ran=ran,
            same=c.get("same", 0),
            differs=c.get("differs", 0),
            fails=c.get("fails", 0),
        )
        for k in totals:
            totals[k] += row[k]
        lines.append(
            f"| {r.doc} | {row['cells']} | {ran} | {row['same']} | {row['differs']} | {row['fails']} "
            f"| {r.seconds.get('jax', '')} | {r.seconds.get('funcgrad', '')} "
            f"| {r.seconds.get('jax_cpu', '')} | {r.seconds.get('funcgrad_cpu', '')} |"
        )
    lines.append(
        f"| **all** | {totals['cells']} | {totals['ran']} | {totals['same']} | {totals['differs']} "
        f"| {totals['fails']} | | | | |"
    )
    lines.append("")
    lines += slow_cells(results)
    lines += failing_cells(results)
    return "\n".join(lines)


def slow_cells(results, ratio: float = 3.0, at_least: float = 2.0) -> list[str]:
    """The report's section of the cells funcgrad ran more than ``ratio`` times slower than jax
    and for more than ``at_least`` seconds (nbclient's wall times: a cell whose jax side returned
    before its work ended, JAX's asynchronous dispatch, counts as fast there).

    >>> cell = CellResult(3, "step(x)", "same", seconds={"jax": 1.0, "funcgrad": 9.5})
    >>> slow_cells([DocResult("d.md", cells=[cell])])[1]
    '- d.md cell 3 `step(x)`: jax 1.0 s, funcgrad 9.5 s (9.5x)'
    """
    rows = []
    for r in results:
        for c in r.cells:
            j, f = c.seconds.get("jax"), c.seconds.get("funcgrad")
            if j is not None and f is not None and f > at_least and f > ratio * j:
                text = f"- {r.doc} cell {c.index} `{c.first_line}`: jax {j} s, funcgrad {f} s"
                if c.seconds.get("jax_settle") is not None:  # (--settle)
                    text += f" (then in flight: jax {c.seconds['jax_settle']} s, "
                    text += f"funcgrad {c.seconds.get('funcgrad_settle')} s)"
                rows.append((f / max(j, 0.01), text))
    if not rows:
        return []
    lines = [f"### Slow cells (funcgrad > {ratio:g}x jax and > {at_least:g} s)"]
    lines += [f"{text} ({x:.1f}x)" for x, text in sorted(rows, key=lambda row: -row[0])]
    return lines + [""]


def failing_cells(results, text_width: int = 200, error_width: int = 120) -> list[str]:
    """The report's sections of the cells that fail, differ or raise another exception type, one
    section per document (printed texts cut to ``text_width``, errors to ``error_width``)."""
    lines = []
    for r in results:
        bad = [c for c in r.cells if c.status in ("fails", "differs", "expected-error (other type)")]
        if not bad:
            continue
        lines.append(f"### {r.doc}")
        for c in bad:
            what = c.funcgrad_error or (
                f"jax printed {c.jax_text[:text_width]!r}, funcgrad {c.funcgrad_text[:text_width]!r}"
            )
            if c.status.startswith("expected"):
                what = f"jax: {c.jax_error[:error_width]} / funcgrad: {c.funcgrad_error[:error_width]}"
            lines.append(f"- cell {c.index} `{c.first_line}` ({c.status}): {what}")
        lines.append("")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("docs", nargs="*", help="documents under docs/ (default: TUTORIALS)")
    p.add_argument("--jax-repo", help="a git checkout of github.com/jax-ml/jax")
    p.add_argument("--ref", default="jax-v0.10.2")
    p.add_argument("--file", help="run one MyST file from disk instead")
    p.add_argument("--report", help="write the Markdown report here")
    p.add_argument("--json", help="write every cell's result here")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per cell")
    p.add_argument("--x64", action="store_true", help="run both sides with JAX_ENABLE_X64=1")
    p.add_argument(
        "--settle", action="store_true", help="after each cell, wait for its work in flight (timed apart)"
    )
    args = p.parse_args(argv)
    global X64, SETTLE
    X64, SETTLE = args.x64, args.settle
    if args.file is None and args.jax_repo is None:
        p.error("give --jax-repo (a checkout of jax-ml/jax) or --file")
    docs = [args.file] if args.file else (args.docs or TUTORIALS)
    results = []
    for doc in docs:
        print(f"{doc} ...", file=sys.stderr, flush=True)
        r = run_document(args.jax_repo, args.ref, doc, file=args.file, timeout=args.timeout)
        print(f"  {r.counts()} {r.seconds}", file=sys.stderr, flush=True)
        results.append(r)
    text = report(results)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                [dict(doc=r.doc, seconds=r.seconds, cells=[asdict(c) for c in r.cells]) for r in results],
                f,
                indent=1,
            )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
