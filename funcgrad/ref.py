"""``funcgrad.ref``: mutable array references, JAX's ``jax.ref`` (``new_ref``, ``Ref``, ``freeze``,
``get``/``set``/``swap``/``addupdate``, ``AbstractRef``), functionalised at trace time.

Layer: surface. Imports the kernel (the current trace, the staging trace, pytrees),
funcgrad.numpy (to make arrays of initial values), ``funcgrad._ref_scopes`` (the ref scopes of
jitted functions and loop bodies, where each read or write lifts the Ref: below) and
``funcgrad._ref_errors``. Loading it loads ``funcgrad._control_flow_state`` (through the scopes):
control flow finds the Ref threading there exactly when a Ref can exist.

A ``Ref`` is a mutable box around an array (or a pytree of arrays, such as a typed PRNG key):
``ref[...]`` reads it, ``ref[idx] = x`` writes part of it, ``ref[...] += x`` updates it. Its type
(``typeof(ref)``) is an ``AbstractRef`` around the array's type, fixed at creation: a write must
give the same shape and dtype (a weakly typed value of the same kind is cast, as in JAX).

# NOTE: [refs are functionalised at trace time]
# funcgrad's IR has no effects and no mutable values: a Ref never reaches a jaxpr. Eagerly it is a
# Python box. Under ``jit`` (and ``make_jaxpr``, whose program names JAX's Read/WriteEffects of the
# Refs' inputs) the trace is a *ref scope* (``_ref_scopes.trace_stateful``): a Ref passed in as an
# argument, or closed over and touched while the function is traced, is bound for the trace to a
# new input of the jaxpr (its value at call time), and the value it holds when the function
# returns becomes an extra output that the call writes back into the Ref (``RefPlan``). A closed-
# over Ref is found the first time it is touched (``lift``): the scope adds an input to the jaxpr
# being built there and then (``StagingTrace.new_arg``), so the function is traced once, as in
# JAX. A jitted call whose program reads or writes Refs never takes the native dispatch route,
# whose cache hits cannot run Python (xla_bridge/dispatch.py, ``Staged.stateful``).
# Each Ref records the trace its value belongs to (``_trace``; None for a concrete value). A Ref
# touched under an inner trace is lifted into each ref scope between that trace and its own; a read
# from an inner transformation (grad, vmap, a scan body) is then an ordinary closed-over value. A
# write must give a value of the Ref's own trace: writing a value that grad differentiates or vmap
# batches into a Ref from outside is refused with JAX's error, as is a Ref used after the trace
# that made it ended, or returned from a jitted function. A Ref among ``vmap``'s mapped arguments
# is passed in as the array it holds and rebuilt inside as a Ref of the batching trace, its final
# value written back after the call (``_vmap._with_mapped_refs``), as JAX maps a Ref argument.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._ref_errors import inner_write_message
from funcgrad._ref_scopes import HITYPES, box_type, lift
from funcgrad.kernel import core, source_info
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.partial_eval import PartialEvalTrace, StagingTrace
from funcgrad.numpy import _core
from funcgrad.numpy._dtypes import ExtendedArray

__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "empty_ref",
    "free_ref",
    "freeze",
    "get",
    "new_ref",
    "set",
    "swap",
]
# The names ``funcgrad`` itself exports, as ``jax`` does (``jax.new_ref``, ``jax.Ref``, ...).
_REEXPORTED = ("Ref", "empty_ref", "free_ref", "freeze", "new_ref")


class AbstractRef:
    """The type of a ``Ref``: the type of the array it holds (``inner_aval``), printed as JAX's
    ``Ref{float32[3]}``.

    >>> import funcgrad
    >>> funcgrad.typeof(new_ref(np.zeros(3, np.float32)))
    Ref{float32[3]}
    """

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval, memory_space: Any = None, kind: Any = None):
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    weak_type = property(lambda self: getattr(self.inner_aval, "weak_type", False))
    ndim = property(lambda self: len(self.inner_aval.shape))
    size = property(lambda self: int(np.prod(self.inner_aval.shape, dtype=np.int64)))
    sharding = property(lambda self: self.inner_aval.sharding)
    _sharding = property(lambda self: getattr(self.inner_aval, "_sharding", None))  # (its type's)

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        inner = self.inner_aval.str_short(short_dtypes=short_dtypes)
        space = f"<{self.memory_space}>" if self.memory_space is not None else ""
        return f"Ref{space}{{{inner}}}"

    def update(self, inner_aval=None, memory_space=None, kind=None) -> AbstractRef:
        return AbstractRef(
            self.inner_aval if inner_aval is None else inner_aval,
            self.memory_space if memory_space is None else memory_space,
            self.kind if kind is None else kind,
        )

    def __repr__(self) -> str:
        return self.str_short()

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return (
            type(other) is AbstractRef
            and self.inner_aval == other.inner_aval
            and self.memory_space == other.memory_space
        )

    def __hash__(self) -> int:
        return hash((AbstractRef, self.inner_aval, self.memory_space))


class Ref:
    """A mutable array reference (JAX's ``jax.Ref``); make one with ``new_ref``.

    >>> r = new_ref(np.arange(3.0))
    >>> r[1] = 7.0
    >>> r
    Ref([0., 7., 2.], dtype=float64)
    >>> r[1:]
    Array([7., 2.], dtype=float64)
    """

    __slots__ = ("_value", "_trace", "_aval", "_tree", "_leaf_avals", "_made_at", "__weakref__")
    _fg_state = True  # (state, not an array: NOTE: [Refs through custom_vjp] in the kernel)

    def __init__(self, value, trace, made_at=None, kind=None):
        self._value = value
        self._trace = trace  # NOTE: [refs are functionalised at trace time]
        leaves, self._tree = tu.tree_flatten(value)
        self._leaf_avals = tuple(core.get_aval(x) for x in leaves)
        self._aval = AbstractRef(_type_of(value), kind=kind)
        self._made_at = made_at  # (the user's line, for a Ref made while tracing: JAX's errors name it)

    def _inner(self, value, trace) -> Ref:
        """A Ref of this one's type standing for it inside a traced function (an argument)."""
        inner = object.__new__(Ref)
        inner._value, inner._trace, inner._made_at = value, trace, None
        inner._aval, inner._tree, inner._leaf_avals = self._aval, self._tree, self._leaf_avals
        return inner

    # JAX forwards the type's facts to the Ref.
    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: self._aval.size)
    committed = property(lambda self: True)

    @property
    def sharding(self):
        return _load(self).sharding

    def __getitem__(self, idx):
        return get(self, idx)

    def __setitem__(self, idx, value):
        set(self, idx, value)

    def __len__(self) -> int:
        if not self._aval.shape:
            raise TypeError("len() of unsized object")
        return self._aval.shape[0]

    def addupdate(self, x, idx=()):
        addupdate(self, idx, x)

    # (JAX's methods of a Ref's type, which its traced Refs have: ``ref.get()``, ``ref.set(v)``)
    def get(self, idx=()):
        return get(self, idx)

    def set(self, value, idx=()) -> None:
        set(self, idx, value)

    def swap(self, value, idx=()):
        return swap(self, idx, value)

    @property
    def at(self) -> _RefIndexer:
        """``ref.at[idx]``: a view of part of the Ref, itself read and written as a Ref (JAX's
        ``TransformedRef``).

        >>> r = new_ref(np.zeros(4))
        >>> r.at[1:3][...] += 2.0
        >>> r
        Ref([0., 2., 2., 0.], dtype=float64)
        """
        return _RefIndexer(self)

    def __repr__(self) -> str:
        if self._trace is not None and not self._trace.alive:
            return f"Ref(<dead: made under a finished transformation>, {self._aval})"
        text = repr(self._value)
        return "Ref" + text[len("Array") :] if text.startswith("Array") else f"Ref({text})"

    def unsafe_buffer_pointer(self) -> int:
        """The address of the buffer holding the Ref's value now (a jitted write gives the Ref a
        new buffer in funcgrad: JAX updates it in place)."""
        return _load(self).unsafe_buffer_pointer()

    def __array__(self, dtype=None, copy=None):
        # (as JAX's: a Ref is no operand of array functions, jnp.sin(ref) is a TypeError)
        raise TypeError(
            f"requires ndarray or scalar arguments, got {type(self)}: a Ref is not an array; read it "
            "with ref[...]"
        )

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    # The state methods a Ref shares with a lifted mutable box (NOTE: [state in loop bodies] in
    # funcgrad/_control_flow_state.py): its leaves read at the current trace, bound to values of
    # a body's trace (and restored), its leaves now, written back.
    def _state_read(self) -> list:
        return tu.tree_leaves(_load(self))

    def _state_bind(self, values, trace):
        saved = (self._value, self._trace)
        self._value, self._trace = tu.tree_unflatten(self._tree, list(values)), trace
        return saved

    def _state_restore(self, saved) -> None:
        self._value, self._trace = saved

    def _state_now(self) -> list:
        return tu.tree_leaves(self._value)

    def _state_write(self, values: list) -> None:
        _store(self, tu.tree_unflatten(self._tree, values))

    def _row(self, index) -> RefRow:
        """Row ``index`` of this Ref, as a Ref (a scan body's view of a Ref scanned over)."""
        return RefRow(self, index)


