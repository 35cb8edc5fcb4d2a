"""Dtype utilities of funcgrad.numpy: scalar types, ``result_type``, ``promote_types``, ``can_cast``,
``iinfo``/``finfo``, ``issubdtype``.

Layer: surface. Imports the kernel (``funcgrad.kernel.dtypes``, ``core``, ``array``),
``primitives.elementwise`` and numpy/ml_dtypes; nothing from the rest of funcgrad.numpy, so every
other module may import it.

Promotion is NumPy 2's (NEP 50): Python scalars are *weak* (they take the other operand's dtype),
float64 is the default float and float32 stays float32 (see NOTE: [weak types] in
``funcgrad/kernel/dtypes.py``); in JAX's 32-bit mode every dtype is canonicalised to 32 bits
(``canonicalize_dtype``) and an explicit 64-bit request warns as JAX's (``check_user_dtype``;
NOTE: [x64 mode]). Scalar types (``fnp.float32``) are constructors returning 0-d Arrays, as in
``jax.numpy``; they compare equal to NumPy's types and work wherever a dtype is expected.
"""

from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from funcgrad import kernel
from funcgrad._extended_array import ExtendedArray  # re-exported: funcgrad.numpy's name for it
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.thread_modes import ThreadOverride
from funcgrad.primitives import elementwise as ew

__all__ = [
    "bfloat16",
    "bool_",
    "can_cast",
    "cdouble",
    "complex128",
    "complex64",
    "complex_",
    "complexfloating",
    "csingle",
    "double",
    "dtype",
    "finfo",
    "float16",
    "float32",
    "float64",
    "float_",
    "floating",
    "generic",
    "iinfo",
    "inexact",
    "int16",
    "int32",
    "int64",
    "int8",
    "int_",
    "integer",
    "isdtype",
    "issubdtype",
    "ndarray",
    "number",
    "promote_types",
    "result_type",
    "signedinteger",
    "single",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unsignedinteger",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = ("Array:PublicArray",)


# ----------------------------------------------------------------------------------------------
# Scalar types


class _ScalarMeta(type):
    """The metaclass of funcgrad's scalar types: calling one makes a 0-d Array of its dtype."""

    dtype: np.dtype

    @property
    def __numpy_dtype__(cls) -> np.dtype:
        return cls.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> bool:
        return not cls == other

    def __call__(cls, x=0):
        dtype = cls.dtype if _dt.x64_enabled else check_user_dtype(cls.dtype, "asarray")
        if isinstance(x, core.Tracer | Array):
            return ew.convert_element_type(x, dtype)
        return Array._from_owned(np.asarray(x, dtype=dtype))

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type) -> _ScalarMeta:
    name = np.dtype(np_type).name if np.dtype(np_type).name != "bool" else "bool_"
    t = _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type)})
    t.__module__ = "funcgrad.numpy"
    t.__doc__ = f"The ``{name}`` scalar type: ``fnp.{name}(x)`` is a 0-d Array of dtype ``{name}``."
    return t


bool_ = _scalar_type(np.bool_)
int8 = _scalar_type(np.int8)
int16 = _scalar_type(np.int16)
int32 = _scalar_type(np.int32)
int64 = _scalar_type(np.int64)
uint8 = _scalar_type(np.uint8)
uint16 = _scalar_type(np.uint16)
uint32 = _scalar_type(np.uint32)
uint64 = _scalar_type(np.uint64)
float16 = _scalar_type(np.float16)
float32 = _scalar_type(np.float32)
float64 = _scalar_type(np.float64)
complex64 = _scalar_type(np.complex64)
complex128 = _scalar_type(np.complex128)
bfloat16 = _scalar_type(_dt.bfloat16) if _dt.bfloat16 is not None else None
# NumPy's default-precision aliases (float64 is the default float, see the module docstring).
float_ = float64
int_ = int64
complex_ = complex128
single = float32
double = float64
csingle = complex64
cdouble = complex128

# Abstract scalar types for issubdtype, shared with NumPy.
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
dtype = np.dtype


