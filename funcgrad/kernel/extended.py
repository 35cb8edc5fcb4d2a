"""Extended dtypes: dtypes a library defines over a physical representation (JAX's
``dtypes.ExtendedDType`` with its ``_rules``), and the base class of arrays of them.

Layer: kernel. Imports numpy only (``kernel.dtypes`` and ``kernel.ir`` import this module).

# NOTE: [extended dtypes]
# An extended dtype is an object that is not a NumPy dtype: a typed PRNG key's ``key<fry>``
# (funcgrad/random/_keys.py) or an instance of a library's subclass of ``ExtendedDType`` (flax's
# ``fp8_meta32``, whose ``_rules`` class says how it is stored and added). They share the
# ``dtypes.extended`` scalar type for ``issubdtype``, an aval with the dtype as it is
# (``ShapedArray(shape, edtype)``), ``result_type`` taking one as its own result, and
# ``ExtendedArray`` below as the base of their concrete arrays. Typed keys are pytree nodes whose
# raw data the transformations see (NOTE: [PRNG implementations]); an ``ExtendedDType``'s values
# are traced as themselves, as in JAX, with the rules its ``_rules`` class gives:
#   - ``physical_element_aval(dtype)``: the ShapedArray of one element's representation; an
#     array of shape S is stored as ``S + element.shape`` of ``element.dtype``
#     (``physical_aval``). XLA sees only that type (xla_bridge's ``xla_dtype``).
#   - ``convert_from(edtype, dtype)`` / ``convert_to(dtype, edtype)``: whether
#     ``convert_element_type`` may go between the representation dtype and the extended one
#     (the conversion is the identity on the representation).
#   - ``tangent_dtype(edtype)``: the dtype of its tangents (float0: not differentiable);
#     ``zero(edtype)`` and ``add(edtype, x, y)``: what the transformations use where they make a
#     zero tangent or accumulate cotangents (``hooks.zeros`` / ``hooks.add_any``: flax's
#     fp8_meta32 accumulates by max, its zero is -inf).
#   - ``full(shape, fill_value, edtype)``: ``numpy.full``/``zeros``/``ones`` of the dtype.
# Eagerly a value of an extended dtype is an ``EArray``: its aval and its physical data.
"""

from __future__ import annotations

import math

import numpy as np


class ExtendedDType:
    """The base class of a library's extended dtype (JAX's ``jax._src.dtypes.ExtendedDType``):
    a subclass gives ``type`` (a subclass of ``dtypes.extended``, for ``issubdtype``), ``name``
    and ``_rules`` (NOTE: [extended dtypes])."""

    _rules = None
    # NumPy's kind of opaque types, as ml_dtypes' bfloat16 reports: code that asks a dtype's kind
    # ("fc" for differentiable values) asks ``kernel.dtypes.is_inexact`` next, which reads the rules.
    kind = "V"

    @property
    def type(self) -> type:  # (a subclass overrides it, often with a class attribute)
        raise NotImplementedError(f"{type(self).__name__} must define the extended dtype's `type`")

    @property
    def itemsize(self) -> int:
        element = physical_element_aval(self)
        return math.prod(element.shape) * np.dtype(element.dtype).itemsize


def is_extended(dtype) -> bool:
    """Whether ``dtype`` is a library's extended dtype (an ``ExtendedDType`` instance)."""
    return isinstance(dtype, ExtendedDType)


def rules(dtype, what: str):
    """The rule ``what`` of the extended dtype ``dtype``, or a TypeError naming what is missing."""
    rule = getattr(dtype._rules, what, None)
    if rule is None:
        raise TypeError(f"the extended dtype {dtype} has no `{what}` rule in its `_rules` ({dtype._rules!r})")
    return rule


def physical_element_aval(dtype):
    """The aval of one element's representation (``_rules.physical_element_aval``)."""
    return rules(dtype, "physical_element_aval")(dtype)


def physical_shape_dtype(shape, dtype) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of the representation of an array of ``shape`` and extended ``dtype``."""
    element = physical_element_aval(dtype)
    return (*shape, *element.shape), np.dtype(element.dtype)


def tangent_dtype(dtype):
    """The dtype of a tangent of an extended ``dtype`` (its rules' ``tangent_dtype``; JAX's default
    without one is float0, not differentiable)."""
    rule = getattr(dtype._rules, "tangent_dtype", None)
    return None if rule is None else rule(dtype)  # (None: the caller's float0)


class ExtendedArray:
    """The base of arrays whose dtype is an extended dtype (JAX's ``dtypes.extended``): the typed
    PRNG keys of funcgrad/random/_keys.py (NOTE: [PRNG implementations]) and ``EArray``. They are
    ``funcgrad.Array`` instances for ``isinstance``; funcgrad.numpy's structural functions
    (``asarray``, ``reshape``, ``transpose``, ``expand_dims``, ``squeeze``, ``broadcast_to``,
    ``concatenate``, ``stack``, ``where``) hand them to ``_numpy_function(func, args, kwargs)``,
    which applies ``func`` to their data."""

    __slots__ = ()

    def _numpy_function(self, func, args, kwargs):
        raise NotImplementedError


class EArray(ExtendedArray):
    """A concrete array of a library's extended dtype (JAX's ``earray.EArray``): its aval and its
    physical data (an array of ``physical_shape_dtype(aval.shape, aval.dtype)``)."""

    __slots__ = ("_aval", "_data")
    __array_priority__ = 100

    def __init__(self, aval, data):
        self._aval = aval
        self._data = data

    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: math.prod(self._aval.shape))
    weak_type = property(lambda self: False)
    itemsize = property(lambda self: self._aval.dtype.itemsize)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        raise NotImplementedError("iteration over an array of an extended dtype")

    def block_until_ready(self):
        block = getattr(self._data, "block_until_ready", None)
        if block is not None:
            block()
        return self

    def copy(self):
        return EArray(self._aval, np.array(self._data, copy=True))

    @property
    def sharding(self):
        return self._data.sharding

    def devices(self):
        return self._data.devices()

    def __repr__(self):
        return "E" + repr(self._data)