class RefRow:
    """Row ``index`` of a Ref, itself read and written as a Ref (``row[...]``, ``row[1] = x``):
    what a scan body gets for a Ref scanned over (JAX's transformed Ref of a scanned Ref).

    >>> import funcgrad
    >>> r = new_ref(np.zeros((3, 2)))
    >>> def body(c, row):
    ...     row[0] = c
    ...     return c + 1.0, None
    >>> _ = funcgrad.lax.scan(body, 1.0, r)
    >>> r[...][:, 0]
    Array([1., 2., 3.], dtype=float64)
    """

    __slots__ = ("ref", "index")

    def __init__(self, ref: Ref, index):
        self.ref, self.index = ref, index

    shape = property(lambda self: self.ref.shape[1:])
    dtype = property(lambda self: self.ref.dtype)
    ndim = property(lambda self: self.ref.ndim - 1)

    def _at(self, idx) -> tuple:
        if _whole(idx):
            return (self.index,)
        return (self.index, *(idx if type(idx) is tuple else (idx,)))

    def __getitem__(self, idx):
        return get(self.ref, self._at(idx))

    def __setitem__(self, idx, value):
        set(self.ref, self._at(idx), value)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def addupdate(self, x, idx=()):
        addupdate(self.ref, self._at(idx), x)

    def __repr__(self) -> str:
        return f"RefRow({self.ref._aval}, index={self.index!r})"