# ----------------------------------------------------------------------------------------------
# ndarray: the array type as seen by user code (concrete Arrays and traced values alike)


def keys_by_word(fn, nkeys: int = 1, key_reuse: str | None = None):
    """``fn`` (a structural function: it moves elements, never computes with them) made to take
    typed PRNG keys as its first ``nkeys`` arguments, as JAX's ``lax.slice``/``dynamic_slice``/...
    take key arrays: applied to each word of the keys' data (``_numpy_function``), the other
    arguments (indices, sizes, axes) as given. ``key_reuse`` says what ``fn`` does to the keys for
    the key-reuse checker (NOTE: [key reuse] in funcgrad/_key_reuse.py): ``"slice"`` takes static
    selections (they are consumed, the result is fresh), ``"update"`` writes its second key
    argument into its first (the update is consumed, the result is the first); by default one key
    argument is moved (the result is those keys) and several are joined (all consumed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        first = args[0] if args else None
        if not isinstance(first, ExtendedArray):
            return fn(*args, **kwargs)
        keys, rest = args[:nkeys], args[nkeys:]

        def on_words(*words):
            return fn(*words, *rest, **kwargs)

        on_words.__name__ = fn.__name__
        on_words.key_reuse = key_reuse
        return first._numpy_function(on_words, keys, {})

    return wrapper


def extended_op_error(op: str, args) -> TypeError:
    """JAX's TypeError for the numeric operation ``op`` (its lax name: ``add``, ``neg``) applied
    to operands ``args`` of which some are typed PRNG keys (extended dtypes), in JAX's words."""

    def name(x) -> str:
        dtype = getattr(x, "dtype", None)
        if dtype is None:  # a Python scalar: the mode's default type, as JAX names it
            dtype = _dt.canonicalize(np.asarray(x).dtype) if type(x) in python_scalar_types else type(x)
        return str(getattr(dtype, "name", dtype))

    names = [name(x) for x in args]
    accepted = "subtypes of integer, floating, complexfloating"
    hint = (
        " (a PRNG key is not a number: draw numbers from it with funcgrad.random, or take its raw bits "
        "with random.key_data(key))"
    )
    if len(names) == 1:
        return TypeError(f"{op} does not accept dtype {names[0]}. Accepted dtypes are {accepted}.{hint}")
    if len(set(names)) == 1:
        return TypeError(
            f"{op} does not accept dtype {names[0]} at position 0. Accepted dtypes at position 0 are "
            f"{accepted}.{hint}"
        )
    return TypeError(f"{op} does not accept dtypes {', '.join(names)}.{hint}")


def extended_in(args) -> ExtendedArray | None:
    """The first extended-dtype array among ``args`` (and the items of a list or tuple there)."""
    for a in args:
        if isinstance(a, ExtendedArray):
            return a
        if isinstance(a, list | tuple):
            for b in a:
                if isinstance(b, ExtendedArray):
                    return b
    return None


class _NdarrayMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Array | core.Tracer | ExtendedArray)

    def __subclasscheck__(cls, sub) -> bool:
        # ``issubclass(funcgrad.Array, funcgrad.Array)`` too, as for ``jax.Array`` (orbax's type
        # registry looks a restore type up that way).
        return type.__subclasscheck__(cls, sub) or issubclass(sub, Array | core.Tracer | ExtendedArray)

    def __call__(cls, *args, **kwargs):
        return Array(*args, **kwargs)  # funcgrad.Array(value): a concrete Array, as before


class PublicArray(metaclass=_NdarrayMeta):
    """``funcgrad.Array`` (also ``funcgrad.numpy.ndarray``), the array type for ``isinstance``
    checks and annotations, as ``jax.Array``: true for concrete Arrays and for the traced values
    a function sees under ``grad``/``vmap``/``jit``. Calling it makes a concrete Array of a
    value (the class of concrete values is ``funcgrad.kernel.array.Array``).

    >>> import funcgrad, numpy
    >>> isinstance(funcgrad.numpy.ones(2), funcgrad.Array)
    True
    >>> seen = []
    >>> _ = funcgrad.jit(lambda x: seen.append(isinstance(x, funcgrad.Array)) or x)(1.0)
    >>> seen
    [True]
    >>> funcgrad.Array(numpy.ones(2)).tolist()
    [1.0, 1.0]
    """


