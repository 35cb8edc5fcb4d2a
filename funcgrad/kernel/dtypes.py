"""Dtype rules: NumPy 2 (NEP 50) promotion with weak Python scalars, tangent dtypes, short names.

Layer: kernel. Imports only numpy and ml_dtypes.

# NOTE: [weak types]
# A Python scalar (``2.0``) has no dtype of its own: it is *weak* and takes the dtype of the array
# it meets, exactly as NumPy 2 does (NEP 50): ``float32 array * 2.0`` stays float32, ``int32 array
# * 2.5`` becomes float64. Values that came from Python scalars keep ``weak_type=True`` in their aval
# (tracers) or on the Array, so ``grad(f)(3.0)`` still promotes like NumPy inside ``f``. We ask
# NumPy itself for the answer (``np.result_type`` with Python scalar stand-ins), so there is one
# source of truth for the promotion table. A Python ``bool`` is not weak, as in JAX (its weak types
# are int, float and complex): it promotes the same either way, and ``jnp.asarray(True)`` prints
# without ``weak_type`` (the places that wrap Python scalars test ``type(x) is not bool``).

# NOTE: [x64 mode]
# ``jax_enable_x64`` (funcgrad.config) is True by default: 64-bit dtypes are NumPy's defaults.
# Switched off (JAX's default, the ``funcgrad.as_jax`` alias's), every dtype is *canonicalised* to
# 32 bits as JAX does: float64 -> float32, int64 -> int32, uint64 -> uint32, complex128 ->
# complex64 (``canonical``), and the defaults below (``default_float``/``default_int``/...,
# ``python_scalar_dtype``) are the 32-bit ones. The mode is one module-level bool,
# ``x64_enabled``, set only by ``set_x64``; the places a value enters (``core.get_aval``, the
# eager step in ``core.EvalTrace`` (which also rounds NumPy's 64-bit results of Python-scalar
# operands), ``numpy_plan``, ``funcgrad.numpy.asarray``, jit's arguments in ``xla_bridge/execute.py``
# and ``spmd.py``, ``_api_util``'s Python scalars and ShapeDtypeStructs) read it and convert 64-bit
# NumPy values; promotion (``result_type``, ``promote_types``) canonicalises its answer;
# ``convert_element_type`` canonicalises its target; and the surface's user-dtype hubs
# (``funcgrad.numpy._dtypes``: ``canonicalize_dtype``, silent, and ``check_user_dtype``, which
# truncates an explicit request with JAX's UserWarning) serve every ``dtype=`` argument. Every
# trace and compile cache is emptied when the mode changes (``funcgrad._config``), so a function
# traced under one mode is traced again under the other, as JAX keys its caches on it; jaxlib's
# x64 state, which the native route's C++ dispatcher reads, follows the mode (``_jit_route``'s
# ``x32`` flag, ``xla_bridge.native.follow_x64``): off, it canonicalises jit's NumPy and scalar
# arguments as under jax's default. Under ``jax_explicit_x64_dtypes='allow'``
# (``explicit_x64_allowed``) a 64-bit dtype asked for explicitly is kept, and the eager step and
# promotion keep it (values made from NumPy data and the defaults stay 32-bit), as JAX's.
# ``JAX_ENABLE_X64`` is read once, when this module is imported (as JAX reads it at import): the
# kernel comes first, so every value is made in that mode, however
# funcgrad's modules are imported (``JAX_ENABLE_X64=0 python -c "import funcgrad.numpy as fnp;
# fnp.sin(np.zeros(2))"`` gives float32), and ``funcgrad.config`` starts from ``x64_enabled``.
# tests/surface/numpy/test_x32.py compares with jax in its default mode.
"""

from __future__ import annotations

import sys
import types

import numpy as np

from funcgrad.kernel import extended as _ext
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.environment import bool_env
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.thread_modes import ThreadOverride

_self = sys.modules[__name__]  # (its mode attributes read per thread: NOTE: [x64 mode per thread])

try:  # ml_dtypes ships with jaxlib; it is optional for the kernel itself.
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    ml_dtypes = None
    bfloat16 = None