class _RefIndexer:
    """What ``ref.at`` gives: ``ref.at[idx]`` is a ``RefView``."""

    __slots__ = ("ref",)

    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, idx) -> RefView:
        return RefView(self.ref, idx)


class RefView:
    """Part ``index`` of a Ref (or of another view), read and written as a Ref: ``view[idx]`` is
    ``ref[index][idx]``, a write puts the updated part back at ``index`` (JAX's ``TransformedRef``
    of an indexer; ``ref.at[index]``)."""

    __slots__ = ("ref", "index")

    def __init__(self, ref, index):
        self.ref, self.index = ref, index

    def _part(self):
        return self.ref[self.index]

    shape = property(lambda self: tuple(self._part().shape))
    dtype = property(lambda self: self._part().dtype)
    ndim = property(lambda self: len(self.shape))
    at = property(lambda self: _RefIndexer(self))

    def __getitem__(self, idx):
        part = self._part()
        return part if _whole(idx) else part[idx]

    def __setitem__(self, idx, value) -> None:
        # (writing the whole part reads nothing: no read is staged for it)
        self.ref[self.index] = value if _whole(idx) else self._part().at[idx].set(value)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"RefView({self.ref!r}, index={self.index!r})"


class _HeldHi:
    """An immutable high-level value (``funcgrad.experimental.hijax``) a Ref holds, as its type
    and its low-level values: a pytree node whose leaves are those values and whose unflattening
    keeps it so, so that the Ref's state (read, bound, written back by ``jit`` and loops) is those
    leaves; a read raises the value (``raise_val``), as JAX's Ref of a high-level type gives one.

    >>> _HeldHi(core.get_aval(1.0), [1.0]).lo
    [1.0]
    """

    __slots__ = ("aval", "lo")

    def __init__(self, aval, lo):
        self.aval, self.lo = aval, list(lo)

    def raised(self):
        return self.aval.raise_val(*self.lo)

    def __repr__(self) -> str:
        return repr(self.raised())


