"""``funcgrad.experimental.pjit``: ``pjit``, the older name of ``jit``, as
``jax.experimental.pjit`` (deprecated in JAX since October 2025; reading it warns as JAX's does).

Layer: surface. Imports ``funcgrad.api`` (``jit``), the sharding leaves of ``funcgrad._shardings``,
the pytree kernel and the standard library.

``pjit`` is ``jit`` with JAX's resource-environment rule for ``None``: an ``in_shardings`` or
``out_shardings`` leaf given as ``None`` means replicated over the mesh in scope (``with mesh:``),
where ``jit``'s ``None`` leaves the layout open; without a mesh in scope the two agree. Leaving an
argument out (the default) leaves those layouts open, as ``jit``'s default does.

>>> import warnings, funcgrad, numpy as np
>>> from funcgrad.sharding import Mesh
>>> from funcgrad.experimental import pjit as pjit_module
>>> with warnings.catch_warnings(record=True):
...     warnings.simplefilter("always")
...     pjit = pjit_module.pjit
>>> with Mesh(np.array(funcgrad.devices()[:1]), ("x",)):
...     out = pjit(lambda x: x * 2, out_shardings=None)(np.ones(4))
>>> out.sharding.spec, out.tolist()
(P(), [2.0, 2.0, 2.0, 2.0])
"""

import functools
import warnings

from funcgrad._meshes import _swap_device, get_mesh
from funcgrad._partition_spec import PartitionSpec
from funcgrad._shardings import REPLICATED_IN_SCOPE, Sharding
from funcgrad.api import jit as _jit
from funcgrad.jitting import PjitFunction
from funcgrad.kernel import tree_util as _tu

__all__: list[str] = []  # ``pjit`` is read through __getattr__ (JAX's deprecation), not exported

_UNSPECIFIED = object()


def _in_scope(tree):
    if tree is _UNSPECIFIED:
        return None
    return _tu.tree_map(
        lambda s: REPLICATED_IN_SCOPE if s is None else s,
        tree,
        is_leaf=lambda s: s is None or isinstance(s, Sharding | PartitionSpec),
    )


class _ResourceEnvPjit(PjitFunction):
    """A ``pjit``: a call inside ``with mesh:`` runs as under ``set_mesh(mesh)`` (JAX's pjit traces
    and places with the resource environment's mesh as its concrete mesh: uncommitted arguments and
    constants go on its devices, results are replicated over it, and a committed argument on other
    devices is "Received incompatible devices"; NOTE: [placement in context] in funcgrad/_meshes.py)."""

    __slots__ = ()

    def __call__(self, *args, **kwargs):
        mesh = get_mesh()
        if mesh is None or mesh.empty:
            return super().__call__(*args, **kwargs)
        if self._device is not None:  # (JAX's words)
            raise ValueError(
                "Mesh context manager should not be used with jit when backend or device is also "
                "specified as an argument to jit."
            )
        previous = _swap_device(mesh)
        try:
            return super().__call__(*args, **kwargs)
        finally:
            _swap_device(previous)


def _resource_env(jitted):
    if type(jitted) is PjitFunction:
        jitted.__class__ = _ResourceEnvPjit
        return jitted
    # (a decorator: jit(fun=None, ...) waits for the function)
    return functools.wraps(jitted)(lambda fun: _resource_env(jitted(fun)))


def _pjit(fun=None, in_shardings=_UNSPECIFIED, out_shardings=_UNSPECIFIED, **options):
    """``jit`` with ``None`` shardings replicated over the mesh in scope and calls placed on it
    (JAX's ``pjit``)."""
    return _resource_env(
        _jit(fun, in_shardings=_in_scope(in_shardings), out_shardings=_in_scope(out_shardings), **options)
    )


_pjit.__name__ = _pjit.__qualname__ = "pjit"


def __getattr__(name):
    if name == "pjit":
        warnings.warn(
            "jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _pjit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
