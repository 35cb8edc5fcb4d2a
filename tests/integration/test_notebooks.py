"""Execute every notebook in ``notebooks/`` and fail on the first cell that raises.

Each notebook runs in a temporary copy of ``notebooks/`` (so the checked-in outputs are never
rewritten), with the working directory set to that copy, on the ``python3`` kernel (ipykernel's
kernel for the interpreter running the tests). The repository root is put on ``PYTHONPATH`` so the
kernel imports this checkout's funcgrad even without an editable install.

The notebooks assert their own claims (accuracy, gradient equalities, ...), so a notebook that
runs to the end is a notebook whose claims held on this machine.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from _oracle import oracle_xla_flags

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5, f"expected the five tutorial notebooks in {NOTEBOOK_DIR}, found {NOTEBOOKS}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
    # Imported here, not at the top: nbformat's import takes seconds, paid by every pytest worker that
    # collects this file, while only the workers that run a notebook need it.
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOK_DIR, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    path = work / name
    nb = nbformat.read(path, as_version=4)

    # The kernel inherits this environment: import this checkout, and let matplotlib pick the
    # notebook's inline backend as in a fresh Jupyter session. XLA compiles as in the test processes
    # (NOTE: [oracle compile options]): the notebooks assert their numbers, not XLA's code's speed.
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + pythonpath if pythonpath else ""))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("XLA_FLAGS", oracle_xla_flags(os.environ.get("XLA_FLAGS", "")))

    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(work)}},
        allow_errors=False,
    )
    start = time.perf_counter()
    try:
        client.execute(cwd=str(work))
    except CellExecutionError as e:
        pytest.fail(f"{name}: a cell raised:\n{e}", pytrace=False)
    elapsed = time.perf_counter() - start
    print(f"{name}: executed in {elapsed:.1f} s")
    # Every code cell ran (none was skipped by an earlier silent failure).
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code_cells), f"{name}: some code cells did not run"
