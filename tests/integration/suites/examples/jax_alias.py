"""``import jax`` resolves to funcgrad, for running JAX's example programs unchanged (see
tests/integration/suites/README.md): the public alias ``funcgrad.as_jax`` (every ``jax.X`` and the
``jax._src`` helpers libraries import, ``safe_map`` and friends included), plus one thing only a
harness needs: ``jax.example_libraries`` (stax, optimizers) are JAX's own source files from the
installed jax, executed with the alias in place, so they run on funcgrad too.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys


def _find_real_jax_dir():
    spec = importlib.util.find_spec("jax")
    return None if spec is None else list(spec.submodule_search_locations)[0]


# Found before the alias is installed (afterwards ``jax`` is funcgrad, which has no source folder).
_REAL_JAX = None if "jax" in sys.modules else _find_real_jax_dir()


class ExampleLibraries(importlib.abc.MetaPathFinder):
    """``jax.example_libraries[.X]``: JAX's files, run as modules of the aliased ``jax``."""

    def find_spec(self, name, path=None, target=None):
        if _REAL_JAX is None or not (
            name == "jax.example_libraries" or name.startswith("jax.example_libraries.")
        ):
            return None
        base = os.path.join(_REAL_JAX, *name.split(".")[1:])
        if os.path.isdir(base):
            return importlib.util.spec_from_file_location(
                name, os.path.join(base, "__init__.py"), submodule_search_locations=[base]
            )
        return importlib.util.spec_from_file_location(name, base + ".py")


def install():
    import funcgrad.as_jax

    funcgrad.as_jax.install()
    if not any(isinstance(f, ExampleLibraries) for f in sys.meta_path):
        sys.meta_path.insert(0, ExampleLibraries())  # ahead of the alias, which has no such module