PublicArray.__name__ = PublicArray.__qualname__ = "Array"
PublicArray.__module__ = "funcgrad"
kernel.register(array_interface=PublicArray)  # Array's members, abstract, as jax.Array's
ndarray = PublicArray


# ----------------------------------------------------------------------------------------------
# Promotion


def canonicalize_dtype(d, allow_extended_dtype: bool = False) -> np.dtype:
    """``np.dtype`` of any dtype spelling: ``float``, ``'f4'``, ``fnp.float32``, an array's dtype;
    in x32 mode (``jax_enable_x64`` off) its 32-bit counterpart, as JAX's ``canonicalize_dtype``
    (NOTE: [x64 mode] in ``funcgrad/kernel/dtypes.py``).

    >>> canonicalize_dtype(float), canonicalize_dtype("f4")
    (dtype('float64'), dtype('float32'))
    """
    if isinstance(d, _ScalarMeta):
        out = d.dtype
    elif isinstance(d, np.dtype | str | type):
        # Types first: NumPy's scalar types have a ``dtype`` attribute that is not a dtype.
        out = np.dtype(d)
    else:
        return _dt.canonicalize(d)
    return out if _dt.x64_enabled else _dt.TO_32.get(out, out)


_X64_WARNING = (
    "Explicitly requested dtype {}{} is not available, and will be truncated to dtype {}. To enable "
    "more dtypes, set the jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
    "environment variable. See https://github.com/jax-ml/jax#current-gotchas for more."
)


def check_user_dtype(d, fun_name: str | None = None) -> np.dtype:
    """A dtype the user asked for, canonical: ``int``/``float``/``complex`` are the defaults, and an
    explicit 64-bit dtype in x32 mode is truncated to 32 bits with JAX's ``UserWarning`` (JAX's
    ``check_and_canonicalize_user_dtype``; NOTE: [x64 mode]).

    >>> check_user_dtype(np.float64, "zeros")  # (x64 on: unchanged)
    dtype('float64')
    """
    if isinstance(d, type) and d in python_scalar_types:
        return _dt.python_scalar_dtype(d())
    if isinstance(d, list | tuple):  # a structured dtype's fields: JAX's TypeError
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {np.dtype(d)}{where}")
    if isinstance(d, _ScalarMeta):
        out = d.dtype
    elif isinstance(d, np.dtype | str | type):
        out = np.dtype(d)
    else:
        return canonicalize_dtype(d)
    if _dt.x64_enabled:
        return out
    to = _dt.TO_32.get(out)
    if to is None:
        return out
    where = f" requested in {fun_name}" if fun_name else ""
    if _EXPLICIT_X64[0] == "allow":  # (kept, as JAX's: NOTE: [x64 mode])
        return out
    if _EXPLICIT_X64[0] == "error":  # (jax_explicit_x64_dtypes='error': JAX's ValueError)
        raise ValueError(
            f"Explicitly requested dtype {out.name}{where} is not available. To enable more dtypes, set the "
            "jax_enable_x64 or allow_explicit_x64_dtypes configuration options."
            "See https://github.com/jax-ml/jax#current-gotchas for more."
        )
    warnings.warn(_X64_WARNING.format(out.name, where, to.name), UserWarning, stacklevel=3)
    return to


_EXPLICIT_X64 = ["warn"]  # funcgrad.config's jax_explicit_x64_dtypes (set_explicit_x64_dtypes)


