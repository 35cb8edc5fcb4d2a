"""``jax._src.typing`` under the alias: JAX's annotation types (libraries import ``Array``,
``ArrayLike``, ``DTypeLike``, ``Shape``, ``DType`` from here as if public): funcgrad's
``typing`` (``jax.typing``) and the protocols and aliases JAX's module defines beside it.

>>> isinstance(np.float32(1), SupportsDType), isinstance(2.0, Array)
(True, False)
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Sequence
from types import EllipsisType
from typing import Any, Protocol, Union

import numpy as np

from funcgrad.typing import Array, ArrayLike

__all__ = [
    "AnyInt", "Array", "ArrayLike", "DLDeviceType", "DType", "DTypeLike", "DeprecatedArg", "DimSize",
    "DuckTypedArray", "ExtendedDType", "Index", "Shape", "StaticIndex", "StaticScalar", "SupportsDType",
    "SupportsNdim", "SupportsShape", "SupportsSize",
]  # fmt: skip

DType = np.dtype
ExtendedDType = Any
StaticScalar = Union[np.bool_, np.number, bool, int, float, complex]  # noqa: UP007


@typing.runtime_checkable
class SupportsDType(Protocol):
    @property
    def dtype(self, /) -> DType: ...


class SupportsShape(Protocol):
    @property
    def shape(self, /) -> tuple[int, ...]: ...


class SupportsSize(Protocol):
    @property
    def size(self, /) -> int: ...


class SupportsNdim(Protocol):
    @property
    def ndim(self, /) -> int: ...


# (JAX's members: funcgrad.typing's DTypeLike without SupportsDType, which is JAX's fourth)
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]  # noqa: UP007
DimSize = Union[int, Any]  # noqa: UP007
Shape = Sequence[DimSize]


class DuckTypedArray(Protocol):
    @property
    def dtype(self) -> DType: ...

    @property
    def shape(self) -> Shape: ...


class DeprecatedArg:
    def __repr__(self):
        return "Deprecated"


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10


AnyInt = int | np.integer
StaticIndex = AnyInt | slice | EllipsisType
Index = StaticIndex | None | Sequence[AnyInt] | Array | np.ndarray
