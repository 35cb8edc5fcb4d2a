"""``funcgrad.extend.ffi``: JAX's ``jax.extend.ffi``, the names of ``funcgrad.ffi`` (re-exported).

Layer: surface. Imports ``funcgrad.ffi``.

>>> from funcgrad.extend import ffi
>>> ffi.ffi_call is __import__("funcgrad.ffi").ffi.ffi_call
True
"""

from __future__ import annotations

from funcgrad.ffi import (
    build_ffi_lowering_function,
    ffi_call,
    ffi_lowering,
    include_dir,
    pycapsule,
    register_ffi_target,
    register_ffi_target_as_batch_partitionable,
    register_ffi_type,
    register_ffi_type_id,
)

__all__ = [
    "build_ffi_lowering_function",
    "ffi_call",
    "ffi_lowering",
    "include_dir",
    "pycapsule",
    "register_ffi_target",
    "register_ffi_target_as_batch_partitionable",
    "register_ffi_type",
    "register_ffi_type_id",
]
