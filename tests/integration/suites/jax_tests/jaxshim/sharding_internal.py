"""The ``jax._src`` sharding internals that JAX's pjit_test and shard_map_test import at module
level (``pjit``, ``layout``, ``named_sharding``, ``pretty_printer``, ``xla_metadata``,
``random.rbg``, and names of ``sharding_impls``/``mesh``/``shard_map``/``sharding``): funcgrad's
public equivalents where they exist; the rest (``_pjit_lower``, ``GSPMDSharding``,
``parse_flatten_op_sharding``, ...) are stand-ins that fail only the tests that use them."""

from __future__ import annotations

import sys

import funcgrad
import funcgrad.experimental.layout
import funcgrad.experimental.xla_metadata
from funcgrad.experimental import pjit as pjit_module

from . import stubs


def _module(name: str, names: dict) -> stubs.Internal:
    module = sys.modules.get(name)
    if module is None:
        module = stubs.Internal(name)
        module.__path__ = []
        sys.modules[name] = module
    for key, value in names.items():
        if key not in vars(module):
            setattr(module, key, value)
    return module


_OWN = (
    "jax._src.pjit",
    "jax._src.layout",
    "jax._src.named_sharding",
    "jax._src.pretty_printer",
    "jax._src.xla_metadata",
    "jax._src.random.rbg",
)


def install(link) -> None:
    """Register the modules; ``link(name)`` makes each its parent's attribute."""
    layout = funcgrad.experimental.layout
    _module("jax._src.pjit", {"pjit": pjit_module._pjit})  # (jax.experimental.pjit.pjit)
    _module("jax._src.layout", {"Format": layout.Format, "Layout": layout.Layout})
    _module("jax._src.named_sharding", {"NamedSharding": funcgrad.sharding.NamedSharding})
    _module("jax._src.pretty_printer", {})
    metadata = funcgrad.experimental.xla_metadata
    _module("jax._src.xla_metadata", {"set_xla_metadata": metadata.set_xla_metadata})
    _module("jax._src.random.rbg", {})
    _module(
        "jax._src.mesh",
        {"use_abstract_mesh": funcgrad.sharding.use_abstract_mesh, "AxisType": funcgrad.sharding.AxisType},
    )
    # A public name of jax.experimental (not on the API lists) that funcgrad lacks, used by one test
    if not hasattr(funcgrad.experimental, "primal_tangent_dtype"):
        funcgrad.experimental.primal_tangent_dtype = stubs.Missing("jax.experimental.primal_tangent_dtype")
    _module("jax._src.sharding_impls", {"PartitionSpec": funcgrad.sharding.PartitionSpec})
    for name in _OWN:
        link(name)
