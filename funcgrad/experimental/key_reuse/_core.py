"""JAX's key-reuse types and helpers (``jax.experimental.key_reuse._core``): ``Source``, ``Sink``,
``Forward`` and ``KeyReuseSignature`` (what a function does to its key arguments), ``consume``,
``assert_consumed``/``assert_unconsumed``, ``check_key_reuse`` and ``function_type_signature``.

Layer: surface. Imports funcgrad/_key_reuse.py (the checker, NOTE: [key reuse]) and funcgrad.api.

funcgrad's jaxprs hold keys as their raw data, so the signatures are found by running the
function's trace under the checker (``function_type_signature``), not by reading a jaxpr; JAX's
per-primitive table (``key_reuse_signatures``) holds JAX's entries for the primitives funcgrad
shares with it, for reading: the checker does not consult it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import total_ordering
from typing import Any, NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import _key_reuse, lax
from funcgrad.api import make_jaxpr
from funcgrad.interpreters import ad, batching, mlir
from funcgrad.jitting import ShapeDtypeStruct
from funcgrad.kernel import core
from funcgrad.kernel.errors import KeyReuseError
from funcgrad.random._keys import KeyArray, KeyTy
from funcgrad.tree_util import tree_map

__all__ = [
    "Forward",
    "KeyReuseError",
    "KeyReuseSignature",
    "Sink",
    "Source",
    "assert_consumed",
    "assert_unconsumed",
    "check_key_reuse",
    "consume",
    "consume_p",
    "function_type_signature",
    "key_reuse_signatures",
]


@total_ordering
class _SourceSinkBase:
    """An argument (``Sink``) or result (``Source``) position and a boolean mask of the keys
    there: immutable and hashable; an all-True mask equals ``True``, an empty or all-False one
    ``False``."""

    idx: int
    mask: bool | np.ndarray

    def __init__(self, idx: int, mask: bool | np.bool_ | np.ndarray = True):
        if not isinstance(idx, int):
            raise TypeError(f"{type(self).__name__}: idx must be an int, got {idx!r}")
        if isinstance(mask, np.ndarray):
            if mask.dtype != np.dtype(bool):
                raise TypeError(f"{type(self).__name__}: mask must be boolean, got {mask.dtype}")
            if not np.any(mask):  # (empty first: np.all of an empty mask is True)
                mask = False
            elif np.all(mask):
                mask = True
            elif mask.flags.writeable:
                mask = np.array(mask, copy=True)
                mask.flags.writeable = False
        elif isinstance(mask, np.bool_):
            mask = bool(mask)
        elif not isinstance(mask, bool):
            raise TypeError(f"{type(self).__name__}: mask must be a bool or boolean array, got {mask!r}")
        object.__setattr__(self, "idx", idx)
        object.__setattr__(self, "mask", mask)

    def __setattr__(self, *args, **kwargs):
        raise ValueError(f"{self.__class__.__name__} is immutable")

    def __eq__(self, other):
        return (
            self.__class__ == other.__class__
            and self.idx == other.idx
            and np.shape(self.mask) == np.shape(other.mask)
            and bool(np.all(self.mask == other.mask))
        )

    def __lt__(self, other):
        if isinstance(other, Forward):
            return True
        if isinstance(other, _SourceSinkBase):
            return (self.__class__.__name__, self.idx) < (other.__class__.__name__, other.idx)
        return NotImplemented

    def __hash__(self):
        if isinstance(self.mask, bool):
            return hash((self.__class__, self.idx, self.mask))
        mask = np.asarray(self.mask)
        return hash((self.__class__, self.idx, mask.shape, tuple(mask.flatten().tolist())))

    def __repr__(self):
        if self.mask is True:
            return f"{self.__class__.__name__}({self.idx})"
        return f"{self.__class__.__name__}({self.idx}, {self.mask})"


class Sink(_SourceSinkBase):
    """The keys of argument ``idx`` selected by ``mask`` are consumed.

    >>> Sink(0) == Sink(0, np.array([True, True])), Sink(1)
    (True, Sink(1))
    """


class Source(_SourceSinkBase):
    """Result ``idx`` is a fresh key (unconsumed where ``mask``).

    >>> Source(0, False) == Source(0, np.array([False, False]))
    True
    """


class Forward(NamedTuple):
    """Result ``out_idx`` is argument ``in_idx``'s keys (consuming one consumes the other).

    >>> Forward(0, 1)
    Forward(0, 1)
    """

    in_idx: int
    out_idx: int

    def __repr__(self):
        return f"Forward({self.in_idx}, {self.out_idx})"


class KeyReuseSignature:
    """What a function does to keys: a set of ``Sink``, ``Source`` and ``Forward``.

    >>> KeyReuseSignature(Sink(1), Source(0))
    KeyReuseSignature(Sink(1), Source(0))
    >>> KeyReuseSignature(Sink(0), Forward(0, 0)) == KeyReuseSignature(Forward(0, 0), Sink(0))
    True
    """

    def __init__(self, *args):
        self._args = frozenset(args)

    def __repr__(self):
        return f"KeyReuseSignature{tuple(sorted(self._args))}"

    def __eq__(self, other):
        return isinstance(other, KeyReuseSignature) and self._args == other._args

    def __hash__(self):
        return hash(self._args)

    @property
    def sinks(self) -> Iterator[Sink]:
        yield from (s for s in self._args if isinstance(s, Sink))

    @property
    def sources(self) -> Iterator[Source]:
        yield from (s for s in self._args if isinstance(s, Source))

    @property
    def forwards(self) -> Iterator[Forward]:
        yield from (s for s in self._args if isinstance(s, Forward))

    def check_signature(self, *args, funcname="function", context=None):
        """Raise ``KeyReuseError`` if a key argument this signature consumes was consumed."""
        for sink in self.sinks:
            key = args[sink.idx]
            if hasattr(key, "_key_reuse_cell") and np.any(np.logical_and(key._consumed, sink.mask)):
                msg = f"Previously-consumed key passed to {funcname} at index {sink.idx}"
                raise KeyReuseError(msg + (f" {context}" if context else ""))

    def update_consumption(self, args_in, args_out):
        """Mark the key arguments consumed and the key results as the signature says."""
        with _key_reuse.checking():
            for sink in self.sinks:
                arg = args_in[sink.idx]
                if hasattr(arg, "_key_reuse_cell"):
                    cell = _key_reuse._cell(arg)
                    new = np.logical_or(cell.mask, sink.mask)
                    cell.mask = bool(new) if np.ndim(new) == 0 else new
            for arg in args_out:
                if hasattr(arg, "_key_reuse_cell"):
                    _key_reuse.fresh(arg, True)
            for source in self.sources:
                if hasattr(args_out[source.idx], "_key_reuse_cell"):
                    _key_reuse.fresh(args_out[source.idx], ~np.asarray(source.mask))
            for fwd in self.forwards:
                a, b = args_in[fwd.in_idx], args_out[fwd.out_idx]
                if hasattr(a, "_key_reuse_cell") and hasattr(b, "_key_reuse_cell"):
                    _key_reuse.alias(b, a)


# JAX's marker primitive: the identity on a key's data, staged where ``consume`` is called (the
# checker itself follows the key objects: NOTE: [key reuse]).
consume_p = core.Primitive("consume")
consume_p.def_impl(lambda x: x)
consume_p.def_abstract_eval(lambda x: x)
batching.defvectorized(consume_p)
ad.deflinear(consume_p, lambda t: [t])
mlir.register_lowering(consume_p, mlir.lower_fun(lambda x: x, multiple_results=False))

# JAX's per-primitive signatures: those of the primitives this module defines (funcgrad's random
# functions are compositions, whose signatures ``function_type_signature`` finds).
key_reuse_signatures: dict = {}


def consume(key):
    """Consume ``key`` (for the key-reuse checker) and return it (a consumed copy: consuming
    either is consuming both).

    >>> import funcgrad
    >>> from funcgrad import random
    >>> with funcgrad.debug_key_reuse(True):
    ...     k = consume(random.key(0))
    ...     bool(k._consumed)
    True
    """
    _key_reuse.consume(key, "consume")
    out = type(key)(key._impl, consume_p.bind(key._base_array))
    return _key_reuse.alias(out, key)


def _assert_consumed_value(key, expected) -> None:
    if not _key_reuse.active():
        return
    consumed = np.asarray(_key_reuse.consumed_mask(key))
    expected = np.asarray(expected)
    if not np.all(consumed == expected):
        if np.all(expected):
            raise AssertionError(f"Expected key to be consumed, got consumed={consumed}")
        if not np.any(expected):
            raise AssertionError(f"Expected key to not be consumed, got consumed={consumed}")
        raise AssertionError(f"Expected {expected}, got {consumed}")


def assert_unconsumed(key) -> None:
    """Assert (while the checker runs) that ``key`` is not consumed: an ``AssertionError`` if it is.

    >>> from funcgrad import random
    >>> check_key_reuse(assert_unconsumed, random.key(0))
    """
    _assert_consumed_value(key, False)


def assert_consumed(key, value=True) -> None:
    """Assert (while the checker runs) that ``key`` is consumed (``value``: a boolean mask of the
    keys' shape, for some of them).

    >>> from funcgrad import random
    >>> def f(k):
    ...     random.bits(k)
    ...     assert_consumed(k)
    >>> check_key_reuse(f, random.key(0))
    """
    _assert_consumed_value(key, value)


def _concrete_keys(x):
    """A key-typed ``ShapeDtypeStruct`` (``eval_shape(random.key, 0)``) as keys of its type (the
    trace needs key arrays; their values are never read)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(x, ShapeDtypeStruct) and isinstance(dtype, KeyTy):
        data = np.zeros((*x.shape, *dtype._impl.key_shape), np.uint32)
        return KeyArray(dtype._impl, fnp.asarray(data))
    return x


def _effects(fun: Callable[..., Any], args) -> _key_reuse.Effects:
    args = tree_map(_concrete_keys, args)
    with _key_reuse.checking():

        def traced(*inner):  # (a boundary, as a control-flow function's trace: NOTE: [key reuse])
            return _key_reuse.traced_body(fun, inner)

        make_jaxpr(traced)(*args)
        return _key_reuse.take_effects()


def function_type_signature(fun: Callable[..., Any], *args: Any) -> KeyReuseSignature:
    """The key-reuse signature of ``fun`` called on ``args`` (traced; positions count the key
    arguments and key results, as JAX's count key variables).

    >>> from funcgrad import random
    >>> function_type_signature(random.split, random.key(0))
    KeyReuseSignature(Sink(0), Source(0))
    >>> function_type_signature(lambda k: k, random.key(0))
    KeyReuseSignature(Forward(0, 0),)
    """
    eff = _effects(fun, args)
    parts = [Sink(i, m) for i, m in eff.sinks.items()]
    for j, (kind, what) in enumerate(eff.outs):
        if kind == "arg":
            parts.append(Forward(what, j))
        elif kind == "new" and not np.all(what):
            parts.append(Source(j, np.logical_not(what)))
    return KeyReuseSignature(*parts)


def check_key_reuse(fun: Callable[..., Any], /, *args: Any) -> None:
    """Trace ``fun(*args)`` and raise ``KeyReuseError`` where it reuses a PRNG key (whatever
    ``jax_debug_key_reuse`` says); its key arguments start unconsumed.

    >>> from funcgrad import random
    >>> def f(key):
    ...     return random.uniform(key) + random.uniform(key)
    >>> try:
    ...     check_key_reuse(f, random.key(0))
    ... except KeyReuseError as e:
    ...     print(e)
    In jit, argument 0 is already consumed.
    """
    _effects(fun, args)


# JAX's table, for the primitives funcgrad shares with it (what the checker does with the keys of
# the funcgrad.numpy/lax functions built on them: funcgrad/random/_keys.py).
key_reuse_signatures[consume_p] = KeyReuseSignature(Sink(0), Forward(0, 0))
for _p in (
    lax.broadcast_in_dim_p, lax.copy_p, lax.convert_element_type_p, lax.reshape_p, lax.squeeze_p,
    lax.dynamic_slice_p, lax.gather_p,
):  # fmt: skip
    key_reuse_signatures[_p] = KeyReuseSignature(Forward(0, 0))
key_reuse_signatures[lax.dynamic_update_slice_p] = KeyReuseSignature(Sink(1), Forward(0, 0))
key_reuse_signatures[lax.scatter_p] = KeyReuseSignature(Sink(2), Forward(0, 0))
key_reuse_signatures[lax.eq_p] = KeyReuseSignature()
key_reuse_signatures[lax.ne_p] = KeyReuseSignature()
del _p
