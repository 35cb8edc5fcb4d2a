"""PRNG implementations and typed key arrays (``jax.extend.random``'s ``PRNGImpl``; JAX's typed
keys, ``random.key(0)``, of dtype ``key<fry>``).

Layer: surface. Imports the kernel (pytree registry, ``get_aval``) and funcgrad.numpy; the
implementations themselves (threefry, rbg, unsafe_rbg) are built in funcgrad/random/_impls.py, user
ones by ``funcgrad.extend.random.define_prng_impl``.

# NOTE: [PRNG implementations]
# A PRNGImpl names four pure functions on raw uint32 key data of shape ``key_shape``: seed,
# split, fold_in, random_bits. A typed key (``random.key(0)``, ``wrap_key_data``, any impl
# including the default threefry2x32) is a ``KeyArray``: a pytree node holding the raw data
# (shape ``(*batch, *key_shape)``) as its one leaf and the implementation as static aux data, so it
# crosses jit, vmap, scan, grad and checkpoint like any array, and funcgrad.random's
# split/fold_in/bits dispatch on it to the implementation's functions (every sampler draws through
# those three). Its ``shape`` is the batch shape and its dtype the extended dtype ``KeyTy``
# (``key<fry>``), as JAX's; funcgrad.numpy's structural functions reach it through
# ``ExtendedArray._numpy_function`` (funcgrad/numpy/_dtypes.py). Raw ``uint32[..., 2]`` threefry
# data (``random.PRNGKey``) is accepted everywhere a key is and draws the same numbers.
# The data is the leaf for funcgrad's transformations only: the public tree utilities see a key
# array as one leaf, as JAX's (NOTE: [public pytree registry] in funcgrad/kernel/tree_util.py).
# Where it differs from JAX's typed keys, because the transformations see the data: jaxprs show
# u32[..., 2], vmap's in_axes/out_axes count from the front only (a negative axis would name a
# data axis), and a vjp's cotangent for a key is a KeyArray of float0 data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import _key_reuse
from funcgrad._utilities import ensure_compile_time_eval
from funcgrad.jitting import ShapeDtypeStruct
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.custom_rule_args import CustomVJPPrimal, SymbolicZero
from funcgrad.kernel.dtypes import float0
from funcgrad.kernel.ir import MemorySpace, ShapedArray
from funcgrad.numpy._dtypes import ExtendedArray, extended_op_error, prng_key

__all__ = ["KeyArray", "KeyTy", "PRNGImpl", "PRNGS", "register_prng", "resolve_impl"]


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


class PRNGSpec:
    """A user-defined PRNG implementation as ``random.key(..., impl=spec)`` takes it (JAX's
    ``PRNGSpec``: hashable, printed as its tag)."""

    __slots__ = ("_impl",)

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    def __hash__(self) -> int:
        return hash(self._impl)

    def __eq__(self, other) -> bool:
        return isinstance(other, PRNGSpec) and self._impl == other._impl

    def __str__(self) -> str:
        return str(self._impl)

    def __repr__(self) -> str:
        return f"PRNGSpec({self._impl.name!r})"


def register_prng(impl: PRNGImpl) -> PRNGImpl:
    """Make ``impl`` available by its name (``random.key(0, impl="rbg")``)."""
    if impl.name in PRNGS and PRNGS[impl.name] is not impl:
        raise ValueError(f"a PRNG implementation named {impl.name!r} is already registered")
    PRNGS[impl.name] = impl
    return impl


def resolve_impl(impl, where: str) -> PRNGImpl | None:
    """The PRNGImpl ``impl`` names (a name, a PRNGImpl, a ``define_prng_impl`` spec or a key
    dtype), or None for the default (threefry2x32)."""
    if impl is None:
        return None
    if isinstance(impl, KeyTy):
        return impl._impl
    spec = getattr(impl, "_impl", impl)  # a PRNGSpec wraps its PRNGImpl
    if isinstance(spec, str):
        if spec not in PRNGS:
            names = ", ".join(f'"{name}"' for name in PRNGS)
            raise ValueError(  # (JAX's words, then funcgrad's)
                f'unrecognized PRNG implementation "{spec}". Did you mean one of: {names}? '
                f"(random.{where}: unknown PRNG implementation {spec!r}; define one with "
                "funcgrad.extend.random.define_prng_impl)"
            )
        spec = PRNGS[spec]
    if not isinstance(spec, PRNGImpl):
        raise TypeError(
            f"unrecognized type {type(impl)} for specifying PRNG implementation. (random.{where}: impl "
            f"must be a name or a PRNG implementation, got {impl!r})"
        )
    return spec


class KeyTy:
    """The dtype of typed keys of one implementation, ``key<fry>`` for threefry (JAX's extended
    dtype ``KeyTy``): under ``funcgrad.dtypes.prng_key`` and ``extended`` for ``issubdtype``,
    not a NumPy dtype.

    >>> from funcgrad import random, dtypes
    >>> d = random.key(0).dtype
    >>> d, d.name, dtypes.issubdtype(d, dtypes.prng_key), d == random.key(1).dtype
    (key<fry>, 'key<fry>', True, True)
    """

    __slots__ = ("_impl",)
    type = prng_key

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def itemsize(self) -> int:
        return 4 * math.prod(self._impl.key_shape)

    def __eq__(self, other) -> bool:
        return type(other) is KeyTy and other._impl == self._impl

    def __hash__(self) -> int:
        return hash(("key", self._impl.tag))

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


class KeyShapedArray(ShapedArray):
    """The abstract value of a key array (``typeof(random.key(0))``): its shape and ``key<impl>``
    dtype, printed as JAX prints it, ``ShapedArray(key<fry>[])``."""

    __slots__ = ()

    def __init__(self, shape, dtype: KeyTy):
        self.shape, self.dtype, self.weak_type, self.sharding = tuple(shape), dtype, False, None
        self.memory_space = MemorySpace.Device

    def str_short(self, short_dtypes: bool = True, mesh_axis_types: bool = False) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"  # (one name, short or long)

    __str__ = str_short

    def __repr__(self) -> str:
        return f"ShapedArray({self.str_short()})"

    def __eq__(self, other) -> bool:
        return type(other) is KeyShapedArray and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    # The high-level-type protocol (funcgrad.experimental.hijax), as JAX's key type has it: a key
    # array is its raw data, ``uint32[*shape, *key_shape]`` (flax's hijax Rngs hold keys).
    def lo_ty(self) -> list:
        return [ShapedArray((*self.shape, *self.dtype._impl.key_shape), np.dtype(np.uint32))]

    def lower_val(self, val) -> list:
        return [val._base_array]

    def raise_val(self, data):
        return KeyArray(self.dtype._impl, data)


# ShapedArray(shape, key<impl>) makes a KeyShapedArray (flax's scan builds its carry's avals so).
KeyTy.aval_type = KeyShapedArray


def _key_error(op: str):
    def refuse(self, *args, **kwargs):
        raise extended_op_error(op, (self, *args))

    refuse.__name__ = op
    return refuse


class KeyArray(ExtendedArray):
    """An array of typed PRNG keys (JAX's ``PRNGKeyArray``): the raw ``uint32`` data (shape
    ``(*shape, *impl.key_shape)``) and the implementation. ``shape`` is the batch shape and the
    dtype ``key<impl>``; index, iterate and reshape it as an array; ``random.key_data`` gives the
    raw data back. Arithmetic on keys is refused, as in JAX.

    >>> from funcgrad import random
    >>> k = random.key(0)
    >>> k.shape, k.dtype, random.key_data(k).tolist()
    ((), key<fry>, [0, 0])
    >>> keys = random.split(k, 4)
    >>> keys.shape, keys[1].shape, keys.reshape(2, 2).shape, k[None].shape
    ((4,), (), (2, 2), (1,))
    >>> print(k)
    Array((), dtype=key<fry>) overlaying:
    [0 0]
    """

    __slots__ = ("_base_array", "_impl", "_key_reuse_cell")
    __array_priority__ = 1000  # NumPy's operators defer to ours, which refuse

    def __init__(self, impl: PRNGImpl, base_array):
        self._impl = impl
        self._base_array = base_array
        self._key_reuse_cell = None  # NOTE: [key reuse]
        _key_reuse.born(self)

    @property
    def _consumed(self):
        """Whether the key-reuse checker saw this key consumed (JAX's ``_consumed``: a bool, or a
        boolean array of the keys' shape; NOTE: [key reuse])."""
        return _key_reuse.consumed_mask(self)

    # -- what it is --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        full = getattr(self._base_array, "shape", None)
        if full is None:  # a tree utility's placeholder (e.g. tree_map(lambda x: None, keys))
            return ()
        full = tuple(full)
        return full[: len(full) - len(self._impl.key_shape)]

    @property
    def dtype(self) -> KeyTy:
        return KeyTy(self._impl)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def weak_type(self) -> bool:
        return False

    @property
    def aval(self) -> KeyShapedArray:
        return KeyShapedArray(self.shape, self.dtype)

    @property
    def sharding(self):
        return self._base_array.sharding

    def devices(self):
        return self._base_array.devices()

    def block_until_ready(self):
        self._base_array.block_until_ready()
        return self

    # The Array attributes that are the data's (JAX's PRNGKeyArray forwards them so).
    @property
    def device(self):
        return self._base_array.device

    @property
    def committed(self) -> bool:
        return self._base_array.committed

    @property
    def is_fully_addressable(self) -> bool:
        return self._base_array.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self._base_array.is_fully_replicated

    @property
    def addressable_shards(self) -> list:
        return self._base_array.addressable_shards

    @property
    def global_shards(self) -> list:
        return self._base_array.global_shards

    def addressable_data(self, index: int) -> KeyArray:
        return KeyArray(self._impl, self._base_array.addressable_data(index))

    def on_device_size_in_bytes(self) -> int:
        return self._base_array.on_device_size_in_bytes()

    def unsafe_buffer_pointer(self) -> int:
        return self._base_array.unsafe_buffer_pointer()

    def copy_to_host_async(self) -> None:
        self._base_array.copy_to_host_async()

    def is_deleted(self) -> bool:
        return self._base_array.is_deleted()

    def delete(self) -> None:
        self._base_array.delete()

    def copy(self):
        return self

    def __repr__(self) -> str:
        if isinstance(self._base_array, core.Tracer):
            return f"Traced<{self.dtype}{list(self.shape)}>(data: {self._base_array!r})"
        if not hasattr(self._base_array, "shape"):  # a tree utility's placeholder
            return f"KeyArray({self._impl.tag}, {self._base_array!r})"
        if not isinstance(self._base_array, np.ndarray | fnp.ndarray):  # e.g. eval_shape's result
            return f"{type(self._base_array).__name__}(shape={self.shape}, dtype={self.dtype})"
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._base_array)}"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    # -- as an array of keys -----------------------------------------------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a single key, shape ())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index):
        if index is Ellipsis:
            return self  # as JAX's: keys[...] is keys (flax's Variable reads keys so)
        index = index if isinstance(index, tuple) else (index,)
        used = sum(
            np.ndim(i) if getattr(i, "dtype", None) == np.bool_ else 1
            for i in index
            if i is not None and i is not Ellipsis
        )
        if used > self.ndim:
            raise IndexError(
                f"Too many indices: key array is {self.ndim}-dimensional, but {used} were indexed"
            )
        trailing = (slice(None),) * len(self._impl.key_shape)
        static = all(i is None or type(i) in (int, slice) for i in index)
        if not any(i is Ellipsis for i in index):
            index = (*index, Ellipsis)
        out = KeyArray(self._impl, self._base_array[(*index, *trailing)])
        if not _key_reuse.active():
            return out
        # (NOTE: [key reuse]: static selections consume the keys they take, as JAX's ``slice``)
        if static and any(i is not None for i in index[:-1]):
            _key_reuse.sink_selected(self, index[:-1])
            return _key_reuse.fresh(out)
        return _key_reuse.alias(out, self)

    @property
    def at(self):
        return _KeyAt(self)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return fnp.reshape(self, shape, order=order)

    def ravel(self, order="C"):
        return fnp.reshape(self, (self.size,), order=order)

    flatten = ravel

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
        return fnp.transpose(self, axes)

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return fnp.transpose(self)

    def squeeze(self, axis=None):
        return fnp.squeeze(self, axis)

    def take(self, indices, axis=None, **kwargs):
        return fnp.take(self, indices, axis=axis, **kwargs)

    def __setitem__(self, index, value):
        raise TypeError(  # (JAX's words: keys are immutable arrays)
            "JAX arrays are immutable and do not support in-place item assignment. Instead of "
            "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html"
        )

    def swapaxes(self, axis1: int, axis2: int):
        return fnp.swapaxes(self, axis1, axis2)

    def _words(self):
        """The data as ``key_size`` arrays of the key array's shape, one per uint32 word."""
        n = math.prod(self._impl.key_shape)
        flat = fnp.reshape(self._base_array, (*self.shape, n))
        return [flat[..., w] for w in range(n)]

    def _numpy_function(self, func, args, kwargs):
        """``func`` (a structural funcgrad.numpy function: it moves elements, never computes
        with them) of arguments holding key arrays of this implementation: applied to each
        uint32 word of the keys' data, where each word is an array of the keys' shape, so
        ``func``'s shapes and axes mean what they mean for the keys; the words are stacked back."""

        def words(x):
            if isinstance(x, KeyArray):
                if x._impl != self._impl:
                    raise TypeError(f"{func.__name__}: keys of different kinds, {self.dtype} and {x.dtype}")
                return x._words()
            return None

        def pick(x, w):
            if isinstance(x, list | tuple):
                return type(x)(pick(y, w) for y in x)
            return x if not isinstance(x, KeyArray) else split_words[id(x)][w]

        split_words = {}
        for a in args:  # keys are joined with keys only: non-keys in a list of arrays are refused
            for x in a if isinstance(a, list | tuple) else (a,):
                ws = words(x)
                if ws is not None:
                    split_words[id(x)] = ws
                elif isinstance(a, list | tuple) and isinstance(x, core.Tracer | fnp.ndarray | np.ndarray):
                    raise TypeError(
                        f"{func.__name__} does not accept dtypes {self.dtype}, "
                        f"{getattr(x, 'dtype', type(x).__name__)}: keys combine with keys only"
                    )
        n = math.prod(self._impl.key_shape)
        outs = [func(*[pick(a, w) for a in args], **kwargs) for w in range(n)]
        data = fnp.stack(outs, axis=-1)
        out = KeyArray(self._impl, fnp.reshape(data, (*data.shape[:-1], *self._impl.key_shape)))
        if not _key_reuse.active():
            return out
        # (NOTE: [key reuse]: keys moved are the same keys; keys joined are consumed, JAX's
        # ``concatenate`` of keys; what ``keys_by_word`` declares for slices and updates)
        keys = [
            x for a in args for x in (a if isinstance(a, list | tuple) else (a,)) if isinstance(x, KeyArray)
        ]
        how = getattr(func, "key_reuse", None)
        if how == "update":
            _key_reuse.consume(keys[1], "dynamic_update_slice", 1)
            return _key_reuse.alias(out, keys[0])
        if how == "slice":  # (the positions taken: the function applied to the keys' flat indices)
            with ensure_compile_time_eval():
                taken = np.asarray(func(np.arange(keys[0].size).reshape(keys[0].shape))).ravel()
            mask = np.zeros(keys[0].shape, bool)
            mask.flat[taken] = True
            _key_reuse.consume(keys[0], "slice", 0, mask)
            return _key_reuse.fresh(out)
        if len(keys) == 1:
            return _key_reuse.alias(out, keys[0])
        for i, k in enumerate(keys):
            _key_reuse.consume(k, "concatenate", i)
        return _key_reuse.fresh(out)

    # -- what keys are not -------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(  # (JAX's words first)
            "JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
            "jax.random.key_data(arr) if you wish to extract the underlying integer array."
        )

    def astype(self, dtype):
        if dtype == self.dtype:  # to its own key dtype: itself (JAX's, traced; optax's cast_like)
            return self
        raise TypeError(
            f"a PRNG key array cannot be cast to {dtype}; use random.key_data(keys) for its raw data"
        )

    def __bool__(self):
        raise TypeError("a PRNG key array cannot be converted to a boolean")

    def __eq__(self, other):
        if not isinstance(other, KeyArray) or other._impl != self._impl:
            _key_error("equal")(self, other)
        # (the keys' shapes broadcast, not their data's: key == keys compares a 0-d key with each
        # key, which rank promotion allows as JAX's does for a scalar)
        shape = np.broadcast_shapes(self.shape, other.shape)
        a, b = fnp.broadcast_to(self, shape), fnp.broadcast_to(other, shape)
        equal = fnp.equal(a._base_array, b._base_array)
        return fnp.all(equal, axis=tuple(range(-len(self._impl.key_shape), 0)))

    def __ne__(self, other):
        if not isinstance(other, KeyArray) or other._impl != self._impl:
            _key_error("not_equal")(self, other)
        return fnp.logical_not(self == other)

    __hash__ = None  # an array: unhashable, as JAX's keys