tu.register_pytree_node(_HeldHi, lambda h: (h.lo, h.aval), lambda aval, lo: _HeldHi(aval, lo))


def _held_hi(x):
    """``x`` as a Ref holds it when it is an immutable high-level value, else None."""
    if not HITYPES or type(x) not in HITYPES or box_type(x) is not None:
        return None
    aval = HITYPES[type(x)](x)
    return _HeldHi(aval, aval.lower_val(x))


def _type_of(value):
    """The type of a Ref's contents: a typed key's key type, a high-level value's type, else the
    array's aval."""
    if type(value) is _HeldHi:
        return value.aval
    if isinstance(value, ExtendedArray):
        return value.aval
    return core.get_aval(value)


# ----------------------------------------------------------------------------------------------
# Creating, reading and writing


def new_ref(init_val, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A mutable array reference holding (a copy of) ``init_val``.

    >>> r = new_ref(1.0)
    >>> r[...] += 2.0
    >>> r[...]
    Array(3., dtype=float64, weak_type=True)
    """
    if memory_space is not None:
        raise NotImplementedError("new_ref(memory_space=...): funcgrad has one memory space per device")
    if isinstance(init_val, Ref):
        raise ValueError("new_ref: cannot store a Ref in a Ref; read it with ref[...] first")
    held = _held_hi(init_val)  # (an immutable high-level value: hijax_test test_ref_to_tuple)
    if held is not None:
        value = held
    elif isinstance(init_val, ExtendedArray):
        value = init_val
    elif isinstance(init_val, np.ndarray):
        value = fnp.array(init_val)  # a copy: the caller may mutate their NumPy array
    else:
        value = fnp.asarray(init_val)
    trace = core.current_trace()
    if type(trace) is core.EvalTrace and not isinstance(value, core.Tracer):
        return Ref(value, None, kind=kind)
    if getattr(trace, "eager_shard_map", False):  # (JAX's eager shard_map rule of ref_p)
        raise ValueError(
            "Eager shard_map cannot return a `jax.Ref`. Please wrap your shard_map in `jax.jit`."
        )
    return Ref(value, trace, source_info.user_source_info(), kind)


def abstract_ref(x):
    """``x``, or for a ``ShapeDtypeStruct(..., is_ref=True)`` a Ref of its type that holds no value:
    what it stands for where a function is traced without running (``jit(f).trace``/``lower``,
    ``eval_shape``, ``make_jaxpr``), as JAX's ``AbstractRef`` argument.

    >>> import funcgrad
    >>> abstract_ref(funcgrad.ShapeDtypeStruct((3,), np.float32, is_ref=True)).aval
    Ref{float32[3]}
    """
    if not getattr(x, "is_ref", False) or isinstance(x, Ref):
        return x
    aval = x.aval
    ref = object.__new__(Ref)
    ref._value, ref._trace, ref._made_at = None, None, None
    ref._aval, ref._tree, ref._leaf_avals = AbstractRef(aval), tu.tree_structure(0), (aval,)
    return ref


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A Ref of type ``ty`` (a ``ShapeDtypeStruct`` or an aval), holding zeros.

    >>> import funcgrad
    >>> empty_ref(funcgrad.ShapeDtypeStruct((2,), np.float32))[...].shape
    (2,)
    """
    if getattr(ty, "is_high", False):  # (a high-level type: zeros of its low-level types, raised)
        return new_ref(
            ty.raise_val(*[fnp.zeros(t.shape, t.dtype) for t in ty.lo_ty()]), memory_space=memory_space
        )
    return new_ref(fnp.zeros(ty.shape, ty.dtype), memory_space=memory_space)


# The Refs made while tracing that ``free_ref`` freed (a use after, or a second free, is an error).
_FREED: weakref.WeakSet = weakref.WeakSet()


def free_ref(ref: Ref) -> tuple:
    """Invalidate ``ref``: a Ref made inside a traced function cannot be used after it (an eager
    Ref's free is a no-op, as in JAX).

    >>> free_ref(new_ref(1.0))
    ()
    """
    _check_ref(ref, "free_ref")
    if ref._trace is not None and type(ref._trace) is not core.EvalTrace:
        _FREED.add(ref)
    return ()


def freeze(ref: Ref):
    """The value ``ref`` holds, as an array (JAX's ``jax.ref.freeze``).

    >>> r = new_ref(np.arange(3))
    >>> r[0] = 5
    >>> freeze(r)
    Array([5, 1, 2], dtype=int64)
    """
    _check_ref(ref, "freeze")
    value = _load(ref)
    return value.raised() if type(value) is _HeldHi else value


def get(ref: Ref, idx=None):
    """``ref[idx]``: the indexed elements of what ``ref`` holds.

    >>> get(new_ref(np.arange(5)), slice(1, 3))
    Array([1, 2], dtype=int64)
    """
    _check_ref(ref, "get")
    value = _load(ref)
    if type(value) is _HeldHi:
        return _whole_hi(ref, idx, "get") and value.raised()
    return value if _whole(idx) else value[idx]


def _whole_hi(ref: Ref, idx, what: str) -> bool:
    """A Ref holding a high-level value is read and written whole (``[...]``, or slices covering
    each dimension of a type with a ``shape``, as JAX's test types accept)."""
    if not (_whole(idx) or _covers(idx, getattr(ref._aval.inner_aval, "shape", None))):
        raise NotImplementedError(
            f"`{what}` of part of a Ref of type {ref._aval.inner_aval}: index it whole ([...])"
        )
    return True


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``idx`` and return what was there.

    >>> r = new_ref(np.arange(5))
    >>> swap(r, 3, 10), r[...]
    (Array(3, dtype=int64), Array([ 0,  1,  2, 10,  4], dtype=int64))
    """
    _check_ref(ref, "swap")
    old = _load(ref)
    if type(old) is _HeldHi:
        _whole_hi(ref, idx, "swap")
        held = _held_hi(value)
        if held is None or held.aval != old.aval:
            got = HITYPES[type(value)](value) if type(value) in HITYPES else core.get_aval(value)
            raise ValueError(f"Invalid type for `swap`. Ref type: {old.aval}. Value type: {got}.")
        _store(ref, held)
        return old.raised()
    whole = _whole(idx)
    previous = old if whole else old[idx]
    value = _checked_value(ref, previous, value, "swap")
    _store(ref, value if whole else old.at[idx].set(value))
    return previous


def set(ref: Ref, idx, value) -> None:  # noqa: A001 (JAX's name: jax.ref.set)
    """``ref[idx] = value``.

    >>> r = new_ref(np.zeros(3))
    >>> set(r, 1, 10.0); r
    Ref([ 0., 10.,  0.], dtype=float64)
    """
    swap(ref, idx, value)


def addupdate(ref: Ref, idx, value) -> None:
    """``ref[idx] += value``.

    >>> r = new_ref(np.ones(2)); addupdate(r, ..., 2.0); r
    Ref([3., 3.], dtype=float64)
    """
    _check_ref(ref, "addupdate")
    swap(ref, idx, get(ref, idx) + value)


def _check_ref(ref, what: str) -> None:
    if not isinstance(ref, Ref):
        raise ValueError(f"Can only call `{what}` on a `Ref`: {ref!r}.")
    if _FREED and ref in _FREED:  # (JAX's words: a freed Ref's type is printed ~float32[])
        inner = f"{ref.dtype}[{','.join(map(str, ref.shape))}]"
        raise ValueError(f"`{what}` must be called on `Ref` types: ~{inner}.")


def _whole(idx) -> bool:
    return idx is None or idx is Ellipsis or (type(idx) is tuple and (idx == () or idx == (Ellipsis,)))


def _covers(idx, shape) -> bool:
    """Whether the basic index ``idx`` takes every element of an array of ``shape``."""
    idx = idx if type(idx) is tuple else (idx,)
    if shape is None or len(idx) != len(shape) or not all(type(i) is slice for i in idx):
        return False
    return all(i.indices(n) == (0, n, 1) for i, n in zip(idx, shape))


def _checked_value(ref: Ref, target, value, what: str):
    """``value`` as what may be stored where ``target`` is: JAX's implicit cast of a weakly typed
    value of the same kind (float into float, int into int), then equal shape and dtype."""
    if isinstance(value, Ref):
        raise ValueError("Cannot store a Ref into another Ref. Did you forget to load from it using `[...]`?")
    if isinstance(target, ExtendedArray):
        if not isinstance(value, ExtendedArray) or value.dtype != target.dtype or value.shape != target.shape:
            raise ValueError(f"Invalid value for `{what}`: the Ref holds {target.dtype}{list(target.shape)}")
        return value
    value = fnp.asarray(value)
    want = np.dtype(target.dtype)
    if value.dtype != want and getattr(core.get_aval(value), "weak_type", False):
        same_kind = (fnp.issubdtype(want, np.floating) and fnp.issubdtype(value.dtype, np.floating)) or (
            fnp.issubdtype(want, np.integer) and fnp.issubdtype(value.dtype, np.integer)
        )
        if same_kind:
            value = value.astype(want)
    if (
        value.dtype == want
        and getattr(core.get_aval(value), "weak_type", False)
        and not getattr(core.get_aval(target), "weak_type", False)
    ):
        # (a weak value into a strong Ref stays strong; a strong one into a weak Ref makes it
        # strong, as JAX's ref.set docstring and its array_refs guide's scan print them)
        value = _core.convert(value, want, weak_type=False)
    if tuple(value.shape) != tuple(target.shape):
        raise ValueError(
            f"Invalid shape for `{what}`. Ref shape: {ref.shape}. Expected shape: {tuple(target.shape)}. "
            f"Value shape: {tuple(value.shape)}."
        )
    if value.dtype != want:
        raise ValueError(f"Invalid dtype for `{what}`. Ref dtype: {want}. Value dtype: {value.dtype}.")
    return value


def _load(ref: Ref):
    lift(ref)
    return ref._value


def _store(ref: Ref, value) -> None:
    lift(ref)
    home = ref._trace
    if ref._aval.kind is not None and "no_grad" in str(ref._aval.kind):
        # (JAX's kind='no_grad_no_remat' Ref: it holds primal values, no derivative flows through it)
        value = tu.tree_map(lambda leaf: _primal_at(leaf, home), value)
    for leaf in tu.tree_leaves(value):
        if isinstance(leaf, core.Tracer) and leaf._trace is not home:
            owner = leaf._trace
            if home is None or home.is_ancestor_of(owner):
                raise ValueError(inner_write_message(owner, ref))
    staged = _staged_below(core.current_trace(), home)
    if staged is not None:
        # A write of a value known at trace time (a constant) inside a staged function that is no
        # ref scope would happen once, while tracing, not when the function runs.
        raise ValueError(inner_write_message(staged, ref))
    ref._value = value


def _primal_at(x, home):
    """``x`` without the differentiation traces between its own and ``home``: a JVP tracer's
    primal, eager grad's recorded value (``RecordingTrace.concrete``)."""
    while isinstance(x, core.Tracer) and x._trace is not home:
        if isinstance(x, core.PrimalTracer):
            x = x.primal
        elif hasattr(x._trace, "concrete") and getattr(x, "_var", None) is not None:
            x = x._trace.concrete(x._var)
        else:
            break
    return x


def _staged_below(current, home):
    """The first staging trace from ``current`` up to (not including) ``home``, else None: a Ref of
    ``home`` written there would not be written back (``lift`` left it unbound there)."""
    t = current
    while t is not None and t is not home:
        # (a partial evaluation -- linearize's, grad's -- computes its known values now: a known
        # value written there is written when the function runs, as remat's no-grad Refs are)
        if isinstance(t, StagingTrace) and type(t) is not PartialEvalTrace:
            return t
        t = t.parent
    return None
