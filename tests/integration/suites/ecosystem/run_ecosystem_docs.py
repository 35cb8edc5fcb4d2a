"""Run the documentation notebooks of equinox, optax and flax unchanged, cell by cell, on jax and on
funcgrad (``funcgrad.as_jax``), side by side; compare what each cell prints.

Harness only (nothing under ``funcgrad/`` imports it). It is JAX's documentation runner
(``tests/integration/suites/jax_docs/run_jax_docs.py``: its execution with nbclient, its cell
classes ``same``/``differs``/``fails``/``expected-error``/``jax-fails`` and its comparison of
printed text, numbers to a relative 1e-4, float32 printing) over the three libraries' documents:

- equinox: ``docs/examples/*.ipynb`` and the top-level ``docs/*.md`` (mkdocs Markdown: each
  ```` ```python ```` block is a cell);
- optax: ``docs/*.ipynb`` (getting started) and ``examples/**/*.ipynb`` (the gallery);
- flax: ``docs_nnx/**`` and ``docs/**`` notebooks (the ``.ipynb``; a MyST ``.md`` whose notebook is
  absent, as ``vit_training``).

The documents come from a folder holding the three checkouts' ``docs``/``docs_nnx``/``examples``
(``--root``; ``git archive`` of the tags the suites use). Three things are done to every document,
on both sides alike, so that the two runs stay comparable and bounded:

- shell escapes (``!pip install ...``, ``%pip``) are blanked: there is no network, and a cell must
  not change the environment under the comparison;
- training loops are capped generically: in the notebook's namespace ``range`` is a range whose
  iterations stop after ``--max-loop`` (20) when it would run more than ``--long-loop`` (100) times,
  so ``for step in range(num_steps)`` runs 20 steps; short loops (layers, a batch's rows) are as
  written. Libraries' own loops are untouched (the cap is a name in the notebook's globals);
- both kernels run with ``PYTHONHASHSEED=0`` (a printed set of strings is in one order), and
  Python's, NumPy's global and torch's generators are seeded (0) first, so unseeded shuffling
  (a ``DataLoader(shuffle=True)``, ``np.random.permutation``) gives both sides the same batches;
- datasets that would be downloaded: ``torchvision.datasets.MNIST``/``FashionMNIST``/``CIFAR10``/
  ``CIFAR100`` are replaced by the same classes over deterministic random images of the real shapes
  and dtypes (``--synthetic-size`` examples, 512). The data and model-hub packages that are not
  installed (``tensorflow_datasets``, ``tensorflow``, ``grain``, Hugging Face ``datasets``,
  ``kagglehub``, ...: ``_DATA_MODULES``) import as stubs whose every use raises ``NeedsData`` (a
  ``ModuleNotFoundError``), so a cell that imports one among other modules still runs, and the cells
  that use one fail on both sides. Those, and the cells of a document after its first one, that fail
  on jax, count as ``needs-data`` rather than as jax failures.

Usage::

    python tests/integration/suites/ecosystem/run_ecosystem_docs.py --root /tmp/ecoex/docs \\
        [--libs equinox optax flax] [--report r.md] [--json r.json] [DOC ...]

``DOC`` is a path under the root (``equinox/docs/examples/mnist.ipynb``); without one, every
document of the libraries named runs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import time
from dataclasses import asdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jax_docs"))

import run_jax_docs as jd  # noqa: E402  (the JAX documentation runner's machinery)

# Documents that are not notebooks of examples: contributor notes, design proposals, API pages.
_SKIP = re.compile(
    r"(/flip/|/api/|README\.md$|contributing\.md$|philosophy\.md$|developer_notes/|citation\.md$|awesome-list\.md$|/_static/|blog\.md$)"
)

_SHELL = re.compile(r"^(\s*)([!%]|%%).*$", re.M)


def documents(root: str, libs) -> list[str]:
    """The documents of ``libs`` under ``root``, as paths relative to it."""
    found = []
    for lib in libs:
        if lib == "equinox":
            pats = ["equinox/docs/examples/*.ipynb", "equinox/docs/*.md"]
        elif lib == "optax":
            pats = ["optax/docs/*.ipynb", "optax/examples/**/*.ipynb"]
        else:
            pats = [
                "flax/docs_nnx/**/*.ipynb",
                "flax/docs_nnx/**/*.md",
                "flax/docs/**/*.ipynb",
                "flax/docs/**/*.md",
            ]
        for pat in pats:
            for path in sorted(glob.glob(os.path.join(root, pat), recursive=True)):
                rel = os.path.relpath(path, root)
                if _SKIP.search(rel) or "/_build/" in rel:
                    continue
                stem, ext = os.path.splitext(path)
                if ext == ".md" and lib == "flax":
                    # a MyST twin of a notebook runs as the notebook; an .md without the jupytext
                    # header is prose, not a notebook
                    if os.path.exists(stem + ".ipynb"):
                        continue
                    with open(path) as f:
                        if "jupytext:" not in f.read(2000):
                            continue
                found.append(rel)
    return found


def read_notebook(root: str, rel: str):
    """The notebook of one document, outputs dropped, shell escapes blanked."""
    import jupytext
    import nbformat

    path = os.path.join(root, rel)
    if path.endswith(".ipynb"):
        nb = nbformat.read(path, as_version=4)
    else:
        with open(path) as f:
            text = f.read()
        nb = jupytext.reads(text, fmt="md:myst" if "jupytext:" in text[:2000] else "md")
    nb.cells = [
        c for c in nb.cells if c.cell_type != "code" or c.source.strip()
    ]  # empty cells: nothing to run
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.source = _SHELL.sub(
                lambda m: m.group(1) + "pass  # (shell escape blanked by the runner)", cell.source
            )
    return nb


# Packages for data and model downloads that the documents import and the venv lacks.
_DATA_MODULES = (
    "tensorflow",
    "tensorflow_datasets",
    "grain",
    "datasets",
    "kagglehub",
    "tiktoken",
    "dp_accounting",
    "clu",
    "albumentations",
    "cv2",
    "transformers",
    "sentencepiece",
    "gemma",
)


def prelude(max_loop: int, long_loop: int, synthetic: int, uses_torchvision: bool) -> str:
    """The harness's own first cell (after the alias): the loop cap, the data-module stubs, the
    synthetic datasets."""
    code = f'''
import builtins as _b, importlib.abc as _abc, importlib.machinery as _mach, importlib.util as _iu
import sys as _sys, types as _types
def range(*args, _cap={max_loop}, _long={long_loop}):
    """The runner's bounded range (see run_ecosystem_docs.py): long loops stop after _cap steps."""
    r = _b.range(*args)
    return r[:_cap] if len(r) > _long else r
