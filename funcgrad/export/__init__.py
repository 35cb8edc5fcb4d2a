"""``funcgrad.export``: JAX's ``jax.export`` -- serialize a jitted function to a portable StableHLO
artifact and call it back, from funcgrad or from JAX.

Layer: surface. The package re-exports its private modules: ``_exported`` (``export``,
``Exported``, the calling-convention versions, calling an ``Exported``), ``_safety``
(``DisabledSafetyCheck``, the custom calls a module may hold),
``_serialization`` (JAX's flatbuffer format, the pytree-node registry), ``_shape_poly``
(symbolic dimensions; ``_dim_parser`` parses their specifications), ``_polymorphic`` (exporting
with symbolic dimensions) and ``_sharded`` (exporting with shardings).

>>> import numpy as np, funcgrad, funcgrad.numpy as fnp
>>> from funcgrad import export
>>> exp = export.export(funcgrad.jit(lambda x: fnp.sin(x) * 2))(np.zeros(3, np.float32))
>>> blob = exp.serialize()
>>> export.deserialize(blob).call(np.full(3, np.pi / 2, np.float32))
Array([2., 2., 2.], dtype=float32)
"""

from __future__ import annotations

from funcgrad.export._exported import (
    DisabledSafetyCheck,
    Exported,
    default_export_platform,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
)
from funcgrad.export._serialization import (
    deserialize,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from funcgrad.export._shape_poly import SymbolicScope, is_symbolic_dim, symbolic_args_specs, symbolic_shape

__all__ = [
    "DisabledSafetyCheck",
    "Exported",
    "SymbolicScope",
    "default_export_platform",
    "deserialize",
    "export",
    "is_symbolic_dim",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
    "register_namedtuple_serialization",
    "register_pytree_node_serialization",
    "symbolic_args_specs",
    "symbolic_shape",
]


def __dir__():  # the public names only, not this package's submodules
    return list(__all__)
