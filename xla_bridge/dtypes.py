"""Types as the XLA bridge sees them: dtypes <-> MLIR types, avals, constants, signatures.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, ml_dtypes. Nothing from jaxlib
(this module is pure string formatting, so the lowering can use it without touching XLA) and
never jax or funcgrad.

Decisions:
- Booleans are ``i1``; signless ``iN`` are NumPy's signed ints; unsigned ints are ``uiN``.
- A dense constant must round-trip *bit-exactly* (nan payloads, -0.0, inf, subnormals), because
  the lowering embeds Python/NumPy constants into programs whose results we compare against the
  NumPy implementation. Hence:
  * splat (every element equal) -> one literal: ``dense<1.5> : tensor<2x3xf32>``. A float
    literal is printed in decimal only when MLIR's parse (decimal -> double -> target format,
    which is how MLIR's parser builds float elements) gives back the same bits; otherwise
    (nan, inf, the rare double-rounding case) it is the integer bit pattern ``0x7FC00000``.
  * small non-splat arrays (<= 16 elements, not complex) -> a nested literal list, for
    readable programs.
  * everything else -> the raw little-endian hex blob ``dense<"0x...">`` (i1 takes one byte per
    element), which is exact and compact.
- 64-bit types are always available (the runtime runs XLA with x64 enabled).
- ``Aval`` is the (shape, dtype, weak_type) object jaxlib's put and result handlers read (they
  need exactly those attributes). ``aval(...)`` interns them, so "same type" is an identity
  test; the runtime's per-call input check relies on that.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

__all__ = [
    "SUB_BYTE_WIDE",
    "SUPPORTED_DTYPES",
    "Aval",
    "attribute_key",
    "attribute_text",
    "aval",
    "dense_attr",
    "dense_constant",
    "dtype_from_mlir",
    "main_signature",
    "mlir_element_type",
    "mlir_tensor_type",
    "string_literal",
    "widening_module",
]
# Re-exported by the xla_bridge package (NOTE: [derived namespaces] in funcgrad/__init__.py).
_REEXPORTED = ("Aval", "aval", "mlir_element_type", "mlir_tensor_type", "dtype_from_mlir", "dense_attr")

# Ordered so that the reverse mapping is unambiguous.
_DTYPE_TO_MLIR: dict[np.dtype, str] = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "complex<f32>",
    np.dtype(np.complex128): "complex<f64>",
    # 8-bit floats: XLA stores them one byte per element, like NumPy/ml_dtypes.
    np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
    # The other narrow types of ml_dtypes, as JAX has them. NumPy (ml_dtypes) stores each element
    # in one byte, and so does MLIR's dense hex form for every width but i1.
    np.dtype(ml_dtypes.float8_e4m3fnuz): "f8E4M3FNUZ",
    np.dtype(ml_dtypes.float8_e5m2fnuz): "f8E5M2FNUZ",
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): "f8E4M3B11FNUZ",
    np.dtype(ml_dtypes.float8_e3m4): "f8E3M4",
    np.dtype(ml_dtypes.float8_e4m3): "f8E4M3",
    np.dtype(ml_dtypes.float8_e8m0fnu): "f8E8M0FNU",
    np.dtype(ml_dtypes.float4_e2m1fn): "f4E2M1FN",
    np.dtype(ml_dtypes.int4): "i4",
    np.dtype(ml_dtypes.uint4): "ui4",
    np.dtype(ml_dtypes.int2): "i2",
    np.dtype(ml_dtypes.uint2): "ui2",
}
_MLIR_TO_DTYPE: dict[str, np.dtype] = {v: k for k, v in _DTYPE_TO_MLIR.items()}

SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(_DTYPE_TO_MLIR)

# Unsigned integer of the same width, to read a float's bit pattern.
_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# Above this many elements a non-splat constant is printed as a hex blob.
_MAX_LITERAL_ELEMENTS = 16


def mlir_element_type(dtype) -> str:
    """The MLIR element type name of a NumPy dtype.

    Example:
        >>> mlir_element_type(np.float32), mlir_element_type(bool)
        ('f32', 'i1')
    """
    dt = np.dtype(dtype)
    try:
        return _DTYPE_TO_MLIR[dt]
    except KeyError:
        supported = ", ".join(str(d) for d in _DTYPE_TO_MLIR)
        raise TypeError(f"dtype {dt} has no XLA element type; supported: {supported}") from None


# Sub-byte types have neither a buffer-protocol format nor a DLPack code (and XLA may pack them
# two or four to a byte on the device): their read-back converts them on the device to the
# byte-wide type that holds every value exactly, then casts back on the host.
SUB_BYTE_WIDE: dict[np.dtype, np.dtype] = {
    np.dtype(ml_dtypes.int4): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint4): np.dtype(np.uint8),
    np.dtype(ml_dtypes.int2): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint2): np.dtype(np.uint8),
    np.dtype(ml_dtypes.float4_e2m1fn): np.dtype(np.float32),
}


def widening_module(shape, dtype) -> str:
    """The module that converts a ``shape`` array of a sub-byte ``dtype`` to its byte-wide type
    (``SUB_BYTE_WIDE``), for read-back.

    Example:
        >>> print(widening_module((2,), ml_dtypes.int4))  # doctest: +NORMALIZE_WHITESPACE
        func.func public @main(%a: tensor<2xi4>) -> tensor<2xi8> {
          %b = stablehlo.convert %a : (tensor<2xi4>) -> tensor<2xi8>
          return %b : tensor<2xi8>
        }
    """
    narrow = mlir_tensor_type(shape, dtype)
    wide = mlir_tensor_type(shape, SUB_BYTE_WIDE[np.dtype(dtype)])
    return (
        f"func.func public @main(%a: {narrow}) -> {wide} {{\n"
        f"  %b = stablehlo.convert %a : ({narrow}) -> {wide}\n"
        f"  return %b : {wide}\n}}"
    )


def dtype_from_mlir(element_type: str) -> np.dtype:
    """The NumPy dtype of an MLIR element type name (inverse of ``mlir_element_type``).

    Example:
        >>> dtype_from_mlir("bf16")
        dtype(bfloat16)
    """
    try:
        return _MLIR_TO_DTYPE[element_type]
    except KeyError:
        raise TypeError(f"unsupported MLIR element type {element_type!r}") from None


def mlir_tensor_type(shape, dtype) -> str:
    """The MLIR ranked tensor type for a shape and dtype.

    Example:
        >>> mlir_tensor_type((2, 3), np.float32), mlir_tensor_type((), np.int64)
        ('tensor<2x3xf32>', 'tensor<i64>')
    """
    et = mlir_element_type(dtype)
    if not shape:
        return f"tensor<{et}>"
    return "tensor<" + "x".join(str(int(d)) for d in shape) + "x" + et + ">"


def _float_literal(x: np.generic) -> str:
    """Decimal text if MLIR's parse gives back the same bits, else the bit-pattern literal."""
    dt = x.dtype
    bits = x.view(_UINT_OF_SIZE[dt.itemsize])
    if np.isfinite(x):
        ax = abs(float(x))
        if ax == 0.0 or 1e-4 <= ax < 1e16:
            s = np.format_float_positional(x, unique=True, trim="0")
        else:
            s = np.format_float_scientific(x, unique=True, trim="0")
        # MLIR parses the spelling into a double, then rounds to the element type.
        if dt.type(float(s)).view(bits.dtype) == bits:
            return s
    return f"0x{int(bits):0{2 * dt.itemsize}X}"


