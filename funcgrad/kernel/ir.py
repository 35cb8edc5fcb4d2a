"""The IR: abstract values, Var/Literal/JaxprEqn/Jaxpr/ClosedJaxpr, the type checker and the printer.

Layer: kernel (bottom). Imports only numpy, ``funcgrad.kernel.dtypes`` and ``funcgrad.kernel.pretty``
(the printer's layout).

A jaxpr is a typed SSA program of primitive equations. Primitives themselves (with their rules and
``bind``) live in ``core``, beside the traces that ``bind`` dispatches to; the IR only refers to
them as values, so this module imports nothing of the trace machinery.

The printer gives stable, deterministic text that reads like JAX's::

    { lambda ; a:f64[3]. let
        b:f64[3] = sin a
        c:f64[] = reduce_sum[axes=(0,)] b
      in (c,) }

Names are given in order of first appearance (a, b, ..., z, ba, bb, ...) and continue into inner
jaxprs of higher-order equations, which print indented inside their parameter list.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel import pretty
from funcgrad.kernel.hooks import hooks

# ----------------------------------------------------------------------------------------------
# Abstract values


class MemorySpace(enum.Enum):
    """The memories a value can live in (JAX's ``jax.memory.Space``, printed ``MemorySpace.Host``):
    a device's own memory, the host memory it addresses (the ``"pinned_host"`` memory kind of a
    sharding), or either (a kernel operand that may be anywhere). NOTE: [memory space in types]."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self):
        return f"MemorySpace.{self.name}"

    # (an Enum hashes its name; JAX's hashes the object, so a space and its name never collide)
    __hash__ = object.__hash__


MemorySpace.__qualname__ = "MemorySpace"
_DEVICE = MemorySpace.Device


def memory_space_of_kind(kind) -> MemorySpace:
    """The memory space of a sharding's memory kind (JAX's ``mem_kind_to_space``: only
    ``"pinned_host"`` is ``Host``).

    >>> memory_space_of_kind("pinned_host"), memory_space_of_kind(None)
    (MemorySpace.Host, MemorySpace.Device)
    """
    return MemorySpace.Host if kind == "pinned_host" else _DEVICE


class _LowLevelType:
    """JAX's high-level-type protocol (jax.experimental.hijax) as the kernel's own types have it:
    each is its own one low-level type, and its values are their own low-level values (flax's
    hijax Variables lower and raise their leaves through these)."""

    __slots__ = ()
    is_high = False

    def lo_ty(self) -> list:
        return [self]

    def lower_val(self, val) -> list:
        return [val]

    def raise_val(self, val):
        return val

    def at_least_vspace(self):
        """JAX's older name of ``to_tangent_aval`` (kept by JAX 0.10; kfac-jax's tracer calls it)."""
        return self.to_tangent_aval()


class ManualAxisType:
    """How a value varies over the manual axes of a ``shard_map`` body (JAX's record):
    ``varying``, ``unreduced`` and ``reduced`` sets of axis names.

    Every abstract value has one (``typeof(x).mat``, JAX's short name): empty outside a
    ``shard_map`` body.

    >>> ManualAxisType(varying={"x"}).varying
    frozenset({'x'})
    >>> ShapedArray((3,), np.float32).mat.varying
    frozenset()
    """

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        self.varying, self.unreduced, self.reduced = (
            frozenset(varying),
            frozenset(unreduced),
            frozenset(reduced),
        )
        for a, b, an, bn in (
            (self.varying, self.unreduced, "varying", "unreduced"),
            (self.varying, self.reduced, "varying", "reduced"),
        ):
            if a & b:
                raise ValueError(f"{an} and {bn} cannot have common mesh axes. Got {an}={a} and {bn}={b}")

    def __eq__(self, other):
        return isinstance(other, ManualAxisType) and (self.varying, self.unreduced, self.reduced) == (
            other.varying,
            other.unreduced,
            other.reduced,
        )

    def __hash__(self):
        return hash((self.varying, self.unreduced, self.reduced))

    def __repr__(self):
        sets = (set(self.varying), set(self.unreduced), set(self.reduced))
        return "ManualAxisType(varying={}, unreduced={}, reduced={})".format(*sets)

    @property
    def empty(self) -> bool:
        return not (self.varying or self.unreduced or self.reduced)

    @property
    def vur(self) -> frozenset:
        return self.varying | self.unreduced | self.reduced

    def invarying(self, mesh) -> frozenset:
        """The manual axes of ``mesh`` this value does not vary along (nor is unreduced or
        reduced over), as JAX's."""
        return frozenset(mesh.manual_axes) - self.vur

    def update(self, **kwargs) -> ManualAxisType:
        fields = dict(varying=self.varying, unreduced=self.unreduced, reduced=self.reduced)
        fields.update(kwargs)
        return ManualAxisType(**fields)


