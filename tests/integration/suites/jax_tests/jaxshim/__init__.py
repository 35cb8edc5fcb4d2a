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
    "jax._src.numpy": "jaxshim.numpy_internal",
    "jax._src.numpy.util": "jaxshim.numpy_internal",
}


def install() -> None:
    """Install ``funcgrad.as_jax``, then the shims (idempotent)."""
    import funcgrad.as_jax

    funcgrad.as_jax.install()
    import jax
    import jax._src  # noqa: F401 - the alias's own package, which the shims join

    for name, shim in _MODULES.items():
        try:
            module = importlib.import_module(shim)
        except ModuleNotFoundError as e:
            if e.name != shim:
                raise
            continue  # not written (yet): the test files that import it fail at collection
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)
    # ``jax._src.lax`` and ``jax._src.numpy`` are packages of the alias or of this package; make
    # sure both the parent and child links exist for ``from jax._src.lax import lax``.
    lax_pkg = sys.modules.get("jax._src.lax") or importlib.import_module("jax._src.lax")
    lax_pkg.lax = sys.modules["jax._src.lax.lax"]
    del jax