def _scalar_literal(x: np.generic) -> str:
    dt = x.dtype
    if dt == np.bool_:
        return "true" if x else "false"
    if dt.kind in "iu" or _DTYPE_TO_MLIR.get(dt, "f")[0] in "iu":  # (i4, ui2: kind "V")
        return str(int(x))
    return _float_literal(x)


def _nested_literal(a: np.ndarray) -> str:
    if a.ndim == 0:
        return _scalar_literal(a[()])
    return "[" + ", ".join(_nested_literal(sub) for sub in a) + "]"


def _hex_blob(a: np.ndarray) -> str:
    dt = a.dtype
    if dt == np.bool_:
        raw = a.astype(np.uint8)
    elif dt.itemsize > 1 and dt.byteorder == ">":
        raw = a.astype(dt.newbyteorder("<"))
    else:
        raw = a
    return '"0x' + np.ascontiguousarray(raw).tobytes().hex().upper() + '"'


def dense_attr(value, dtype=None) -> str:
    """The ``dense<...> : tensor<...>`` attribute text for an array, exact to the bit.

    Example:
        >>> dense_attr(np.float32(1.0))
        'dense<1.0> : tensor<f32>'
        >>> dense_attr(np.array([np.nan, 1.0], np.float32))
        'dense<[0x7FC00000, 1.0]> : tensor<2xf32>'
        >>> dense_attr(np.arange(20, dtype=np.int8))[:21]
        'dense<"0x000102030405'
    """
    a = np.asarray(value, dtype=dtype)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    ttype = mlir_tensor_type(a.shape, a.dtype)
    if a.size == 0:
        return f"dense<> : {ttype}"
    flat = a.reshape(-1)
    is_complex = a.dtype.kind == "c"
    # Splat detection on bit patterns (so nan == nan and -0.0 != 0.0).
    as_bits = flat.view(_UINT_OF_SIZE[a.dtype.itemsize]) if not is_complex else None
    splat = bool(np.all(as_bits == as_bits[0])) if as_bits is not None else False
    if splat:
        body = _scalar_literal(flat[0])
    elif not is_complex and a.size <= _MAX_LITERAL_ELEMENTS:
        body = _nested_literal(a)
    else:
        # Complex elements only have the hex form here: MLIR's (re, im) literal cannot spell a
        # nan or inf part exactly.
        body = _hex_blob(a)
    return f"dense<{body}> : {ttype}"