class NeedsData(ModuleNotFoundError):
    pass
class _Stub(_types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(self.__name__ + "." + name)
    def __call__(self, *a, **k):
        raise NeedsData(f"{{self.__name__}}: not installed (a data/download package; the runner's stub)")
    def __iter__(self):
        raise NeedsData(f"{{self.__name__}}: not installed (a data/download package; the runner's stub)")
    def __mro_entries__(self, bases):
        raise NeedsData(f"{{self.__name__}}: not installed (a data/download package; the runner's stub)")
class _StubFinder(_abc.MetaPathFinder, _abc.Loader):
    names = {_DATA_MODULES!r}
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names and _mach.PathFinder.find_spec(name.split(".")[0]) is None:
            return _iu.spec_from_loader(name, self, is_package=True)
    def create_module(self, spec):
        m = _Stub(spec.name)
        m.__path__ = []
        return m
    def exec_module(self, module):
        pass
_sys.meta_path.append(_StubFinder())
import random as _random, numpy as _np
import jax as _jax  # (real jax's import draws from NumPy's global generator: imported before seeding)
_random.seed(0)
_np.random.seed(0)  # unseeded NumPy/Python randomness (a shuffling data loader) draws alike on both sides
'''
    if uses_torchvision:
        code += f"""
import numpy as _np, torch as _torch, torchvision.datasets as _tvd
def _synthetic(cls, shape, torch_data, n_classes):
    class Synthetic(cls):
        def __init__(self, root=None, train=True, transform=None, target_transform=None, download=0, **kw):
            self.root, self.train = root, train
            self.transform, self.target_transform, self.transforms = transform, target_transform, None
            if transform is not None or target_transform is not None:
                from torchvision.datasets.vision import StandardTransform
                self.transforms = StandardTransform(transform, target_transform)
            rng = _np.random.default_rng(0 if train else 1)
            n = {synthetic} if train else {synthetic} // 4
            data = rng.integers(0, 256, (n, *shape), dtype=_np.uint8)
            labels = rng.integers(0, n_classes, n)
            self.data = _torch.from_numpy(data) if torch_data else data
            self.targets = _torch.from_numpy(labels) if torch_data else [int(t) for t in labels]
            if not hasattr(self, "classes") or len(getattr(self, "classes", [])) != n_classes:
                self.classes = [str(i) for i in _b.range(n_classes)]
    Synthetic.__name__ = Synthetic.__qualname__ = cls.__name__
    return Synthetic
_tvd.MNIST = _synthetic(_tvd.MNIST, (28, 28), True, 10)
_tvd.FashionMNIST = _synthetic(_tvd.FashionMNIST, (28, 28), True, 10)
_tvd.CIFAR10 = _synthetic(_tvd.CIFAR10, (32, 32, 3), False, 10)
_tvd.CIFAR100 = _synthetic(_tvd.CIFAR100, (32, 32, 3), False, 100)
_torch.manual_seed(0)  # a shuffling DataLoader draws the same batches on both sides
"""
    return code


_NEEDS_DATA = re.compile(
    r"(NeedsData|ModuleNotFoundError|No module named|URLError|ConnectionError|"
    r"Temporary failure in name resolution|HTTPError|urlopen|getaddrinfo|Network is unreachable|"
    r"FileNotFoundError)"
)


def run_document(root: str, rel: str, *, timeout: float, max_loop: int, long_loop: int, synthetic: int):
    import tempfile

    import nbformat

    nb = read_notebook(root, rel)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    first = nbformat.v4.new_code_cell(prelude(max_loop, long_loop, synthetic, "torchvision" in source))
    nb.cells.insert(0, first)
    sides = {}
    seconds = {}
    for side, alias in (("jax", False), ("funcgrad", True)):
        # The document's folder is the working directory (equinox's examples read files beside them).
        with tempfile.TemporaryDirectory() as work:
            src_dir = os.path.dirname(os.path.join(root, rel))
            for name in os.listdir(src_dir):
                p = os.path.join(src_dir, name)
                if os.path.isfile(p) and not name.endswith((".ipynb", ".md")):
                    os.symlink(p, os.path.join(work, name))
            cells, t = jd.execute(nb, alias=alias, workdir=work, timeout=timeout)
        sides[side] = cells[1:]  # the runner's own prelude cell is not the document's
        seconds[side] = round(t, 1)
    result = jd.compare(rel, sides["jax"], sides["funcgrad"])
    result.seconds = seconds
    for c, jc, fc in zip(result.cells, sides["jax"], sides["funcgrad"]):
        if c.status == "differs":
            c.funcgrad_text = why_differs(jd._cell_outcome(jc)[0], jd._cell_outcome(fc)[0]) + c.funcgrad_text
    knock_on = False  # after a cell that needs data failed on jax, later jax failures follow from it
    for c in result.cells:
        if c.status.startswith(("jax-fails", "expected-error")):
            if _NEEDS_DATA.search(c.jax_error) or knock_on:
                c.status, knock_on = "needs-data", True
            elif not c.jax_error:
                c.status = "not-run"
    return result


def why_differs(jax_text: str, funcgrad_text: str) -> str:
    """How two printed texts differ, in brackets: the largest relative difference of their numbers
    when their words agree, else the first word that differs.

    >>> why_differs("loss 1.0 acc 2", "loss 1.5 acc 2")
    '[numbers: max rel diff 0.33] '
    >>> why_differs("a b c", "a x c")
    "[words: 'b c' / 'x c'] "
    """
    a, b = (
        jd._CELL_FILE.sub("<cell>", jd._ADDRESS.sub("0x", jd._ANSI.sub("", t)))
        for t in (jax_text, funcgrad_text)
    )
    wa, wb = jd._NUMBER.sub(" # ", a).split(), jd._NUMBER.sub(" # ", b).split()
    na, nb = jd._NUMBER.findall(a), jd._NUMBER.findall(b)
    if wa == wb and len(na) == len(nb):
        worst = 0.0
        for p, q in zip(na, nb):
            x, y = float(p), float(q)
            if x != y and not (x != x and y != y):
                worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
        return f"[numbers: max rel diff {worst:.2g}] "
    k = next((i for i, (p, q) in enumerate(zip(wa, wb)) if p != q), min(len(wa), len(wb)))
    return f"[words: {' '.join(wa[k : k + 3])!r} / {' '.join(wb[k : k + 3])!r}] "


def report(results) -> str:
    lines = [
        "| document | cells | ran on jax | same | differs | fails on funcgrad "
        "| jax fails (needs data / other) | jax s | funcgrad s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("cells", "ran", "same", "differs", "fails", "needs", "jaxfail")
    per_lib: dict = {}
    for r in results:
        c = r.counts()
        row = dict(
            cells=len(r.cells),
            ran=c.get("same", 0) + c.get("differs", 0) + c.get("fails", 0),
            same=c.get("same", 0),
            differs=c.get("differs", 0),
            fails=c.get("fails", 0),
            needs=c.get("needs-data", 0) + c.get("not-run", 0),
            jaxfail=c.get("jax-fails", 0)
            + c.get("expected-error", 0)
            + c.get("expected-error (other type)", 0),
        )
        lib = r.doc.split("/")[0]
        tot = per_lib.setdefault(lib, dict.fromkeys(keys, 0))
        for k in keys:
            tot[k] += row[k]
        lines.append(
            f"| {r.doc} | {row['cells']} | {row['ran']} | {row['same']} | {row['differs']} | {row['fails']} "
            f"| {row['needs']} / {row['jaxfail']} | {r.seconds.get('jax', '')} "
            f"| {r.seconds.get('funcgrad', '')} |"
        )
    for lib, t in per_lib.items():
        lines.append(
            f"| **{lib}** | {t['cells']} | {t['ran']} | {t['same']} | {t['differs']} | {t['fails']} "
            f"| {t['needs']} / {t['jaxfail']} | | |"
        )
    lines.append("")
    lines += jd.failing_cells(results, text_width=300, error_width=160)
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("docs", nargs="*", help="documents under --root (default: every document of --libs)")
    p.add_argument("--root", required=True, help="folder with equinox/, optax/, flax/ documentation trees")
    p.add_argument("--libs", nargs="*", default=["equinox", "optax", "flax"])
    p.add_argument("--report", help="write the Markdown report here")
    p.add_argument("--json", help="write every cell's result here (appended to, one document a line)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per cell")
    p.add_argument("--max-loop", type=int, default=20, help="iterations a long range runs")
    p.add_argument("--long-loop", type=int, default=100, help="a range longer than this is capped")
    p.add_argument("--synthetic-size", type=int, default=512, help="examples in a synthetic training set")
    args = p.parse_args(argv)
    os.environ["PYTHONHASHSEED"] = "0"  # a printed set of strings lists them in one order on both sides
    docs = args.docs or documents(args.root, args.libs)
    results = []
    for doc in docs:
        print(f"{doc} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        r = run_document(
            args.root,
            doc,
            timeout=args.timeout,
            max_loop=args.max_loop,
            long_loop=args.long_loop,
            synthetic=args.synthetic_size,
        )
        print(
            f"  {r.counts()} {r.seconds} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True
        )
        results.append(r)
        if args.json:
            with open(args.json, "a") as f:
                f.write(
                    json.dumps(dict(doc=r.doc, seconds=r.seconds, cells=[asdict(c) for c in r.cells])) + "\n"
                )
    text = report(results)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