_EMPTY_MAT = ManualAxisType()


class ShapedArray(_LowLevelType):
    """The abstract value of an array: shape, dtype, whether its dtype is weak, its sharding over
    the *explicit* axes of a mesh (``_sharding``; ``None``: none, the Auto mode; ``.sharding``
    shows one always, as JAX's: NOTE: [sharding in types]) and the memory it lives in (NOTE:
    [memory space in types]).

    >>> ShapedArray((3,), np.float32).str_short()
    'f32[3]'
    >>> ShapedArray((3,), np.float32, memory_space=MemorySpace.Host).str_short()
    'f32<host>[3]'
    """

    __slots__ = ("shape", "dtype", "weak_type", "_sharding", "memory_space", "_mat", "_shown")

    def __init__(self, shape, dtype, weak_type: bool = False, sharding=None, memory_space=_DEVICE):
        # Fast path: shapes from NumPy are already tuples of ints (this is on the eager hot path).
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        if not isinstance(dtype, np.dtype):
            aval_type = getattr(dtype, "aval_type", None)
            if aval_type is not None:
                # An extended dtype (a typed key's key<fry>) has an aval class of its own, with
                # these slots: ShapedArray(shape, key_dtype) is one of those, as in JAX.
                self.__class__ = aval_type
            elif not _ext.is_extended(dtype):  # (a library's extended dtype stays: NOTE: [extended dtypes])
                dtype = np.dtype(dtype)
        self.dtype = dtype
        self.weak_type = weak_type
        shown = None
        if sharding is not None:
            spec = getattr(sharding, "spec", None)
            if len(self.shape) > len(spec or ()) and hasattr(spec, "update"):
                # As JAX's aval: a spec shorter than the shape is completed with None (replicated)
                # entries, so ShapedArray((8, 2), ..., sharding=P('x')) is typed P('x', None).
                sharding = sharding.update(
                    spec=spec.update(partitions=(*spec, *(None,) * (len(self.shape) - len(spec))))
                )
            if (
                getattr(getattr(sharding, "mesh", None), "explicit_axes", None) == ()
                and not getattr(spec, "unreduced", None)
                and not getattr(spec, "reduced", None)
            ):
                # Over a mesh with no explicit axis a sharding types nothing: the value is
                # untyped, and shows that sharding (NOTE: [sharding in types]).
                shown, sharding = sharding, None
        self._sharding = sharding
        self._shown = shown
        self.memory_space = memory_space

    def _get_sharding(self):
        # NOTE: [sharding in types]: what the type shows, always a sharding as JAX's; the library
        # reads ``_sharding``, the sharding on explicit axes or None.
        s = self._sharding
        if s is None:
            s = getattr(self, "_shown", None)
            if s is None and hooks.default_sharding is not None:
                return hooks.default_sharding(self)
        return s

    def _set_sharding(self, s):
        self._sharding = s

    sharding = property(_get_sharding, _set_sharding)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    # JAX's record of how the value varies over a shard_map body's manual axes (NOTE: [varying
    # axes in staged types]): empty outside a checked body being staged (an eager body's blocks
    # have their own, ``_shard_map_eager.ManualAval``). Not part of equality, as before it was.
    manual_axis_type = property(lambda self: getattr(self, "_mat", _EMPTY_MAT))
    mat = property(lambda self: self.manual_axis_type)

    def with_manual_axis_type(self, mat: ManualAxisType) -> ShapedArray:
        """The same type, varying (unreduced, reduced) along the manual axes ``mat`` names."""
        out = ShapedArray(self.shape, self.dtype, self.weak_type, self._sharding, self.memory_space)
        if not mat.empty:
            out._mat = mat
        return out

    def str_short(self, short_dtypes: bool = True, mesh_axis_types: bool = False) -> str:
        """The type as jaxprs print it (``f32[3]``); with ``short_dtypes=False``, with the dtype's
        whole name, as JAX's error messages print a type (``float32[3]``)."""
        name = _dt.short_name(self.dtype) if short_dtypes else _dt.long_name(self.dtype)
        space = "" if self.memory_space is _DEVICE else f"<{self.memory_space.name.lower()}>"
        if self._sharding is None:
            return f"{name}{space}[{','.join(map(str, self.shape))}]"
        dims = ",".join(_sharded_dims(self.shape, self._sharding.spec))
        return f"{name}{space}[{dims}]{_unreduced_suffix(self._sharding)}"

    def update(self, shape=None, dtype=None, weak_type=None, sharding=None, memory_space=None) -> ShapedArray:
        # A new shape drops the sharding (it described the old dimensions); a new dtype or weak
        # type keeps it (NOTE: [sharding in types]). The memory space is kept unless given.
        if sharding is None and (shape is None or tuple(shape) == self.shape):
            sharding = self._sharding if self._sharding is not None else getattr(self, "_shown", None)
        out = ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            sharding,
            self.memory_space if memory_space is None else memory_space,
        )
        mat = getattr(self, "_mat", None)
        if mat is not None:
            out._mat = mat
        return out

    def strip_weak_type(self) -> ShapedArray:
        if not self.weak_type:
            return self
        return ShapedArray(self.shape, self.dtype, False, self._sharding, self.memory_space)

    def to_tangent_aval(self) -> ShapedArray:
        """The aval of a tangent of this value: the same, with ``float0`` for an integer or
        boolean dtype (JAX's method; libraries make their symbolic zeros with it).

        >>> ShapedArray((2,), np.int32).to_tangent_aval().dtype == _dt.float0
        True
        """
        tangent = _dt.tangent_dtype(self.dtype)
        return (
            self
            if tangent == self.dtype
            else ShapedArray(self.shape, tangent, self.weak_type, self._sharding, self.memory_space)
        )

    to_ct_aval = to_tangent_aval  # a cotangent has its tangent's type

    def normalize(self) -> ShapedArray:
        return self.strip_weak_type()

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
            and (self._sharding is other._sharding or self._sharding == other._sharding)
            and self.memory_space is other.memory_space
        )

    def __hash__(self):
        if self._sharding is None:
            if self.memory_space is _DEVICE:
                return hash((self.shape, self.dtype, self.weak_type))
            return hash((self.shape, self.dtype, self.weak_type, self.memory_space))
        return hash((self.shape, self.dtype, self.weak_type, self._sharding, self.memory_space))

    def __repr__(self):
        # As JAX's: the dtype's full name (``ShapedArray(float32[8@x,4])``).
        return f"ShapedArray({str(self).lstrip('~')}{', weak_type=True' if self.weak_type else ''})"

    def __str__(self):
        """JAX's text of a type, as ``print(typeof(x))`` shows it: the dtype's full name, ``~`` for
        a weak type, the sharded dimensions (``float32[8@x,4]``).

        >>> print(ShapedArray((), np.float64, weak_type=True)), print(ShapedArray((2, 3), np.int32))
        ~float64[]
        int32[2,3]
        (None, None)
        """
        dims = (
            map(str, self.shape) if self._sharding is None else _sharded_dims(self.shape, self._sharding.spec)
        )
        suffix = "" if self._sharding is None else _unreduced_suffix(self._sharding)
        space = "" if self.memory_space is _DEVICE else f"<{self.memory_space.name.lower()}>"
        return f"{'~' if self.weak_type else ''}{self.dtype.name}{space}[{','.join(dims)}]{suffix}"