def set_explicit_x64_dtypes(mode: str) -> None:
    """What an explicit 64-bit dtype does in 32-bit mode: "warn" (truncated, JAX's UserWarning),
    "error" (ValueError) or "allow" (kept); ``funcgrad.config``'s ``jax_explicit_x64_dtypes`` calls
    it."""
    _EXPLICIT_X64[0] = mode
    _dt.explicit_x64_allowed = mode == "allow"


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    """``(dtype, weak_type)`` of an array-like or Python scalar (scalars are weak, but for ``bool``:
    as in JAX, a Python bool is strong)."""
    t = type(x)
    if t in python_scalar_types:
        return _dt.python_scalar_dtype(x), t is not bool
    if t is Array or isinstance(x, (Array, core.Tracer)):  # (a tuple: no union built per call)
        return x.dtype, x.weak_type
    if isinstance(x, np.ndarray | np.generic):
        return _dt.canonical(x.dtype), False
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype) and not core.is_array_like(x):
        # As JAX's result_type: anything with a dtype (a ShapeDtypeStruct, a ShapedArray) has it.
        return _dt.canonical(dtype), False
    aval = core.get_aval(x)  # (weak for a typed scalar, TypedFloat: a Python scalar that has its dtype)
    return aval.dtype, aval.weak_type


def _dtype_or_value_pair(a) -> tuple[np.dtype, bool]:
    if isinstance(a, type) and a in python_scalar_types:
        # ``result_type(float32, float)``: the Python type stands for a weak scalar of that kind.
        return _dt.python_scalar_dtype(a()), True
    if isinstance(a, np.dtype | str | _ScalarMeta) or isinstance(a, type):
        return canonicalize_dtype(a), False
    return dtype_and_weak(a)


def result_type(*arrays_and_dtypes, return_weak_type_flag: bool = False):
    """The dtype of an operation on ``arrays_and_dtypes``: in 64-bit mode NumPy 2's (NEP 50), in
    JAX's 32-bit mode and under ``jax_numpy_dtype_promotion='strict'`` JAX's type lattice
    (NOTE: [JAX's promotion lattice]). Python scalars (and the types ``int``/``float``/``complex``)
    are weak. ``return_weak_type_flag=True`` returns ``(dtype, weak_type)``, as ``jax.dtypes``'.

    >>> result_type(float32, 2.0)
    dtype('float32')
    >>> result_type(int32, 2.5)
    dtype('float64')
    >>> result_type(int32, 2.5, return_weak_type_flag=True)
    (dtype('float64'), True)
    """
    if not arrays_and_dtypes:
        raise ValueError("at least one array or dtype is required")
    # (None stands for the default float, as in JAX's and NumPy's result_type)
    pairs = [_dtype_or_value_pair(_dt.default_float if a is None else a) for a in arrays_and_dtypes]
    if any(d == _dt.float0 for d, _ in pairs):
        # (float0, an integer input's tangent: its own result type, never promoted, as JAX's)
        if all(d == _dt.float0 for d, _ in pairs):
            return (_dt.float0, False) if return_weak_type_flag else _dt.float0
        raise ValueError(f"dtype={_dt.float0!r} is not a valid dtype for JAX type promotion.")
    if _lattice_rules():
        out = _lattice_result_type(pairs)
    else:
        out = _dt.result_type(*pairs)
    return out if return_weak_type_flag else out[0]


def promote_types(type1, type2) -> np.dtype:
    """The smallest dtype to which both dtypes may be safely cast.

    The Python types ``int``, ``float`` and ``complex`` are weak, as in JAX (and ``result_type``):
    they take the other dtype when it is of their kind or above. In JAX's 32-bit mode and under
    ``jax_numpy_dtype_promotion='strict'`` this is JAX's lattice, whose ``promote_types`` does not
    canonicalise (``promote_types(float32, complex128)`` is complex128 in either mode; NOTE: [JAX's
    promotion lattice]).

    >>> promote_types('int32', 'float32')
    dtype('float64')
    >>> promote_types('uint8', int), promote_types('float16', float)
    (dtype('uint8'), dtype('float16'))
    """
    if _lattice_rules():
        nodes = [t if _is_weak_type(t) else _plain_dtype(t) for t in (type1, type2)]
        return np.dtype(_least_upper_bound(nodes))
    if type1 in (int, float, complex) or type2 in (int, float, complex):
        return result_type(type1, type2)
    return _dt.promote_types(canonicalize_dtype(type1), canonicalize_dtype(type2))


