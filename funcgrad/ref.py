"""``funcgrad.ref``: mutable array references, JAX's ``jax.ref`` (``new_ref``, ``Ref``, ``freeze``,
``get``/``set``/``swap``/``addupdate``, ``AbstractRef``), functionalised at trace time.

Layer: surface. Imports the kernel (the current trace, the staging trace, pytrees) and
funcgrad.numpy (to make arrays of initial values). ``funcgrad.jitting`` imports this module: a
jitted function's trace is a ref scope (below).

A ``Ref`` is a mutable box around an array (or a pytree of arrays, such as a typed PRNG key):
``ref[...]`` reads it, ``ref[idx] = x`` writes part of it, ``ref[...] += x`` updates it. Its type
(``typeof(ref)``) is an ``AbstractRef`` around the array's type, fixed at creation: a write must
give the same shape and dtype (a weakly typed value of the same kind is cast, as in JAX).

# NOTE: [refs are functionalised at trace time]
# funcgrad's IR has no effects and no mutable values: a Ref never reaches a jaxpr. Eagerly it is a
# Python box. Under ``jit`` the trace is a *ref scope* (``trace_stateful``): a Ref passed in as an
# argument, or closed over and touched while the function is traced, is bound for the trace to a
# new input of the jaxpr (its value at call time), and the value it holds when the function
# returns becomes an extra output that the call writes back into the Ref (``RefPlan``). A closed-
# over Ref is found the first time it is touched (``_lift``): the scope adds an input to the jaxpr
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

import dataclasses
import weakref
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._api_util import fun_sourceinfo, signature_arg_names
from funcgrad.kernel import core, source_info
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr
from funcgrad.kernel.partial_eval import StagingTrace
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

    @property
    def at(self):
        raise NotImplementedError("Ref.at: index the Ref itself (ref[idx], ref[idx] = x), as in JAX")

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


def _type_of(value):
    """The type of a Ref's contents: a typed key's key type, else the array's aval."""
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
    if isinstance(init_val, ExtendedArray):
        value = init_val
    elif isinstance(init_val, np.ndarray):
        value = fnp.array(init_val)  # a copy: the caller may mutate their NumPy array
    else:
        value = fnp.asarray(init_val)
    trace = core.current_trace()
    if type(trace) is core.EvalTrace and not isinstance(value, core.Tracer):
        return Ref(value, None, kind=kind)
    return Ref(value, trace, source_info.user_source_info(), kind)


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A Ref of type ``ty`` (a ``ShapeDtypeStruct`` or an aval), holding zeros.

    >>> import funcgrad
    >>> empty_ref(funcgrad.ShapeDtypeStruct((2,), np.float32))[...].shape
    (2,)
    """
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
    return _load(ref)


def get(ref: Ref, idx=None):
    """``ref[idx]``: the indexed elements of what ``ref`` holds.

    >>> get(new_ref(np.arange(5)), slice(1, 3))
    Array([1, 2], dtype=int64)
    """
    _check_ref(ref, "get")
    value = _load(ref)
    return value if _whole(idx) else value[idx]


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``idx`` and return what was there.

    >>> r = new_ref(np.arange(5))
    >>> swap(r, 3, 10), r[...]
    (Array(3, dtype=int64), Array([ 0,  1,  2, 10,  4], dtype=int64))
    """
    _check_ref(ref, "swap")
    old = _load(ref)
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
    _lift(ref)
    return ref._value


