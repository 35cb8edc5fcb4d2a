"""Every docstring example of the library runs and shows what it says.

One test per module of the packages ``funcgrad``, ``primitives`` and ``xla_bridge``, found by
``pkgutil.walk_packages`` so a new module is covered without touching this file. pytest's
``--doctest-modules`` only sees ``tests/`` (its testpaths), hence this file. A module without
examples passes; that the examples are really found is checked by counting them all.

doctest's finder sees functions and classes whose globals are the module's. Two kinds of docstring
escape it and are collected here as well, in the module whose source holds the docstring: an
object with a docstring of its own (``fnp.r_``, ``fnp.mgrid``) and a function made by a factory
in another module (``primitives.scatter``'s binders are made in ``primitives.gather``).

The slowest modules are ``funcgrad.experimental.ode`` (about 6 s: XLA compiles the Dormand-Prince
loops of ``odeint`` and of its adjoint, as long as ``jax.experimental.ode`` takes for the same
calls) and ``funcgrad.random._continuous`` (about 4 s: each rejection sampler compiles once).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import io
import pkgutil

import pytest

import funcgrad
from funcgrad import primitives, xla_bridge

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# The packages themselves and every module below them, but no ``__main__``: ``python -m`` entry
# points run their command on import; nor ``funcgrad.as_jax``, whose import installs the ``import jax``
# alias (refused where jax is imported): tests/integration/test_ecosystem.py runs its examples in a
# process of their own.
def _walk(package) -> list[str]:
    """Every module below ``package``, importing only the packages it descends into.

    Not ``pkgutil.walk_packages``: it imports every package to find its children, and importing
    ``funcgrad.as_jax`` installs the alias (``import jax`` would give funcgrad to every later oracle
    test in this worker) and switches to JAX's 32-bit mode."""
    names = []
    for m in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if m.name.endswith(".__main__") or m.name.startswith("funcgrad.as_jax"):
            continue
        names.append(m.name)
        if m.ispkg:
            names += _walk(importlib.import_module(m.name))
    return names


MODULES = sorted(
    [pkg.__name__ for pkg in (funcgrad, primitives, xla_bridge)]
    + [name for pkg in (funcgrad, primitives, xla_bridge) for name in _walk(pkg)]
)


class _Finder(doctest.DocTestFinder):
    def _from_module(self, module, object):
        # A public numpy function's checking wrapper (NOTE: [array-like arguments]) belongs to
        # funcgrad.numpy, as pickle needs; its examples run once, in the module that writes it.
        unchecked = getattr(object, "__wrapped_unchecked__", None)
        if unchecked is not None and getattr(unchecked, "__module__", None) != module.__name__:
            return False
        return super()._from_module(module, object)


def _tests(module) -> list[doctest.DocTest]:
    tests = _Finder().find(module)
    seen = {t.docstring for t in tests}
    try:
        source = inspect.getsource(module)
    except OSError:  # no source file
        return tests
    for name, obj in sorted(vars(module).items()):
        doc = getattr(obj, "__doc__", None)
        if inspect.ismodule(obj) or inspect.isclass(obj) or not isinstance(doc, str) or ">>>" not in doc:
            continue
        # Not doctest's already, not a class's docstring seen on its instance, and written here.
        if doc in seen or doc == type(obj).__doc__ or doc.strip().partition("\n")[0] not in source:
            continue
        seen.add(doc)
        tests.append(
            doctest.DocTestParser().get_doctest(
                doc, dict(vars(module)), f"{module.__name__}.{name}", module.__file__, None
            )
        )
    return tests


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    for test in _tests(module):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed:\n{report.getvalue()}"


def test_the_examples_are_found():
    count = sum(len(t.examples) for name in MODULES for t in _tests(importlib.import_module(name)))
    assert len(MODULES) > 150 and count > 1500