class AbstractToken(_LowLevelType):
    """The abstract value of a token (``lax.create_token``, ``lax.after_all``), JAX's
    ``core.AbstractToken``: one instance, ``abstract_token``, printed ``Tok`` in a jaxpr and
    lowered as ``!stablehlo.token`` (NOTE: [tokens]).

    >>> abstract_token.str_short(), repr(abstract_token), AbstractToken() is abstract_token
    ('Tok', 'AbstractToken()', True)
    """

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    # A token travels between programs as JAX's ``get_token_aval()``, a ``bool[0]`` buffer: these
    # describe that buffer to the runtime (argument checks, result handlers), never an array type.
    shape = (0,)
    dtype = np.dtype(np.bool_)
    ndim = 0  # (no axis a transformation may map or index: vmap's in_axes=0 is JAX's rank error)
    weak_type = False
    sharding = None
    _sharding = None
    memory_space = _DEVICE

    def str_short(self, *_args, **_kwargs) -> str:
        return "Tok"

    def __repr__(self) -> str:
        return "AbstractToken()"

    __str__ = __repr__

    def __reduce__(self):
        return (AbstractToken, ())

    # A token is its own tangent and cotangent type (JAX's), weakly typed never.
    def to_tangent_aval(self) -> AbstractToken:
        return self

    to_ct_aval = to_tangent_aval

    def strip_weak_type(self) -> AbstractToken:
        return self

    def update(self, shape=None, dtype=None, weak_type=None, sharding=None, memory_space=None):
        # (a loop carry's type is the token's own; a token has no axis to stack, as scan's ys)
        if (shape is not None and tuple(shape) != self.shape) or (dtype is not None and dtype != self.dtype):
            raise TypeError(
                "a token (lax.create_token) has no shape or dtype to change: it cannot be stacked "
                "(a scan's ys), batched or converted; carry it instead"
            )
        return self

    def normalize(self) -> AbstractToken:
        return self