# NOTE: [JAX's promotion lattice]
# JAX promotes on a lattice (its type-promotion documentation): bool < weak int < the 8-bit
# integers, each integer below the wider ones of its signedness and the signed one above it, the
# 64-bit integers < weak float < bfloat16 and float16 < float32 < float64 < complex128, float32 <
# complex64 < complex128, and weak float < weak complex < complex64; the narrow types (int4, the
# float8s) sit alone above the weak kind, so mixing them is an error. Two dtypes promote to their
# least upper bound. In 32-bit mode ``uint32 x int32`` is int32 (nothing else forms a 64-bit type
# from 32-bit ones); under 'strict' only the weak kinds promote. funcgrad's 32-bit mode follows the
# lattice everywhere (kernel.dtypes.result_type gets the same answers from NumPy's table with
# integers absorbed by inexact types, canonicalised); ``result_type``/``promote_types`` here use it
# directly, so that they refuse what JAX refuses and ``promote_types`` does not canonicalise.
# funcgrad's own 64-bit mode keeps NumPy 2's rules (docs/differences_from_jax.md).


# The promotion flags (NOTE: [promotion flags] in _core.py, which imports them from here): the
# process-wide values, and a thread's own inside ``numpy_dtype_promotion(...)`` /
# ``numpy_rank_promotion(...)`` (JAX's contexts are thread-local; NOTE: [x64 mode per thread] in
# funcgrad/kernel/dtypes.py). ``_flags["dtype_promotion"]`` is a plain dict read while no thread
# has its own; while one has, the dict's class is ``_ThreadFlags``, whose reads answer per thread
# (the kernel's ``ThreadOverride`` swaps it).
class _Flags(dict):
    __slots__ = ()


class _ThreadFlags(_Flags):
    __slots__ = ()

    def __getitem__(self, key):
        own = _own.value
        return dict.__getitem__(self if own is None or key not in own else own, key)

    def __eq__(self, other):
        return current_flags() == other

    __hash__ = None


_flags = _Flags(dtype_promotion="standard", rank_promotion="allow")
thread_promotion = ThreadOverride(_flags, _Flags, _ThreadFlags)  # (a thread's own: a dict of some flags)
_own = thread_promotion.local


def current_flags() -> dict:
    """The calling thread's promotion flags (its own inside a context, else the process-wide ones).

    >>> current_flags()
    {'dtype_promotion': 'standard', 'rank_promotion': 'allow'}
    """
    own = _own.value
    return dict(_flags) if own is None else {**dict(_flags), **own}  # (dict() copies the globals)


def enter_thread_flags(**flags):
    """Give the calling thread its own promotion ``flags`` (``dtype_promotion=``,
    ``rank_promotion=``); returns what ``exit_thread_flags`` restores.

    >>> token = enter_thread_flags(rank_promotion="raise"); _flags["rank_promotion"]
    'raise'
    >>> exit_thread_flags(token); _flags["rank_promotion"]
    'allow'
    """
    return thread_promotion.enter({**(_own.value or {}), **flags})


exit_thread_flags = thread_promotion.exit  # (leave the flags enter_thread_flags gave: its token)
thread_flags = thread_promotion.active  # (whether any thread has its own promotion flags)


class TypePromotionError(TypeError, ValueError):
    """An implicit dtype promotion refused under ``jax_numpy_dtype_promotion='strict'``, or one JAX's
    lattice does not have (NOTE: [JAX's promotion lattice]); a ValueError as JAX's, and a TypeError
    as funcgrad's before it."""


def _lattice_rules() -> bool:
    return not _dt.x64_enabled or _flags["dtype_promotion"] == "strict"