def dense_constant(value, dtype=None, name: str = "%c") -> str:
    """A full ``stablehlo.constant`` line for an array (convenience for hand-written modules).

    Example:
        >>> dense_constant(np.float64(2.0), name="%two")
        '%two = stablehlo.constant dense<2.0> : tensor<f64>'
    """
    return f"{name} = stablehlo.constant {dense_attr(value, dtype)}"


# --------------------------------------------------------------------------------------------
# Attributes: a Python value as MLIR attribute text
# --------------------------------------------------------------------------------------------

# NOTE: [attributes as text]
# Every place that writes a Python value into an MLIR attribute -- a composite's attributes, an
# FFI call's keyword arguments, ``mhlo.frontend_attributes``, and the MLIR bindings'
# ``ir_attribute`` (which parses this text) -- renders it here, as JAX's ``mlir.ir_attribute``
# converts one: ``str``/``bytes`` -> a string, ``bool`` -> ``true``/``false``, ``int`` -> ``i64``,
# ``float`` -> ``f64``, NumPy scalars in their dtype (a complex scalar is JAX's TypeError), arrays
# dense, dtypes as types, lists/tuples -> arrays, dicts -> dictionaries (MLIR keeps those sorted).
# Strings are written as MLIR prints them (``\XX`` for a quote, a backslash and every byte that is
# not printable ASCII), so a name with a newline or a quote parses back to itself.

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def string_literal(s: str | bytes) -> str:
    """An MLIR string literal, as MLIR prints one (NOTE: [attributes as text]).

    >>> print(string_literal('a"b\\nc'))
    "a\\22b\\0Ac"
    """
    out = []
    for b in s if isinstance(s, bytes) else s.encode("utf-8"):
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\' else f"\\{b:02X}")
    return '"' + "".join(out) + '"'


def attribute_key(k) -> str:
    """A dictionary attribute's key: bare when it is an identifier, else a string literal.

    >>> attribute_key("eps"), attribute_key("a b")
    ('eps', '"a b"')
    """
    if not isinstance(k, str):
        raise TypeError(f"MLIR attribute names must be str, got {k!r}")
    return k if _BARE_KEY.fullmatch(k) else string_literal(k)