# Every arithmetic, comparison and conversion operator refuses keys, named as jax.numpy names it.
_BINARY = (
    "add subtract multiply true_divide floor_divide remainder power matmul bitwise_and bitwise_or "
    "bitwise_xor left_shift right_shift less less_equal greater greater_equal divmod"
)
_DUNDERS = "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift lt le gt ge divmod"
for _op, _dunder in zip(_BINARY.split(), _DUNDERS.split(), strict=True):
    setattr(KeyArray, f"__{_dunder}__", _key_error(_op))
    if not _op.startswith(("less", "greater")):
        setattr(KeyArray, f"__r{_dunder}__", _key_error(_op))
for _op in ("neg", "pos", "abs", "invert", "int", "float", "complex", "index"):
    setattr(KeyArray, f"__{_op}__", _key_error(_op))


class _KeyAt:
    """``keys.at[index].set(new_keys)`` / ``.get()``, on the data (JAX's functional update)."""

    __slots__ = ("_keys",)

    def __init__(self, keys: KeyArray):
        self._keys = keys

    def __getitem__(self, index):
        return _KeyAtIndex(self._keys, index if isinstance(index, tuple) else (index,))


class _KeyAtIndex:
    __slots__ = ("_index", "_keys")

    def __init__(self, keys: KeyArray, index: tuple):
        self._keys, self._index = keys, index

    def _data_index(self) -> tuple:
        """The index into the key data: the keys' index, then all of each key's own axes."""
        trailing = (slice(None),) * len(self._keys._impl.key_shape)
        index = self._index if any(i is Ellipsis for i in self._index) else (*self._index, Ellipsis)
        return (*index, *trailing)

    def get(self, **kwargs):
        # mode='fill' fills with uint32's maximum, the data's default fill (JAX's fill key).
        keys = self._keys
        out = KeyArray(keys._impl, keys._base_array.at[self._data_index()].get(**kwargs))
        if not _key_reuse.active():
            return out
        # (NOTE: [key reuse]: as keys[index]: a static selection consumes what it takes, JAX's
        # slice; a traced one is JAX's gather, which forwards the keys)
        index = tuple(i for i in self._index if i is not Ellipsis)
        if index and all(i is None or type(i) in (int, slice) for i in index):
            _key_reuse.sink_selected(keys, index)
            return _key_reuse.fresh(out)
        return _key_reuse.alias(out, keys)

    def set(self, values, **kwargs):
        keys = self._keys
        if not isinstance(values, KeyArray) or values._impl != keys._impl:
            raise TypeError(f"keys.at[...].set: the new values must be keys of dtype {keys.dtype}")
        data = keys._base_array.at[self._data_index()].set(values._base_array, **kwargs)
        # (JAX's scatter of keys consumes the new ones and forwards the array: NOTE: [key reuse])
        _key_reuse.consume(values, "scatter", 2)
        return _key_reuse.alias(KeyArray(keys._impl, data), keys)