def _is_weak_type(t) -> bool:
    return isinstance(t, type) and t in (int, float, complex)


def _plain_dtype(t) -> np.dtype:
    # A dtype spelling as it is, not canonicalised (JAX's promote_types takes np.dtype(t)).
    if isinstance(t, _ScalarMeta):
        return t.dtype
    return np.dtype(t)


def _lattice_edges(strict: bool, x64: bool) -> dict:
    b, u8, u16, u32, u64 = (np.dtype(t) for t in ("bool", "uint8", "uint16", "uint32", "uint64"))
    i8, i16, i32, i64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
    f16, f32, f64, c64, c128 = (
        np.dtype(t) for t in ("float16", "float32", "float64", "complex64", "complex128")
    )
    narrow_ints = [d for d, k in _dt._NARROW_KINDS.items() if k in "iu"]
    narrow_floats = [d for d, k in _dt._NARROW_KINDS.items() if k == "f" and d != _dt.bfloat16]
    bf16 = _dt.bfloat16
    ints = [u8, u16, u32, u64, i8, i16, i32, i64, *narrow_ints]
    floats = [*narrow_floats, bf16, f16, f32, f64]
    if strict:
        edges = {d: [] for d in [b, *ints, *floats, c64, c128]}
        edges.update({int: [float, *ints], float: [complex, *floats], complex: [c64, c128]})
        return edges
    edges = {b: [int], int: [u8, i8, *narrow_ints], **{d: [] for d in narrow_ints + narrow_floats}}
    edges.update({u8: [i16, u16], u16: [i32, u32], u32: [i64, u64] if x64 else [i32, u64], u64: [float]})
    edges.update(
        {i8: [i16], i16: [i32], i32: [i64], i64: [float], float: [*narrow_floats, bf16, f16, complex]}
    )
    edges.update(
        {bf16: [f32], f16: [f32], f32: [f64, c64], f64: [c128], complex: [c64], c64: [c128], c128: []}
    )
    return edges


def _closure(strict: bool, x64: bool) -> dict:
    # each node's upper bounds: everything reachable along the lattice's edges, itself included
    edges = _lattice_edges(strict, x64)
    out = {}
    for node in edges:
        seen, todo = {node}, [node]
        while todo:
            for up in edges[todo.pop()]:
                if up not in seen:
                    seen.add(up)
                    todo.append(up)
        out[node] = frozenset(seen)
    return out


# The four lattices' upper bounds, built once at import (constants, not a cache: nothing in them
# depends on the mode or the flags at run time, which only choose among them).
_UPPER_BOUNDS = {(strict, x64): _closure(strict, x64) for strict in (False, True) for x64 in (False, True)}


def _upper_bounds(strict: bool, x64: bool) -> dict:
    return _UPPER_BOUNDS[(strict, x64)]


def _least_upper_bound(nodes):
    """JAX's least upper bound of lattice ``nodes`` (dtypes, or ``int``/``float``/``complex`` for
    weak values) under the current flags; TypePromotionError (JAX's wording) where there is none."""
    strict = _flags["dtype_promotion"] == "strict"
    bounds = _upper_bounds(strict, _dt.x64_enabled)
    unique = set(nodes)
    missing = [n for n in unique if n not in bounds]
    if missing:
        raise _dt.not_promotable(missing[0])
    common = frozenset.intersection(*(bounds[n] for n in unique))
    least = (common & unique) or {c for c in common if common <= bounds[c]}
    if len(least) == 1:
        return next(iter(least))
    names = tuple(n.__name__ if isinstance(n, type) else str(n) for n in nodes)
    if strict:
        hint = (
            " when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
            "type, or set jax_numpy_dtype_promotion=standard."
        )
    elif narrow := [n for n in unique if n in _dt._NARROW_KINDS and n != _dt.bfloat16]:
        bits = ml_dtypes.finfo(narrow[0]).bits if _dt.kind(narrow[0]) == "f" else 0
        what = f"{bits}-bit floats" if bits else "1-bit, 2-bit and 4-bit integers"
        example = "float32" if bits else "int32"
        hint = (
            f". To avoid unintended promotion, {what} do not support implicit promotion. If you'd like "
            f"your inputs to be promoted to another type, you can do so explicitly using e.g. "
            f"x.astype('{example}')"
        )
    else:
        hint = ". Try explicitly casting inputs to the desired output type."
    raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype promotion path{hint}")


