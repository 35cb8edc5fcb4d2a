"""``funcgrad.experimental.random``: JAX's stateful generator (``stateful_rng``, ``StatefulPRNG``),
NumPy's ``default_rng`` way of drawing on top of JAX's keys, as ``jax.experimental.random``.

Layer: surface. Imports funcgrad.random (keys and samplers), funcgrad.ref (the counter is a Ref)
and the kernel's pytrees.

A ``StatefulPRNG`` holds a typed key and a counter in a ``Ref``: each draw folds the counter into
the key and adds one to it, so repeated draws differ without the caller threading keys, eagerly
and under ``jit`` (the Ref is closed-over state, functionalised as every Ref is: NOTE: [refs are
functionalised at trace time]). The keys drawn are JAX's bit for bit (``fold_in(key, counter)``).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import random
from funcgrad import ref as _ref
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.numpy._dtypes import prng_key

__all__ = ["StatefulPRNG", "stateful_rng"]


def _canonicalize_size(size, *args) -> tuple[int, ...]:
    if size is None:
        return np.broadcast_shapes(*(np.shape(arg) for arg in args))
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(map(operator.index, size))


@dataclasses.dataclass(frozen=True, slots=True)
class StatefulPRNG:
    """A stateful random generator; make one with ``stateful_rng``.

    >>> rng = stateful_rng(42)
    >>> rng.uniform()
    Array(0.23566993, dtype=float64)
    """

    _base_key: object
    _counter: object

    def __post_init__(self):
        key, counter = self._base_key, self._counter
        if key is None or type(key) is object:  # rebuilt from a treedef's placeholder leaves
            return
        if not (hasattr(key, "dtype") and fnp.issubdtype(key.dtype, prng_key)):
            raise ValueError(f"Expected base_key to be a typed PRNG key; got {key}")
        if not isinstance(counter, _ref.Ref) and not isinstance(
            getattr(counter, "aval", None), _ref.AbstractRef
        ):
            raise ValueError(f"Expected counter to be a scalar integer ref; got {counter}")

    def key(self, shape: int | Sequence[int] = ()):
        """A new, independent key (of the generator's key type), advancing the generator.

        >>> rng = stateful_rng(0)
        >>> rng.key()
        Array((), dtype=key<fry>) overlaying:
        [1797259609 2579123966]
        """
        if self._base_key.shape:
            raise ValueError("cannot operate on split stateful generator")
        key = random.fold_in(self._base_key, _ref.get(self._counter))
        _ref.addupdate(self._counter, ..., 1)
        shape_tuple = _canonicalize_size(shape)
        return random.split(key, shape_tuple) if shape_tuple else key

    def random(self, size=None, dtype=float):
        """Floats in the half-open interval [0.0, 1.0).

        >>> stateful_rng(1).random(2).shape
        (2,)
        """
        return random.uniform(self.key(), shape=_canonicalize_size(size), dtype=dtype)

    def uniform(self, low=0, high=1, size=None, *, dtype=float):
        """Uniformly distributed values in ``[low, high)``.

        >>> float(stateful_rng(2).uniform(5.0, 6.0)) >= 5.0
        True
        """
        return random.uniform(
            self.key(), _canonicalize_size(size, low, high), minval=low, maxval=high, dtype=dtype
        )

    def normal(self, loc=0, scale=1, size=None, *, dtype=float):
        """Normally distributed values of mean ``loc`` and standard deviation ``scale``.

        >>> stateful_rng(3).normal(size=(2, 3)).shape
        (2, 3)
        """
        norm = random.normal(self.key(), _canonicalize_size(size, loc, scale), dtype)
        return (fnp.asarray(loc) + fnp.asarray(scale) * norm).astype(dtype)

    def integers(self, low, high=None, size=None, *, dtype=int):
        """Integers in ``[low, high)`` (``[0, low)`` without ``high``).

        >>> stateful_rng(123).spawn(1)[0].integers(0, 10, 2)
        Array([9, 8], dtype=int64)
        """
        if high is None:
            low, high = 0, low
        return random.randint(
            self.key(), _canonicalize_size(size, low, high), minval=low, maxval=high, dtype=dtype
        )

    def split(self, num: int | Sequence[int]) -> StatefulPRNG:
        """One generator of ``num`` independent children, to map over with ``vmap``.

        >>> stateful_rng(123).split(3)._base_key.shape
        (3,)
        """
        return StatefulPRNG(self.key(num), _ref.new_ref(fnp.zeros(num, dtype=int)))

    def spawn(self, n_children: int) -> list[StatefulPRNG]:
        """A list of ``n_children`` independent generators.

        >>> [r.integers(0, 10, 2) for r in stateful_rng(123).spawn(2)]
        [Array([9, 8], dtype=int64), Array([6, 5], dtype=int64)]
        """
        return [self.__class__(key, _ref.new_ref(0)) for key in self.key(n_children)]


tu.register_dataclass(StatefulPRNG, data_fields=["_base_key", "_counter"], meta_fields=[])


def stateful_rng(seed=None, *, impl=None) -> StatefulPRNG:
    """A stateful generator seeded with ``seed`` (NumPy's fresh entropy when omitted, at the top
    level only), as JAX's ``jax.experimental.random.stateful_rng``.

    >>> rng = stateful_rng(42)
    >>> rng.uniform(), rng.uniform()
    (Array(0.23566993, dtype=float64), Array(0.74211901, dtype=float64))
    """
    if seed is None:
        if type(core.current_trace()) is not core.EvalTrace:
            raise TypeError(
                "When used within transformed code, jax.experimental.random.stateful_rng()"
                " requires an explicit seed to be set."
            )
        entropy = np.random.SeedSequence().entropy
        seed = np.int64(entropy & np.iinfo(np.int64).max)
    return StatefulPRNG(random.key(seed, impl=impl), _ref.new_ref(0))
