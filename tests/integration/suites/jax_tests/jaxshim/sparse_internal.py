"""``jax.experimental.sparse``'s test-support modules for JAX's sparse test files: ``test_util``
(JAX's sampling of sparse layouts and random sparse arrays, read from the installed oracle jax, see
``_oracle_source``), ``util`` (``SparseInfo``), and the ``coo``/``csr``/``_lowerings`` modules
(their public classes and functions funcgrad's; JAX's private helpers read as missing internals)."""

from __future__ import annotations

import sys
import types
from typing import NamedTuple

import numpy as np

import funcgrad.experimental.sparse as _sparse

from . import _oracle_source
from .stubs import Internal


class SparseInfo(NamedTuple):
    """JAX's ``sparse.util.SparseInfo`` (the static part of a sparse array's layout)."""

    shape: tuple
    indices_sorted: bool = False
    unique_indices: bool = False


def _module(name: str, names: dict) -> types.ModuleType:
    module = Internal(name)
    module.__dict__.update(names)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def install() -> None:
    import jax.experimental.sparse  # noqa: F401 - the alias's (funcgrad's), the parent

    public = {k: v for k, v in vars(_sparse).items() if not k.startswith("_")}
    _module(
        "jax.experimental.sparse.util",
        {"SparseInfo": SparseInfo, "CuSparseEfficiencyWarning": _sparse.CuSparseEfficiencyWarning},
    )
    # (JAX's sparsify machinery -- sparsify_raw, SparsifyEnv, SparsifyValue, arrays_to_spvalues --
    # is not funcgrad's: funcgrad's sparsify evaluates the jaxpr with sparse rules; those names
    # read as missing internals, failing only the tests that use them)
    _module(
        "jax.experimental.sparse.transform",
        {"sparsify": _sparse.sparsify, "SparseTracer": _sparse.SparseTracer},
    )
    _module("jax.experimental.sparse.coo", public)
    _module("jax.experimental.sparse.csr", public)
    _module(  # (the dtypes its GPU lowerings take: JAX's lists, which the tests sample)
        "jax.experimental.sparse._lowerings",
        {
            "SUPPORTED_DATA_DTYPES": [np.float32, np.float64, np.complex64, np.complex128],
            "SUPPORTED_INDEX_DTYPES": [np.int32],
        },
    )
    test_util = _oracle_source.load(
        "jax.experimental.sparse.test_util",
        "experimental/sparse/test_util.py",
        {"from jax._src.typing import DTypeLike\n": "DTypeLike = object\n"},
    )
    sys.modules["jax.experimental.sparse"].test_util = test_util