def _lattice_result_type(pairs) -> tuple[np.dtype, bool]:
    # JAX's lattice_result_type over (canonical dtype, weak) pairs, canonicalised after.
    dtypes = [d for d, _ in pairs]
    if any(not isinstance(d, np.dtype) for d in dtypes):  # typed PRNG keys' dtypes: not on the lattice
        return _dt.result_type(*pairs)
    weak = [w for _, w in pairs]
    if len(pairs) == 1 or (len(set(dtypes)) == 1 and not all(weak)):
        out, out_weak = dtypes[0], weak[0] and len(pairs) == 1
    elif all(weak) and not _lattice_strict():
        out, out_weak = _least_upper_bound(dtypes), True
    else:
        nodes = [_weak_node(d) if w else d for d, w in pairs]
        out = _least_upper_bound(nodes)
        out_weak = _is_weak_type(out)
    if _is_weak_type(out):
        out = _dt.python_scalar_dtype(out())
    out = np.dtype(out)
    if not _dt.x64_enabled:
        out = _dt.TO_32.get(out, out)
    out_weak = out_weak and out != np.bool_
    if out_weak:
        # (a weak result is the default type of its kind: a weak int8 alone is int32, as JAX's)
        defaults = {"i": _dt.default_int, "u": _dt.default_uint, "f": _dt.default_float}
        out = defaults.get(_dt.kind(out), _dt.default_complex)
    return out, out_weak


def _lattice_strict() -> bool:
    return _flags["dtype_promotion"] == "strict"