def attribute_text(value, other=None) -> str:
    """The MLIR attribute text of a Python value (NOTE: [attributes as text]); ``other(v)``, when
    given, renders a value of a type not listed there (the MLIR bindings' own attributes), or
    returns None to refuse it with JAX's TypeError.

    >>> attribute_text(np.float32(0.5)), attribute_text(3), attribute_text(True), attribute_text("a")
    ('0.5 : f32', '3 : i64', 'true', '"a"')
    >>> attribute_text({"n": [1, np.int32(2)], "t": np.dtype(np.float32)})
    '{n = [1 : i64, 2 : i32], t = f32}'
    >>> attribute_text(np.arange(3, dtype=np.int32))
    'dense<[0, 1, 2]> : tensor<3xi32>'
    """
    if isinstance(value, str | bytes):
        return string_literal(value)
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{int(np.int64(value))} : i64"
    if isinstance(value, float):
        value = np.float64(value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return mlir_element_type(value)
    if isinstance(value, complex) or (isinstance(value, np.generic) and value.dtype.kind == "c"):
        # JAX's words; it converts a Python scalar with np.array first, so its error names ndarray
        kind = np.ndarray if isinstance(value, complex) else type(value)
        raise TypeError(f"Unsupported scalar attribute type: {kind}")
    if isinstance(value, np.generic):
        return f"{_scalar_literal(value)} : {mlir_element_type(value.dtype)}"
    if isinstance(value, np.ndarray):
        if value.dtype.names == ("float0",):  # (JAX's float0 arrays: booleans, all false)
            value = np.zeros(value.shape, np.bool_)
        return dense_attr(value)
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{attribute_key(k)} = {attribute_text(v, other)}" for k, v in sorted(value.items()))
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(attribute_text(v, other) for v in value) + "]"
    text = None if other is None else other(value)
    if text is None:
        raise TypeError(f"No attribute handler defined for type: {type(value)}")  # (JAX's words)
    return text


# --------------------------------------------------------------------------------------------
# Avals: interned (shape, dtype, weak_type)
# --------------------------------------------------------------------------------------------


class Aval:
    """Shape/dtype/weak_type triple that jaxlib's put and result handlers read.

    Create them with ``aval(...)``, which interns them: equal avals are the same object, which
    makes the per-call input check an identity comparison.
    """

    __slots__ = ("__weakref__", "dtype", "ndim", "shape", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = weak_type
        self.ndim = len(shape)

    def __eq__(self, other):
        return (
            self is other
            or isinstance(other, Aval)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        s = f"{self.dtype.name}[{','.join(map(str, self.shape))}]"
        return s + "{weak}" if self.weak_type else s

    def __reduce__(self):  # pickling re-interns
        return (aval, (self.shape, self.dtype, self.weak_type))


_avals: dict = {}


def aval(shape, dtype, weak_type: bool = False) -> Aval:
    """The interned ``Aval`` for a shape and dtype.

    Example:
        >>> a = aval((2, 3), np.float32); a, a is aval([2, 3], "float32")
        (float32[2,3], True)
    """
    key = (shape, dtype, weak_type)
    try:
        return _avals[key]
    except (KeyError, TypeError):  # TypeError: unhashable shape such as a list
        pass
    shape = tuple(int(d) for d in shape)
    dtype = np.dtype(dtype)
    weak_type = bool(weak_type)
    canonical = (shape, dtype, weak_type)
    a = _avals.get(canonical)
    if a is None:
        if dtype not in _DTYPE_TO_MLIR:
            raise TypeError(f"dtype {dtype} is not supported by the XLA bridge")
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        a = _avals[canonical] = Aval(shape, dtype, weak_type)
    try:
        _avals[key] = a  # also remember the spelling the caller used
    except TypeError:
        pass
    return a


# --------------------------------------------------------------------------------------------
# Reading @main's signature back from module text
# --------------------------------------------------------------------------------------------

_MAIN_RE = re.compile(r"func\.func\s+(?:public\s+)?@main\s*\(")
_TENSOR_RE = re.compile(r"tensor<[^<>]*(?:<[^<>]*>[^<>]*)*>")
_ARG_RE = re.compile(r"%[\w$.-]+\s*:")


def _skip_group(text: str, i: int, open_: str, close: str) -> int:
    """Index just after the bracket group starting at text[i], skipping string literals."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced brackets")


def _strip_attr_dicts(s: str) -> str:
    out, i = [], 0
    while True:
        j = s.find("{", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:j])
        i = _skip_group(s, j, "{", "}")


def main_signature(text: str):
    """(argument types, result types) of ``@main`` in MLIR text, or None if not understood.

    A cheap scan (no MLIR parse), used to check a module against the avals it is compiled
    with. Attribute dictionaries are skipped; non-tensor arguments give None.

    Example:
        >>> main_signature("func.func public @main(%a: tensor<3xf32> {jax.buffer_donor = true})"
        ...                " -> (tensor<i1>, tensor<2xbf16>) {")
        (['tensor<3xf32>'], ['tensor<i1>', 'tensor<2xbf16>'])
    """
    m = _MAIN_RE.search(text)
    if m is None:
        return None
    try:
        start = m.end() - 1
        end = _skip_group(text, start, "(", ")")
        args = _strip_attr_dicts(text[start + 1 : end - 1])
        arg_types = _TENSOR_RE.findall(args)
        if len(arg_types) != len(_ARG_RE.findall(args)):
            return None  # a non-tensor argument (e.g. a token): don't second-guess it
        rest = text[end:].lstrip()
        if not rest.startswith("->"):
            return arg_types, []
        rest = rest[2:].lstrip()
        if rest.startswith("("):
            res = _strip_attr_dicts(rest[1 : _skip_group(rest, 0, "(", ")") - 1])
            res_types = _TENSOR_RE.findall(res)
            if len([r for r in res.split(",") if r.strip()]) != len(res_types):
                return None
        else:
            first = _TENSOR_RE.match(rest)
            if first is None:
                return None
            res_types = [first.group(0)]
        return arg_types, res_types
    except ValueError:
        return None