# The half-precision floats: what jax.numpy reduces in float32, and XLA computes in rounded steps of
# the half type that NumPy's loops do not reproduce (funcgrad.numpy; traits.half_floats_compiled).
HALF_FLOATS = (np.dtype(np.float16), bfloat16)


def _narrow_kinds() -> dict:
    # ml_dtypes' types (bfloat16, the 8/6/4-bit floats, int4, uint2, ...) have NumPy kind "V" (all
    # but float8_e5m2, which has "f"); their category comes from their names, as JAX places them.
    out = {}
    for name in dir(ml_dtypes) if ml_dtypes is not None else ():
        if name.startswith(("float", "bfloat")):
            out[np.dtype(getattr(ml_dtypes, name))] = "f"
        elif name.startswith(("int", "uint")) and name[-1].isdigit():
            out[np.dtype(getattr(ml_dtypes, name))] = "u" if name[0] == "u" else "i"
    return out


_NARROW_KINDS = _narrow_kinds()

# NOTE: [narrow dtypes on the host]
# Eager primitives compute with NumPy, but NumPy (through ml_dtypes) computes the narrow types
# wrongly or not at all: reductions of float8 give NaN, maximum of int4 has no loop, negating a
# uint4 gives int8. A primitive with an operand of one of these dtypes runs compiled instead
# (``hooks.eager_compiled``, core.EvalTrace), as JAX computes them. bfloat16 is not among them:
# ml_dtypes computes it correctly, and its eager speed matters -- but NumPy returns some bfloat16
# results in float32 (a matmul), which EvalTrace casts back to the abstract-eval dtype. Both happen
# in EvalTrace only: the NumPy interpreter of cached eager programs (numpy_plan) declines programs
# that hold any of ml_dtypes' types (``is_narrow``), which then run equation by equation there.
COMPILED_ON_HOST = frozenset(d for d in _NARROW_KINDS if d != bfloat16)


def is_narrow(dtype) -> bool:
    """Whether ``dtype`` is one of ml_dtypes' types (bfloat16, the 8/6/4-bit floats, int4, ...).

    >>> is_narrow(bfloat16), is_narrow(np.float16)
    (True, False)
    """
    return np.dtype(dtype) in _NARROW_KINDS


def kind(dtype) -> str:
    """NumPy's one-letter kind (``b i u f c``), with ml_dtypes' types placed: bfloat16 and the
    narrow floats are ``f``, ``int4``/``int2`` are ``i``, ``uint4``/``uint2`` are ``u``.

    >>> kind(np.float32), kind(ml_dtypes.float8_e4m3fn), kind(ml_dtypes.uint4)
    ('f', 'f', 'u')
    """
    dtype = np.dtype(dtype)
    return _NARROW_KINDS.get(dtype) or dtype.kind


float0 = np.dtype([("float0", np.void, 0)])
"""The dtype of tangents of integer and boolean values (they have no derivative)."""

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)

# The defaults of the current mode (NOTE: [x64 mode]); read as ``_dt.default_float`` at call time,
# never imported by value.
default_float = float64
default_int = int64
default_uint = uint64
default_complex = complex128

x64_enabled = True
"""Whether 64-bit dtypes are enabled (NOTE: [x64 mode]); change it with ``set_x64`` only."""
explicit_x64_allowed = False
"""``jax_explicit_x64_dtypes='allow'`` (NOTE: [x64 mode]): with 64-bit dtypes off, an explicitly
requested 64-bit dtype is kept (``zeros(2, float64)``, ``astype``, ``convert_element_type``) and
a promotion with a 64-bit operand keeps its 64-bit answer (float64 with float32 is float64), as
JAX's; set by ``funcgrad.config`` only."""

# NOTE: [JAX's dtype rules in 64-bit mode]
# funcgrad's own 64-bit mode follows NumPy 2 (NEP 50; docs/differences_from_jax.md's
# numpy2-dtype-promotion); JAX's 32-bit mode is JAX's rules. Code written for JAX that runs with
# 64-bit types on (``funcgrad.as_jax`` with ``JAX_ENABLE_X64=1``, or ``jax_enable_x64`` set at run
# time under it) expects JAX's 64-bit rules: the alias sets ``jax_rules_in_x64`` (with
# ``set_jax_dtype_rules``). ``jax_rules`` is then True in both modes, and the places where the two
# rule sets differ read it: promotion (integers and bools below every inexact type: int32 with
# float32 is float32), an integer's inexact type (JAX's table: int64/uint64 -> float64, the narrower
# ones and bool -> float32; ``inexact_of``), and the functions with their own rule (cumsum of small
# integers keeps their dtype, convolve of integers is float, a bool squared is an int, ...).
jax_rules_in_x64 = False
jax_rules = False
"""JAX's dtype rules are in force: 32-bit mode, or 64-bit mode under the alias (NOTE: [JAX's
dtype rules in 64-bit mode]); read as ``_dt.jax_rules`` at call time."""

