"""``import jax`` resolves to funcgrad: a harness-only import hook for running JAX programs
unchanged on funcgrad (the library never does this; see tests/integration/suites/README.md).

- ``jax`` and ``jax.X.Y`` are ``funcgrad`` and ``funcgrad.X.Y`` (the same module objects);
- ``jax.example_libraries`` (stax, optimizers) are JAX's own source files, executed with this alias
  in place, so they run on funcgrad too;
- ``jax._src.util`` / ``jax._src.typing`` (which those files import) are the few helpers they use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types


def _find_real_jax_dir():
    spec = importlib.util.find_spec("jax")
    return None if spec is None else list(spec.submodule_search_locations)[0]


_REAL_JAX = _find_real_jax_dir()


def _src_util():
    m = types.ModuleType("jax._src.util")

    def unzip(n, xs):
        cols = tuple([] for _ in range(n))
        for x in xs:
            for c, v in zip(cols, x, strict=True):
                c.append(v)
        return tuple(tuple(c) for c in cols)

    m.safe_zip = lambda *a: list(zip(*a, strict=True))
    m.safe_map = lambda f, *a: list(map(f, *a))
    m.unzip2 = lambda xs: unzip(2, xs)
    m.unzip3 = lambda xs: unzip(3, xs)
    return m


def _src_typing():
    m = types.ModuleType("jax._src.typing")
    m.Array = m.ArrayLike = m.DTypeLike = m.Shape = object
    return m


class _Existing(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class JaxAlias(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "jax" and not name.startswith("jax."):
            return None
        if name == "jax.example_libraries" or name.startswith("jax.example_libraries."):
            rel = name.split(".")[1:]
            base = os.path.join(_REAL_JAX, *rel)
            if os.path.isdir(base):
                return importlib.util.spec_from_file_location(
                    name, os.path.join(base, "__init__.py"), submodule_search_locations=[base]
                )
            return importlib.util.spec_from_file_location(name, base + ".py")
        if name == "jax._src":
            module = types.ModuleType(name)
            module.__path__ = []
        elif name == "jax._src.util":
            module = _src_util()
        elif name == "jax._src.typing":
            module = _src_typing()
        else:
            module = importlib.import_module("funcgrad" + name[3:])
        return importlib.machinery.ModuleSpec(name, _Existing(module), is_package=hasattr(module, "__path__"))


def install():
    if not any(isinstance(f, JaxAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, JaxAlias())
