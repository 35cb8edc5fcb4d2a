"""The kernel's exception types: the tracer errors and JAX's error base classes.

Layer: kernel (bottom). Imports nothing: every other kernel module may raise these, and the surface
re-exports them (``funcgrad.errors``, ``funcgrad.core``); ``kernel.core`` re-exports them where they
were first defined.
"""

from __future__ import annotations


class JAXTypeError(TypeError):
    """The base of funcgrad's (and JAX's) ``TypeError`` subclasses: the tracer errors, KeyReuseError."""


class JAXIndexError(IndexError):
    """The base of funcgrad's (and JAX's) ``IndexError`` subclasses (NonConcreteBooleanIndexError)."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed: an equation's inputs or outputs disagree with its primitive's rule."""


class InconclusiveDimensionOperation(Exception):
    """A comparison or operation on a symbolic dimension has no answer valid for all its values."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was consumed twice (raised where key-reuse checking is on)."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used after the transformation that created it had finished."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where a concrete Python value is required."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()``/``if`` on a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """A traced value used as an index or a size (``__index__``: ``range(x)``, ``lst[x]``)."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value converted to a NumPy array (``np.asarray(x)``, a NumPy function of it)."""
