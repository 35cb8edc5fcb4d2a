"""The docstring-example runner (tests/integration/suites/jax_docs/run_jax_docstrings.py) on the
first names of jax.numpy: every ``>>>`` example of their jax 0.10.2 docstrings prints on funcgrad
(through funcgrad.as_jax) what it prints on jax. The full run is by hand (the suite's README)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="the runner compares with jax (the oracle)")
sys.path.insert(0, str(Path(__file__).resolve().parent / "suites" / "jax_docs"))

import run_jax_docstrings  # noqa: E402


def test_classify_separates_last_place_from_wrong_values():
    c = run_jax_docstrings.classify
    assert c("Array(0.84147096, dtype=float32)", "", "Array(0.841471, dtype=float32)", "") == "last-place"
    assert c("Array(0.5, dtype=float32)", "", "Array(0.6, dtype=float32)", "") == "numeric"
    assert c("Array(1, dtype=int32)", "", "Array(1, dtype=int64)", "") == "text"
    assert c("", "TypeError: x", "", "TypeError: y") == "error-same"
    assert c("1\n", "", "", "ValueError: no") == "fails"


@pytest.mark.slow  # (two interpreters, jax's and funcgrad's: about 5 s)
def test_first_numpy_docstrings_print_jaxs_text():
    # (the first names of ../shared/jax-api.txt's jax.numpy line, spelled out: CI has no ../shared)
    names = ["abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin", "angle"]
    result = run_jax_docstrings.run_module("jax.numpy", names, timeout=60, total_timeout=120)
    assert len(result["examples"]) > 15 and not result["missing"], run_jax_docstrings.report([result])
    bad = [e for e in result["examples"] if e["status"] not in ("same", "last-place", "error-same")]
    assert not bad, run_jax_docstrings.report([result])
