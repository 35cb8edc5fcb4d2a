"""``funcgrad.as_jax``: an opt-in alias under which ``import jax`` is funcgrad, for running code and
libraries written for JAX (optax, equinox, flax, ...) unchanged.

Layer: surface, and outside every namespace: nothing in funcgrad imports this package, and
``import funcgrad`` never activates it (``funcgrad.as_jax`` is not one of ``funcgrad``'s lazy
attributes). It imports the standard library, ``funcgrad._utilities`` (the JAX version it follows,
``jax.__version__``) and the rest of ``funcgrad`` lazily (through the import system, on the first
``jax.X``).

Usage -- one of, before anything imports ``jax``::

    import funcgrad.as_jax          # at the top of a script or notebook: installs the alias
    funcgrad.as_jax.install()       # the same, explicitly (idempotent)

    python -m funcgrad.as_jax script.py [args]      # run a script under the alias
    python -m funcgrad.as_jax -m pytest tests/       # run a module (here: a library's tests)
    python -m funcgrad.as_jax -c "import jax; ..."   # run a command

What it does, for the rest of the process (there is no uninstall: modules imported under the alias
keep references to funcgrad's objects):

- ``import jax`` gives a module ``jax`` whose attributes are ``funcgrad``'s (``jax.grad is
  funcgrad.grad``), and which reports the JAX version whose API funcgrad follows
  (``jax.__version__ == "0.10.2"``, ``jax.__version_info__``, ``jax.version``), so that libraries'
  version checks pass. It is a module of its own only so that it can carry that version; every
  submodule ``jax.X.Y`` *is* ``funcgrad.X.Y`` (the same module object: ``sys.modules["jax.numpy"]
  is funcgrad.numpy``), so a rule a library registers in ``jax.interpreters.ad.primitive_jvps``
  is registered with funcgrad.
- ``jaxlib`` is the real jaxlib that funcgrad runs on (its version is the one funcgrad was built
  against, so ``jaxlib.version`` checks pass as they are).
- A few modules under ``jax._src`` that libraries import as if they were public exist under the
  alias only (they live in ``funcgrad/as_jax/_jax/``, never in funcgrad's own namespaces), each
  doing what JAX's does or nothing where nothing is right: ``traceback_util``
  (``register_exclusion``, ``api_boundary``, ``include_frame``), ``dispatch`` (empty: funcgrad has
  no runtime tokens to wait for at exit), ``dtypes`` (funcgrad's, with ``ExtendedDType``,
  ``supports_inf``), ``core`` and ``api`` (funcgrad's), ``tree_util._registry`` (a view
  of funcgrad's pytree registry), ``state.types.AbstractRef``, ``interpreters.ad``
  (``jax.interpreters.ad``'s, with ``CustomVJPException``), ``checkify`` (funcgrad's),
  ``distributed.global_state`` (funcgrad's process state, live: orbax reads it),
  ``lib.mlir.ir`` and ``lib.mlir.dialects.hlo`` (jaxlib's own MLIR bindings, the ones funcgrad
  splices user lowering rules from; also ``dialects.func``, ``chlo``, ``mhlo``, ``sdy``), and
  ``jax.lib`` (only ``__version__``, as JAX 0.10's) / ``jax.version``;
  ``jax.experimental.hijax`` (its names, so that flax's nnx imports; binding a ``HiPrimitive``
  raises ``NotImplementedError``). Any other ``jax._src.X`` raises
  ``ModuleNotFoundError`` naming it as a JAX internal, as do the ``jax.X`` that funcgrad lacks.

Limits: the alias is refused (``ImportError``) when the real ``jax`` is already imported in the
process, since two ``jax`` modules would mix arrays and tracers of two libraries; install it first.
Code that reads JAX internals beyond the public API and the documented extension API
(``jax.extend``, ``jax.core``, ``jax.interpreters``) -- private attributes of jaxprs, ``jax._src``
modules other than the ones above, the C++ ``jaxlib._jax`` types of JAX's own arrays -- sees
funcgrad's objects or a ``ModuleNotFoundError``. Dtypes are JAX's defaults: installing the alias
switches funcgrad to JAX's 32-bit mode (``jax_enable_x64`` off: float32/int32 defaults, NumPy's
64-bit values entering as 32-bit ones; NOTE: [x64 mode] in funcgrad/kernel/dtypes.py) unless the
environment sets ``JAX_ENABLE_X64`` (``JAX_ENABLE_X64=1`` keeps 64-bit types, as it does for JAX),
since code written for JAX expects its dtypes; ``jax.config.update("jax_enable_x64", True)``
switches at run time as in JAX. (funcgrad used without the alias keeps its own default, 64-bit.)
Public functions and classes read as JAX's public paths (``jax.vmap.__module__ == "jax"``,
``jax.numpy.sum``'s ``"jax.numpy"``; printers such as treescope show them so): ``_naming``.
The array classes are named as JAX's (``type(x)`` prints ``jaxlib._jax.ArrayImpl``), as is
``set_mesh``'s module (``_name_classes_as_jax``).
funcgrad's ``RetraceWarning`` (a jit traced many times) is off under the alias, as JAX has none:
libraries test with warnings as errors.
The alias makes names resolve; what funcgrad computes is documented in docs/differences_from_jax.md.

>>> import sys, subprocess
>>> code = "import funcgrad.as_jax, jax, funcgrad; print(jax.__version__, jax.grad is funcgrad.grad)"
>>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
'0.10.2 True\\n'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

from funcgrad._utilities import JAX_API_VERSION
from funcgrad.as_jax import _naming

__all__ = ["JAX_VERSION", "install", "installed"]

# The JAX release whose public API funcgrad follows (the oracle its tests compare against).
JAX_VERSION = JAX_API_VERSION

_SHIMS = "funcgrad.as_jax._jax"  # the alias-only modules, laid out as JAX's (``_src/...``, ``lib``)


class _JaxModule(types.ModuleType):
    """The module ``jax``: funcgrad's attributes, JAX's version, and the alias-only submodules."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        funcgrad = importlib.import_module("funcgrad")
        try:
            value = getattr(funcgrad, name)
        except AttributeError:
            pass
        else:
            if isinstance(value, types.ModuleType) and value.__name__ == f"funcgrad.{name}":
                # ``jax.tree_util`` reached as an attribute is in ``sys.modules`` under its JAX
                # name, as after JAX's ``import jax`` (treescope looks its aliases' modules up
                # there), and its public objects read as ``jax.tree_util.X`` (_naming)
                sys.modules.setdefault(f"jax.{name}", value)
                _naming.name_module(value, f"jax.{name}")
            elif not isinstance(value, types.ModuleType):
                _naming.name_object(value, name, "funcgrad", "jax")  # jax.vmap.__module__: "jax"
            return value
        if _find(f"{_SHIMS}.{name}") is not None:  # ``jax._src``, ``jax.lib``, ``jax.version``
            return importlib.import_module(f"jax.{name}")
        if name in funcgrad._REMOVED:  # (names JAX removed: its message)
            raise AttributeError(funcgrad._REMOVED[name])
        raise AttributeError(f"module 'jax' (funcgrad through funcgrad.as_jax) has no attribute {name!r}")

    def __dir__(self):
        return sorted({*dir(importlib.import_module("funcgrad")), "__version__", "__version_info__"})


