"""Load one of JAX's own test-support modules (its operator tables and NumPy reference
implementations, ``internal_test_util/lax_test_util.py`` and ``lax_reference.py``) from the jax
installed beside funcgrad as the tests' oracle, as a module of the alias: its ``jax`` imports then
resolve to funcgrad's. Nothing is copied: the source is read from the installed oracle at run time,
so that the cases (which operators, dtypes, shapes and tolerances) are exactly the ones the test
files run on jax."""

from __future__ import annotations

import ast
import importlib.machinery
import sys
import types
from pathlib import Path


def _jax_root() -> Path:
    for entry in sys.path:
        spec = importlib.machinery.PathFinder.find_spec("jax", [entry] if entry else None)
        if spec is not None and spec.origin:
            return Path(spec.origin).parent
    raise ModuleNotFoundError("the oracle jax is not installed (pip install jax==0.10.2)")


def load(name: str, relpath: str, replacements: dict[str, str] | None = None) -> types.ModuleType:
    """``jax/<relpath>`` of the installed jax, executed as module ``name`` of the alias, after the
    given textual import replacements (to reach the shims' stand-ins for JAX internals)."""
    source = (_jax_root() / relpath).read_text()
    for old, new in (replacements or {}).items():
        assert old in source, f"{relpath}: expected {old!r}"
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = f"<oracle jax>/{relpath}"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def define(relpath: str, names: tuple[str, ...], namespace: dict) -> None:
    """Execute only the top-level classes and functions ``names`` of ``jax/<relpath>`` in
    ``namespace`` (a shim module's globals): for pure NumPy helpers inside a module the shims
    otherwise write themselves (``test_util``'s mpmath references)."""
    path = _jax_root() / relpath
    tree = ast.parse(path.read_text())
    found = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name in names]
    missing = set(names) - {n.name for n in found}
    assert not missing, f"{relpath}: no {sorted(missing)}"
    exec(compile(ast.Module(body=found, type_ignores=[]), f"<oracle jax>/{relpath}", "exec"), namespace)
