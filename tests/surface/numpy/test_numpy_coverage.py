"""Coverage of the NumPy and nn surfaces: every name listed in shared/numpy-api.txt and
shared/nn-api.txt exists in funcgrad.numpy / funcgrad.nn (``linalg.norm`` means
``funcgrad.numpy.linalg.norm``), and every public function has a docstring with an example."""

from __future__ import annotations

import inspect
import pathlib

import pytest

import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad import lax

_SHARED = [
    pathlib.Path(__file__).resolve().parents[3] / "shared",
    pathlib.Path(__file__).resolve().parents[4] / "shared",
    pathlib.Path("/work/shared"),
]


def _api_names(filename: str) -> list[str]:
    for folder in _SHARED:
        path = folder / filename
        if path.exists():
            names = []
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0]
                names.extend(line.split())
            return names
    pytest.skip(f"{filename} not found next to the repository")


def _resolve(module, dotted: str):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_numpy_api_is_covered():
    missing = [n for n in _api_names("numpy-api.txt") if not _has(fnp, n)]
    assert not missing, f"funcgrad.numpy lacks: {missing}"


def test_nn_api_is_covered():
    missing = [n for n in _api_names("nn-api.txt") if not _has(fnn, n)]
    assert not missing, f"funcgrad.nn lacks: {missing}"


def _has(module, dotted):
    try:
        _resolve(module, dotted)
    except AttributeError:
        return False
    return True


def _public_functions(module, names):
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            yield name, obj


@pytest.mark.parametrize("module", [fnp, fnp.linalg, fnn, lax], ids=lambda m: m.__name__)
def test_public_functions_are_documented_with_examples(module):
    names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
    undocumented = [n for n, f in _public_functions(module, names) if not f.__doc__ or ">>>" not in f.__doc__]
    assert not undocumented, f"{module.__name__}: functions without a docstring example: {undocumented}"


def test_alias_names_are_jax_names():
    """A second name of a function is a function of that name, as in jax.numpy (code and JAX's
    own test files key tables on ``__name__``: ``jnp.acos.__name__ == 'acos'``)."""
    import jax.numpy as jnp

    for name in "acos acosh asin asinh atan atanh atan2 amax amin around conj".split():
        assert getattr(fnp, name).__name__ == getattr(jnp, name).__name__ == name
    assert float(fnp.acos(0.5)) == float(fnp.arccos(0.5)) and float(fnp.amax(fnp.arange(3.0))) == 2.0
