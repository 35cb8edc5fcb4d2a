"""``funcgrad.errors``: the exceptions a JAX program catches by name (``jax.errors``).

Layer: surface. Re-exports the classes where they are defined: the kernel's tracer errors
(funcgrad/kernel/errors.py), indexing's NonConcreteBooleanIndexError and the runtime check failure
of ``checkify`` (primitives/checks.py). Each tracer error is a ``ConcretizationTypeError`` (a
``TypeError``), so catching that catches them all; as in JAX, ``JAXTypeError`` is the base of the
``TypeError`` subclasses (the tracer errors, ``UnexpectedTracerError``, ``KeyReuseError``) and
``JAXIndexError`` of ``NonConcreteBooleanIndexError``. ``JaxprTypeError`` is what the jaxpr type
checker raises, ``InconclusiveDimensionOperation`` what a comparison of symbolic dimensions with no
single answer raises. XLA's own failures (compiling, running, transferring) raise
``xla_bridge.XlaBridgeError``, a ``RuntimeError`` with the phase and a hint; as in JAX,
``JaxRuntimeError`` is jaxlib's runtime error class and ``XlaBridgeError`` subclasses it, so
``except JaxRuntimeError`` around a jitted call catches them (a host callback that raised, a bad
``compiler_options`` entry). ``checkify``'s ``JaxRuntimeError`` is another class, a ``ValueError``,
as in JAX.

>>> import funcgrad, numpy as np
>>> try:
...     funcgrad.jit(lambda x: np.asarray(x))(1.0)
... except TracerArrayConversionError as e:
...     print(type(e).__name__)
TracerArrayConversionError
"""

from __future__ import annotations

from funcgrad.kernel.errors import (
    ConcretizationTypeError,
    InconclusiveDimensionOperation,
    JAXIndexError,
    JaxprTypeError,
    JAXTypeError,
    KeyReuseError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from funcgrad.numpy.indexing import NonConcreteBooleanIndexError
from funcgrad.xla_bridge.runtime import JaxRuntimeError

__all__ = [
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "JaxprTypeError",
    "KeyReuseError",
    "JaxRuntimeError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