TO_32 = {float64: float32, int64: int32, uint64: uint32, complex128: complex64}
"""The 64-bit dtypes and what x32 mode canonicalises each to."""


def set_x64(enabled: bool) -> None:
    """Switch 64-bit mode (``funcgrad.config.update("jax_enable_x64", ...)`` calls it).

    >>> set_x64(False); python_scalar_dtype(1.0), canonical(np.dtype(np.int64))
    (dtype('float32'), dtype('int32'))
    >>> set_x64(True); python_scalar_dtype(1.0)
    dtype('float64')
    """
    global x64_enabled, default_float, default_int, default_uint, default_complex, jax_rules
    x64_enabled = bool(enabled)
    jax_rules = not x64_enabled or jax_rules_in_x64
    default_float, default_int, default_uint, default_complex = (
        (float64, int64, uint64, complex128) if x64_enabled else (float32, int32, uint32, complex64)
    )


def set_jax_dtype_rules(on: bool) -> None:
    """JAX's dtype rules in 64-bit mode too (``funcgrad.as_jax`` calls it; NOTE: [JAX's dtype rules
    in 64-bit mode]). The caller empties the trace caches (funcgrad._config's ``_set_x64`` does).

    >>> set_jax_dtype_rules(True); promote_types(np.int32, np.float32)
    dtype('float32')
    >>> set_jax_dtype_rules(False); promote_types(np.int32, np.float32)
    dtype('float64')
    """
    global jax_rules_in_x64, jax_rules
    jax_rules_in_x64 = bool(on)
    jax_rules = not x64_enabled or jax_rules_in_x64


# NOTE: [x64 mode per thread]
# JAX's ``enable_x64(...)`` context is thread-local: entered in one thread, it does not change
# another thread's mode, which stays the process-wide one (``config.update("jax_enable_x64", ..)``,
# the globals above, set by ``set_x64``). A thread inside a context has its own mode
# (``enter_thread_x64``/``exit_thread_x64``, which funcgrad._config's ``enable_x64`` calls). While
# any thread has one, this module's class is ``_ThreadModeModule``, whose properties answer
# ``_dt.x64_enabled``, ``_dt.default_float``, ``_dt.jax_rules``, ... with the reading thread's
# mode; otherwise they are the plain module attributes, read at no extra cost. Code in this module
# reads them as ``_self.x64_enabled`` to go the same way. The caches whose entries depend on the
# mode but whose keys may not hold it put the mode in their keys (``jit``'s trace cache and the
# control-flow body traces: ``hooks.mode_key()``; ``numpy.result_type``), surface templates are off while
# any thread has its own mode, and every cache is emptied when a thread's mode changes (as for a
# process-wide change), so two threads in different modes never share a program; an eager
# ``grad`` whose function enters a mode gives up its recording (``thread_x64.changes``). The
# per-thread machinery is the kernel's ``ThreadOverride`` (NOTE: [per-thread overrides cost
# nothing while no thread has one] in funcgrad/kernel/thread_modes.py).


def _mode_property(name: str, pick):
    def get(module):
        x64 = _thread.value
        return module.__dict__[name] if x64 is None else pick(x64)

    def set_(module, value):  # (the process-wide value, as a plain module's attribute would be)
        module.__dict__[name] = value

    return property(get, set_)