def _make_jax_module() -> _JaxModule:
    module = _JaxModule("jax", "funcgrad through funcgrad.as_jax (see funcgrad.as_jax's docstring)")
    module.__version__ = JAX_VERSION
    module.__version_info__ = tuple(int(p) for p in JAX_VERSION.split("."))
    module.__path__ = []  # a package: ``jax.X`` are found by _AliasFinder, not on a path
    module.__spec__ = importlib.machinery.ModuleSpec("jax", _Existing(module), is_package=True)
    module.__loader__ = module.__spec__.loader
    return module


class _Existing(importlib.abc.Loader):
    """A loader whose module is an object that already exists (funcgrad's module of that name)."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


def _find(name: str):
    """The module ``name`` if it can be imported, else None (a missing parent is missing too)."""
    try:
        return importlib.util.find_spec(name) and importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def _held(name: str):
    """A module that the (already imported) parent of ``name`` holds as an attribute, else None:
    ``jax._src.lib.mlir.ir`` is jaxlib's ``ir`` module, held by the shim ``jax._src.lib.mlir``."""
    parent, _, child = name.rpartition(".")
    held = vars(sys.modules[parent]).get(child) if parent in sys.modules else None
    return held if isinstance(held, types.ModuleType) else None


class _AliasFinder(importlib.abc.MetaPathFinder):
    """``jax.X.Y`` -> ``funcgrad.X.Y``, else the alias-only ``funcgrad.as_jax._jax.X.Y``."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("funcgrad.") and not name.startswith("funcgrad.as_jax"):
            return self._shim_under_funcgrad_name(name, path)
        if not name.startswith("jax."):
            return None
        rest = name[len("jax.") :]
        module = None if rest.startswith("_") else _find(f"funcgrad.{rest}")
        if module is None:
            module = _find(f"{_SHIMS}.{rest}") or _held(name)
        if module is None:
            what = (
                "a JAX internal that funcgrad does not provide"
                if rest.startswith("_")
                else (f"funcgrad has no funcgrad.{rest}")
            )
            raise ModuleNotFoundError(f"No module named {name!r} under funcgrad.as_jax ({what})", name=name)
        _naming.name_module(module, name, register=False)  # (only funcgrad's public modules)
        return importlib.machinery.ModuleSpec(name, _Existing(module), is_package=hasattr(module, "__path__"))

    @staticmethod
    def _shim_under_funcgrad_name(name, path):
        # ``from jax.experimental import hijax`` asks for ``funcgrad.experimental.hijax`` (the
        # parent module's own name): an alias-only module answers there too, where funcgrad has
        # none of that name (funcgrad's own modules are found first, by the path finder).
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            public = _naming.named_parent(name)
            if public is None or spec.loader is None:
                return None
            # a public submodule of a module reached as JAX's (``jax.scipy.special``, imported
            # lazily by funcgrad.scipy): its objects read as JAX's once it has run
            spec.loader = _naming.naming_loader(spec.loader, public)
            return spec
        module = _find(f"{_SHIMS}.{name[len('funcgrad.') :]}")
        if module is None:
            return None
        return importlib.machinery.ModuleSpec(name, _Existing(module), is_package=hasattr(module, "__path__"))


def installed() -> bool:
    """Whether the alias is active in this process (``import jax`` gives funcgrad).

    >>> import funcgrad.as_jax as as_jax
    >>> isinstance(as_jax.installed(), bool)
    True
    """
    return isinstance(sys.modules.get("jax"), _JaxModule)


def install() -> None:
    """Make ``import jax`` and every ``jax.X.Y`` resolve to funcgrad for the rest of the process.

    Idempotent. Raises ``ImportError`` when the real jax is already imported (install the alias
    before anything imports jax: first line of the script, or ``python -m funcgrad.as_jax``).

    >>> import funcgrad.as_jax as as_jax
    >>> callable(as_jax.install)
    True
    """
    if installed():
        return
    real = sorted(n for n in sys.modules if n == "jax" or n.startswith("jax."))
    if real:
        raise ImportError(
            "funcgrad.as_jax: the real jax is already imported in this process "
            f"({', '.join(real[:3])}{', ...' if len(real) > 3 else ''}), so `import jax` cannot be "
            "made to mean funcgrad any more. Install the alias before anything imports jax: put "
            "`import funcgrad.as_jax` first, or run the program with `python -m funcgrad.as_jax`."
        )
    sys.meta_path.insert(0, _AliasFinder())
    sys.modules["jax"] = _make_jax_module()
    if "JAX_ENABLE_X64" not in os.environ:
        # JAX's default mode, 32-bit (see the module docstring); the variable, when set, was read
        # by funcgrad's configuration as JAX reads it.
        importlib.import_module("funcgrad._config").config.update("jax_enable_x64", False)
    # JAX's dtype rules in 64-bit mode too (JAX_ENABLE_X64=1, or jax_enable_x64 set later): code
    # written for JAX expects them (NOTE: [JAX's dtype rules in 64-bit mode] in kernel/dtypes.py)
    importlib.import_module("funcgrad._config_flags").use_jax_dtype_rules(True)
    # JAX warns about no retraces: code written for it may run with warnings as errors
    # (optimistix's and diffrax's test configurations), so funcgrad's RetraceWarning stays off.
    importlib.import_module("funcgrad._trace_key").RETRACE_WARNING_THRESHOLD = float("inf")
    _name_classes_as_jax()


def _name_classes_as_jax() -> None:
    """Under the alias some classes carry JAX's names, which code written for JAX prints and
    compares: ``type(x)`` is ``jaxlib._jax.ArrayImpl`` and ``jax.Array`` prints as JAX's
    (``<class 'jax.jaxlib._jax.Array'>``), as does ``set_mesh`` (IPython shows a bare
    ``jax.set_mesh(mesh)`` as ``<jax._src.sharding_impls.set_mesh at 0x...>``), and
    ``PartitionSpec`` is JAX 0.10's class ``jax.P``. Names only:
    arrays pickle through ``Array.__reduce__``, never by the class's name (the class object itself
    does not pickle, as ``jax.Array`` does not in JAX), and funcgrad used without the alias keeps
    its own names (``funcgrad.kernel.array.Array``, ``funcgrad.Array``).

    The scalar types of ``jax.numpy`` and its ``ufunc`` class print as JAX's
    (``<class 'jax.numpy.float32'>``, ``jnp.bool_`` is ``<class 'jax.numpy.bool'>``): flax shows a
    module's ``dtype`` field so in a treedef or a module's repr. They pickle by these names, which
    the alias resolves.

    (Under the alias ``type(jnp.ones(2)), jax.Array`` is ``(<class 'jaxlib._jax.ArrayImpl'>, <class
    'jax.jaxlib._jax.Array'>)``, as in JAX.)
    """
    concrete = importlib.import_module("funcgrad.kernel.array").Array
    concrete.__module__, concrete.__name__, concrete.__qualname__ = "jaxlib._jax", "ArrayImpl", "ArrayImpl"
    public = importlib.import_module("funcgrad").Array
    if public is not concrete:
        public.__module__ = "jax.jaxlib._jax"
    importlib.import_module("funcgrad._meshes").set_mesh.__module__ = "jax._src.sharding_impls"
    # JAX 0.10's PartitionSpec class is jax.P (its __name__; treescope shows it so, pickle finds it so)
    spec = importlib.import_module("funcgrad._partition_spec").PartitionSpec
    spec.__module__, spec.__name__, spec.__qualname__ = "jax", "P", "P"
    numpy = importlib.import_module("funcgrad.numpy")
    scalar_meta = importlib.import_module("funcgrad.numpy._dtypes")._ScalarMeta
    for value in [*vars(numpy).values()]:
        if isinstance(value, scalar_meta) or value is numpy.ufunc:
            value.__module__ = "jax.numpy"
    numpy.bool_.__name__ = numpy.bool_.__qualname__ = "bool"  # (JAX's name; NumPy's is bool)


install()
