"""Under the alias, funcgrad's public functions and classes read as JAX's public paths: reached as
``jax.vmap`` the function's ``__module__`` is ``"jax"``, ``jax.numpy.sum``'s is ``"jax.numpy"``,
``jax.lax.Precision``'s ``"jax.lax"``, as JAX's own API objects read (JAX sets ``__module__`` on
its API functions, and printers such as treescope and penzai turn an object into the path its
``__module__`` and ``__qualname__`` name, after checking that the path gives the object back).
Without this they printed funcgrad's defining modules (``funcgrad._vmap.vmap``).

Layer: inside ``funcgrad.as_jax`` (standard library only; nothing in funcgrad imports it). Names
only, and only under the alias: funcgrad used without it keeps its modules' names (its doctests
and pickles rely on them).

When: a public funcgrad module is named the first time it is reached under its JAX name -- an
attribute of ``jax`` (``jax.numpy``), an ``import jax.X``, or a public submodule of a named module
imported later (``jax.scipy.special``, which funcgrad imports lazily: its loader names it once it
has run). Naming a module walks its public attributes (no lazy imports) and its already imported
public submodules, and registers it in ``sys.modules`` under the JAX name (so the path resolves).

Which path wins for an object exported in several modules (``logsumexp`` is in ``jax.nn`` and
``jax.scipy.special``): a module that is an ancestor of the object's defining module
(``funcgrad.scipy.special`` of ``funcgrad.scipy.special._elementary``) over one that merely
re-exports it, else the first reached. The function a public wrapper wraps (``inspect.unwrap``,
which the printers follow) is named with it.
"""

from __future__ import annotations

import importlib.abc
import inspect
import sys
import types

__all__ = ["name_module", "name_object", "naming_loader", "named_parent"]

# funcgrad module name -> the JAX name it was reached by ("funcgrad.scipy" -> "jax.scipy")
_NAMED: dict[str, str] = {}
# id(object) -> [its defining module, the funcgrad module whose JAX name it now carries]
_ORIGIN: dict[int, list] = {}
# funcgrad's layers below the surface: not JAX API modules, never named
_INTERNAL = ("funcgrad.kernel", "funcgrad.primitives", "funcgrad.xla_bridge", "funcgrad.as_jax")


def _under(name: str, parent: str) -> bool:
    return name == parent or name.startswith(parent + ".")


def _public_module(name: str) -> bool:
    parts = name.split(".")
    return (
        parts[0] == "funcgrad"
        and not any(p.startswith("_") for p in parts[1:])
        and not any(_under(name, i) for i in _INTERNAL)
    )


def name_object(value, key: str, module: str, public: str, *, reexports: bool = True) -> None:
    """Give ``value`` (exported as ``key`` by funcgrad's ``module``, reached as ``public``) the
    module path ``public``, and the function it wraps too; others' objects are left alone, and
    so are objects defined outside ``module`` unless ``reexports``."""
    if getattr(value, "__module__", None) == public:
        return  # (the common case: a name read again)
    targets = [value]
    try:
        inner = inspect.unwrap(value) if callable(value) else value
    except ValueError:  # (a cycle of __wrapped__)
        inner = value
    if inner is not value:
        targets.append(inner)
    for t in targets:
        if not isinstance(t, (types.FunctionType, type)) or getattr(t, "__name__", None) != key:
            continue
        entry = _ORIGIN.get(id(t))
        if entry is None:
            origin = getattr(t, "__module__", None)
            if not isinstance(origin, str) or origin.split(".")[0] != "funcgrad":
                continue
            entry = _ORIGIN[id(t)] = [origin, None]
        origin, holder = entry
        if not reexports and not _under(origin, module):
            continue
        if holder is not None and (_under(origin, holder) or not _under(origin, module)):
            continue  # named already by a module as close to its definition
        try:
            t.__module__, t.__qualname__ = public, key
        except (AttributeError, TypeError):  # (a type that refuses new names)
            continue
        entry[1] = module


def name_module(module: types.ModuleType, public: str, *, register: bool = True, direct: bool = True) -> None:
    """Name ``module``'s public functions and classes, and its imported public submodules', as
    reached through ``public`` (``jax.numpy``); register it in ``sys.modules`` under that name
    (``register=False`` while the import system is finding ``public``: it registers the module
    itself, and would load a second copy of a module already there under that name). A module
    not reached ``direct``ly (a submodule, named with its parent) names only objects defined
    under it (``jax.numpy.creation`` is funcgrad's, not JAX's: its names stay ``jax.numpy``'s)."""
    name = getattr(module, "__name__", "")
    if not _public_module(name) or _NAMED.get(name) == public:
        return
    _NAMED.setdefault(name, public)
    if register:
        sys.modules.setdefault(public, module)
    submodules = []
    for key, value in list(vars(module).items()):
        if key.startswith("_"):
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__ == f"{name}.{key}":
                submodules.append((key, value))
        else:
            name_object(value, key, name, public, reexports=direct)
    for key, sub in submodules:  # (after the module's own names: jax.numpy.zeros, not .creation's)
        name_module(sub, f"{public}.{key}", direct=False)


def named_parent(name: str) -> str | None:
    """The JAX name that public funcgrad module ``name`` will have once imported (its parent was
    named), else None."""
    parent, _, last = name.rpartition(".")
    return f"{_NAMED[parent]}.{last}" if parent in _NAMED and _public_module(name) else None


class _NamingLoader(importlib.abc.Loader):
    """The module's own loader, then ``name_module`` once the module has run."""

    def __init__(self, loader, public: str):
        self._loader, self._public = loader, public

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        name_module(module, self._public, direct=False)

    def __getattr__(self, attr):  # (get_source, get_filename, is_package, ... of the real loader)
        return getattr(self._loader, attr)


def naming_loader(loader, public: str) -> importlib.abc.Loader:
    """``loader`` naming the module it loads as ``public`` (a lazily imported public submodule)."""
    return _NamingLoader(loader, public)
