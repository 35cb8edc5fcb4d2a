"""The generic checks of every surface table: values against the reference, derivatives against
finite differences, ``vmap`` against a loop, ``jit`` against eager (PyTorch's OpInfo and JAX's
lax_numpy_test in small; the checks are ``tests/_support/_numpy_harness.py``'s).

A subject file under ``tests/surface/`` keeps its table next to its own tests, as a module-level
``CASES`` list of harness ``Case``s (``surface/numpy/test_numpy_ufuncs.py``, ``surface/nn/test_nn.py``,
...). This file finds every such table -- as ``tests/primitives/test_op_db.py`` is driven by the
operator table -- so a new table is checked without writing these tests again. Which checks a case
gets is said by the case itself: every case is checked for values; ``grad`` (with float64 among its
dtypes), ``vmap`` and ``jit`` select the others. A module may set ``CASE_EXAMPLES`` (``{"values": 20,
"grads": 3}``, say) to change how many inputs hypothesis draws per case for a check.

A ``CASES`` table of another shape (tuples, dicts: ``surface/scipy/test_scipy_special.py``,
``surface/lax/test_conv.py``, ...) is its own file's business and is skipped here.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest
from _numpy_harness import F64, Case, check_grads, check_jit, check_values, check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

SURFACE = Path(__file__).resolve().parent

# Hypothesis draws per case and check where a module does not say (values: the profile's budget).
DEFAULT_EXAMPLES = {"values": None, "grads": 2, "vmap": 2, "jit": 1}


def _declares_cases(path: Path) -> bool:
    """Whether the module builds a harness ``CASES`` table: it imports ``_numpy_harness`` and
    assigns ``CASES`` (a ``CASES`` of another kind, e.g. an SPMD test's layouts, is not imported:
    such a module may need 8 devices at import)."""
    text = path.read_text()
    if "_numpy_harness" not in text or "CASES" not in text:
        return False  # (most modules: no parse needed, at every worker's collection)
    tree = ast.parse(text, str(path))
    uses_harness = any(
        isinstance(node, ast.ImportFrom) and node.module == "_numpy_harness" for node in tree.body
    )
    return uses_harness and any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "CASES" for t in node.targets)
        for node in tree.body
    )


def _import(path: Path):
    """The test module as pytest imports it ("prepend" mode: its folder on sys.path, its file name
    as the module name), so that the table and the module's own tests share one module object."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(path.stem)


def _tables():
    """``(subject, module, cases)`` for every surface test module with a ``CASES`` table of ``Case``s."""
    for path in sorted(SURFACE.rglob("test_*.py")):
        if path.resolve() == Path(__file__).resolve() or not _declares_cases(path):
            continue
        module = _import(path)
        cases = [c for c in module.CASES if isinstance(c, Case)]
        if cases:
            subject = path.relative_to(SURFACE).with_suffix("").as_posix().replace("/test_", "/")
            yield subject, module, cases


TABLES = list(_tables())


def _params(check: str, select):
    return [
        pytest.param(
            case,
            getattr(module, "CASE_EXAMPLES", {}).get(check, DEFAULT_EXAMPLES[check]),
            id=f"{subject}:{case!r}",
        )
        for subject, module, cases in TABLES
        for case in cases
        if select(case)
    ]


def _run(check, case, examples):
    run = given(data=st.data())(lambda data: check(case, data))
    (settings(max_examples=examples)(run) if examples else run)()


def test_every_table_is_found():
    subjects = {subject for subject, _, _ in TABLES}
    assert {"numpy/numpy_ufuncs", "numpy/numpy_reductions", "numpy/numpy_functions", "nn/nn"} <= subjects


@pytest.mark.parametrize("case, examples", _params("values", lambda c: True))
def test_values_match_reference(case, examples):
    _run(check_values, case, examples)


@pytest.mark.parametrize("case, examples", _params("grads", lambda c: c.grad and F64 in c.dtypes))
def test_grads_match_finite_differences(case, examples):
    _run(check_grads, case, examples)


@pytest.mark.parametrize("case, examples", _params("vmap", lambda c: c.vmap))
def test_vmap_matches_loop(case, examples):
    _run(check_vmap, case, examples)


@pytest.mark.slow  # an XLA compilation per case and draw
@pytest.mark.parametrize("case, examples", _params("jit", lambda c: c.jit))
def test_jit_matches_eager(case, examples):
    _run(check_jit, case, examples)
