"""funcgrad: composable function transformations — grad, vmap, jit — for NumPy programs.

Layer: surface. Exports are resolved lazily (module ``__getattr__``), so ``import funcgrad``,
``import funcgrad.primitives`` or ``import funcgrad.xla_bridge`` can each come first. ``__all__``
(and ``dir()``) is the public names and subpackages, never the helpers this module uses.

>>> import funcgrad, funcgrad.numpy as fnp
>>> float(funcgrad.grad(fnp.sin)(0.0))
1.0
"""

from __future__ import annotations

import importlib
import os

__version__ = "0.1.0"

# NOTE: [derived namespaces]
# A namespace's exports are stated by the modules that define them, never a second list here: each
# module that gives funcgrad a top-level name lists it in ``_REEXPORTED`` (its whole ``__all__``
# when it has no ``_REEXPORTED``), an entry ``"name:attribute"`` exporting ``attribute`` under
# ``name``. The subpackages are the public modules in the folder, less the implementation modules
# behind the top-level names (``_IMPLEMENTATION``). To stay lazy, ``import funcgrad`` imports none
# of them: the declarations are read from the modules' source text on first use (both literals), and
# the namespace tests check what is read against the imported modules.

# The modules funcgrad re-exports names from (their declarations are read by ``_exports``).
_SOURCES = (
    "api", "_config", "_utilities", "_devices", "_placement", "_remat", "_callbacks", "_fwd_and_bwd",
    "numpy._dtypes", "parallel", "_pmap", "sharding", "introspect", "debug", "testing",
    "custom_derivatives", "dtypes", "per_example", "experimental.jet", "ref", "_ad",
)  # fmt: skip
# Public modules of the folder that are implementation, not namespaces (and the layers below), and
# ``as_jax``: an opt-in switch whose import installs the ``import jax`` alias, so never an attribute.
_IMPLEMENTATION = frozenset(
    {
        "api",
        "as_jax",
        "introspect",
        "jitting",
        "kernel",
        "parallel",
        "per_example",
        "primitives",
        "xla_bridge",
    }
)


def _declared(module: str) -> tuple[str, ...]:
    """``module``'s ``_REEXPORTED`` (or ``__all__``), read from its source without importing it."""
    import ast  # (only here: ``import funcgrad`` stays cheap)
    import re

    path = os.path.join(os.path.dirname(__file__), *module.split("."))
    try:
        with open(
            path + ".py" if os.path.exists(path + ".py") else os.path.join(path, "__init__.py"),
            encoding="utf-8",
        ) as f:
            source = f.read()
    except OSError:  # no source file (a zip, a frozen build): import it instead
        m = importlib.import_module(f"funcgrad.{module}")
        return tuple(getattr(m, "_REEXPORTED", m.__all__))
    for name in ("_REEXPORTED", "__all__"):
        found = re.search(rf"^{name}(?:: [^=]+)? = (\(.*?\)|\[.*?\])$", source, re.M | re.S)
        if found:
            return tuple(ast.literal_eval(found.group(1)))
    raise ImportError(f"funcgrad.{module} declares neither _REEXPORTED nor __all__ as a literal")


def _exports() -> tuple[dict[str, tuple[str, str]], frozenset[str]]:
    """The lazy tables: public name -> (module, attribute), and the subpackages."""
    table = {}
    for module in _SOURCES:
        for entry in _declared(module):
            name, _, attribute = entry.partition(":")
            table[name] = (f"funcgrad.{module}", attribute or name)
    folder = os.path.dirname(__file__)
    modules = {
        name.removesuffix(".py")
        for name in os.listdir(folder)
        if not name.startswith("_")
        and (name.endswith(".py") or os.path.isfile(os.path.join(folder, name, "__init__.py")))
    }
    return table, frozenset(modules - _IMPLEMENTATION)


_TABLES: list = []

# Names JAX 0.10 removed from its top level (``jax.device_put_sharded``): an AttributeError in its words.
_MIGRATE = (
    " See https://docs.jax.dev/en/latest/migrate_pmap.html#drop-in-replacements for a drop-in replacement."
)
_REMOVED = {
    "device_put_replicated": "jax.device_put_replicated is deprecated; use jax.device_put instead."
    + _MIGRATE,
    "device_put_sharded": "jax.device_put_sharded is deprecated; use jax.device_put instead." + _MIGRATE,
}


def _tables():
    if not _TABLES:
        _TABLES.append(_exports())
    return _TABLES[0]


def __getattr__(name):
    table, modules = _tables()
    if name in table:
        module, attribute = table[name]
        value = getattr(importlib.import_module(module), attribute)
    elif name in modules:
        value = importlib.import_module(f"funcgrad.{name}")
    elif name == "__all__":  # everything above, resolved on first use; ``dir(funcgrad)`` shows it
        value = sorted([*table, *modules])
    elif name in _REMOVED:  # (JAX's words: names JAX removed, with what replaces them)
        raise AttributeError(_REMOVED[name])
    else:
        raise AttributeError(f"module 'funcgrad' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__():  # the public names only, not this module's imports and helpers
    return list(globals().get("__all__") or __getattr__("__all__"))