class _ThreadModeModule(types.ModuleType):
    """This module while a thread has its own mode (NOTE: [x64 mode per thread])."""

    x64_enabled = _mode_property("x64_enabled", lambda x64: x64)
    jax_rules = _mode_property("jax_rules", lambda x64: not x64 or jax_rules_in_x64)
    default_float = _mode_property("default_float", lambda x64: float64 if x64 else float32)
    default_int = _mode_property("default_int", lambda x64: int64 if x64 else int32)
    default_uint = _mode_property("default_uint", lambda x64: uint64 if x64 else uint32)
    default_complex = _mode_property("default_complex", lambda x64: complex128 if x64 else complex64)


# The threads' own modes; ``changes`` counts the contexts entered or left so far (eager grad's
# recording reads it).
thread_x64 = ThreadOverride(_self, types.ModuleType, _ThreadModeModule)
_thread = thread_x64.local  # (this thread's own mode, or None; read by the properties above)


def enter_thread_x64(enabled: bool):
    """Give the calling thread its own 64-bit mode (NOTE: [x64 mode per thread]); returns what
    ``exit_thread_x64`` restores.

    >>> import threading
    >>> token = enter_thread_x64(False)
    >>> seen = []; t = threading.Thread(target=lambda: seen.append(_self.x64_enabled)); t.start(); t.join()
    >>> _self.x64_enabled, seen, _self.default_float
    (False, [True], dtype('float32'))
    >>> exit_thread_x64(token); _self.x64_enabled
    True
    """
    return thread_x64.enter(bool(enabled))


exit_thread_x64 = thread_x64.exit  # (leave the mode enter_thread_x64 gave: its token)


def _x64_key() -> tuple:
    return (_self.x64_enabled,)


# The calling thread's modes that change what a trace makes, part of the trace cache keys of
# ``jit`` and of control flow's bodies (``hooks.mode_key``): the 64-bit mode, until
# funcgrad._config registers a key of every such flag (the promotion flags and the matmul
# precision too).
hooks.mode_names, hooks.mode_key = ("jax_enable_x64",), _x64_key


def thread_modes() -> bool:
    """Whether any thread is inside its own mode (``jit`` then keys every call on the mode)."""
    return thread_x64.count > 0


_INEXACT_OF = {np.dtype(n): np.dtype("float64" if n.endswith("64") else "float32") for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}  # fmt: skip


def inexact_of(dtype) -> np.dtype:
    """The inexact dtype an integer or bool ``dtype`` computes in (``sin``, ``mean``, true division):
    the default float under NumPy's rules, JAX's table under JAX's (int64 -> float64, int32 ->
    float32); inexact dtypes are themselves.

    >>> inexact_of(np.int32), inexact_of(np.float16)
    (dtype('float64'), dtype('float16'))
    """
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return dtype
    if not _self.jax_rules:
        return _self.default_float
    out = _INEXACT_OF.get(dtype, float32)  # (int4 and the other narrow integers: float32, as JAX's)
    return out if _self.x64_enabled else TO_32.get(out, out)


# JAX_ENABLE_X64, read once at import as JAX does (its bool_env words): "0"/"false"/"no"/"off" turn
# 64-bit types off; unset, funcgrad's default mode has them on.
if not bool_env("JAX_ENABLE_X64", True):
    set_x64(False)  # (NOTE: [x64 mode])


def canonical(dtype: np.dtype) -> np.dtype:
    """``dtype`` (an ``np.dtype``) as the current mode has it: itself with 64-bit types enabled,
    its 32-bit counterpart otherwise (NOTE: [x64 mode]).

    >>> canonical(np.dtype(np.float64))  # (funcgrad's default mode: x64 on)
    dtype('float64')
    """
    return dtype if _self.x64_enabled else TO_32.get(dtype, dtype)


def canonical_value(x):
    """A NumPy value (array or scalar) converted to its canonical dtype (a no-op with x64 on, and
    for values that already are); other values are returned as they are.

    >>> canonical_value(np.arange(2)).dtype
    dtype('int64')
    """
    if _self.x64_enabled:
        return x
    d = getattr(x, "dtype", None)
    to = TO_32.get(d) if isinstance(d, np.dtype) else None
    if to is None or not isinstance(x, np.ndarray | np.generic):
        return x
    return np.asarray(x).astype(to)


_SHORT = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}


def short_name(dtype) -> str:
    """The jaxpr spelling of a dtype: ``short_name(np.float32) == 'f32'``."""
    if _ext.is_extended(dtype):
        return str(dtype)
    dtype = np.dtype(dtype)
    if dtype == float0:
        return "float0"
    return _SHORT.get(dtype.name, dtype.name)


