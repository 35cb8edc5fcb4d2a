"""Pseudo-random numbers with explicit keys: ``funcgrad.random`` (JAX's ``jax.random`` API).

Layer: surface. Imports the kernel, the primitive catalog and funcgrad.numpy.

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
from collections.abc import Sequence

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import _config_flags, lax
from funcgrad._placement import takes_out_sharding  # out_sharding= (JAX 0.10's explicit sharding)
from funcgrad.jitting import library_jit
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.numpy._core import TypePromotionError, check_user_dtype, static_shape
from funcgrad.primitives import complex as cx
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives.bitcast import bitcast_convert_type
from funcgrad.primitives.rng import iota_2x32_shape_p
from funcgrad.random import _threefry_original
from funcgrad.random._cipher import _key_halves, _threefry2x32, rolled_rounds
from funcgrad.random._eager import check_legacy_key, eager_draw, keyable_scalar, program, quiet, zero_sign
from funcgrad.random._keys import PRNGS, KeyArray, KeyTy, PRNGImpl, register_prng, resolve_impl

__all__ = [
    "PRNGKey",
    "bernoulli",
    "bits",
    "categorical",
    "clone",
    "exponential",
    "fold_in",
    "gumbel",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "normal",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
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
        return ew.or_p.bind(ew.shift_left_p.bind(b0, np.asarray(32, _U64)), b1)
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


def PRNGKey(seed, *, impl=None) -> Array:
    """A key as raw data from an integer seed: ``uint32[2]`` holding the seed's high and low 32-bit
    words (another ``impl``'s raw key data, as JAX's ``PRNGKey``: ``uint32[4]`` for ``"rbg"``).
    Every function of funcgrad.random accepts it where a key goes; ``key(seed)`` is the typed key.

    >>> PRNGKey(42).tolist()
    [0, 42]
    """
    spec = _check_impl("PRNGKey", impl)
    _check_seed(seed, "PRNGKey")
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


def key_impl(keys) -> str:
    """The name of the generator of ``keys`` (raw data: the default generator's, ``"threefry2x32"``
    unless ``jax_default_prng_impl`` says otherwise).

    >>> key_impl(key(0)), key_impl(key(0, impl="rbg"))
    ('threefry2x32', 'rbg')
    """
    return _typed(keys, "key_impl", single=False)._impl.name


def key_dtype(impl=None) -> KeyTy:
    """The dtype of typed keys of generator ``impl`` (``key<fry>`` by default).

    >>> key_dtype(), key_dtype("rbg")
    (key<fry>, key<rbg>)
    """
    return KeyTy(_check_impl("key_dtype", impl))


def clone(key):
    """``key`` itself (JAX's marker for reusing a key deliberately; keys are values here).

    >>> clone(key(1)).shape
    ()
    """
    return _same_kind(key, _typed(key, "clone", single=False))


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
        d = _u32(int(data) & 0xFFFFFFFF)
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
    dtype = _dt.canonicalize(dtype)
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


def _bits_program(impl, shape, dtype):
    width, shape = _bit_width(dtype), _shape(shape)
    return program("_random_bits", lambda data: _random_bits(_key_of(impl, data), width, shape))


def _key_of(impl, data):
    """The key a sampler's program draws from: raw data (``impl`` None), or typed."""
    return data if impl is None else KeyArray(impl, data)


# ----------------------------------------------------------------------------------------------
# Distributions


def _float_dtype(dtype, name="random"):
    dtype = _dt.default_float if dtype is None else check_user_dtype(dtype, name)
    if not _dt.is_float(dtype):
        short = name.rpartition(".")[2]  # (JAX's words: "dtype argument to `normal` ...")
        raise ValueError(
            f"dtype argument to `{short}` must be a float dtype (a floating dtype), got {dtype.name}"
        )
    return dtype


def _int_dtype(dtype, name="random"):
    dtype = _dt.default_int if dtype is None else check_user_dtype(dtype, name)
    if dtype.kind not in "iu":
        raise ValueError(f"{name}: dtype must be an integer dtype, got {dtype.name}")
    return dtype


def _scalar(value, dtype):
    if isinstance(value, core.Tracer | Array):
        return ew.convert_element_type(value, dtype)
    return np.asarray(value, dtype)


def _broadcast(x, shape):
    return x if _aval(x).shape == shape else st.broadcast_in_dim(x, shape, ())


def check_shape(name, shape, *param_shapes) -> None:
    """``shape`` must be what ``shape`` and the parameters' shapes broadcast to (JAX's rule)."""
    if param_shapes:
        try:
            result = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            result = None
        if result != tuple(shape):
            raise ValueError(
                f"random.{name}: parameter shapes {list(param_shapes)} must broadcast with the shape "
                f"argument {tuple(shape)} to that same shape (got {result})"
            )


def check_broadcast_shapes(name, shape, *args):
    """The sample shape: ``shape`` (checked against the parameters') or their broadcast shape."""
    arg_shapes = [np.shape(a) if not isinstance(a, core.Tracer | Array) else _aval(a).shape for a in args]
    if shape is None:
        return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    shape = _shape(shape)
    check_shape(name, shape, *arg_shapes)
    return shape


def check_safe_cast(name, dtype, *args) -> None:
    """JAX's rule: a parameter must convert to the sample dtype without loss (a float64 array
    into float32 samples is refused; Python scalars are weak and always fit)."""
    for a in args:
        if type(a) in _dt.python_scalar_types:
            continue
        arr = fnp.asarray(a)
        if fnp.result_type(arr, dtype) != dtype:
            raise TypePromotionError(
                f"random.{name}: cannot safely cast an argument of dtype {arr.dtype} to {np.dtype(dtype)}; "
                "convert it first or ask for a wider dtype"
            )


def _to(x, dtype, shape=None):
    """``x`` as an array of ``dtype`` (broadcast to ``shape``)."""
    x = fnp.asarray(x)
    if x.dtype != dtype:
        x = lax.convert_element_type(x, dtype)
    return x if shape is None or x.shape == tuple(shape) else fnp.broadcast_to(x, shape)


@takes_out_sharding
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` (bounds broadcast against ``shape``).

    >>> x = uniform(PRNGKey(0), (1000,))
    >>> bool((x >= 0).all() and (x < 1).all())
    True
    """
    if keyable_scalar(minval) and keyable_scalar(maxval):  # NOTE: [eager sampler programs]
        out = eager_draw(
            key, _uniform_program, shape, dtype, minval, maxval, zero_sign(minval), zero_sign(maxval)
        )
        if out is not None:
            return out
    dtype = _float_dtype(dtype, "random.uniform")
    return _uniform_compiled(key, _shape(shape), np.dtype(dtype), minval, maxval)  # NOTE: [compiled samplers]


def _uniform_program(impl, shape, dtype, minval, maxval, *_signs):
    dtype, shape = np.dtype(_float_dtype(dtype, "random.uniform")), _shape(shape)
    return program("_uniform", lambda data: _uniform(_key_of(impl, data), shape, dtype, minval, maxval))


def _uniform(key, shape, dtype, minval, maxval):
    finfo = _dt.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = _UINT[nbits]
    # Formats with fewer than 8 mantissa bits (bfloat16) draw 8 random bits, as JAX does, so the
    # samples are JAX's for the same key.
    rng_bits = 8 if nmant < 8 else nbits
    raw = _random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        raw = ew.convert_element_type(raw, uint)
    one_bits = np.asarray(np.array(1.0, dtype).view(uint))
    float_bits = ew.or_p.bind(
        ew.shift_right_logical_p.bind(raw, np.asarray(rng_bits - nmant, uint)), one_bits
    )
    floats = ew.sub_p.bind(bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
    if type(minval) in _dt.python_scalar_types and type(maxval) in _dt.python_scalar_types:
        lo, hi = np.asarray(minval, dtype), np.asarray(maxval, dtype)
        scaled = ew.add(ew.mul(floats, ew.sub(hi, lo)), lo)
        return ew.max_p.bind(_broadcast(lo, shape), scaled)
    lo, hi = _to(minval, dtype), _to(maxval, dtype)
    check_shape("uniform", shape, lo.shape, hi.shape)
    return fnp.maximum(lo, floats * (hi - lo) + lo)


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


_uniform_compiled = _sampler(_uniform, (1, 2))


@takes_out_sharding
def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse-CDF of a uniform, as JAX does). A complex ``dtype`` gives
    the standard complex normal ``(re + 1j im) / sqrt(2)`` from the two keys of ``split(key)``
    (``E|z|^2 = 1``), as ``jax.random.normal`` computes it.

    >>> normal(PRNGKey(0), (2, 3)).shape
    (2, 3)
    >>> normal(PRNGKey(0), (2,), np.complex64).dtype
    dtype('complex64')
    """
    out = eager_draw(key, _normal_program, shape, dtype)  # NOTE: [eager sampler programs]
    if out is not None:
        return out
    if dtype is not None and np.dtype(dtype).kind == "c":
        dtype = np.dtype(dtype)
        key_re, key_im = split(key)
        part = _dt.real_dtype(dtype)
        re, im = normal(key_re, shape, part), normal(key_im, shape, part)
        return ew.div(cx.complex_p.bind(re, im), np.asarray(np.sqrt(2.0), dtype))
    dtype = _float_dtype(dtype, "random.normal")
    return _normal_compiled(key, _shape(shape), np.dtype(dtype))


def _normal_program(impl, shape, dtype):
    if dtype is not None and np.dtype(dtype).kind == "c":
        return False  # two draws and a complex: the general route
    dtype, shape = np.dtype(_float_dtype(dtype, "random.normal")), _shape(shape)
    return program("_normal", lambda data: _normal(_key_of(impl, data), shape, dtype))


def _normal(key, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    if dtype.itemsize == 8:  # NOTE: [rolled threefry rounds]: float64's erf_inv, its own loop
        u = _uniform_rolled_compiled(key, shape, dtype, lo, 1.0)
    else:
        u = uniform(key, shape, dtype, lo, 1.0)
    return ew.mul(ew.erf_inv_p.bind(u), np.asarray(np.sqrt(2.0), dtype))


def _uniform_rolled(key, shape, dtype, minval, maxval):
    with rolled_rounds():
        return _uniform(key, shape, dtype, minval, maxval)


_uniform_rolled.__name__ = _uniform_rolled.__qualname__ = "_uniform"  # (its jaxpr: jax's names)
_uniform_rolled_compiled = _sampler(_uniform_rolled, (1, 2))


def _uniform_for_transform(key, shape, dtype, minval=0.0, maxval=1.0):
    """``uniform(...)`` of a sampler that applies a costly float transform to it (a log, erf_inv):
    while tracing, a float64 one hashes in JAX's loop, out of the transform's fused loop (NOTE:
    [rolled threefry rounds]: exponential 11.5 -> 7.9 ms, gumbel 15.4 -> 12.1, truncated_normal
    17.5 -> 11.3 for 1e6 float64 draws under jit, one core); the same bits either way."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8 and type(core.current_trace()) is not core.EvalTrace:
        return _uniform_rolled_compiled(key, _shape(shape), dtype, minval, maxval)
    return uniform(key, shape, dtype, minval, maxval)


# NOTE: [compiled samplers] jax's samplers are jitted functions, and so are these two: XLA's erf_inv
# (and its 16-bit arithmetic, computed in float32 and rounded once) is what gives jax's bits for a
# key -- SciPy's erfinv differs in the last bits and NumPy rounds 16-bit floats after every
# operation -- and the threefry rounds run as one fused XLA loop instead of ~100 NumPy passes
# (2000x2000 normals: several times faster than eagerly). Eager and jitted calls draw the same bits.
_normal_compiled = _sampler(_normal, (1, 2))
_bits_compiled = _sampler(_random_bits, (1, 2))


@takes_out_sharding
def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples truncated to ``[lower, upper]`` (bounds broadcast; ``shape`` defaults to theirs).

    >>> x = truncated_normal(PRNGKey(0), -1.0, 1.0, (100,))
    >>> bool((x >= -1).all() and (x <= 1).all())
    True
    """
    dtype = _float_dtype(dtype, "random.truncated_normal")
    shape = check_broadcast_shapes("truncated_normal", shape, lower, upper)
    return _truncated_normal_compiled(key, lower, upper, shape, np.dtype(dtype))  # NOTE: [compiled samplers]


def _truncated_normal(key, lower, upper, shape, dtype):
    sqrt2 = np.asarray(np.sqrt(2.0), dtype)
    lower, upper = _to(lower, dtype), _to(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = _uniform_for_transform(key, shape, dtype, a, b)
    out = sqrt2 * lax.erf_inv(u)
    lo = lax.nextafter(lax.stop_gradient(lower), np.asarray(np.inf, dtype))
    hi = lax.nextafter(lax.stop_gradient(upper), np.asarray(-np.inf, dtype))
    return fnp.clip(out, lo, hi)


_truncated_normal_compiled = _sampler(_truncated_normal, (3, 4))


@takes_out_sharding
def bernoulli(key, p=0.5, shape=None, mode: str = "low"):
    """Booleans that are True with probability ``p`` (``mode="high"`` resolves probabilities below
    the float's resolution with a second uniform).

    >>> bernoulli(PRNGKey(0), 0.5, (4,)).dtype
    dtype('bool')
    """
    if mode not in ("high", "low"):
        raise ValueError(f"random.bernoulli: mode must be 'high' or 'low', got {mode!r}")
    p = fnp.asarray(p) if type(p) not in _dt.python_scalar_types else p
    dtype = _dt.default_float if type(p) in _dt.python_scalar_types else p.dtype
    if not _dt.is_float(dtype):
        raise TypeError(
            f"random.bernoulli: the probability p must have a floating dtype, got {np.dtype(dtype).name}"
        )
    p_shape = () if type(p) in _dt.python_scalar_types else p.shape
    shape = p_shape if shape is None else _shape(shape)
    check_shape("bernoulli", shape, p_shape)
    if mode == "high":
        u = uniform(key, (2, *shape), dtype)
        u1, u2 = u[0], u[1] * 2.0 ** (-_dt.finfo(dtype).nmant)
        return u2 < p - u1
    u = uniform(key, shape, dtype)
    if type(p) in _dt.python_scalar_types:
        return ew.lt_p.bind(u, _broadcast(np.asarray(p, dtype), shape))
    return u < p


@takes_out_sharding
def exponential(key, shape=(), dtype=None):
    """Exponential(1) samples: ``-log1p(-u)``.

    >>> bool((exponential(PRNGKey(0), (10,)) >= 0).all())
    True
    """
    dtype = _float_dtype(dtype, "random.exponential")
    u = _uniform_for_transform(key, shape, dtype)
    return ew.neg(ew.log1p_p.bind(ew.neg(u)))


def _clz32(x):
    """Leading zero bits of uint32 values, by halving the window (exact in either x64 mode)."""
    n, y = fnp.zeros_like(x), x
    for s in (16, 8, 4, 2, 1):
        top_empty = lax.shift_right_logical(y, fnp.full_like(y, 32 - s)) == 0
        n = fnp.where(top_empty, n + np.uint32(s), n)
        y = fnp.where(top_empty, lax.shift_left(y, fnp.full_like(y, s)), y)
    return fnp.where(x == 0, np.uint32(32), n)


def _safe_int_to_float32(bits):
    """JAX's conversion of a pair of uint32 words into a float32 in (0, 1) keeping every bit of
    precision near 0 (for ``gumbel(mode="highest")``)."""
    finfo = _dt.finfo(np.float32)
    hi, lo = bits[0], bits[1]
    hiclz, loclz = _clz32(hi), _clz32(lo)
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        fnp.where(
            hiclz == 32, lax.shift_left(lo, loclz), lax.shift_right_logical(lo, np.uint32(finfo.bits) - hiclz)
        ),
    )
    mantissa = lax.shift_right_logical(
        mantissa, np.full(mantissa.shape, finfo.bits - finfo.nmant - 1, np.uint32)
    )
    mantissa = lax.bitwise_and(mantissa, np.full(mantissa.shape, (1 << finfo.nmant) - 1, np.uint32))
    exp = (-finfo.minexp - fnp.where(hiclz == 32, 32 + loclz, hiclz)).astype(np.uint32)
    exp = lax.shift_left(exp, np.full(exp.shape, finfo.nmant, np.uint32))
    exp = lax.bitwise_and(exp, np.full(exp.shape, (1 << finfo.bits - 2) - (1 << finfo.nmant - 1), np.uint32))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


@takes_out_sharding
def gumbel(key, shape=(), dtype=None, mode: str | None = None):
    """Standard Gumbel samples ``-log(-log(u))``; ``mode="high"`` (or ``"highest"``, float32) draws
    more random bits to resolve the far tail, as JAX's.

    >>> gumbel(PRNGKey(0), (3,)).shape
    (3,)
    """
    dtype = _float_dtype(dtype, "random.gumbel")
    shape = _shape(shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"random.gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    info = _dt.finfo(dtype)
    if dtype == np.float32 and mode == "highest":
        raw = _random_bits(key, 32, (2, *shape))
        neg = lax.bitwise_not(raw)
        lo_bits = neg[1]
        carry = fnp.stack([(lo_bits == np.uint32(0xFFFFFFFF)).astype(np.uint32), fnp.ones_like(lo_bits)])
        neg = neg + carry
        flip = raw[0] < np.uint32(1 << 31)
        x = _safe_int_to_float32(fnp.where(flip, raw, neg))
        return fnp.where(flip, -fnp.log(-fnp.log1p(-x)), -fnp.log(-fnp.log(x)))
    if mode in ("high", "highest"):
        u = _uniform_for_transform(key, (2, *shape), dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = fnp.where(high >= 0.5, high, high + 2.0 ** (-info.nmant) * low + float(info.tiny))
        return -fnp.log(-fnp.log1p(-x))
    u = _uniform_for_transform(key, shape, dtype, info.tiny, 1.0)
    return ew.neg(ew.log_p.bind(ew.neg(ew.log_p.bind(u))))


@takes_out_sharding
def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode: str | None = None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel-max
    trick). ``shape`` must broadcast with the logits' batch shape: leading extra dimensions draw
    several samples per batch entry. ``replace=False`` draws distinct categories (Gumbel top-k).

    >>> categorical(PRNGKey(0), fnp.log(fnp.array([0.2, 0.8])), shape=(5,)).shape
    (5,)
    """
    logits = fnp.asarray(logits)
    if not _dt.is_float(logits.dtype):
        logits = logits.astype(_dt.default_float)
    ndim = logits.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"random.categorical: axis {axis} is out of bounds for logits of shape {logits.shape}"
        )
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _shape(shape)
    check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        g = gumbel(key, (*prefix, *logits_shape), logits.dtype, mode=mode)
        return fnp.argmax(g + fnp.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    perturbed = logits + gumbel(key, logits.shape, logits.dtype, mode=mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(
            f"random.categorical: Number of samples without replacement ({k}) cannot exceed number of "
            f"categories ({logits.shape[axis]})"
        )
    _, indices = lax.top_k(fnp.moveaxis(perturbed, axis, -1), k)
    return fnp.moveaxis(indices, -1, 0).reshape(shape)


@takes_out_sharding
def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)`` (bounds broadcast against ``shape``).

    >>> x = randint(PRNGKey(0), (100,), 0, 10)
    >>> bool((x >= 0).all() and (x < 10).all())
    True
    """
    dtype = _int_dtype(dtype, "random.randint")
    shape = _shape(shape)
    info = np.iinfo(dtype)
    if info.bits < 32:
        # Narrow integers are drawn as int32 (as JAX does), then converted.
        lo = fnp.clip(fnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        hi = fnp.clip(fnp.asarray(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
        return _randint(key, shape, lo, hi, np.dtype(np.int32)).astype(dtype)
    return _randint(key, shape, minval, maxval, dtype)


def _clip_to(val, dtype):
    """``val`` (integers) clipped to the range of both dtypes, then converted (JAX's helper)."""
    lo = max(np.iinfo(dtype).min, np.iinfo(val.dtype).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(val.dtype).max)
    return fnp.clip(val, np.asarray(lo, val.dtype), np.asarray(hi, val.dtype)).astype(dtype)


def _randint(key, shape, minval, maxval, dtype):
    minval, maxval = fnp.asarray(minval), fnp.asarray(maxval)
    check_shape("randint", shape, minval.shape, maxval.shape)
    if not fnp.issubdtype(minval.dtype, fnp.integer):
        minval = minval.astype(_dt.default_int)
    if not fnp.issubdtype(maxval.dtype, fnp.integer):
        maxval = maxval.astype(_dt.default_int)
    maxval_out_of_range = maxval > _clip_to(fnp.asarray(np.iinfo(dtype).max, dtype), maxval.dtype)
    minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    uint = _UINT[nbits]
    keys = split(key)
    higher, lower = _random_bits(keys[0], nbits, shape), _random_bits(keys[1], nbits, shape)
    span = lax.convert_element_type(maxval - minval, uint)
    span = fnp.where(maxval <= minval, np.asarray(1, uint), span)
    span = fnp.where(maxval_out_of_range & (maxval > minval), span + np.asarray(1, uint), span)
    multiplier = fnp.remainder(np.asarray(2 ** (nbits // 2) % (2**nbits), uint), span)
    multiplier = lax.rem(multiplier * multiplier, multiplier * 0 + span)
    offset = lax.rem(higher, _to(span, uint, shape)) * _to(multiplier, uint, shape) + lax.rem(
        lower, _to(span, uint, shape)
    )
    offset = lax.rem(offset, _to(span, uint, shape))
    return _to(minval, dtype, shape) + lax.convert_element_type(offset, dtype)
