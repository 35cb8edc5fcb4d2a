"""``jax._src.internal_test_util`` for JAX's test files (a package holding ``lax_test_util``)."""

# Submodules built when first asked for (``from jax._src.internal_test_util import X``: this
# module's own name is jaxshim's, so the import system asks its attributes first).
_LAZY = ("test_harnesses", "export_back_compat_test_util", "export_back_compat_test_data")


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"jax._src.internal_test_util.{name}")
    raise AttributeError(name)


__path__: list = []  # (a package, so that the import system finds the lazy submodule)