def _store(ref: Ref, value) -> None:
    _lift(ref)
    home = ref._trace
    if ref._aval.kind is not None and "no_grad" in str(ref._aval.kind):
        # (JAX's kind='no_grad_no_remat' Ref: it holds primal values, no derivative flows through it)
        value = tu.tree_map(lambda leaf: _primal_at(leaf, home), value)
    for leaf in tu.tree_leaves(value):
        if isinstance(leaf, core.Tracer) and leaf._trace is not home:
            owner = leaf._trace
            if home is None or home.is_ancestor_of(owner):
                raise ValueError(_inner_write_message(owner, ref))
    staged = _staged_below(core.current_trace(), home)
    if staged is not None:
        # A write of a value known at trace time (a constant) inside a staged function that is no
        # ref scope would happen once, while tracing, not when the function runs.
        raise ValueError(_inner_write_message(staged, ref))
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
    ``home`` written there would not be written back (``_lift`` left it unbound there)."""
    t = current
    while t is not None and t is not home:
        if isinstance(t, StagingTrace):
            return t
        t = t.parent
    return None


def _inner_write_message(owner, ref: Ref) -> str:
    kind = type(owner).__name__.lower()
    if "batch" in kind:
        what, where = "vmapped value on an unbatched", "an argument to the vmapped function"
    elif "jvp" in kind or "linear" in kind or "record" in kind or "grad" in kind:
        what, where = (
            "differentiated value on a non-differentiated",
            "an argument of the differentiated function",
        )
    elif "staging" in kind:
        return (
            f"A Ref of type {ref._aval} from outside was written inside a staged function that is not "
            "jit's -- make_jaxpr, a custom_jvp/vjp or checkpointed function: funcgrad functionalises "
            "Refs under jit, eval_shape and in control flow (loops, cond) only. Return the value and "
            "write the Ref outside, or jit the function."
        )
    else:
        what, where = (
            f"value traced by an inner transformation ({type(owner).__name__}) on an outer",
            "an argument of that function, or pass the value out as a result",
        )
    return (
        f"performing a set/swap operation with {what} array reference of type {ref._aval}. "
        f"Move the array reference to be {where}?"
    )


# ----------------------------------------------------------------------------------------------
# Ref scopes: the traces of jitted functions


# ----------------------------------------------------------------------------------------------
# Mutable high-level values (jax.experimental.hijax's MutableHiType, e.g. flax's hijax Variables)

# NOTE: [mutable high-level values]
# A class registered with ``register_hitype`` whose type (``to_aval(x)``) has quasi-dynamic data
# (``has_qdd``: its structure is state, ``x.cur_qdd()``) is a mutable box like a Ref, and a jitted
# function treats an argument of that class as it treats a Ref: its low-level values
# (``aval.read_loval(qdd, x)``) are inputs, the function gets a box made from the traced ones
# (``aval.new_from_loval``), and the box's final state -- its structure may have changed -- is
# extra outputs written back with ``aval.update_from_loval``. The box's operations (JAX's
# ``HiPrimitive``s) run their ``to_lojax`` on it while tracing, their ``impl`` eagerly
# (funcgrad/experimental/hijax.py). A box closed over and touched (a ``HiPrimitive`` bound on it
# while tracing: ``lift_box``) is lifted into the ref scopes between there and the trace its values
# belong to, as a closed-over Ref is: its low-level values are new inputs, its final ones extra
# outputs written back (``RefPlan.lifted``). Under grad/vmap a box is not supported; in a scan body
# see NOTE: [state in loop bodies].
HITYPES: dict[type, Any] = {}


def box_type(x):
    """``(aval, qdd)`` of a mutable high-level value ``x``, else None."""
    to_aval = HITYPES.get(type(x))
    if to_aval is None:
        return None
    aval = to_aval(x)
    if not getattr(aval, "has_qdd", False):
        return None
    return aval, x.cur_qdd()


def is_stateful_arg(x) -> bool:
    """Whether a jit argument is state the call reads and writes back: a Ref or a mutable box."""
    return type(x) is Ref or (type(x) in HITYPES and box_type(x) is not None)


def stateful_key(x, first: int):
    if type(x) is Ref:
        return ("ref", x._aval, x._leaf_avals, first)
    aval, qdd = box_type(x)
    return ("box", type(x), aval, qdd, first)


def _lo_aval(a):
    # A box's low-level type as a jaxpr input: shape, dtype, weak type (typeof's default sharding
    # is no part of it).
    return core.ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))


@dataclasses.dataclass
class RefPlan:
    """What a jitted program does with Refs (NOTE: [refs are functionalised at trace time]).

    ``arg_positions``: the flat argument positions holding a Ref, and ``aliases``: for each, the
    position of the first argument that is the same Ref (the jaxpr reads each Ref once);
    ``lifted``: the Refs (and mutable boxes, as ``_LiftedBox``) the function closes over and
    touched, read after the arguments;
    ``written``: indices into (distinct argument Refs, then lifted) of the Refs whose final value
    is an extra output of the program, in that order."""

    arg_positions: tuple[int, ...]
    aliases: tuple[int, ...]
    lifted: tuple[Ref, ...]
    written: tuple[int, ...]
    # (position, aval, qdd on input, qdd on output, number of low-level outputs) per box argument
    boxes: tuple = ()

    def inputs(self, flat: list) -> list:
        """The program's flat inputs for this call: each Ref replaced by its leaves, each box by its
        low-level values, read now."""
        out, first = [], dict(zip(self.arg_positions, self.aliases))
        boxes = {b[0]: b for b in self.boxes}
        for i, x in enumerate(flat):
            if i in boxes:
                _, aval, qdd, _, _ = boxes[i]
                out.extend(aval.read_loval(qdd, x))
            elif i not in first:
                out.append(x)
            elif first[i] == i:
                out.extend(tu.tree_leaves(_load(x)))
        for ref in self.lifted:
            if type(ref) is _LiftedBox:
                out.extend(ref.read())
            else:
                out.extend(tu.tree_leaves(_load(ref)))
        return out

    def targets(self, flat: list) -> list[Ref]:
        distinct = [flat[i] for i, a in zip(self.arg_positions, self.aliases) if a == i]
        every = [*distinct, *(r for r in self.lifted if type(r) is not _LiftedBox)]
        return [every[k] for k in self.written]

    def write_back(self, flat: list, finals: list) -> None:
        it = iter(finals)
        for ref in self.targets(flat):
            leaves = [next(it) for _ in ref._leaf_avals]
            _store(ref, tu.tree_unflatten(ref._tree, leaves))
        for position, aval, _, qdd_out, n in self.boxes:
            aval.update_from_loval(qdd_out, flat[position], *[next(it) for _ in range(n)])
        for lifted in self.lifted:
            if type(lifted) is _LiftedBox:
                _write_box(lifted.aval, lifted.qdd_out, lifted.box, *[next(it) for _ in range(lifted.n_out)])


class _Scope:
    """The refs bound to one staging trace: (ref, the state it had before) in binding order."""

    def __init__(self, trace, fun=None, traced_for: str = "jit"):
        self.trace = trace
        self.fun, self.traced_for = fun, traced_for
        self.arguments: dict[int, str] = {}  # id of each Ref passed in -> its argument's name
        self.bound: list[tuple[Ref, Any, Any]] = []
        self.starts: list[list] = []  # the inputs each bound Ref started from
        self.lifted_args: list = []
        self.lifted: list = []  # Refs and _LiftedBoxes, in the order their inputs were added
        self.boxes: list = []  # (_LiftedBox, its low-level values before) per lifted box

    def bind(self, ref: Ref, leaves) -> None:
        self.bound.append((ref, ref._value, ref._trace))
        self.starts.append(list(leaves))
        ref._value = tu.tree_unflatten(ref._tree, list(leaves))
        ref._trace = self.trace

    def lift(self, ref: Ref) -> None:
        name = self.arguments.get(id(ref))
        if name is not None:  # (JAX's check, on by default: jax_mutable_array_checks)
            raise ValueError(
                f"when tracing {fun_sourceinfo(self.fun)} for {self.traced_for}, a mutable array "
                f"reference of type {ref._aval} was both closed over and passed as the argument {name}"
            )
        args = [self.trace.new_arg(a) for a in ref._leaf_avals]
        self.lifted_args.extend(args)
        self.lifted.append(ref)
        self.bind(ref, args)

    def lift_box(self, box, aval, qdd) -> None:
        """Bind a closed-over mutable box to new inputs (NOTE: [mutable high-level values])."""
        lifted = _LiftedBox(box, aval, qdd)
        start = lifted.read()
        args = [self.trace.new_arg(_lo_aval(a)) for a in aval.lo_ty_qdd(qdd)]
        self.lifted_args.extend(args)
        self.lifted.append(lifted)
        self.boxes.append((lifted, start))
        _write_box(aval, qdd, box, *args)

    def finish_boxes(self) -> list:
        """The final low-level values of the lifted boxes (their extra outputs), in lifting order."""
        finals = []
        for lifted, _ in self.boxes:
            lifted.qdd_out = lifted.box.cur_qdd()
            lo = lifted.read(lifted.qdd_out)
            lifted.n_out = len(lo)
            finals.extend(lo)
        return finals

    def restore(self) -> None:
        for lifted, start in reversed(self.boxes):
            _write_box(lifted.aval, lifted.qdd, lifted.box, *start)
        for ref, value, trace in reversed(self.bound):
            ref._value, ref._trace = value, trace


_SCOPES: dict[Any, _Scope] = {}


# How many times a Ref has been read or written: a traced body that touched one is not reusable
# (funcgrad/_control_flow.py's trace cache compares this before and after a trace).
ACCESSES = [0]


def _scopes_down_to(current, home) -> tuple[list, bool]:
    """The lifting scopes of the traces from ``current`` up to (not including) ``home``, innermost
    first, and whether ``home`` encloses ``current`` at all (``None``: the root encloses all)."""
    scopes, t = [], current
    while t is not None and t is not home:
        scope = _SCOPES.get(t) if _SCOPES else None
        if scope is not None:
            scopes.append(scope)
        t = t.parent
    return scopes, t is home


def _lift(ref: Ref) -> None:
    """Make ``ref``'s value usable at the current trace: bind it in every ref scope between there
    and its own trace (NOTE: [refs are functionalised at trace time])."""
    ACCESSES[0] += 1
    current = core.current_trace()
    home = ref._trace
    if home is current:
        return
    if home is not None and not home.alive:
        raise core.UnexpectedTracerError(
            f"A Ref of type {ref._aval} made (or written) inside a transformation that has finished "
            "was used after it: a Ref made inside jit cannot be returned from it or kept; return "
            "ref[...] instead (or make the Ref outside and pass it in)."
        )
    scopes, encloses = _scopes_down_to(current, home)
    if not encloses:
        raise core.UnexpectedTracerError(
            f"A Ref of type {ref._aval} belongs to a transformation that does not enclose this one"
        )
    for scope in reversed(scopes):
        scope.lift(ref)


class _LiftedBox:
    """A mutable box a traced function closes over, with its structure (quasi-dynamic data) when
    lifted (``qdd``) and when the trace ended (``qdd_out``, ``n_out`` low-level values)."""

    __slots__ = ("box", "aval", "qdd", "qdd_out", "n_out")

    def __init__(self, box, aval, qdd):
        self.box, self.aval, self.qdd = box, aval, qdd
        self.qdd_out, self.n_out = qdd, 0

    def read(self, qdd=None) -> list:
        return _read_box(self.aval, self.qdd if qdd is None else qdd, self.box)


_QUIET = [False]  # reading a box binds its own primitives, which must not lift it again


def _read_box(aval, qdd, box) -> list:
    quiet, _QUIET[0] = _QUIET[0], True
    try:
        return list(aval.read_loval(qdd, box))
    finally:
        _QUIET[0] = quiet


def _write_box(aval, qdd, box, *values) -> None:
    quiet, _QUIET[0] = _QUIET[0], True
    try:
        aval.update_from_loval(qdd, box, *values)
    finally:
        _QUIET[0] = quiet


def lift_box(box) -> None:
    """Make a mutable box's low-level values usable at the current trace: lift it into every ref
    scope between there and the trace its values belong to, as ``_lift`` does for a Ref (a
    ``HiPrimitive`` bound on the box while tracing calls this; NOTE: [mutable high-level values])."""
    if _QUIET[0]:
        return
    found = box_type(box)
    if found is None:
        return
    ACCESSES[0] += 1
    aval, qdd = found
    current = core.current_trace()
    home = next((x._trace for x in _read_box(aval, qdd, box) if isinstance(x, core.Tracer)), None)
    if home is current:
        return
    scopes, encloses = _scopes_down_to(current, home)
    if not encloses:
        return  # values of a trace that does not enclose this one: the primitive's rules decide
    for scope in reversed(scopes):
        scope.lift_box(box, aval, qdd)


# NOTE: [state in loop bodies]
# A scan body that touches a Ref or a mutable box from outside (``ref[...] += 1`` in the body;
# flax's hijax Variable written in a loop) carries its value, as JAX's discharge does. The body is
# first traced with its trace as a *discovery* scope (``discover_state``): what it touches from
# outside is lifted there, and the trace is abandoned (``LoopState``). scan then runs over
# ``(carry, state)``, the state being the current low-level values of those Refs and boxes, with a
# body that binds them to the state carry while the user's body runs and returns their final
# values as the new state (``bound_loop_state``); the final state is written back after the loop.
# A body that touches none is traced once, as before. ``cond``'s branches carry state the same way
# (their values in as extra operands, their final values out as extra results), and so do
# ``while_loop``'s functions (a second carry; ``cond_fun`` runs before the loop and after each body
# step, so its writes are kept). A write of a constant from a staged function that is no ref scope
# is refused (``_staged_below``): it would happen once, at trace time.


class LoopState(Exception):
    """Raised out of a loop body's discovery trace: the Refs and boxes (``_LiftedBox``) it touched
    from outside, in the order it touched them; ``recorded``: where they are all Refs, the trace
    itself, completed with their values as extra inputs and final values as extra outputs (the
    body's jaxpr, replayed instead of calling the body again: JAX traces it once)."""

    def __init__(self, items: list, recorded=None):
        super().__init__(f"the loop body touches {len(items)} Ref(s)/mutable value(s) from outside")
        self.items = items
        self.recorded = recorded


class discover_state:
    """Context manager around a loop body's Python call at its trace: raises ``LoopState`` on exit
    when the body touched Refs or boxes from outside (NOTE: [state in loop bodies]); with
    ``record``, it does not, and the caller completes the trace (``finals``, ``completed``)."""

    def __init__(self, record: bool = False):
        self.record = record

    def __enter__(self):
        self.trace = core.current_trace()
        self.scope = _SCOPES[self.trace] = _Scope(self.trace)
        return self

    def finals(self) -> list | None:
        """The leaves the touched Refs hold now (their new state), or None when a box was touched."""
        if any(type(item) is _LiftedBox for item in self.scope.lifted):
            return None
        return [x for item in self.scope.lifted for x in tu.tree_leaves(item._value)]

    def completed(self, closed: ClosedJaxpr) -> ClosedJaxpr:
        """``closed``, the trace this discovery was around, with the trace's inputs standing for
        the touched Refs' values (in lifting order) as extra inputs after its own."""
        j = closed.jaxpr
        lifted = [t._var for t in self.scope.lifted_args]
        return ClosedJaxpr(Jaxpr(j.constvars, [*j.invars, *lifted], j.eqns, j.outvars), closed.consts)

    def __exit__(self, kind, value, tb):
        try:
            self.scope.restore()
        finally:
            del _SCOPES[self.trace]
        if kind is None and self.scope.lifted and not self.record:
            raise LoopState(list(self.scope.lifted))
        return False


def loop_state_values(items: list) -> list:
    """The current low-level values of each item of a ``LoopState`` (a list of leaves per item),
    read at the loop's own trace."""
    out = []
    for item in items:
        if type(item) is _LiftedBox:
            lift_box(item.box)
            out.append(_read_box(item.aval, item.qdd, item.box))
        else:
            out.append(tu.tree_leaves(_load(item)))
    return out


class bound_loop_state:
    """Context manager inside a loop body's trace: each item bound to its state carry ``values``;
    ``finals()`` gives their values now (the body's new state). Restores them on exit."""

    def __init__(self, items: list, values: list):
        self.items, self.values = items, values

    def __enter__(self):
        trace = core.current_trace()
        self.saved = []
        for item, vals in zip(self.items, self.values):
            if type(item) is _LiftedBox:
                self.saved.append(item.read())
                _write_box(item.aval, item.qdd, item.box, *vals)
            else:
                self.saved.append((item._value, item._trace))
                item._value, item._trace = tu.tree_unflatten(item._tree, list(vals)), trace
        return self

    def finals(self) -> list:
        return [
            item.read(item.box.cur_qdd()) if type(item) is _LiftedBox else tu.tree_leaves(item._value)
            for item in self.items
        ]

    def __exit__(self, *exc):
        for item, saved in reversed(list(zip(self.items, self.saved))):
            if type(item) is _LiftedBox:
                _write_box(item.aval, item.qdd, item.box, *saved)
            else:
                item._value, item._trace = saved
        return False


def grouped_state(flat, state: list) -> list:
    """The leaves ``flat`` in lists of the lengths of ``state``'s (a list of leaves per item, as
    ``loop_state_values`` gives): a program's final state outputs, per item."""
    rest = iter(flat)
    return [[next(rest) for _ in vals] for vals in state]


def write_loop_state(items: list, finals: list) -> None:
    """Write a loop's final state back into its Refs and boxes, at the loop's trace."""
    for item, vals in zip(items, finals):
        if type(item) is _LiftedBox:
            _write_box(item.aval, item.qdd, item.box, *vals)
        else:
            _store(item, tu.tree_unflatten(item._tree, list(vals)))


def trace_stateful(
    f, in_avals, arg_names, description: str, refs: dict[int, Ref], fun=None, traced_for="jit"
):
    """``trace_to_jaxpr`` for a jitted function: the trace is a ref scope. ``refs`` maps the flat
    argument positions that hold a Ref to it (their ``in_avals`` are the Refs' leaf avals, one
    position per Ref); ``f`` gets, for each, a Ref of the trace standing for it (so that one also
    closed over is told apart, as in JAX). Returns ``(closed jaxpr, n_outs, RefPlan or None)``: the
    program's outputs are ``f``'s ``n_outs`` ones, then the final leaves of each written Ref.
    ``fun`` (the user's function) and ``traced_for`` name it in JAX's aliasing errors."""
    with core.new_trace(StagingTrace, None, description) as trace:
        scope = _SCOPES[trace] = _Scope(trace, fun, traced_for)
        try:
            args, leaves, positions, aliases, first, boxes = [], [], [], [], {}, []
            names = list(arg_names or [None] * len(in_avals))
            for i, aval in enumerate(in_avals):
                ref = refs.get(i)
                if ref is not None and type(ref) is not Ref:  # NOTE: [mutable high-level values]
                    box_aval, qdd = box_type(ref)
                    box_args = [trace.new_arg(_lo_aval(a), names[i]) for a in box_aval.lo_ty_qdd(qdd)]
                    args.extend(box_args)
                    inner = box_aval.new_from_loval(qdd, *box_args)
                    boxes.append((i, box_aval, qdd, inner))
                    leaves.append(inner)
                    continue
                if ref is None:
                    arg = trace.new_arg(aval, names[i])
                    args.append(arg)
                    leaves.append(arg)
                    continue
                positions.append(i)
                aliases.append(first.setdefault(id(ref), i))
                if first[id(ref)] != i:  # (JAX's check, on by default: jax_mutable_array_checks)
                    at = names[first[id(ref)]] or "unknown", names[i] or "unknown"
                    raise _aliased_error(fun, traced_for, ref, *at)
                ref_args = [trace.new_arg(a, names[i]) for a in ref._leaf_avals]
                args.extend(ref_args)
                inner = ref._inner(None, trace)
                scope.bind(inner, ref_args)
                scope.arguments[id(ref)] = names[i] or "unknown"
                leaves.append(inner)
            outs = list(f(*leaves))
            refuse_returned_refs(outs, description, fun, traced_for, dict(zip(map(id, leaves), names)))
            every = [ref for ref, _, _ in scope.bound]
            written = [k for k, (ref, _, _) in enumerate(scope.bound) if _changed(ref, scope, k)]
            finals = [leaf for k in written for leaf in tu.tree_leaves(every[k]._value)]
            box_plans = []
            for i, box_aval, qdd, inner in boxes:
                qdd_out = inner.cur_qdd()
                lo = list(box_aval.read_loval(qdd_out, inner))
                finals.extend(lo)
                box_plans.append((i, box_aval, qdd, qdd_out, len(lo)))
            finals.extend(scope.finish_boxes())
            closed = trace.builder.build(trace, [*args, *scope.lifted_args], [*outs, *finals])
        finally:
            scope.restore()
            del _SCOPES[trace]
    plan = None
    if scope.bound or boxes or scope.boxes:
        plan = RefPlan(
            tuple(positions), tuple(aliases), tuple(scope.lifted), tuple(written), tuple(box_plans)
        )
    return closed, len(outs), plan


def refuse_aliased_refs(fun, args: tuple, traced_for: str, kwargs=None, among=None) -> dict:
    """JAX's error for one Ref among the leaves of ``(args, kwargs)`` twice (its check
    ``jax_mutable_array_checks``, on by default), naming them as ``fun``'s parameters; ``among``:
    the leaf positions to check (default: all). Returns {leaf position: Ref}."""
    leaves = tu.tree_leaves((args, kwargs or {}))
    at = {i: x for i, x in enumerate(leaves) if type(x) is Ref and (among is None or i in among)}
    first: dict = {}
    for i, x in at.items():
        j = first.setdefault(id(x), i)
        if j != i:
            names = signature_arg_names(fun, args, kwargs or {})
            raise _aliased_error(fun, traced_for, x, names[j], names[i])
    return at


def _aliased_error(fun, traced_for: str, ref: Ref, first: str, second: str) -> ValueError:
    """JAX's error for one Ref passed as two arguments (``first`` and ``second``, their names)."""
    return ValueError(
        "only one reference to a mutable array may be passed as an argument to a function, but when "
        f"tracing {fun_sourceinfo(fun)} for {traced_for} the mutable array reference of type "
        f"{ref._aval} appeared at both {first} and {second}."
    )


def refuse_returned_refs(out, description: str, fun=None, traced_for=None, arguments=None) -> None:
    """JAX's error for a traced function that returns a Ref (its value belongs to the trace):
    naming ``fun`` traced for ``traced_for`` (``jit``, ``scan``, ...) and where the Ref came from
    (``arguments``: id of each Ref the function was given -> its argument's name)."""
    leaves = tu.tree_leaves_with_path(out)
    for path, leaf in leaves:
        if isinstance(leaf, Ref):
            if fun is None:
                raise ValueError(
                    f"{description} returned a mutable array reference of type {leaf._aval}, but "
                    "mutable array references cannot be returned (return ref[...] instead)."
                )
            loc = f" at output tree path result{tu.keystr(path)}" if len(leaves) > 1 or path else ""
            origin = ""
            if arguments and arguments.get(id(leaf)):
                origin = (
                    f"\n\nThe returned mutable array was passed in as the argument {arguments[id(leaf)]}."
                )
            elif leaf._made_at is not None:
                origin = f"\n\nThe returned mutable array was created on line {leaf._made_at.where()}."
            raise ValueError(
                f"function {fun_sourceinfo(fun)} traced for {traced_for} returned a mutable array "
                f"reference of type {leaf._aval}{loc}, but mutable array references cannot be "
                f"returned.{origin}"
            )


def _changed(ref: Ref, scope: _Scope, k: int) -> bool:
    """Whether the bound ``ref`` holds something else than the inputs it was bound to."""
    return [id(x) for x in tu.tree_leaves(ref._value)] != [id(x) for x in scope.starts[k]]