abstract_token = AbstractToken()

# NOTE: [tokens]
# A token (JAX's ``core.Token``, ``lax.create_token``/``lax.after_all``) orders side effects in
# XLA: its abstract value is ``abstract_token`` (``AbstractToken``, not a ``ShapedArray``: of the
# catalog's primitives only ``after_all`` and those carrying jaxprs take one, ``traits.takes_tokens``;
# a user's primitive may), printed ``Tok``; the lowering types it
# ``!stablehlo.token`` (``emitter.aval_type``), also as a parameter or result of ``@main``, where
# the runtime passes and returns a ``bool[0]`` buffer in its place, as JAX's
# (``get_token_aval``). A concrete token is a ``values.Token`` around such a buffer; a jitted
# call takes one as an argument and gives one back for each token result
# (``programs.Compiled.token_outs``), and a captured one lowers to a fresh ``create_token``.
# Transformations pass tokens through: ``vmap`` never batches one, a token has no tangent but
# itself (``to_tangent_aval``), as in JAX; loops carry them (``update`` keeps the type), but a
# token is never stacked (a scan's ys) or batched.


# NOTE: [sharding in types]
# On the Explicit axes of a mesh (JAX 0.10's sharding in types), an array's sharding is part of
# its abstract value: ``ShapedArray._sharding`` is a ``funcgrad.sharding.NamedSharding`` over the
# mesh's ``AbstractMesh`` whose spec names only explicit axes (one entry per dimension); ``None``
# everywhere else, so Auto-mode programs are typed, cached and lowered exactly as before. The
# library reads ``_sharding`` (``getattr(aval, "_sharding", None)`` for any aval). What users read,
# ``aval.sharding``, is JAX's answer, never None: the typed sharding, else the one the value was
# made with over a mesh with no explicit axis (kept in ``_shown``, outside equality: an Array over
# an Auto mesh shows that mesh, one committed to a device the empty mesh), else replicated over
# the abstract mesh in scope or the mesh of the arguments of the jit being traced
# (``hooks.default_sharding``). The kernel reads it duck-typed (``.spec``) and never builds one:
# the staging trace asks
# ``hooks.apply_sharding`` for the output shardings of an equation with a sharded operand (the
# primitive's ``sharding_rule``, primitives/_sharding_rules.py), the bridge writes them as
# ``sdy.sharding_constraint``s so XLA's partitioner follows them, and printing shows ``f32[8@x,4]``.
# A changed shape drops the sharding (``update``): only a sharding rule says how it carries over.


def _unreduced_suffix(sharding) -> str:
    """JAX's ``{U:y}`` / ``{U:(x,y)}`` after a type unreduced over mesh axes (in mesh order), and
    ``{R:y}`` for reduced ones (``{U:x, R:y}`` both)."""
    parts = []
    for tag, axes in (
        ("U", getattr(sharding.spec, "unreduced", None)),
        ("R", getattr(sharding.spec, "reduced", None)),
    ):
        if axes:
            names = [n for n in sharding.mesh.axis_names if n in axes]
            parts.append(f"{tag}:{names[0] if len(names) == 1 else '(' + ','.join(names) + ')'}")
    return "{" + ", ".join(parts) + "}" if parts else ""