def _weak_node(dtype: np.dtype):
    if dtype == np.bool_:
        return dtype
    return {"i": int, "u": int, "f": float, "c": complex}[_dt.kind(dtype)]


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype, or an array) can be cast to ``to`` under ``casting``.

    >>> can_cast(int32, float64), can_cast(float64, int32)
    (True, False)
    """
    if isinstance(from_, Array | core.Tracer):
        from_ = from_.dtype
    elif type(from_) in python_scalar_types:
        raise TypeError("can_cast does not accept Python scalars (NEP 50); pass a dtype or an array")
    return bool(np.can_cast(canonicalize_dtype(from_), canonicalize_dtype(to), casting))


class extended(np.generic):  # noqa: N801 - JAX's name (``jax.dtypes.extended``)
    """The category of dtypes that are not NumPy's: the typed PRNG keys' ``key<impl>``."""


class prng_key(extended):  # noqa: N801 - JAX's name (``jax.dtypes.prng_key``)
    """The category of typed PRNG keys' dtypes (``key<fry>`` of ``random.key(0)``; the raw
    ``uint32`` data of ``random.PRNGKey(0)`` is not of this category)."""


def issubdtype(arg1, arg2) -> bool:
    """NumPy's ``issubdtype`` accepting funcgrad's scalar types and typed keys' ``key<impl>``.

    >>> issubdtype(float32, floating), issubdtype("key<rbg>", prng_key), issubdtype(float32, prng_key)
    (True, True, False)
    """
    if isinstance(arg1, str) and arg1.startswith("key<"):  # a typed key's dtype (random/_keys.py)
        return isinstance(arg2, type) and issubclass(prng_key, arg2)
    if _is_extended(arg1):  # an extended dtype object: a typed key's ``key<impl>`` (KeyTy)
        return issubclass(arg1.type, arg2) if isinstance(arg2, type) else arg1 == arg2
    if _is_extended(arg2):
        return False
    # (JAX's issubdtype does not canonicalize: int64 is int64 in 32-bit mode too)
    a, b = _np_scalar_type(arg1), _np_scalar_type(arg2)
    parents = _NARROW_PARENTS.get(np.dtype(a)) if a not in _ABSTRACT else None
    if parents is not None:  # ml_dtypes' types are not NumPy subclasses: place them as JAX does
        return b is a or b in parents
    return bool(np.issubdtype(a, b))


def _np_scalar_type(d) -> type:
    """The NumPy scalar type ``d`` names, as given (abstract types such as ``np.floating`` kept)."""
    if isinstance(d, _ScalarMeta):
        return d.dtype.type
    if isinstance(d, type) and issubclass(d, np.generic):
        return d
    try:
        return np.dtype(d).type
    except TypeError:
        return _dt.canonicalize(d).type


def _is_extended(dtype) -> bool:
    kind = getattr(dtype, "type", None)
    return not isinstance(dtype, np.dtype | type) and isinstance(kind, type) and issubclass(kind, extended)


_ABSTRACT = (
    np.generic,
    np.number,
    np.inexact,
    np.floating,
    np.complexfloating,
    np.integer,
    np.signedinteger,
    np.unsignedinteger,
)


def _narrow_parents() -> dict:
    """The abstract NumPy types each ml_dtypes type belongs under."""
    floats = (np.floating, np.inexact, np.number, np.generic)
    out = {}
    for name in dir(ml_dtypes):
        if name.startswith(("float", "bfloat")):
            out[np.dtype(getattr(ml_dtypes, name))] = floats
        elif name.startswith(("int", "uint")) and name[-1].isdigit():
            kind = np.unsignedinteger if name.startswith("u") else np.signedinteger
            out[np.dtype(getattr(ml_dtypes, name))] = (kind, np.integer, np.number, np.generic)
    return out


_NARROW_PARENTS = _narrow_parents()


def isdtype(dtype, kind) -> bool:
    """The Array API's ``isdtype``: ``kind`` is a dtype, a kind name or a tuple of them.

    >>> isdtype(float32, 'real floating')
    True
    """
    dtype = canonicalize_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {
        "bool": lambda d: d == np.bool_,
        "signed integer": lambda d: d.kind == "i",
        "unsigned integer": lambda d: d.kind == "u",
        "integral": lambda d: d.kind in "iu",
        "real floating": _dt.is_float,
        "complex floating": lambda d: d.kind == "c",
        "numeric": lambda d: d.kind in "iufc" or _dt.is_float(d),
    }
    for k in kinds:
        if isinstance(k, str):
            if k not in names:
                raise ValueError(f"unknown dtype kind {k!r}; expected one of {sorted(names)}")
            if names[k](dtype):
                return True
        elif canonicalize_dtype(k) == dtype:
            return True
    return False


# ----------------------------------------------------------------------------------------------
# Machine limits


def _dtype_of(int_type):
    # Not canonicalized, as JAX's iinfo/finfo: iinfo(int64) is int64's limits in 32-bit mode too.
    if isinstance(int_type, Array | core.Tracer | np.ndarray | np.generic):
        return int_type.dtype
    if isinstance(int_type, _ScalarMeta):
        return int_type.dtype
    if isinstance(int_type, np.dtype | str | type):
        return np.dtype(int_type)
    return canonicalize_dtype(int_type)


def iinfo(int_type) -> np.iinfo:
    """Machine limits of an integer dtype (NumPy's ``iinfo``).

    >>> int(iinfo(int8).max)
    127
    """
    d = _dtype_of(int_type)
    return ml_dtypes.iinfo(d) if d in _NARROW_PARENTS else np.iinfo(d)


def finfo(dtype_):
    """Machine limits of a floating dtype (NumPy's ``finfo``; bfloat16 through ml_dtypes).

    >>> float(finfo(float32).eps) == float(np.finfo(np.float32).eps)
    True
    """
    d = _dtype_of(dtype_)
    if d in _NARROW_PARENTS:  # bfloat16 and the 8/6/4-bit floats
        return ml_dtypes.finfo(d)
    return np.finfo(d)
