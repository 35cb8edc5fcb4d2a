"""PRNG implementations and the keys of the ones other than threefry (``jax.extend.random``'s
``PRNGImpl``, and JAX's typed key arrays for them).

Layer: surface. Imports the kernel's pytree registry only; the implementations themselves (threefry,
rbg, unsafe_rbg) are built in funcgrad/random/_impls.py, user ones by
``funcgrad.extend.random.define_prng_impl``.

# NOTE: [PRNG implementations]
# A PRNGImpl names four pure functions on raw uint32 key data of shape ``key_shape``: seed,
# split, fold_in, random_bits. funcgrad's default generator, threefry2x32, keeps its keys raw
# (uint32[2], NOTE: [random keys are data]); a key of any other implementation is a ``KeyArray``,
# a pytree holding the raw data as its one leaf and the implementation as static aux data, so it
# crosses jit, vmap and grad like any array, and funcgrad.random's split/fold_in/bits dispatch on
# it to the implementation's functions (every sampler draws through those three).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu

__all__ = ["KeyArray", "PRNGImpl", "PRNGS", "register_prng", "resolve_impl"]


class PRNGImpl(NamedTuple):
    """A PRNG implementation (JAX's ``PRNGImpl``): key data ``uint32[*key_shape]`` and

    ``seed(int[]) -> K``, ``split(K, shape) -> K[*shape]``, ``fold_in(K, uint32[]) -> K``,
    ``random_bits(K, bit_width, shape) -> uint<bit_width>[*shape]``.

    >>> impl = PRNGS["rbg"]
    >>> impl.key_shape, impl.name, str(impl)
    ((4,), 'rbg', 'rbg')
    """

    key_shape: tuple[int, ...]
    seed: Callable
    split: Callable
    random_bits: Callable
    fold_in: Callable
    name: str = "<unnamed>"
    tag: str = "?"

    def __hash__(self) -> int:
        return hash(self.tag)

    def __str__(self) -> str:
        return self.tag


PRNGS: dict[str, PRNGImpl] = {}


def register_prng(impl: PRNGImpl) -> PRNGImpl:
    """Make ``impl`` available by its name (``random.key(0, impl="rbg")``)."""
    if impl.name in PRNGS and PRNGS[impl.name] is not impl:
        raise ValueError(f"a PRNG implementation named {impl.name!r} is already registered")
    PRNGS[impl.name] = impl
    return impl


def resolve_impl(impl, where: str) -> PRNGImpl | None:
    """The PRNGImpl ``impl`` names (a name, a PRNGImpl or a ``define_prng_impl`` spec), or None
    for funcgrad's raw threefry keys (``impl`` None or threefry)."""
    if impl is None:
        return None
    spec = getattr(impl, "_impl", impl)  # a PRNGSpec wraps its PRNGImpl
    if isinstance(spec, str):
        if spec not in PRNGS:
            raise ValueError(
                f"random.{where}: unknown PRNG implementation {spec!r}; the registered ones are "
                f"{sorted(PRNGS)} (define one with funcgrad.extend.random.define_prng_impl)"
            )
        spec = PRNGS[spec]
    if not isinstance(spec, PRNGImpl):
        raise TypeError(f"random.{where}: impl must be a name or a PRNG implementation, got {impl!r}")
    return None if spec.name == "threefry2x32" else spec


class KeyArray:
    """Keys of a PRNG implementation other than threefry: the raw ``uint32`` data (shape
    ``(*batch, *impl.key_shape)``) and the implementation. ``shape`` is the batch shape, as for
    JAX's typed keys; index it, iterate it, ``key_data`` gives the raw data back.

    >>> from funcgrad import random
    >>> k = random.key(0, impl="rbg")
    >>> k.shape, random.key_data(k).shape, random.key_impl(k)
    ((), (4,), 'rbg')
    >>> random.split(k, 3).shape
    (3,)
    """

    __slots__ = ("_base_array", "_impl")

    def __init__(self, impl: PRNGImpl, base_array):
        self._impl = impl
        self._base_array = base_array

    @property
    def shape(self) -> tuple[int, ...]:
        nd = len(self._impl.key_shape)
        full = core.get_aval(self._base_array).shape
        return tuple(full[: len(full) - nd])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> str:
        return f"key<{self._impl.tag}>"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a single key (a key array of shape ())")
        return self.shape[0]

    def __getitem__(self, index):
        if not self.shape:
            raise TypeError("a single key (shape ()) cannot be indexed")
        if not isinstance(index, tuple):
            index = (index,)
        return KeyArray(self._impl, self._base_array[(*index, Ellipsis)])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._base_array!r}"


tu.register_pytree_node(
    KeyArray,
    lambda k: ((k._base_array,), k._impl),
    lambda impl, children: KeyArray(impl, children[0]),
)
