"""Keys and their bits, the part of ``funcgrad.random`` (JAX's ``jax.random`` API) every sampler
draws from: ``key``/``PRNGKey``, ``split``, ``fold_in``, ``bits``, the key data functions, and the
compiled-sampler wrapper (NOTE: [compiled samplers]); the samplers are ``_basic``'s and the other
distribution modules'.

Layer: surface. Imports the kernel, the primitive catalog, funcgrad.numpy, funcgrad.jitting
(``library_jit``) and the random package's ``_keys``, ``_cipher`` and ``_eager``.

Keys are typed key arrays (``key(0)``, funcgrad/random/_keys.py) or their raw ``uint32[2]`` data
(``PRNGKey(0)``); NOTE: [PRNG implementations]. Every function is a pure function of its key, built
from threefry2x32 written with ``add``/``xor``/shift primitives, so it runs eagerly with NumPy,
compiles under ``jit`` and batches under ``vmap``. The bit streams follow JAX's threefry
implementation with ``jax_threefry_partitionable`` (JAX's default) and 64-bit types enabled, so
``funcgrad.random.normal(PRNGKey(0), (3,))`` equals JAX's value with ``jax_enable_x64`` (a test
checks this against JAX).

# NOTE: [random keys are data]
# A key is a value (a typed key array over uint32 data, or that data): split it, never reuse
# it. Splitting and drawing are deterministic functions of the key, so they can be
# differentiated around (they have zero gradients), staged, and vmapped over a batch of keys.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import _config_flags, _key_reuse, _placement, _transfer_guard
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.jitting import library_jit
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.numpy._core import check_user_dtype, constant, static_shape
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives.rng import iota_2x32_shape_p
from funcgrad.random import _threefry_original
from funcgrad.random._cipher import _key_halves, _threefry2x32
from funcgrad.random._eager import check_legacy_key, eager_draw, program, quiet
from funcgrad.random._keys import PRNGS, KeyArray, KeyTy, PRNGImpl, PRNGSpec, register_prng, resolve_impl

__all__ = [
    "PRNGKey",
    "bits",
    "clone",
    "fold_in",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "split",
    "wrap_key_data",
]

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: _U64}


def _u32(value) -> np.ndarray:
    return np.asarray(value, _U32)


def _aval(x):
    return core.get_aval(x)


# ----------------------------------------------------------------------------------------------
# threefry2x32


def _iota_2x32(shape: tuple[int, ...]):
    """The row-major flat index of every element of ``shape``, as (high, low) uint32 words."""
    if not shape:
        return _u32(0), _u32(0)
    size = math.prod(shape)
    if size >= 2**32:  # (64-bit counters: XLA computes them when staged, NumPy eagerly)
        return tuple(iota_2x32_shape_p.bind(shape=tuple(shape)))
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    lo = None
    for d, s in enumerate(strides):
        term = ew.mul_p.bind(st.broadcasted_iota(_U32, shape, d), _u32(s))
        lo = term if lo is None else ew.add_p.bind(lo, term)
    zeros = st.broadcast_in_dim(_u32(0), shape, ())
    return zeros, lo


def _partitionable() -> bool:
    return _config_flags.threefry_partitionable_context.value


def _threefry_bits(data, bit_width: int, shape: tuple[int, ...]):
    """Random bits of one raw threefry key (NOTE: [PRNG implementations]: its ``random_bits``;
    NOTE: [threefry bit streams] for ``jax_threefry_partitionable=False``)."""
    if not _partitionable():
        return _threefry_original.random_bits(data, bit_width, shape)
    k0, k1 = _key_halves(data)
    hi, lo = _iota_2x32(shape)
    if hi.shape == ():
        hi, lo = st.broadcast_in_dim(hi, shape, ()), st.broadcast_in_dim(lo, shape, ())
    b0, b1 = _threefry2x32(k0, k1, hi, lo)
    if bit_width == 64:
        b0 = ew.convert_element_type(b0, _U64)
        b1 = ew.convert_element_type(b1, _U64)
        return ew.or_p.bind(ew.shift_left_p.bind(b0, constant(32, _U64)), b1)
    if bit_width not in _UINT:
        raise TypeError(f"random bits need an 8-, 16-, 32- or 64-bit width, got {bit_width}")
    bits = ew.xor_p.bind(b0, b1)
    return bits if bit_width == 32 else ew.convert_element_type(bits, _UINT[bit_width])


def _threefry_split(data, shape: tuple[int, ...]):
    if not _partitionable():
        return _threefry_original.split(data, shape)
    k0, k1 = _key_halves(data)
    hi, lo = _iota_2x32(shape)
    b0, b1 = _threefry2x32(k0, k1, hi, lo)
    nd = len(shape)
    return st.concatenate([st.expand_dims(b0, (nd,)), st.expand_dims(b1, (nd,))], nd)


def _threefry_fold_in(data, d):
    k0, k1 = _key_halves(data)
    b0, b1 = _threefry2x32(k0, k1, _u32(0), d)
    return st.concatenate([st.reshape(b0, (1,)), st.reshape(b1, (1,))], 0)


def _random_bits(key, bit_width: int, shape: tuple[int, ...]):
    """Random bits of one key, typed or raw (every sampler draws through this)."""
    keys = _typed(key, "sampler")
    return keys._impl.random_bits(keys._base_array, bit_width, shape)


def _shape(shape) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return static_shape(shape)  # (a traced dimension is jax's TypeError)


# ----------------------------------------------------------------------------------------------
# Keys


def _raw_data(data, name: str, impl=None):
    """``data`` checked as raw uint32 key data of ``impl`` (the default generator's by default):
    shape ``(..., *impl.key_shape)``."""
    impl = impl or default_prng_impl()
    if isinstance(data, KeyArray):
        raise TypeError(
            f"random.{name} expected raw uint32 key data, got a typed key array of dtype {data.dtype}; "
            "use random.key_data(keys) for its data"
        )
    if not isinstance(data, core.Tracer | Array):
        data = fnp.asarray(data)
    aval = _aval(data)
    nd = len(impl.key_shape)
    if aval.ndim < 1:  # (JAX's words first, in JAX's order of checks)
        raise TypeError(
            f"JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; got ndim={aval.ndim} "
            f"(random.{name}: make keys with random.key(seed), or raw data with random.PRNGKey(seed))"
        )
    if tuple(aval.shape[len(aval.shape) - nd :]) != tuple(impl.key_shape) or aval.ndim < nd:
        raise TypeError(
            "JAX encountered invalid PRNG key data: expected key_data.shape to end with "
            f"{tuple(impl.key_shape)}; got shape={tuple(aval.shape)} for impl={impl.name} "
            f"(random.{name}: expected a shape ending in {tuple(impl.key_shape)} ({impl.name} keys))"
        )
    if aval.dtype != _U32:
        raise TypeError(
            "JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
            f"got dtype={aval.dtype.name} (random.{name}: make keys with random.key(seed), or raw "
            "data with random.PRNGKey(seed))"
        )
    return data


def _typed(key, name: str, single: bool = True) -> KeyArray:
    """``key`` as a typed key array: itself, or raw threefry data wrapped (NOTE: [PRNG
    implementations]); with ``single``, exactly one key."""
    if type(key) is KeyArray:
        keys = key
        data_shape = tuple(key._base_array.shape)
        if data_shape[len(data_shape) - len(key._impl.key_shape) :] != tuple(key._impl.key_shape):
            raise ValueError(
                f"funcgrad.random's {name}: a {key.dtype} key array holds data of shape {data_shape}, "
                f"which does not end in {tuple(key._impl.key_shape)}: vmap's in_axes/out_axes over key "
                "arrays must name their axes from the front (non-negative), as the keys' data has its "
                "own trailing axes"
            )
    else:
        keys = KeyArray(default_prng_impl(), _raw_data(key, name))
        if _config_flags.legacy_prng_key_level != "allow":  # (after the data's checks, as JAX's)
            check_legacy_key()
    if single and keys.shape:
        raise ValueError(
            f"funcgrad.random's {name} accepts a single key, but was given a key array of shape "
            f"{keys.shape} != (). "
            "Use vmap for batching, e.g. vmap(lambda k: random.normal(k, shape))(keys)."
        )
    return keys


def _offset(seed):
    """``seed`` plus ``jax_random_seed_offset`` (JAX adds it to every seed)."""
    offset = _config_flags.random_seed_offset_context.value
    if not offset:
        return seed
    if type(seed) is int:
        return seed + offset
    return fnp.add(seed, offset)


def _same_kind(key, keys: KeyArray):
    """``keys`` (a result) in the form of the argument ``key``: typed, or raw data."""
    return keys if type(key) is KeyArray else keys._base_array


def _check_impl(name, impl) -> PRNGImpl:
    """The PRNGImpl ``impl`` names (NOTE: [PRNG implementations]); the default generator's for
    None."""
    return resolve_impl(impl, name) or default_prng_impl()


def default_prng_impl() -> PRNGImpl:
    """The generator of keys made without ``impl=`` and of raw key data: ``jax_default_prng_impl``
    (threefry2x32 unless configured; JAX's flag, read while tracing).

    >>> default_prng_impl().name
    'threefry2x32'
    """
    return PRNGS[_config_flags.default_prng_impl_context.value]


def _check_seed(seed, name: str):
    if isinstance(seed, KeyArray):
        raise TypeError(f"random.{name} accepts a scalar seed, but was given a PRNG key")
    if type(seed) is int and not -(2**63) <= seed < 2**63:
        # (JAX converts a Python int seed to int64 first, for every generator)
        raise OverflowError(f"random.{name}: Python int seed {seed} too large to convert to int64")
    ndim = _aval(seed).ndim if isinstance(seed, core.Tracer | Array) else np.ndim(seed)
    if ndim:
        raise TypeError(
            f"random.{name} accepts a scalar seed, but was given an array of shape {np.shape(seed)} != (). "
            "Use vmap for batching"
        )


def _threefry_seed(seed):
    """Raw threefry key data ``uint32[2]``: the seed's high and low 32-bit words, as JAX's
    ``threefry_seed``: the high word is a logical shift in the seed's own (canonical) dtype, so it is
    0 unless that dtype is 64-bit (a Python int is an int64 with x64 enabled, an int32 without;
    ``np.int32(-2)`` gives ``[0, 4294967294]`` in either mode)."""
    if isinstance(seed, core.Tracer):
        dtype = _aval(seed).dtype
        if not np.issubdtype(dtype, np.integer):
            raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
        lo = ew.convert_element_type(seed, _U32)
        # (a shift by the width or more is 0, so narrower seeds get a high word of 0)
        hi = ew.convert_element_type(ew.shift_right_logical_p.bind(seed, np.asarray(32, dtype)), _U32)
        return st.concatenate([st.reshape(hi, (1,)), st.reshape(lo, (1,))], 0)
    arr = np.asarray(seed)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    value = int(arr)
    if not -(2**63) <= value < 2**64:
        raise OverflowError(f"PRNGKey seed {value} does not fit in 64 bits")
    if isinstance(seed, int):  # (a Python int: JAX's random_seed takes it as np.int64 first)
        wide = _dt.x64_enabled
    else:
        wide = _dt.canonical(arr.dtype).itemsize == 8
    value &= 2**64 - 1
    hi = value >> 32 if wide else 0
    return Array._from_owned(np.array([hi, value & 0xFFFFFFFF], dtype=_U32))


threefry_prng_impl = register_prng(
    PRNGImpl(
        key_shape=(2,),
        seed=_threefry_seed,
        split=_threefry_split,
        random_bits=_threefry_bits,
        fold_in=_threefry_fold_in,
        name="threefry2x32",
        tag="fry",
    )
)


# (the public random functions' wrappers: key reuse's in __init__.py, out_sharding='s)
_WRAPPERS = (__file__, os.path.join(os.path.dirname(__file__), "__init__.py"), _placement.__file__)


def _ask_host(value, dtype) -> None:
    # NOTE: [transfer guard]: JAX's eager key/PRNGKey/fold_in take a host seed or data as an
    # argument of their jitted functions (a host-to-device transfer)
    if _transfer_guard.state.host_to_device and not isinstance(value, core.Tracer | Array):
        _transfer_guard.eager_host_value(np.zeros((), dtype), _WRAPPERS)


def PRNGKey(seed, *, impl=None) -> Array:
    """A key as raw data from an integer seed: ``uint32[2]`` holding the seed's high and low 32-bit
    words (another ``impl``'s raw key data, as JAX's ``PRNGKey``: ``uint32[4]`` for ``"rbg"``).
    Every function of funcgrad.random accepts it where a key goes; ``key(seed)`` is the typed key.

    >>> PRNGKey(42).tolist()
    [0, 42]
    """
    spec = _check_impl("PRNGKey", impl)
    _check_seed(seed, "PRNGKey")
    _ask_host(seed, np.int32)
    return spec.seed(_offset(seed))


def key(seed, *, impl=None, dtype=None) -> KeyArray:
    """A typed key from an integer seed: a key array of shape ``()`` and dtype ``key<fry>``
    (threefry2x32; ``impl="rbg"``/``"unsafe_rbg"`` or a ``define_prng_impl`` spec for another
    generator), as JAX's ``jax.random.key``. Its ``key_data`` is ``PRNGKey(seed)``.

    >>> k = key(0)
    >>> k.shape, k.dtype, key_data(k).tolist()
    ((), key<fry>, [0, 0])
    """
    if impl is not None and dtype is not None:
        raise ValueError("random.key: Cannot specify both `impl` and `dtype` (JAX's words): give one")
    spec = _check_impl("key", impl if dtype is None else dtype)
    _check_seed(seed, "key")
    _ask_host(seed, np.int32)
    return KeyArray(spec, spec.seed(_offset(seed)))


def key_data(keys):
    """The raw ``uint32`` data of ``keys`` (shape ``(*keys.shape, 2)`` for threefry); raw data is
    returned as it is.

    >>> key_data(key(3)).tolist()
    [0, 3]
    """
    return keys._base_array if type(keys) is KeyArray else _raw_data(keys, "key_data")


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> KeyArray:
    """Typed keys from their raw ``uint32[..., 2]`` data (the inverse of ``key_data``).

    >>> wrap_key_data(PRNGKey(3))
    Array((), dtype=key<fry>) overlaying:
    [0 3]
    """
    if impl is not None and dtype is not None:
        raise ValueError(
            "random.wrap_key_data: Cannot specify both `impl` and `dtype` (JAX's words): give one"
        )
    spec = _check_impl("wrap_key_data", impl if dtype is None else dtype)
    return KeyArray(spec, _raw_data(key_bits_array, "wrap_key_data", spec))


def key_impl(keys):
    """The name of the generator of ``keys`` (raw data: the default generator's, ``"threefry2x32"``
    unless ``jax_default_prng_impl`` says otherwise); for a generator that is not registered by
    name (``funcgrad.extend.random.define_prng_impl``'s), its ``PRNGSpec``, as JAX's.

    >>> key_impl(key(0)), key_impl(key(0, impl="rbg"))
    ('threefry2x32', 'rbg')
    """
    impl = _typed(keys, "key_impl", single=False)._impl
    return impl.name if impl.name in PRNGS else PRNGSpec(impl)


def key_dtype(impl=None) -> KeyTy:
    """The dtype of typed keys of generator ``impl`` (``key<fry>`` by default).

    >>> key_dtype(), key_dtype("rbg")
    (key<fry>, key<rbg>)
    """
    return KeyTy(_check_impl("key_dtype", impl))


def clone(key):
    """A copy of ``key`` that the key-reuse checker sees unconsumed (JAX's marker for reusing a
    key deliberately: the same bits).

    >>> clone(key(1)).shape
    ()
    """
    keys = _typed(key, "clone", single=False)
    # (a new key array with a fresh consumption record, as JAX's: NOTE: [key reuse])
    return _same_kind(key, _key_reuse.fresh(KeyArray(keys._impl, keys._base_array)))


def split(key, num: int | Sequence[int] = 2):
    """``num`` new independent keys from ``key`` (typed keys of shape ``(num,)``, or raw data of
    shape ``(num, 2)`` from raw data).

    >>> split(key(0)).shape, split(PRNGKey(0)).shape
    ((2,), (2, 2))
    """
    shape = _shape(num)
    keys = _typed(key, "split")
    return _same_kind(key, KeyArray(keys._impl, keys._impl.split(keys._base_array, shape)))


def fold_in(key, data):
    """A new key derived from ``key`` and the integer ``data`` (e.g. a step counter).

    >>> fold_in(key(0), 1).shape, fold_in(PRNGKey(0), 1).shape
    ((), (2,))
    """
    if isinstance(data, core.Tracer | Array):
        d = ew.convert_element_type(data, _U32)
    else:
        if type(data) is int and not 0 <= data <= 0xFFFFFFFF:  # (JAX's jnp.uint32(data): NumPy's words)
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        d = _u32(int(data) & 0xFFFFFFFF)
        _ask_host(data, np.uint32)
    keys = _typed(key, "fold_in")
    return _same_kind(key, KeyArray(keys._impl, keys._impl.fold_in(keys._base_array, d)))


@takes_out_sharding
def bits(key, shape=(), dtype=None):
    """Uniform random bits of an unsigned integer ``dtype`` (by default the mode's unsigned
    integer, as JAX's: uint64 in 64-bit mode, uint32 in 32-bit mode).

    >>> bits(PRNGKey(0), (2,), np.uint32).dtype, bits(PRNGKey(0)).dtype
    (dtype('uint32'), dtype('uint64'))
    """
    if dtype is None:
        dtype = np.uint64 if _dt.x64_enabled else np.uint32
    _bit_width(dtype)  # (JAX checks the kind, then canonicalizes: uint64 draws 32 bits in 32-bit mode)
    dtype = check_user_dtype(dtype)  # (JAX's check: jax_explicit_x64_dtypes's warning or error)
    out = eager_draw(key, _bits_program, shape, dtype)  # NOTE: [eager sampler programs]
    if out is not None:
        return out
    return _bits_compiled(key, _bit_width(dtype), _shape(shape))  # NOTE: [compiled samplers]


class _DtypeArgumentError(ValueError, TypeError):
    pass


def _bit_width(dtype) -> int:
    dtype = np.dtype(dtype)
    if dtype.kind != "u":
        # (a ValueError as JAX's, in its words, and a TypeError as funcgrad's dtype errors)
        raise _DtypeArgumentError(
            f"dtype argument of random.bits must be an unsigned int dtype, got {dtype.name}"
        )
    return dtype.itemsize * 8


def _sampler(fn, static_argnums):
    """``fn(key, ...)`` compiled (NOTE: [compiled samplers]). A typed key enters as its raw data
    with its implementation static, so typed keys take jit's fast route for plain arrays, as raw
    data does. Its retraces follow the caller's shapes and dtypes, which the caller chose on
    purpose, so it never raises jit's retrace warning."""

    @quiet
    def on_data(data, impl, *args):
        return fn(data if impl is None else KeyArray(impl, data), *args)

    on_data.__name__ = on_data.__qualname__ = fn.__name__
    compiled = library_jit(on_data, static_argnums=(1, *(i + 1 for i in static_argnums)))

    def call(key, *args):
        if type(key) is KeyArray:
            return compiled(key._base_array, key._impl, *args)
        if _config_flags.legacy_prng_key_level != "allow":  # (after the data's checks, as JAX's)
            _raw_data(key, fn.__name__.lstrip("_"))
            check_legacy_key()
        return compiled(key, None, *args)

    return call


_bits_compiled = _sampler(_random_bits, (1, 2))  # NOTE: [compiled samplers]


def _bits_program(impl, shape, dtype):
    width, shape = _bit_width(dtype), _shape(shape)
    return program("_random_bits", lambda data: _random_bits(_key_of(impl, data), width, shape))


def _key_of(impl, data):
    """The key a sampler's program draws from: raw data (``impl`` None), or typed."""
    return data if impl is None else KeyArray(impl, data)