def long_name(dtype) -> str:
    """A dtype's whole name, as JAX's messages print a type: ``long_name(np.float32) == 'float32'``
    (float0 is ``float0``, as JAX's ``str_short``)."""
    if _ext.is_extended(dtype):
        return str(dtype)
    dtype = np.dtype(dtype)
    return "float0" if dtype == float0 else dtype.name


def bit_width(dtype) -> int:
    """The number of bits of one element: 4 for int4 and float4_e2m1fn (which NumPy stores in a
    byte each), ``8 * itemsize`` otherwise.

    >>> bit_width(np.float32), bit_width(ml_dtypes.float4_e2m1fn), bit_width(ml_dtypes.uint2)
    (32, 4, 2)
    """
    dtype = np.dtype(dtype)
    kind_ = _NARROW_KINDS.get(dtype)
    if kind_ is None:
        return dtype.itemsize * 8
    return (ml_dtypes.finfo if kind_ == "f" else ml_dtypes.iinfo)(dtype).bits


def int_of_width(bits: int, signed: bool = True) -> np.dtype:
    """The integer dtype of ``bits`` bits (2, 4, 8, 16, 32 or 64), for bit patterns.

    >>> int_of_width(4), int_of_width(16, signed=False)
    (dtype(int4), dtype('uint16'))
    """
    name = f"{'' if signed else 'u'}int{bits}"
    return np.dtype(getattr(ml_dtypes, name)) if bits < 8 else np.dtype(name)


def has_inf(dtype) -> bool:
    """Whether a floating dtype has infinities (float8_e4m3fn, the ``fnuz`` formats and
    float4_e2m1fn do not: their largest finite value is the identity of ``max``).

    >>> has_inf(np.float32), has_inf(ml_dtypes.float8_e4m3fn)
    (True, False)
    """
    dtype = np.dtype(dtype)
    if dtype not in _NARROW_KINDS:
        return dtype.kind in "fc"
    return _NARROW_KINDS[dtype] == "f" and bool(np.isinf(np.array(np.inf, np.float32).astype(dtype)))


def extremum_identity(dtype, for_max: bool):
    """The identity of ``max`` (the least value of ``dtype``) or of ``min`` (the greatest):
    -inf/inf, or the finite extremes of the float formats without infinities, the integer
    limits, False/True, and for complex values the ends of the lexicographic order.

    >>> extremum_identity(np.float32, True), extremum_identity(np.int8, False)
    (-inf, 127)
    >>> float(extremum_identity(ml_dtypes.float8_e4m3fn, True))
    -448.0
    """
    dtype = np.dtype(dtype)
    sign = -1 if for_max else 1
    if dtype == bool_:
        return not for_max
    k = kind(dtype)
    if k in "iu":
        info = iinfo(dtype)
        return info.min if for_max else info.max
    if k == "c":
        return complex(sign * np.inf, sign * np.inf)
    if has_inf(dtype):
        return sign * np.inf
    info = ml_dtypes.finfo(dtype)
    return info.min if for_max else info.max


def finfo(dtype):
    """Machine limits of a floating dtype, bfloat16 and the narrow floats included (ml_dtypes'
    ``finfo``, which answers NumPy's types as NumPy does).

    >>> int(finfo(bfloat16).nmant), float(finfo(np.float32).eps) == float(np.finfo(np.float32).eps)
    (7, True)
    """
    return ml_dtypes.finfo(dtype) if ml_dtypes is not None else np.finfo(dtype)


def iinfo(dtype):
    """Machine limits of an integer dtype, the narrow ones of ml_dtypes included.

    >>> int(iinfo(ml_dtypes.int4).min), int(iinfo(np.uint8).max)
    (-8, 255)
    """
    dtype = np.dtype(dtype)
    return ml_dtypes.iinfo(dtype) if dtype in _NARROW_KINDS else np.iinfo(dtype)


def is_float(dtype) -> bool:
    """True for real floating dtypes, bfloat16 and the narrow floats of ml_dtypes included."""
    return kind(dtype) == "f"


