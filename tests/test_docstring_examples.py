"""Every docstring example of the library runs and shows what it says.

One test per module of the packages ``funcgrad``, ``primitives`` and ``xla_bridge``, found by
``pkgutil.walk_packages`` so a new module is covered without touching this file. pytest's
``--doctest-modules`` only sees ``tests/`` (its testpaths), hence this file. A module without
examples passes; that the examples are really found is checked by counting them all.

The slowest modules are ``funcgrad.experimental.ode`` (about 6 s: XLA compiles the Dormand-Prince
loops of ``odeint`` and of its adjoint, as long as ``jax.experimental.ode`` takes for the same
calls) and ``funcgrad.random._continuous`` (about 4 s: each rejection sampler compiles once).
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import funcgrad
import primitives
import xla_bridge

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The packages themselves and every module below them, but no ``__main__``: ``python -m`` entry
# points run their command on import.
MODULES = sorted(
    [pkg.__name__ for pkg in (funcgrad, primitives, xla_bridge)]
    + [
        m.name
        for pkg in (funcgrad, primitives, xla_bridge)
        for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
        if not m.name.endswith(".__main__")
    ]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed:\n{report.getvalue()}"


def test_the_examples_are_found():
    modules = [importlib.import_module(n) for n in MODULES]
    count = sum(len(t.examples) for m in modules for t in doctest.DocTestFinder().find(m))
    assert len(MODULES) > 150 and count > 1500