def _sharded_dims(shape, spec) -> list[str]:
    out = []
    for d, n in enumerate(shape):
        p = spec[d] if d < len(spec) else None
        if p is None or (isinstance(p, tuple) and not p):
            out.append(str(n))
        elif isinstance(p, tuple):
            out.append(f"{n}@({','.join(p)})" if len(p) > 1 else f"{n}@{p[0]}")
        else:
            out.append(f"{n}@{p}")
    return out


# ----------------------------------------------------------------------------------------------
# The IR


class Var:
    """A variable of a jaxpr, known by identity; names are given only when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        # As JAX prints a variable: its identity and its type with the dtype's full name.
        aval = self.aval
        return f"Var(id={id(self)}):{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


class Literal:
    """A scalar constant written inline in a jaxpr (``mul b 2.0:f64[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        # JAX keeps a weakly typed int or complex constant as a ``TypedInt`` / ``TypedComplex``
        # (a float as a ``TypedFloat``, whose ``str`` is the float's) and prints
        # ``Literal(str(val))``: ``Literal(TypedInt(1, dtype=int32))``, ``Literal(1.0)``.
        val, aval = self.val, self.aval
        if getattr(aval, "weak_type", False) and np.shape(val) == ():
            kind = np.dtype(aval.dtype).kind
            if kind in "iu":
                return f"Literal(TypedInt({int(val)}, dtype={aval.dtype.name}))"
            if kind == "c":
                return f"Literal(TypedComplex({complex(val)}, dtype={aval.dtype.name}))"
        return f"Literal({val})"


Atom = Var | Literal


class SourceInfo(NamedTuple):
    """Where the user's code created an equation: file, line and function, the enclosing
    ``named_scope`` names (``"outer/inner"``, empty outside any scope), and the column the call
    starts at (0-based, as JAX prints it: ``file:line:column (function)``; None where unknown),
    and the XLA metadata in force (``set_xla_metadata``: sorted ``(key, value)`` pairs; NOTE:
    [xla metadata])."""

    file: str
    line: int
    function: str
    name_stack: str = ""
    column: int | None = None
    xla_metadata: tuple = ()

    def where(self) -> str:
        """``file:line:column (function)`` (the column where known), as JAX's messages name the
        line a value was made on."""
        at = f"{self.line}" if self.column is None else f"{self.line}:{self.column}"
        return f"{self.file}:{at} ({self.function})"

    def __str__(self):
        where = self.where()
        return f"[{self.name_stack}] {where}" if self.name_stack else where


class EqnContext(NamedTuple):
    """JAX's ``JaxprEqnContext`` as funcgrad has it: the ``xla_metadata`` of an equation (a dict,
    or None when none was set), and ``compute_type`` (None: funcgrad has no ``compute_on``)."""

    xla_metadata: dict | None
    compute_type: str | None = None


class JaxprEqn(NamedTuple):
    primitive: Any  # a core.Primitive (the IR refers to primitives only as values)
    invars: list[Atom]
    params: dict[str, Any]
    outvars: list[Var]
    source_info: SourceInfo | None = None

    # JAX's equations also carry effects; funcgrad's carry none (a primitive's side effects are a
    # trait, NOTE: [primitive traits]), so code written for JAX reads an empty set.
    effects = property(lambda self: frozenset())

    @property
    def ctx(self) -> EqnContext:
        """JAX's equation context: what was in force when the equation was made (its
        ``xla_metadata``, a dict or None; NOTE: [xla metadata])."""
        info = self.source_info
        return EqnContext(dict(info.xla_metadata) if info is not None and info.xla_metadata else None)

    def replace(self, **changes) -> JaxprEqn:
        """A copy with the given fields changed (JAX's ``JaxprEqn.replace``; ``effects`` is
        accepted and dropped, as funcgrad's IR has none; a ``ctx`` sets the equation's XLA
        metadata)."""
        changes.pop("effects", None)
        ctx = changes.pop("ctx", None)
        if ctx is not None:
            info = changes.get("source_info", self.source_info) or SourceInfo("<unknown>", 0, "<unknown>")
            meta = getattr(ctx, "xla_metadata", None)
            changes["source_info"] = info._replace(xla_metadata=tuple(sorted((meta or {}).items())))
        return self._replace(**changes)


class Jaxpr:
    """A typed program: ``{ lambda constvars ; invars. let eqns in (outvars) }``."""

    __slots__ = ("constvars", "invars", "eqns", "outvars", "effects", "__weakref__")

    def __init__(self, constvars, invars, eqns, outvars, effects=frozenset()):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)
        # JAX's effects of the whole program: funcgrad's equations carry none (see JaxprEqn); only
        # make_jaxpr's program of a function touching Refs names them (funcgrad/_effects.py).
        self.effects = frozenset(effects)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])
    # JAX's record of the traced function's names (``DebugInfo``): funcgrad's programs keep none,
    # as a JAX jaxpr built without one (code that reads it checks for None).
    debug_info = None

    def replace(self, **changes) -> Jaxpr:
        """A copy with the given fields changed (JAX's ``Jaxpr.replace``; ``debug_info`` and
        ``is_high`` are accepted and dropped, as funcgrad's programs carry neither)."""
        changes.pop("debug_info", None)
        changes.pop("is_high", None)
        fields = {f: getattr(self, f) for f in ("constvars", "invars", "eqns", "outvars", "effects")}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Jaxpr.replace got unexpected fields {sorted(unknown)}")
        return Jaxpr(**{**fields, **changes})

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(
        self, *, source_info: bool = False, name_stack: bool = False, use_color: bool = False
    ) -> str:
        """The text of this jaxpr; see ``pp_jaxpr`` (``use_color``: JAX's; the text is plain)."""
        return pp_jaxpr(self, source_info=source_info, name_stack=name_stack)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars. ``str()`` prints like JAX."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(jaxpr.constvars) == len(consts), (len(jaxpr.constvars), len(consts))
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    # (the jaxpr's variables, as JAX's ClosedJaxpr shows them)
    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    literals = property(lambda self: self.consts)  # JAX 0.10's name for the constants
    effects = property(lambda self: self.jaxpr.effects)

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(
        self, *, source_info: bool = False, name_stack: bool = False, use_color: bool = False
    ) -> str:
        """The text of this jaxpr; see ``pp_jaxpr`` (``use_color``: JAX's; the text is plain)."""
        return pp_jaxpr(self.jaxpr, source_info=source_info, name_stack=name_stack)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def typecheck_atom(env: set, a: Atom):
    if type(a) is Literal:
        return a.aval
    if a not in env:
        raise TypeError(f"jaxpr typecheck: variable {a} used before it is defined")
    return a.aval