def is_inexact(dtype) -> bool:
    """True for the dtypes that have derivatives (floating and complex)."""
    # (NumPy 2's dtypes are subclasses of np.dtype, such as Float64DType: isinstance, not type is)
    known = _inexact.get(dtype) if isinstance(dtype, np.dtype) else None
    if known is not None:
        return known  # (asked for every traced value: a dict lookup)
    if _ext.is_extended(dtype):  # (when its rules give it a tangent dtype: NOTE: [extended dtypes])
        return tangent_dtype(dtype) != float0
    out = kind(dtype) in "fc"
    if isinstance(dtype, np.dtype):
        _inexact[dtype] = out
    return out


_inexact: dict = register_cache("kernel.dtype_is_inexact", {})


def real_dtype(dtype) -> np.dtype:
    """The real dtype of a complex one (``complex64 -> float32``); real dtypes map to themselves.

    >>> real_dtype(np.complex64), real_dtype(np.float64)
    (dtype('float32'), dtype('float64'))
    """
    dtype = np.dtype(dtype)
    return np.dtype(np.float32 if dtype == complex64 else np.float64) if dtype.kind == "c" else dtype


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype of a real floating one (``float32 -> complex64``, otherwise complex128),
    as ``np.result_type(dtype, np.complex64)``.

    >>> complex_dtype(np.float32), complex_dtype(np.float64)
    (dtype('complex64'), dtype('complex128'))
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    return complex64 if dtype in (float32, float16) or _NARROW_KINDS.get(dtype) == "f" else complex128


def tangent_dtype(dtype):
    """The dtype of a tangent or cotangent for a primal of ``dtype`` (float0 for ints and bools;
    an extended dtype's rules say: NOTE: [extended dtypes])."""
    if _ext.is_extended(dtype):
        out = _ext.tangent_dtype(dtype)
        return float0 if out is None else out
    return np.dtype(dtype) if is_inexact(dtype) else float0


_WEAK_STANDIN = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


class _TypedScalar:
    """What JAX's typed Python scalars share: the value of ``_base`` (int, float or complex) with a
    ``dtype``; printed with its type, a plain Python number as text, as an array and when pickled."""

    __slots__ = ()
    _base: type
    dtype: np.dtype

    def __new__(cls, value, dtype):
        v = cls._base.__new__(cls, value)
        v.dtype = np.dtype(dtype)
        return v

    def __repr__(self):
        return f"{type(self).__name__}({self._base(self)}, dtype={self.dtype.name})"

    def __str__(self):
        return str(self._base(self))

    def __getnewargs__(self):
        return (self._base(self), self.dtype)

    def __jax_array__(self):
        return self._base(self)  # (as an array it is the weak Python scalar it is: asarray's protocol)


class TypedInt(_TypedScalar, int):
    """A Python ``int`` that carries its (weak) dtype: JAX's ``TypedInt``, what JAX's ``bind``
    makes of a Python scalar operand, seen where a primitive forwards one unchanged (an eager
    ``linear_call`` of an identity). It is a Python scalar in every other respect (weakly typed);
    arithmetic on it gives plain Python numbers, as in JAX.

    >>> TypedInt(2, np.dtype("int32")), TypedInt(2, np.dtype("int32")) + 1
    (TypedInt(2, dtype=int32), 3)
    """

    _base = int


class TypedFloat(_TypedScalar, float):
    """A Python ``float`` that carries its (weak) dtype: JAX's ``TypedFloat`` (see ``TypedInt``).

    >>> x = TypedFloat(1.0, np.dtype("float32"))
    >>> x, str(x), x * 2
    (TypedFloat(1.0, dtype=float32), '1.0', 2.0)
    """

    __slots__ = ("dtype",)
    _base = float


class TypedComplex(_TypedScalar, complex):
    """A Python ``complex`` that carries its (weak) dtype: JAX's ``TypedComplex`` (see ``TypedInt``)."""

    __slots__ = ("dtype",)
    _base = complex


typed_scalar_types = (TypedInt, TypedFloat, TypedComplex)

