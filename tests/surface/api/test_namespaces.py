"""The public namespaces list everything once: ``__all__`` of ``funcgrad.numpy`` and ``funcgrad.lax``
is derived from their modules' ``__all__``, and ``dir()`` of every public namespace shows its public
names only (no ``np``, ``Any``, ``importlib``, ``annotations`` or private helpers)."""

from __future__ import annotations

import collections
import importlib
import types

import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax

NAMESPACES = [
    "funcgrad",
    "funcgrad.numpy",
    "funcgrad.numpy.linalg",
    "funcgrad.numpy.fft",
    "funcgrad.lax",
    "funcgrad.lax.linalg",
    "funcgrad.nn",
    "funcgrad.random",
    "funcgrad.scipy",
    "funcgrad.scipy.special",
    "funcgrad.scipy.integrate",
    "funcgrad.scipy.ndimage",
    "funcgrad.scipy.optimize",
    "funcgrad.scipy.stats",
    "funcgrad.scipy.fft",
    "funcgrad.scipy.sparse",
    "funcgrad.scipy.sparse.linalg",
    "funcgrad.scipy.interpolate",
    "funcgrad.scipy.cluster",
    "funcgrad.scipy.cluster.vq",
    "funcgrad.scipy.spatial",
    "funcgrad.scipy.spatial.transform",
    *[
        f"funcgrad.scipy.stats.{d}"
        for d in __import__("funcgrad.scipy.stats").scipy.stats.__all__
        if d not in ("gaussian_kde", "mode", "rankdata", "sem")
    ],
    "funcgrad.optim",
    "funcgrad.tree_util",
    "funcgrad.tree",
    "funcgrad.core",
    "funcgrad.dtypes",
    "funcgrad.debug",
    "funcgrad.testing",
    "funcgrad.custom_derivatives",
    "funcgrad.custom_batching",
    "funcgrad.flatten_util",
    "funcgrad.experimental",
    "funcgrad.experimental.ode",
    "funcgrad.experimental.checkify",
    "funcgrad.experimental.sparse",
    "funcgrad.ops",
    "funcgrad.image",
    "funcgrad.errors",
    "funcgrad.typing",
    "funcgrad.dlpack",
    "funcgrad.profiler",
    "funcgrad.stages",
]


@pytest.mark.parametrize("name", NAMESPACES)
def test_dir_shows_public_names_only(name):
    module = importlib.import_module(name)
    names = dir(module)
    assert names == sorted(module.__all__), f"dir({name}) is not its __all__"
    private = [n for n in names if n.startswith("_")]
    assert not private, f"dir({name}) shows private names {private}"
    for helper in ("np", "Any", "importlib", "annotations", "functools", "builtins"):
        assert helper not in names, f"dir({name}) shows the helper {helper!r}"
    for n in names:
        obj = getattr(module, n)  # every listed name resolves (lazy ones included)
        if isinstance(obj, types.ModuleType):
            assert obj.__name__.startswith("funcgrad."), f"{name}.{n} is the foreign module {obj.__name__}"


@pytest.mark.parametrize("package", [fnp, lax], ids=lambda m: m.__name__)
def test_package_all_is_the_union_of_its_modules(package):
    modules = [m for m in vars(package).values() if isinstance(m, types.ModuleType) and hasattr(m, "__all__")]
    modules = [
        m
        for m in modules
        if (m.__name__.startswith(package.__name__ + ".") or m.__name__ == "funcgrad._control_flow")
        and not m.__name__.endswith(".linalg")
        and m.__name__ != "funcgrad.numpy.fft"
    ]
    counts = collections.Counter(n for m in modules for n in m.__all__)
    assert not [n for n, k in counts.items() if k > 1], "a name is listed by two modules"
    expected = set(counts) | ({"linalg", "fft"} if package is fnp else set())
    assert set(package.__all__) == expected
    for m in modules:
        for n in m.__all__:
            # (a function JAX checks for lists is its module's function with the check in front:
            # NOTE: [array-like arguments])
            public = getattr(package, n)
            public = getattr(public, "__wrapped_unchecked__", public)
            assert public is getattr(m, n), f"{package.__name__}.{n} is not {m.__name__}.{n}"


def test_star_import_gives_all():
    scope: dict = {}
    exec("from funcgrad.numpy import *", scope)
    assert {n for n in scope if n != "__builtins__"} == set(fnp.__all__)


def test_top_level_all_resolves_lazily():
    assert "grad" in funcgrad.__all__ and "numpy" in funcgrad.__all__
    assert "importlib" not in dir(funcgrad) and "annotations" not in dir(funcgrad)


def test_top_level_names_are_read_from_the_modules_that_define_them():
    # NOTE: [derived namespaces]: what funcgrad's lazy table reads from the source text is what the
    # imported modules declare, and every name resolves to the defining module's object.
    import importlib

    table, modules = funcgrad._exports()
    for module in funcgrad._SOURCES:
        m = importlib.import_module(f"funcgrad.{module}")
        declared = getattr(m, "_REEXPORTED", None) or m.__all__
        assert funcgrad._declared(module) == tuple(declared), module
        for entry in declared:
            name, _, attribute = entry.partition(":")
            assert getattr(funcgrad, name) is getattr(m, attribute or name), name
    assert set(funcgrad.__all__) == set(table) | modules and not set(table) & modules
    assert {"numpy", "lax", "nn", "experimental"} <= modules and not modules & {"api", "kernel", "jitting"}
    assert all(isinstance(importlib.import_module(f"funcgrad.{m}"), types.ModuleType) for m in modules)


@pytest.mark.slow
def test_import_funcgrad_imports_none_of_its_modules():
    import subprocess
    import sys

    code = "import sys, funcgrad; print(sorted(m for m in sys.modules if m.startswith('funcgrad.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_xla_bridge_names_are_read_from_its_submodules():
    import importlib

    from funcgrad import xla_bridge

    for module in xla_bridge._SOURCES:
        m = importlib.import_module(f"funcgrad.xla_bridge.{module}")
        assert xla_bridge._declared(module) == m._REEXPORTED and set(m._REEXPORTED) <= set(m.__all__)
        for name in m._REEXPORTED:
            assert getattr(xla_bridge, name) is getattr(m, name), name
    assert set(xla_bridge.__all__) == set(xla_bridge._LAZY) | set(xla_bridge._SUBMODULES)
    assert {"runtime", "dispatch", "lowering"} <= set(xla_bridge._SUBMODULES)