def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
    """Check that every equation's output avals equal its primitive's abstract eval.

    Raises ``TypeError`` naming the equation on the first mismatch; used by the tests on every
    jaxpr a transformation produces.
    """
    env: set = set()
    for v in itertools.chain(jaxpr.constvars, jaxpr.invars):
        if v in env:
            raise TypeError(f"jaxpr typecheck: variable {v} bound twice")
        env.add(v)
    for eqn in jaxpr.eqns:
        in_avals = [typecheck_atom(env, a) for a in eqn.invars]
        out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            raise TypeError(f"jaxpr typecheck: {eqn.primitive} returns {len(outs)} values")
        for v, aval in zip(eqn.outvars, outs):
            if (v.aval.shape, v.aval.dtype) != (aval.shape, aval.dtype):
                raise TypeError(
                    f"jaxpr typecheck: {eqn.primitive} output is {v.aval.str_short()} but its "
                    f"abstract eval gives {aval.str_short()}"
                )
            if v in env:
                raise TypeError(f"jaxpr typecheck: variable {v} bound twice")
            env.add(v)
        inner = eqn.primitive.traits.inner_axis_env
        with inner(eqn.params) if inner is not None else contextlib.nullcontext():
            for sub in jaxprs_in_params(eqn.params):
                typecheck_jaxpr(sub)
    for a in jaxpr.outvars:
        typecheck_atom(env, a)


def jaxprs_in_params(params) -> list[Jaxpr]:
    """Inner jaxprs of a higher-order equation (jit, cond branches, scan body, ...)."""
    out = []
    for v in params.values():
        for item in v if isinstance(v, tuple | list) else (v,):
            if isinstance(item, ClosedJaxpr):
                out.append(item.jaxpr)
            elif isinstance(item, Jaxpr):
                out.append(item)
    return out


# ----------------------------------------------------------------------------------------------
# The printer (funcgrad.kernel.pretty lays jaxprs out as JAX does, NOTE: [printed jaxprs])


