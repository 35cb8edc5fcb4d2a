"""How a jitted call reaches its executable: the route table, the one argument split, and the native
route's Python twin of the C hot path.

Layer: xla_bridge. May import the funcgrad kernel (``core``, ``array``, ``tree_util``), the
primitive catalog (``primitives.call``: the ``jit`` call primitive), its siblings ``execute``
(compile and run), ``native`` (jaxlib's C++ dispatcher) and ``spmd_route``, and its C hot path
``xla_bridge._hot_call`` where it is built. Never the surface.

# NOTE: [jitted call route]
# ``funcgrad.jit`` returns a ``JittedFunction``, a subclass of ``Dispatcher``: the surface owns
# the staging (flattening, the trace cache, retrace warnings, the AOT API) and implements one
# method, ``_stage(args, kwargs) -> (Staged, flat arguments, donated flags)``; the bridge owns the
# call. A call takes one of these routes; each row is a different situation, and this table is
# the only place that names them (``Dispatcher._dispatch`` chooses, in this order):
#
#   route       situation                                       what runs
#   redirect    a call-wide mode is set (``set_call_redirect``:  the redirect, e.g. the Python
#               disable_jit, no_execution)                      function op by op, or an error
#   native      eager trace, native dispatch usable: no          jaxlib's C++ dispatcher (NOTE:
#               donation, jax's config not loaded (NOTE:        [native dispatch]): a hit runs the
#               [native dispatch]), static argument numbers     executable without Python; a miss
#               non-negative                                    is ``_native_miss``, which stages,
#                                                               compiles (or takes the SPMD route),
#                                                               runs and hands back the entry
#   staged      anything else                                   ``_call``: stage (the trace cache),
#                                                               then one of the three rows below
#     transform   the current trace is not the eager one, or      ``jit_p.bind``: the transformation
#                 the jaxpr closes over its tracers               sees one call (grad(jit(f)), vmap)
#     spmd        the program or an argument spans several        ``spmd().prepare`` + ``run`` (NOTE:
#                 devices                                         [SPMD call route])
#     compiled    one device                                      ``execute.compiled`` + ``run``
#   (both rows make one kind of program and run it the same way: NOTE: [one compiled program])
#
# The arguments are split into static and dynamic ones by one function, ``Dispatcher._split``:
# the trace cache's key and the native dispatcher's key are built from its result. The native
# route's hit path exists twice, as twins: in C (``_hot_call.c``, ``HotCall.__call__``, where
# built) and in Python (``Dispatcher._native_route``, also the C path's fallback). The C twin
# splits as ``_split`` does, in C (calling back into Python would cost a third of a call);
# tests/bridge/test_dispatch_routes.py runs the same cases through both and checks that they give
# the same results and share the same cache entries. Neither looks at an equation: the cost of a
# call does not grow with the program.

# NOTE: [synchronous CPU dispatch] (the runtime's half: which CPU client runs programs where) says
# when a call returns after its computation ends; the native route keeps that promise for large
# NumPy arguments by waiting for its outputs (``native.waits_for_results``, ``_WAIT_BYTES``).
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import NamedTuple

import numpy as np
from funcgrad.primitives.call import jit_p
from funcgrad.primitives.sharding import meshes_in
from funcgrad.xla_bridge.committed import (
    IncompatibleDevices,
    committed_devices,
    incompatible_devices_message,
    memory_kind,
    read_inputs,
)
from funcgrad.xla_bridge.execute import array_buffer, compiled, from_buffers, run, runtime
from funcgrad.xla_bridge.native import JAX_CONFIG, make_native_dispatcher, waits_for_results
from funcgrad.xla_bridge.spmd_route import needs_spmd, spmd

from funcgrad.kernel import core
from funcgrad.kernel.array import Array
from funcgrad.kernel.c_modules import c_modules_wanted
from funcgrad.kernel.partial_eval import under_staging
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.kernel.traceback_util import filter_at_boundary as _filter_at_boundary
from funcgrad.kernel.traceback_util import register_boundary_code
from funcgrad.kernel.tree_util import registry as _registry

__all__ = ["Dispatcher", "NonHashableStaticArgumentError", "Staged", "set_call_redirect", "strict_static_key"]


class NonHashableStaticArgumentError(TypeError, ValueError):
    """A static argument is not hashable (a ValueError in JAX, a TypeError in Python terms)."""


class Staged:
    """A staged call: the closed jaxpr, the output tree and the tracers of an enclosing
    transformation the jaxpr closes over (``hoisted``: passed as leading arguments).

    ``in_shardings``/``out_shardings``: one ``sharded.MeshSharding`` or ``None`` (unspecified)
    per jaxpr input/output, or ``None`` when the jitted function has none; ``spmd``: whether the
    program runs on several devices whatever its arguments (shardings, or meshes inside)."""

    __slots__ = (
        "closed", "out_tree", "hoisted", "single", "in_shardings", "out_shardings", "spmd",
        "arg_names", "result_names", "key_reuse", "_read",
    )  # fmt: skip

    def __init__(self, closed, out_tree, hoisted=(), in_shardings=None, out_shardings=None):
        self.closed = closed
        # The names of the program's parameters and results (JAX's ``loc("x")`` and
        # ``jax.result_info``; NOTE: [operation locations] in xla_bridge/emitter.py), or None.
        self.arg_names = self.result_names = None
        self.key_reuse = None  # what the surface's trace did to PRNG keys (funcgrad/_key_reuse.py)
        self.out_tree = out_tree
        self.hoisted = tuple(hoisted)
        # A bare leaf output: no unflattening.
        self.single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.spmd = needs_spmd(closed, (), in_shardings, out_shardings)
        self._read = None  # (``read_inputs``' answer, once asked)

    # Whether a call must run Python around the program (a subclass's, e.g. the surface's jitted
    # functions that read or write Refs): such an entry never takes the native route's cache.
    stateful = False


class _Finished(list):
    """What a native-route miss hands back for a stateful entry: the call's final outputs, already
    made by the staged route (an empty list to the twins' waiting loops; ``_native_outputs`` opens it)."""

    def __init__(self, value):
        super().__init__()
        self.value = value


class _KwStatics(NamedTuple):
    """The native dispatcher's static key of a call with keyword arguments (both parts typed by
    ``strict_static_key``)."""

    pos: tuple
    kw: tuple


# NOTE: [strict static keys]
# Static arguments are keyed by type and value, as JAX's (``_HashableWithStrictTypeEquality`` in
# jax/_src/api_util.py): 1, 1.0 and True hash and compare
# equal in Python, and a key of bare values let a call with ``s=1.0`` reuse the program traced for
# ``s=1`` (an int64 result where JAX gives float64). Only the outer type counts, as JAX's: (1,) and
# (1.0,) share an entry. Every key of the static part -- the native dispatcher's (built here by
# ``_native_route`` and in C by ``_hot_call.c``, as ``(where, value, type(value))`` triples) and the
# surface's trace cache (funcgrad/jitting.py) -- is made by this function or its C twin. The
# triples are compared in C (an ``is`` for the type): no Python ``__eq__`` on the hot path.
def strict_static_key(pairs: tuple) -> tuple:
    """``_split``'s static ``(position or name, value)`` pairs as a type-strict cache key.

    >>> strict_static_key(((1, 1),)) == strict_static_key(((1, 1.0),))
    False
    """
    return tuple([(k, v, type(v)) for k, v in pairs])


def _untyped(triples: tuple) -> tuple:
    """A strict key's pairs again (what ``_merge`` and the stage take)."""
    return tuple([(k, v) for k, v, _ in triples])


# The redirect row of the route table: read by both twins on every call (a dict lookup), set by
# the surface's call-wide modes. Never a class attribute swapped under the instances' feet.
_call_state = {"redirect": None}


def set_call_redirect(redirect) -> None:
    """While ``redirect`` is not None, every jitted call is ``redirect(dispatcher, args, kwargs)``
    instead of a dispatch (NOTE: [jitted call route]); ``None`` restores dispatch.

    >>> set_call_redirect(lambda d, args, kwargs: "redirected"); set_call_redirect(None)
    """
    _call_state["redirect"] = redirect


_EvalTrace = core.EvalTrace
_state = core._state
_modules = sys.modules
_ndarray = np.ndarray
_SCALARS = frozenset({float, int, bool, complex, np.float32, np.float64, np.int32, np.int64, np.bool_})
_flatten = _registry.flatten
_from_buffer = Array._from_buffer
# A native call waits for its outputs (on a synchronous client) when it passed a NumPy array of at
# least this many bytes: PJRT copies host arrays of 100 000 bytes or more in a worker thread and
# runs a program waiting for one there too (measured, jaxlib 0.10.2: up to 100 000 bytes every
# output was ready at return, from 104 000 none); smaller ones it copies in the call. A margin of
# 25x, and tests/bridge/test_dispatch_routes.py checks both sides of it. (Waiting on an output
# that is ready costs about 0.3 us, 4% of a call: small arguments need not pay it.)
_WAIT_BYTES = 4096


class _PythonHotCall:
    """Where ``xla_bridge._hot_call`` is not built (NOTE: [array in C]): a call is a dispatch; the
    native route's Python twin is ``Dispatcher._native_route``."""

    def __call__(self, *args, **kwargs):
        return self._dispatch(args, kwargs)


_HotCall = _PythonHotCall
if c_modules_wanted():
    with contextlib.suppress(ImportError):  # not built: no C compiler where it was installed
        from funcgrad.xla_bridge import _hot_call

        _hot_call.configure(
            _state, _EvalTrace, JAX_CONFIG, _ndarray, _SCALARS, Array, _from_buffer, _flatten, _KwStatics,
            _call_state, _WAIT_BYTES,
        )  # fmt: skip
        _HotCall = _hot_call.HotCall


def _weak_miss(owner, name: str):
    """``owner``'s miss handler ``name`` reached through a weak cell in its dict: the native
    dispatcher is kept in that dict, and a bound method there would keep ``owner`` alive until a
    garbage collection (NOTE: [jit instances hold their function weakly] in funcgrad/jitting.py)."""
    cell = owner.__dict__.get("_owner_ref")
    if cell is None or cell[0] is None or cell[0]() is not owner:
        # (a new cell unless this state's own: a jit of a jitted function copies the wrapped
        # one's attributes, whose cell must keep naming the wrapped function)
        cell = owner.__dict__["_owner_ref"] = [weakref.ref(owner)]

    def miss(*args):
        return getattr(cell[0](), name)(*args)

    return miss


class Dispatcher(_HotCall):
    """The bridge's half of a jitted function: how a call reaches the executable.

    ``name`` names the function in errors; ``static_argnums`` (sorted, non-negative where the
    signature allows) and ``static_argnames`` are the static parameters; ``named_positional`` is
    how many positional parameters have names (a static one missing from a call's positional
    arguments was passed by keyword); ``donate`` says whether any argument is donated; ``device``
    is where the computation runs (``None``: the default device). A subclass implements
    ``_stage`` (NOTE: [jitted call route]) and may read ``_dispatch_hits()`` and call
    ``_clear_dispatch()``.
    """

    def __init__(
        self, name, static_argnums=(), static_argnames=(), donate=False, device=None, named_positional=0
    ):
        self._name = name
        self._static_argnums = tuple(static_argnums)
        self._static_argnames = tuple(static_argnames)
        self._named_positional = named_positional
        self._donate = donate
        self._device = device
        # XLA's options by name for this function's programs (``jit(compiler_options=)``): part of
        # each program's cache key; None: XLA's defaults.
        self._compiler_options = None
        # The native route takes positional static arguments by their (non-negative) numbers.
        self._native_ok = not donate and all(n >= 0 for n in self._static_argnums)
        self._plain = self._native_ok and not self._static_argnums
        # The native dispatchers, made on first use: ``_native`` keyed on (tree, statics, leaf
        # signatures); ``_native_plain``, for functions without static arguments called with
        # top-level leaves only, keyed on the leaf signatures alone (nothing more to hash).
        self._native = None
        self._native_plain = None
        self._native_meta: list = []
        # Whether a native call that transferred a NumPy argument waits for its outputs (NOTE:
        # [synchronous CPU dispatch]); known once the backend runs, with the first dispatcher.
        self._native_wait = False
        self._native_calls = 0
        self._native_misses = 0

    def _stage(self, args, kwargs) -> tuple[Staged, list, tuple]:
        """``(Staged, flat dynamic arguments, donated flag per jaxpr input)`` for this call, from
        the subclass's trace cache (tracing on a miss)."""
        raise NotImplementedError

    def __getstate__(self):
        # copy.copy(jitted) (and pickle, as far as the contents allow): the state is the instance
        # dict. Said explicitly because the C base's call counter makes object's default refuse
        # ("cannot pickle"); the counter is statistics, not state.
        return self.__dict__

    def _dispatch_hits(self) -> int:
        """Calls answered by the native dispatchers' caches."""
        return self._native_calls - self._native_misses

    def _clear_dispatch(self) -> None:
        self._native = None
        self._native_plain = None
        self._native_meta.clear()

    # -- the one argument split ----------------------------------------------------------------

    def _split(self, args, kwargs, check: bool = True):
        """``(static_key, static_kw, dyn_args, dyn_kwargs)``: the static positional arguments as
        ``(position, value)`` pairs, the static keyword ones as ``(name, value)`` pairs sorted by
        name, and the dynamic rest. ``check``: refuse unhashable static values with a clear error
        (the native route lets jaxlib hash them, and comes back here when it cannot).

        >>> d = Dispatcher("f", static_argnums=(1,), static_argnames=("mode",), named_positional=2)
        >>> d._split((10, 3), {"mode": "sum", "scale": 2.0})
        (((1, 3),), (('mode', 'sum'),), (10,), {'scale': 2.0})
        """
        nargs = len(args)
        static_key = []
        for i in self._static_argnums:
            if nargs <= i < self._named_positional:
                continue  # passed by keyword (or defaulted): a static_argnames entry covers it
            if not -nargs <= i < nargs:
                raise ValueError(
                    f"jit({self._name}): static_argnums={self._static_argnums} refers to argument "
                    f"{i}, but the function was called with {nargs} positional arguments"
                )
            static_key.append((i % nargs, args[i]))
        static_key = tuple(static_key)
        if static_key:
            static_pos = {j for j, _ in static_key}
            dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        else:
            dyn_args = tuple(args)
        names = self._static_argnames
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in names))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names} if static_kw else dict(kwargs)
        if check:
            for where, v in (*static_key, *static_kw):
                try:
                    hash(v)
                except TypeError as e:
                    raise NonHashableStaticArgumentError(
                        "Non-hashable static arguments are not supported. An error occurred while "
                        f"trying to hash an object of type {type(v)}: {e}.\njit({self._name}): static "
                        f"argument {where!r} must be hashable, got a "
                        f"{type(v).__name__}. Make it a tuple, or pass it as a non-static argument."
                    ) from e
        return static_key, static_kw, dyn_args, dyn_kwargs

    # -- the route table (NOTE: [jitted call route]) ---------------------------------------------

    def _dispatch(self, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - a boundary's frame (NOTE: [traceback boundaries])
        redirect = _call_state["redirect"]
        try:  # a traceback boundary, inline: no wrapper frame on the call (NOTE: [traceback boundaries])
            try:
                if redirect is not None:
                    return redirect(self, args, kwargs)
                if self._native_ok and type(_state.trace) is _EvalTrace and JAX_CONFIG not in _modules:
                    return self._native_route(args, kwargs)
                return self._call(args, kwargs)
            except IncompatibleDevices as e:  # NOTE: [committed arrays]: worded with the parameters
                raise e.worded(self._leaf_names(args, kwargs), getattr(self, "__qualname__", None)) from None
        except Exception as e:
            _filter_at_boundary(e)
            raise

    def _leaf_names(self, args, kwargs):
        """The names of the flat dynamic arguments of a call (``x``, ``t[0]``), for errors, where
        the subclass knows its parameters (``_arg_names``); else ``None``."""
        arg_names = getattr(self, "_arg_names", None)
        if arg_names is None:
            return None
        try:
            static_key, _, dyn, dyn_kw = self._split(args, kwargs, check=False)
            return arg_names(static_key, dyn, dyn_kw)
        except Exception:  # noqa: BLE001 - only words an error being raised
            return None

    # -- the native route ------------------------------------------------------------------------

    def _native_route(self, args, kwargs):
        """The native route in Python: the twin of ``_hot_call.c`` (same keys, same dispatchers),
        and its fallback for what it leaves to Python (a host-backed Array's first transfer, a
        dispatcher not made yet, an error to word)."""
        if kwargs or self._static_argnums:
            static_key, static_kw, dyn, dyn_kw = self._split(args, kwargs, check=False)
            # NOTE: [strict static keys] (the C twin builds the same triples)
            statics = strict_static_key(static_key)
            if kwargs:
                statics = _KwStatics(statics, strict_static_key(static_kw))
        else:  # (no split to make: kept to a few bytecodes, the pure-Python hot path)
            statics, dyn = (), args
        if kwargs:
            flat, tree = _flatten((dyn, dyn_kw))
        else:
            flat, tree = dyn, len(dyn)  # top-level leaves: the C++ side flattens nothing
            for x in dyn:
                t = type(x)
                if t is not _ndarray and t is not Array and t not in _SCALARS:
                    flat, tree = _flatten(dyn)  # containers: flatten here, so Arrays are seen
                    break
        host = False  # a NumPy argument the C++ side may copy in the background
        swapped = None
        i = 0
        for x in flat:  # (a loop, not a comprehension: a 3.11 comprehension is a function call)
            t = type(x)
            if t is Array:
                b = x._buffer
                if b is None:
                    b = array_buffer(x)
                    if b is None:
                        return self._call(args, kwargs)  # to_buffer converts (and words) it
                if swapped is None:
                    swapped = list(flat)  # never the caller's own sequence
                swapped[i] = b
            elif t is _ndarray and not host and x.nbytes >= _WAIT_BYTES:
                host = True
            i += 1
        if swapped is not None:
            flat = swapped
        if self._plain and type(tree) is int and not statics:
            native = self._native_plain
            if native is None:
                native = self._native_plain = self._make_native(self._native_miss_plain, statics=False)
            self._native_calls += 1
            res = native(*flat)
        else:
            native = self._native
            if native is None:
                native = self._native = self._make_native(self._native_miss)
            self._native_calls += 1
            try:
                res = native(tree, statics, *flat)
            except (TypeError, ValueError):  # jaxlib reports unhashable statics as ValueError
                if statics and not _hashable(statics):
                    self._native_calls -= 1
                    return self._call(args, kwargs)  # raises the clear error
                raise
        if host and self._native_wait:
            _wait(res)
        if type(res) is dict:
            return self._native_outputs(res)
        return _from_buffer(res, res.aval.weak_type)

    def _make_native(self, miss, statics: bool = True):
        self._native_wait = waits_for_results(self._device)
        return make_native_dispatcher(self._name, _weak_miss(self, miss.__name__), statics=statics)

    def _native_outputs(self, res):
        # Several outputs come back as {entry index: [buffers]} (a native pytree).
        ((k, bufs),) = res.items()
        if type(bufs) is _Finished:
            return bufs.value
        out_tree, out_weak = self._native_meta[k]
        return out_tree.unflatten(from_buffers(bufs, out_weak))

    @_api_boundary  # (called by jaxlib's dispatcher on a miss: the C hot path's boundary)
    def _native_miss_plain(self, *leaves):
        """Cache miss of the plain dispatcher (top-level leaves, no static arguments)."""
        return self._native_miss(len(leaves), (), *leaves)

    @_api_boundary
    def _native_miss(self, tree, statics, *leaves):
        """Cache miss of the native dispatcher: stage/compile as needed, run, describe the entry
        for the C++ fast path."""
        self._native_misses += 1
        array_impl = runtime().ArrayImpl
        wrapped = [_from_buffer(x, x.aval.weak_type) if type(x) is array_impl else x for x in leaves]
        kwargs = {}
        if type(statics) is _KwStatics:
            dyn, kwargs = tree.unflatten(wrapped)
            kwargs = {**kwargs, **dict(_untyped(statics.kw))}
            statics = statics.pos
        else:
            dyn = tuple(wrapped) if type(tree) is int else tree.unflatten(wrapped)
        statics = _untyped(statics)
        staged, flat, _ = self._stage(_merge(statics, dyn), kwargs)
        try:  # (jit(device=) puts every argument on its device first, as JAX's: nothing to agree on)
            committed = None if self._device is not None else self._committed(staged, flat)
        except IncompatibleDevices as e:
            raise e.worded(
                self._leaf_names(_merge(statics, dyn), kwargs), getattr(self, "__qualname__", None)
            ) from None
        if staged.stateful:  # the staged route runs it, every time (no fast-path data: no caching)
            return {-1: _Finished(self._call(_merge(statics, dyn), kwargs))}, None
        if staged.hoisted:
            raise RuntimeError(f"jit({self._name}): an eager call captured tracers (internal error)")
        c, commit = self._program(staged, flat, None, committed)
        outs = run(c, flat, committed=commit)
        if c.float0_outs or c.token_outs or c.extended_outs:  # NOTE: [float0 results], [tokens]: no fast path
            return {-1: _Finished(staged.out_tree.unflatten(outs))}, None
        bufs = [o._buffer for o in outs]
        if staged.single:
            res = bufs[0]
        else:
            res = {len(self._native_meta): bufs}
            self._native_meta.append((staged.out_tree, c.out_weak))
        if c.host_outs or (commit and c.in_shardings is None and memory_kind(flat) is not None):
            return res, None  # (no fast path for results moved to host memory: each call comes back here)
        if _unread_committed(flat, self._read_flags(staged, flat)):
            # (jaxlib's fast path would not move them: NOTE: [unread arguments choose no devices])
            return res, None
        return res, c.fastpath_data(res, len(leaves), commit)

    def _program(self, staged, flat, donated, committed):
        """``(program, committed results)`` of an eager call: compiled for several devices (the
        spmd row, whose results are laid out over them) or for one, the committed devices' or the
        jitted function's (NOTE: [one compiled program], [committed arrays])."""
        read = self._read_flags(staged, flat)
        for mesh in meshes_in(staged.closed) if self._device is not None else ():
            if set(mesh._flat) != {self._device}:  # (JAX's words: jit(device=) is its arguments' sharding)
                platform = self._device.platform
                what = "ARG_SHARDING" if flat else "explicit output sharding"
                raise ValueError(
                    incompatible_devices_message(
                        (what, [self._device.id], platform),
                        ("sharding_constraint inside jit", [d.id for d in mesh._flat], platform),
                    )
                )
        if staged.spmd or needs_spmd(staged.closed, flat if read is None else _kept(flat, read)):
            # NOTE: [SPMD call route]
            c = spmd().prepare(
                staged.closed, flat, self._name, donated, staged.in_shardings, staged.out_shardings,
                names=(staged.arg_names, staged.result_names), compiler_options=self._compiler_options,
            )  # fmt: skip
            return c, True
        device = self._device if self._device is not None or committed is None else committed[0]
        c = compiled(
            staged.closed, self._name, donated, device, compiler_options=self._compiler_options,
            arg_names=staged.arg_names, result_names=staged.result_names,
        )  # fmt: skip
        return c, committed is not None or self._device is not None

    def _read_flags(self, staged, flat):
        """Which of ``flat`` the program reads, or ``None`` when it reads them all or keeps them
        all (``keep_unused=True``): NOTE: [unread arguments choose no devices]."""
        if getattr(self, "_keep_unused", False) or staged.hoisted:
            return None
        read = staged._read
        if read is None:
            read = staged._read = read_inputs(staged.closed.jaxpr)
        return None if all(read) or len(read) != len(flat) else read

    def _committed(self, staged, flat):
        """The devices the committed arguments the program reads live on (``committed_devices``)."""
        return committed_devices(flat, self._name, self._read_flags(staged, flat), meshes_in(staged.closed))

    # -- the staged route: transform, spmd, compiled --------------------------------------------

    def _call(self, args, kwargs):
        return self._run(*self._stage(args, kwargs))

    def _run(self, staged, flat, donated):
        """The staged route's three rows for a staged call and its flat dynamic arguments."""
        if type(_state.trace) is _EvalTrace and not staged.hoisted:
            # NOTE: [committed arrays] (jit(device=) moves every argument to its device)
            committed = None if self._device is not None else self._committed(staged, flat)
            c, commit = self._program(staged, flat, donated, committed)
            return staged.out_tree.unflatten(run(c, flat, donated, committed=commit))
        if self._compiler_options and under_staging(_state.trace):
            raise ValueError(  # (JAX's words: the options of a program are its top-level jit's)
                "`compiler_options` can only be passed to top-level `jax.jit`. Got "
                f"compiler_options={dict(self._compiler_options)} specified on a nested jit with name: "
                f"{self._name}"
            )
        params = dict(jaxpr=staged.closed, name=self._name, donated_invars=donated)
        if self._device is not None:
            params["device"] = self._device
        if staged.in_shardings is not None or staged.out_shardings is not None:
            n = len(staged.hoisted)
            ins = staged.in_shardings or (None,) * len(flat)
            params["in_shardings"] = (None,) * n + tuple(ins)
            params["out_shardings"] = staged.out_shardings or (None,) * len(staged.closed.out_avals)
        return staged.out_tree.unflatten(jit_p.bind(*staged.hoisted, *flat, **params))


register_boundary_code(Dispatcher._dispatch.__code__)  # NOTE: [traceback boundaries]


def _unread_committed(flat, read) -> bool:
    """Whether an argument the program does not read is a committed or sharded device Array."""
    if read is None:
        return False
    for x, r in zip(flat, read):
        if not r and type(x) is Array and x._buffer is not None and x._buffer._committed:
            return True
    return False


def _kept(flat, read) -> list:
    return [x for x, r in zip(flat, read) if r]


def _merge(static_key, dyn_args) -> tuple:
    """Positional arguments from ``_split``'s static pairs and the dynamic ones."""
    if not static_key:
        return tuple(dyn_args)
    statics = dict(static_key)
    it = iter(dyn_args)
    return tuple(statics[i] if i in statics else next(it) for i in range(len(dyn_args) + len(statics)))


def _wait(res) -> None:
    # NOTE: [synchronous CPU dispatch]: the outputs of a call that read NumPy arguments.
    if type(res) is dict:
        for bufs in res.values():
            for b in bufs:
                b.block_until_ready()
    else:
        res.block_until_ready()


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True