python_scalar_types = (bool, int, float, complex)
"""The Python number types, whose values are weak (NOTE: [weak types]); the one definition every
layer imports. Test membership with ``type(x) in python_scalar_types`` where NumPy scalars (which
subclass ``float`` and ``complex``) and ``IntEnum``s must not count, ``isinstance`` otherwise. (JAX's
typed scalars, ``typed_scalar_types``, subclass them: ``isinstance`` counts them, weakly typed;
the exact-type test, on the eager hot path, leaves them to the general route, which types them by
``isinstance`` too.)

>>> type(2.0) in python_scalar_types, type(np.float64(2.0)) in python_scalar_types
(True, False)
"""


def typed_scalar(x):
    """The typed scalar JAX's ``bind`` makes of a Python scalar ``x`` (its weak dtype in the
    current mode: ``TypedFloat(1.0, dtype=float32)`` in 32-bit mode); anything else unchanged.

    >>> typed_scalar(2.5).dtype == default_float, typed_scalar(True), typed_scalar("a")
    (True, True, 'a')
    """
    t = type(x)
    if t is float:
        return TypedFloat(x, _self.default_float)
    if t is int:
        return TypedInt(x, _self.default_int)
    if t is complex:
        return TypedComplex(x, _self.default_complex)
    return x


def python_scalar_dtype(x) -> np.dtype:
    """The dtype a Python scalar gets when it stands alone (NumPy's defaults)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return _self.default_int
    if isinstance(x, float):
        return _self.default_float
    if isinstance(x, complex):
        return _self.default_complex
    raise TypeError(f"not a Python scalar: {x!r}")


def not_promotable(dtype) -> ValueError:
    """JAX's error for a dtype outside its type-promotion lattice (a typed PRNG key's, say).

    >>> not_promotable("key<fry>")
    ValueError('dtype=key<fry> is not a valid dtype for JAX type promotion.')
    """
    return ValueError(f"dtype={dtype} is not a valid dtype for JAX type promotion.")


def result_type(*dtypes_and_weak) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs the NumPy 2 way; returns ``(dtype, weak_type)``. A
    boolean result of several values is never weak, as JAX's lattice_result_type says (two weakly
    typed boolean arrays, ``x == 1.0`` of a bool ``x``, add to a strong one); one value keeps its
    type (jnp's promotion leaves a single argument as it is).

    >>> result_type((np.dtype('float32'), False), (np.dtype('float64'), True))
    (dtype('float32'), False)
    >>> result_type((np.dtype(bool), True), (np.dtype(bool), True))
    (dtype('bool'), False)
    """
    out, is_weak = _promoted(dtypes_and_weak)
    return out, is_weak and (out != np.bool_ or len(dtypes_and_weak) == 1)


def _promoted(dtypes_and_weak) -> tuple[np.dtype, bool]:
    strong = []
    weak = []
    for dtype, is_weak in dtypes_and_weak:
        if is_weak:
            weak.append(dtype)
        else:
            strong.append(dtype)
    if any(not isinstance(d, np.dtype) for d in strong):
        # An extended dtype (a typed PRNG key's key<impl>) is its own result, as in JAX; it
        # combines with nothing else.
        if len(set(strong)) == 1 and not weak:
            return strong[0], False
        bad = next(d for d in strong if not isinstance(d, np.dtype))
        raise not_promotable(bad)
    if not _self.x64_enabled:
        out, is_weak = _result_type(_inexact_absorbs_integers(strong), weak)
        if explicit_x64_allowed and any(d in TO_32 for d in strong):
            return out, is_weak  # (a 64-bit operand's answer kept: jax_explicit_x64_dtypes='allow')
        return TO_32.get(out, out), is_weak
    if _self.jax_rules:  # (NOTE: [JAX's dtype rules in 64-bit mode])
        out, is_weak = _result_type(_inexact_absorbs_integers(strong), weak)
        # uint64 with a signed integer meets above int64, at JAX's weak float (its lattice's f*)
        return out, is_weak or (kind(out) == "f" and all(kind(d) in "iu" for d in strong))
    return _result_type(strong, weak)


def _inexact_absorbs_integers(dtypes):
    # NOTE: [x64 mode]: 32-bit mode is JAX's lattice, where every integer and bool sits below every
    # inexact dtype: with one of those present the integers drop out (int32 + float16 is float16;
    # NumPy, and 64-bit mode, says float32). Where NumPy's answer canonicalises to JAX's anyway
    # (int8 + float16, int32 + float32) this changes nothing.
    inexact = [d for d in dtypes if kind(d) in "fc"]
    return inexact if inexact and len(inexact) < len(dtypes) else dtypes


