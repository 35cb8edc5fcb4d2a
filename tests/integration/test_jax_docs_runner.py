"""The JAX documentation runner (tests/integration/suites/jax_docs/run_jax_docs.py) on a small
document of our own and, when ``FUNCGRAD_JAX_REPO`` names a checkout of jax-ml/jax, on one of
JAX's tutorials: every cell that runs on jax runs on funcgrad and prints jax's numbers."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "suites" / "jax_docs"
sys.path.insert(0, str(HERE))

import run_jax_docs  # noqa: E402

# Whether jupytext is there, without importing it: its import (nbformat, jsonschema's format checkers)
# took 8 s of every test process's collection at load 17; the runner imports it where it reads MyST.
if importlib.util.find_spec("jupytext") is None:
    pytest.skip("the runner reads MyST through jupytext (pip install jupytext)", allow_module_level=True)


def test_texts_agree_compares_numbers_with_a_tolerance_and_words_exactly():
    assert run_jax_docs.texts_agree("Array(0.84147096, dtype=float32)", "Array(0.841471, dtype=float32)")
    assert not run_jax_docs.texts_agree("Array(0.8414, dtype=float32)", "Array(0.9414, dtype=float32)")
    assert not run_jax_docs.texts_agree("Array(1., dtype=float32)", "Array(1., dtype=float64)")
    assert run_jax_docs.texts_agree("<function f at 0x7f3a>", "<function f at 0x55b2>")
    assert run_jax_docs.texts_agree("nan inf", "nan inf")


@pytest.mark.slow
def test_runner_on_a_small_document():
    result = run_jax_docs.run_document(None, None, "sample.md", file=str(HERE / "sample.md"), timeout=120)
    statuses = [c.status for c in result.cells]
    # three cells print the same numbers on both; the third raises on both (a traced bool)
    assert statuses == ["same", "same", "expected-error", "same"], run_jax_docs.report([result])
    assert "TracerBoolConversionError" in result.cells[2].funcgrad_error
    # each side's kernel CPU seconds and each cell's wall seconds are recorded
    assert result.seconds["jax_cpu"] > 0 and result.seconds["funcgrad_cpu"] > 0
    assert all(c.seconds["jax"] >= 0 and c.seconds["funcgrad"] >= 0 for c in result.cells)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("FUNCGRAD_JAX_REPO"), reason="needs FUNCGRAD_JAX_REPO (a jax checkout)"
)
def test_autodiff_tutorial_runs_with_jaxs_numbers():
    repo = os.environ["FUNCGRAD_JAX_REPO"]
    result = run_jax_docs.run_document(repo, "jax-v0.10.2", "automatic-differentiation.md", timeout=240)
    assert result.counts() == {"same": len(result.cells)}, run_jax_docs.report([result])