def _unflatten(impl: PRNGImpl, children):
    """A key array again from its data leaf (whatever the leaf is: tree utilities unflatten with
    placeholders), except a float0 cotangent, which is float0 of the keys' shape (JAX's
    cotangent of keys)."""
    (leaf,) = children
    batch = lambda shape: tuple(shape)[: len(shape) - len(impl.key_shape)]  # noqa: E731
    # A custom rule's wrappers of the data leaf (symbolic_zeros=True) wrap the keys instead, as a
    # rule sees them in JAX, where keys are one leaf: fwd's CustomVJPPrimal holds the key array,
    # and a key's (co)tangent is a float0 SymbolicZero of the keys' shape.
    if type(leaf) is CustomVJPPrimal:
        return CustomVJPPrimal(_unflatten(impl, (leaf.value,)), leaf.perturbed)
    if type(leaf) is SymbolicZero:
        return SymbolicZero(ShapedArray(batch(leaf.shape), float0))
    if type(leaf) is ShapeDtypeStruct and leaf.dtype == np.uint32:  # eval_shape's result, as JAX's
        return ShapeDtypeStruct(batch(leaf.shape), KeyTy(impl))
    if getattr(leaf, "dtype", None) == float0 and hasattr(leaf, "shape"):
        return np.zeros(batch(leaf.shape), float0)
    return KeyArray(impl, leaf)


# A node for the transformations, a leaf for users (NOTE: [public pytree registry]).
tu.register_internal_node(KeyArray, lambda k: ((k._base_array,), k._impl), _unflatten)