def pp_jaxpr(jaxpr: Jaxpr, *, source_info: bool = False, name_stack: bool = False) -> str:
    """The text of ``jaxpr``, as JAX prints it; with ``source_info=True`` each equation's line is
    followed by ``# file:line (function)``, with ``name_stack=True`` by the ``named_scope`` names it
    was staged under (``# [outer/inner]``), in a column after the longest line.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> print(pp_jaxpr(funcgrad.make_jaxpr(fnp.sin)(1.0).jaxpr))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    """
    return pretty.pp_jaxpr_text(jaxpr, source_info=source_info, name_stack=name_stack)


# ----------------------------------------------------------------------------------------------
# Dependency sweeps


def forward_dependents(jaxpr: Jaxpr, seeds, *, per_operand: bool = True) -> tuple[set, list[bool]]:
    """The variables of ``jaxpr`` that depend on any of ``seeds``, and for each equation whether
    it reads one of them: the one forward sweep behind the backward pass (which equations are
    linear), loop-variance analysis and the drawn graph.

    With ``per_operand``, a primitive that ``forwards_operands`` (an identity barrier) makes only
    the outputs of dependent operands dependent; otherwise any dependent input makes every output
    dependent (what transposition needs: such an equation is transposed as a whole).
    """
    dependent = set(seeds)
    reads = []
    for eqn in jaxpr.eqns:
        # Literals are hashable and never among the seeds, so no type test is needed.
        hit = False
        for a in eqn.invars:
            if a in dependent:
                hit = True
                break
        reads.append(hit)
        if not hit:
            continue
        if per_operand and eqn.primitive.traits.forwards_operands:
            dependent.update(o for a, o in zip(eqn.invars, eqn.outvars) if a in dependent)
        else:
            dependent.update(eqn.outvars)
    return dependent, reads


def has_effects(eqn, kept_when_dead: bool = False) -> bool:
    """Whether ``eqn`` does something besides computing its results: its primitive has side
    effects, or a jaxpr it carries (a cond branch, a loop body, a call) holds such an equation,
    as JAX's effects propagate from an inner jaxpr to the equation that carries it (a ``cond``
    whose branch prints is kept with no output read, or none at all). With ``kept_when_dead``,
    a primitive that is ``kept_when_dead`` (NOTE: [primitive traits]) counts as one too: whether
    dead-code elimination keeps ``eqn`` with no result read.

    >>> import funcgrad
    >>> from funcgrad import lax
    >>> f = lambda x: lax.cond(x > 0, lambda: funcgrad.debug.print("x={}", x), lambda: None)
    >>> [has_effects(e) for e in funcgrad.make_jaxpr(f)(1.0).jaxpr.eqns]
    [False, False, True]
    """
    traits = eqn.primitive.traits
    if traits.has_side_effects:
        return True
    kept = traits.kept_when_dead
    if kept_when_dead and kept and (kept is True or kept(eqn.params)):
        return True
    if not traits.jaxpr_params:
        return False
    params = {k: eqn.params[k] for k in traits.jaxpr_params if k in eqn.params}
    return any(has_effects(e, kept_when_dead) for j in jaxprs_in_params(params) for e in j.eqns)


def backward_dependencies(
    eqns, outputs, stop=frozenset(), effects: bool = False, refused: bool = True
) -> tuple[set, list]:
    """The variables ``outputs`` are computed from through ``eqns`` (not looking past variables
    in ``stop``), and the equations that compute them, in order: the one backward sweep behind
    dead-code elimination, checkpoint's recomputation and "which argument does this value come
    from" in error messages. With ``effects=True`` (dead-code elimination) equations of
    primitives with side effects or ``kept_when_dead`` count as needed, and so do their inputs;
    ``refused=False`` (the lowering's elimination, as JAX's) lets the ``kept_when_dead`` go."""
    needed = {v for v in outputs if type(v) is Var and v not in stop}
    used = []
    # (This sweep runs once per eager ``grad`` call: plain loops, no generators.)
    for eqn in reversed(eqns):
        live = effects and has_effects(eqn, refused)
        if not live:
            for v in eqn.outvars:
                if v in needed:
                    live = True
                    break
        if live:
            used.append(eqn)
            for a in eqn.invars:
                if type(a) is Var and a not in stop:
                    needed.add(a)
    used.reverse()
    return needed, used