def _result_type(strong, weak) -> tuple[np.dtype, bool]:
    if not strong:
        # Only weak values: the widest category wins, at the default precision of that category,
        # and the result stays weak.
        kinds = "biufc"
        widest = max((kind(d) for d in weak), key=kinds.index)
        return np.result_type(*weak) if len(set(weak)) == 1 else _default_of(widest), True
    if any(np.dtype(d) in _NARROW_KINDS for d in strong):
        base = promote_types(*strong)
        return (_weak_into_narrow(base, weak) if weak else base), False
    standins = [_WEAK_STANDIN[kind(d)] for d in weak]
    # JAX's lattice puts a weak kind above every strong dtype of a lower kind up to integers: bool
    # and a Python int make a weak int, an int array and a Python float a weak float (i64 + f* is
    # f*); a strong float with a Python complex is a strong complex.
    top_strong = max(_RANK[kind(d)] for d in strong)
    lifted = bool(weak) and top_strong <= 1 and max(_RANK[kind(d)] for d in weak) > top_strong
    return np.result_type(*strong, *standins), lifted


_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def promote_types(*dtypes) -> np.dtype:
    """The promoted dtype of (strong) ``dtypes``: NumPy's, and for the pairs of ml_dtypes' types
    NumPy cannot promote, JAX's lattice: a narrow float absorbs booleans and integers
    (``bfloat16 + int32`` is bfloat16), ``bfloat16 + float16`` is float32; other mixes of narrow
    types are an error, as in JAX.

    >>> promote_types(np.float32, np.int64), promote_types(bfloat16, np.int32)
    (dtype('float64'), dtype(bfloat16))
    """
    if _self.jax_rules:
        dtypes = _inexact_absorbs_integers([np.dtype(d) for d in dtypes])
    try:
        out = np.result_type(*dtypes)
    except TypeError:  # (numpy.exceptions.DTypePromotionError)
        out = np.dtype(dtypes[0])
        for d in dtypes[1:]:
            out = _promote_pair(out, np.dtype(d))
    return out if _self.x64_enabled else TO_32.get(out, out)


def _promote_pair(a: np.dtype, b: np.dtype) -> np.dtype:
    try:
        return np.result_type(a, b)
    except TypeError:
        pass
    ka, kb = kind(a), kind(b)
    if ka == "f" and kb in "biu":
        return a
    if kb == "f" and ka in "biu":
        return b
    if {a, b} == {bfloat16, float16}:
        return float32
    raise TypeError(
        f"no implicit dtype promotion between {a.name} and {b.name} (as in JAX); convert one "
        f"explicitly, e.g. x.astype({b.name!r})"
    )


def _weak_into_narrow(base: np.dtype, weak) -> np.dtype:
    # NEP 50 for ml_dtypes' types, whose NumPy promotion against Python scalars is value-based
    # (bfloat16 * 2.0 would be float64, int4 + 1 int8): a weak value of a category no higher than
    # the array's takes the array's dtype, as in JAX.
    w, b = max(_RANK[kind(d)] for d in weak), _RANK[kind(base)]
    if w <= b:
        return base
    if w == 3 and b == 2:
        return complex_dtype(base)
    return _self.default_float if w == 2 else _self.default_complex


def _default_of(kind: str) -> np.dtype:
    return {
        "b": bool_,
        "i": _self.default_int,
        "u": _self.default_int,
        "f": _self.default_float,
        "c": _self.default_complex,
    }[kind]


def canonicalize(dtype) -> np.dtype:
    """``np.dtype`` of anything NumPy accepts as a dtype (``float``, ``'f4'``, ``jnp.float32``...),
    canonical for the current mode (NOTE: [x64 mode])."""
    if not isinstance(dtype, np.dtype | type | str) and hasattr(dtype, "dtype"):
        dtype = dtype.dtype  # an array or array-like carrying a dtype
    out = np.dtype(dtype)
    return out if _self.x64_enabled else TO_32.get(out, out)
