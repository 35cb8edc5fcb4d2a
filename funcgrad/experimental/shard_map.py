"""``funcgrad.experimental.shard_map``: ``shard_map`` with JAX's older signature (the mesh and the
specs by position, ``check_rep``), as ``jax.experimental.shard_map`` keeps it (deprecated in JAX
0.8 and kept as a legacy API; reading it warns as JAX's does). Every mesh axis is manual, as in
JAX's legacy wrapper; it is ``funcgrad.shard_map`` otherwise (flax's RNG guide imports it).

Layer: surface. Imports ``funcgrad.parallel`` (``shard_map``) and the standard library.

>>> import warnings, funcgrad, numpy as np
>>> from funcgrad.experimental import shard_map as legacy
>>> from funcgrad.sharding import AxisType, P, make_mesh
>>> mesh = make_mesh((1,), ("x",), (AxisType.Auto,))
>>> with warnings.catch_warnings(record=True):
...     warnings.simplefilter("always")
...     f = legacy.shard_map(lambda a: funcgrad.lax.psum(a.sum(), "x"), mesh, P("x"), P())
>>> float(funcgrad.jit(f)(np.arange(4.0)))
6.0
"""

import warnings

from funcgrad.parallel import shard_map as _shard_map

__all__: list[str] = []  # ``shard_map`` is read through __getattr__ (JAX's deprecation), not exported


def _legacy_shard_map(f, mesh, in_specs, out_specs, check_rep=True):
    # JAX's wrapper passes axis_names=set(): every axis of the mesh is manual (funcgrad's default).
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)


def __getattr__(name):
    if name == "shard_map":
        warnings.warn(
            "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _legacy_shard_map
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
