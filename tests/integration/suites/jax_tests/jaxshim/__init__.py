"""Test-only shims that let JAX's own test files (``tests/*_test.py`` of the JAX repository) run on
funcgrad through the alias ``funcgrad.as_jax``.

Not part of the library: nothing under ``funcgrad/`` imports this package, and the suite's
collection skips ``tests/integration/suites``. ``install()`` installs the alias, then puts into
``sys.modules`` this package's own small versions of the ``jax._src`` modules that JAX's test files
import and the alias lacks (``jax._src.test_util``, ``jax._src.config``, ``jax._src.dtypes``,
``jax._src.util``, ``jax._src.lax.lax``, ``jax._src.internal_test_util.lax_test_util``, ...).
They are written from reading JAX's (same sampling of parameterized cases and the same random
inputs, so that a test name means the same case on both sides), over funcgrad's public API.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# jax._src.<name> -> the module of this package that stands for it.
_MODULES = {
    "jax._src.config": "jaxshim.config",
    "jax._src.dtypes": "jaxshim.dtypes",
    "jax._src.util": "jaxshim.util",
    "jax._src.test_util": "jaxshim.test_util",
    "jax._src.public_test_util": "jaxshim.test_util",
    "jax._src.lax.lax": "jaxshim.lax_internal",
    "jax._src.internal_test_util": "jaxshim.internal_test_util",
    "jax._src.internal_test_util.lax_test_util": "jaxshim.lax_test_util",
    "jax._src.lax_reference": "jaxshim.lax_reference",
    "jax._src.numpy": "jaxshim.numpy_internal",
    "jax._src.numpy.util": "jaxshim.numpy_internal",
    "jax._src.hijax": "jaxshim.hijax_internal",
    "jax._src.numpy.hijax": "jaxshim.numpy_hijax",
}


def _link(name: str) -> None:
    """Make ``sys.modules[name]`` its parent's attribute: ``from jax._src.lax import utils`` reads
    the attribute of the parent (whose own __name__ may be the alias's ``funcgrad.as_jax._jax...``)."""
    parent, _, child = name.rpartition(".")
    try:
        parent_module = sys.modules.get(parent) or importlib.import_module(parent)
    except ImportError:
        return
    setattr(parent_module, child, sys.modules[name])


class _LazyShims(importlib.abc.MetaPathFinder):
    """Shims that cost time to build, imported when a test file asks for them."""

    LAZY = {
        "jax._src.internal_test_util.test_harnesses": "jaxshim.test_harnesses",
        "jax._src.internal_test_util.export_back_compat_test_util": "jaxshim.export_back_compat",
    }
    # JAX's stored test data (NumPy arrays and serialized modules, no jax imports): the oracle's
    # own files, imported from its installed package.
    DATA = "jax._src.internal_test_util.export_back_compat_test_data"

    def find_spec(self, name, path=None, target=None):
        if name == self.DATA or name.startswith(self.DATA + "."):
            from . import _oracle_source

            folder = _oracle_source._jax_root() / "_src" / "internal_test_util"
            path = folder.joinpath(*name[len("jax._src.internal_test_util.") :].split("."))
            if path.is_dir():
                return importlib.util.spec_from_file_location(
                    name, path / "__init__.py", submodule_search_locations=[str(path)]
                )
            return importlib.util.spec_from_file_location(name, path.with_suffix(".py"))
        if name not in self.LAZY:
            return None
        return importlib.util.spec_from_loader(name, _LazyLoader(self.LAZY[name]))


class _LazyLoader(importlib.abc.Loader):
    def __init__(self, shim):
        self.shim = shim

    def create_module(self, spec):
        return importlib.import_module(self.shim)

    def exec_module(self, module):
        _link(module.__name__)


def install() -> None:
    """Install ``funcgrad.as_jax``, then the shims (idempotent)."""
    import funcgrad.as_jax

    funcgrad.as_jax.install()
    import jax
    import jax._src  # noqa: F401 - the alias's own package, which the shims join

    from . import stubs

    stubs.install()
    for name in stubs.NAMES:
        _link(name)
    for name, shim in _MODULES.items():
        try:
            module = importlib.import_module(shim)
        except ModuleNotFoundError as e:
            if e.name != shim:
                raise
            continue  # not written (yet): the test files that import it fail at collection
        sys.modules[name] = module
        _link(name)
    for name in stubs.NAMES:  # again: some parents are shims registered just now
        _link(name)
    from . import sparse_internal

    sparse_internal.install()
    from . import sharding_internal

    sharding_internal.install(_link)
    from . import export_internal

    export_internal.install()
    _link("jax._src.export")
    from . import stages_internal

    stages_internal.install()
    # JAX's primitive harnesses: a large table, built only when a file imports it
    sys.meta_path.insert(0, _LazyShims())
    # Public names of JAX that funcgrad lacks but that test files use at import (decorators);
    # listed in the README section as gaps, stood in for here so that the rest of the file runs.
    if not hasattr(jax, "legacy_prng_key"):
        jax.legacy_prng_key = sys.modules["jax._src.config"].legacy_prng_key
    if not hasattr(jax.random, "random_gamma_p"):  # (key_reuse_test's table, at import)
        jax.random.random_gamma_p = stubs.Missing("jax.random.random_gamma_p")
    del jax
