"""``jax._src.internal_test_util`` for JAX's test files (a package holding ``lax_test_util``)."""


def __getattr__(name):
    if name == "test_harnesses":  # (built when first asked for: ``from ... import test_harnesses``)
        import importlib

        return importlib.import_module("jax._src.internal_test_util.test_harnesses")
    raise AttributeError(name)


__path__: list = []  # (a package, so that the import system finds the lazy submodule)
