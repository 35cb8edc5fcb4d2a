"""``jit``: stage a function to a jaxpr once per input signature and run it compiled by XLA.

Layer: surface. Imports the kernel (tracing, pytrees), ``xla_bridge`` (``dispatch`` and the
package's lazy public functions), ``ref``, the sharding modules, ``_aot``, ``_trace_key``,
``_jit_params`` (``jit``'s parameters resolved and checked: static and donated arguments, compiler
options, sharding trees), ``_jit_route`` (the flags and the redirect rows of the call route,
NOTE: [jit flags]) and ``_jit_staging`` (the trace cache and tracing). The module is named
``jitting`` so that ``funcgrad.jit`` is always the function (a submodule named ``jit`` would rebind
the package attribute when imported).

The bridge owns the call (NOTE: [jitted call route] in xla_bridge/dispatch.py); the staging half
of a jitted function -- split the arguments, flatten, look the input signature up in the trace
cache and trace on a miss, the bridge's ``_stage`` -- is ``_jit_staging.JitStaging``, the base of
``PjitFunction``. What this module adds is the user API: ``jit`` and its parameters, each honoured
or refused; the sharing of ``jit(f)`` made twice for the same ``f`` and options (as in JAX: NOTE:
[jit instances hold their function weakly]); the call's handling of Refs, key reuse and
``inline`` around the bridge's route; pickling; and the entry points of the AOT API (``trace``,
``lower``, ``eval_shape``). The stages themselves (``Traced``, ``Lowered``, ``CompiledCall``,
``ShapeDtypeStruct``) are ``funcgrad._aot``'s and the trace cache's key is built by
``funcgrad._trace_key``: both a floor below this module, which re-exports the stages' public names
where they have always been.
"""

from __future__ import annotations

import collections
import functools
import inspect
import weakref
from collections.abc import Callable, Sequence

from funcgrad import _key_reuse, kernel, xla_bridge
from funcgrad._aot import (
    ArgInfo,
    CompiledCall,
    Lowered,
    ShapeDtypeStruct,
    Traced,
    _RefStaged,
    abstract_keys,
    result_paths,  # noqa: F401 - re-exported (funcgrad.export)
)
from funcgrad._jit_params import (
    _check_sharding_tree,
    _compiler_options,
    argument_options,
)
from funcgrad._jit_route import _jit_flags  # noqa: F401 - NOTE: [jit flags]; read here by tests
from funcgrad._jit_staging import JitStaging
from funcgrad._ref_scopes import is_stateful_arg
from funcgrad._shardings import (
    Sharding,
    sharding_leaves,
)
from funcgrad._trace_key import CacheInfo, RetraceWarning, _as_tuple
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import CacheGroup, register_cache
from funcgrad.kernel.custom_derivatives import custom_vjp_in
from funcgrad.kernel.partial_eval import StagingTrace
from funcgrad.ref import Ref
from funcgrad.xla_bridge.dispatch import NonHashableStaticArgumentError

__all__ = [
    "ArgInfo",
    "CacheInfo",
    "CompiledCall",
    "JittedFunction",
    "Lowered",
    "NonHashableStaticArgumentError",
    "RetraceWarning",
    "ShapeDtypeStruct",
    "Traced",
    "jit",
]


class PjitFunction(JitStaging):
    """The result of ``jit(f)``: call it like ``f``. Its type has the name of JAX's jitted-function
    type (``jaxlib``'s ``PjitFunction``, which libraries read: chex's ``is_traceable``); it is
    funcgrad's pjit, ``jit`` with shardings (``JittedFunction`` is the same class).

    ``.lower(*args)`` gives the StableHLO (``.as_text()``) and ``.compile()``; ``.trace(*args)``
    the jaxpr; ``.eval_shape(*args)`` the output shapes; ``.cache_info()`` the trace cache's hits
    and misses. Calls go through the bridge's dispatcher (NOTE: [jitted call route]).
    """

    # The function lives outside the instance dict: the dict is the state ``jit(f)`` made twice
    # shares, and it must not keep ``f`` alive (NOTE: [jit instances hold their function weakly]).
    __slots__ = ("_fun", "__wrapped__")

    def __init__(
        self,
        fun,
        static_argnums=None,
        static_argnames=None,
        donate_argnums=None,
        donate_argnames=None,
        device=None,
        in_shardings=None,
        out_shardings=None,
    ):
        # The wrapped function's name and docstring, and its own attributes as jax's jit keeps
        # them -- except any that would replace this object's (a callable object with a
        # ``_call`` or ``_name`` attribute must not overwrite the dispatcher's).
        functools.update_wrapper(self, fun, updated=())
        for key, value in getattr(fun, "__dict__", {}).items():
            if not hasattr(self, key):
                setattr(self, key, value)
        self._fun = fun
        self._init_options = (
            static_argnums, static_argnames, donate_argnums, donate_argnames, device, in_shardings,
            out_shardings,
        )  # fmt: skip
        name = getattr(fun, "__name__", None) or type(fun).__name__
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
            if donate_argnames is not None:  # (JAX's error: names need the signature)
                raise ValueError(
                    f"Getting the signature of function {fun} failed. Pass donate_argnums instead of "
                    "donate_argnames."
                ) from None
        nums, names, donate, donate_names, n_named = argument_options(
            name, self._signature, static_argnums, static_argnames, donate_argnums, donate_argnames
        )
        self._donate_argnums = tuple(sorted(donate))
        self._donate_names = frozenset(donate_names)
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        super().__init__(
            name,
            sorted(nums),
            sorted(names),
            donate=bool(donate or donate_names),
            device=device,
            named_positional=n_named,
        )
        _functions.add(self)

    def __reduce__(self):
        # As JAX's jitted functions, a jitted function pickles (with cloudpickle for a local
        # function) as its function and options; the unpickled one has an empty cache.
        init_args = (self._fun, *self._init_options)
        return (_unpickle_jitted, (type(self), init_args, getattr(self, "_compiler_options", None)))

    def __del__(self):
        # The call counter lives in the C base, outside the shared state: kept for the next
        # instance on this state (NOTE: [jit instances hold their function weakly]).
        # (try, not contextlib.suppress: at interpreter exit the module's globals may be None)
        try:
            self.__dict__["_calls_at_exit"] = self._native_calls
        except Exception:
            pass

    @classmethod
    def _adopt(cls, fun, state: dict):
        """A jitted ``fun`` whose state (caches, compiled programs, options) is ``state``: the
        instance dict of an earlier ``jit(fun)`` that has been collected."""
        self = cls.__new__(cls)
        self.__dict__ = state
        self._fun = self.__wrapped__ = fun
        self._native_calls = state.pop("_calls_at_exit", 0)  # (the C counter: cache_info's hits)
        owner = state.get("_owner_ref")  # the native dispatcher's way back (xla_bridge/dispatch.py)
        if owner is not None:
            owner[0] = weakref.ref(self)
        _functions.add(self)
        return self

    def _call(self, args, kwargs):
        # Under jax_debug_nans/debug_infs the checking trace may run the function's Python again
        # (JAX's de-optimized call: funcgrad/debug.py, ``FiniteCheckTrace.jitted_call``).
        rerun = getattr(core.current_trace(), "jitted_call", None)
        if rerun is not None:
            return rerun(self._fun, args, kwargs, lambda: self._call_compiled(args, kwargs))
        if _key_reuse.active():
            return self._call_key_checked(args, kwargs)
        return self._call_compiled(args, kwargs)

    def _call_key_checked(self, args, kwargs):
        # NOTE: [key reuse]: the keys the function consumes (its trace's summary) are checked and
        # marked before it runs, at every call; its key results get their cells after.
        staged = self._stage(args, kwargs)[0]
        effects = getattr(staged, "key_reuse", None)
        if effects is None:
            return self._call_compiled(args, kwargs)
        operands = _key_reuse.keys_in((args, kwargs))
        _key_reuse.apply_effects(effects, operands, None, "jit")
        out = self._call_compiled(args, kwargs)
        _key_reuse.apply_effects(effects, operands, _key_reuse.keys_in(out), None)
        return out

    # NOTE: [jitted calls with Refs under a transformation]
    # A jitted function whose program reads or writes Refs it closes over, called under grad or
    # vmap, is staged once (its Python runs once on a cache miss, as JAX's) and its program is
    # evaluated equation by equation at that transformation, not bound as one ``jit`` equation:
    # a Ref's final value computed from values the transformation does not touch stays a plain
    # value, written back as JAX writes it (a ``jit`` equation's every output would be the
    # transformation's). So is a call given Refs as arguments there, unless its program holds a
    # custom_vjp (or a mutable box is among the arguments): a custom_vjp that saves such a Ref for
    # ``bwd`` (JAX's gradient-statistics plumbing) must write the caller's Ref when the backward
    # pass runs, and in the staged program it holds the trace's stand-in for it (NOTE: [refs are
    # functionalised at trace time]); such a call runs the function itself, its Python at every
    # call (JAX's at a cache miss).
    def _call_compiled(self, args, kwargs):
        # The staged route, around which a program that reads or writes Refs reads them before
        # and writes them back after (NOTE: [refs are functionalised at trace time]).
        current = core.current_trace()
        transformed = type(current) is not core.EvalTrace and not isinstance(current, StagingTrace)
        staged = None
        if transformed:
            leaves = tu.tree_leaves((args, kwargs))
            if any(is_stateful_arg(x) and type(x) is not Ref for x in leaves):
                return self._fun(*args, **kwargs)  # (a mutable box argument)
            if any(type(x) is Ref for x in leaves):
                staged, flat, donated = self._stage(args, kwargs)
                # (NOTE: [jitted calls with Refs under a transformation]; the first such call
                # runs the Python twice: staged, then itself)
                if custom_vjp_in(staged.closed.jaxpr):
                    return self._fun(*args, **kwargs)
        if staged is None:
            staged, flat, donated = self._stage(args, kwargs)
        if type(staged) is not _RefStaged:
            try:
                return self._run(staged, flat, donated)
            except OverflowError:
                self._overflowing_argument(args, kwargs, flat)
                raise
        plan = staged.plan
        values = plan.inputs(flat)
        if transformed:  # NOTE: [jitted calls with Refs under a transformation]
            closed = staged.closed
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *staged.hoisted, *values)
            out, finals = staged.out_tree.unflatten(outs)
        else:
            out, finals = self._run(staged, values, (False,) * (len(staged.hoisted) + len(values)))
        plan.write_back(flat, finals)
        return out

    _inline = False  # (jit(inline=True): set by ``jit``)

    def _run(self, staged, flat, donated):
        if (
            self._inline
            and type(core.current_trace()) is not core.EvalTrace
            and self._plain_placement(staged)
        ):
            # jit(inline=True) inside a trace: the equations themselves, no ``jit`` equation
            outs = core.eval_jaxpr(staged.closed.jaxpr, staged.closed.consts, *staged.hoisted, *flat)
            return staged.out_tree.unflatten(outs)
        return super()._run(staged, flat, donated)

    def _plain_placement(self, staged) -> bool:
        return self._device is None and staged.in_shardings is None and staged.out_shardings is None

    def _overflowing_argument(self, args, kwargs, flat) -> None:
        """JAX's OverflowError for a Python int argument its integer type cannot hold."""
        bound = 2**63 if _dt.x64_enabled else 2**31
        for i, leaf in enumerate(flat):
            if type(leaf) is int and not -bound <= leaf < bound:
                static_key, _, dyn_args, dyn_kwargs = self._split(args, kwargs, check=False)
                path = self._arg_names(static_key, dyn_args, dyn_kwargs)[i]
                raise OverflowError(
                    "An overflow was encountered while parsing an argument to a jitted computation, "
                    f"whose argument path is {path}. Got {type(leaf)} with value {leaf}"
                ) from None

    # -- ahead-of-time API ---------------------------------------------------------------------

    def trace(self, *args, **kwargs) -> Traced:
        """The traced program for these arguments (from the cache when possible).

        >>> import funcgrad.numpy as fnp
        >>> print(jit(fnp.sin).trace(1.0).jaxpr)
        { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
        """
        args, kwargs = abstract_keys((args, kwargs))  # (a typed key's ShapeDtypeStruct: abstract keys)
        staged, flat, donated = self._stage(args, kwargs, abstract=True)
        _, _, dyn_args, dyn_kwargs = self._split(args, kwargs)
        _, tree = tu.tree_flatten((tuple(dyn_args), dict(dyn_kwargs)))
        n_h = len(staged.hoisted)
        flags = tuple(donated)[n_h:]
        infos = [ArgInfo(a, bool(d)) for a, d in zip(staged.closed.in_avals[n_h:], flags)]
        return Traced(self, staged, donated, flat, tu.tree_unflatten(tree, infos))

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower to StableHLO for these arguments; ``.as_text()``, ``.compile()``.

        >>> import funcgrad.numpy as fnp
        >>> "stablehlo.sine" in jit(fnp.sin).lower(1.0).as_text()
        True
        """
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """Output shapes/dtypes (``ShapeDtypeStruct`` leaves) without running anything.

        >>> import numpy as np
        >>> jit(lambda x: x.sum(0)).eval_shape(np.ones((2, 3)))
        ShapeDtypeStruct(shape=(3,), dtype=float64)
        """
        staged = self._entry(args, kwargs)[0]
        avals = staged.closed.out_avals
        shardings = [a._sharding for a in avals]
        if self._out_shardings is not None:  # (the outputs' shardings jit was asked for, as JAX's)
            tree = tu.tree_unflatten(staged.out_tree, list(avals))
            asked = sharding_leaves(self._out_shardings, tree, f"jit({self._name})", "out_shardings")
            shardings = [s if isinstance(s, Sharding) else d for s, d in zip(asked, shardings)]
        outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=s) for a, s in zip(avals, shardings)]
        return tu.tree_unflatten(staged.out_tree, outs)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    @property
    def __signature__(self):
        # The wrapped function's, as JAX's jitted functions report it: the dispatcher is a C
        # type, so inspect.signature(follow_wrapped=False) would find none (chex's fake_pmap).
        # (a callable object's own __signature__, copied by update_wrapper, is kept as given)
        given = self.__dict__.get("_given_signature")
        return given if given is not None else inspect.signature(self._fun)

    @__signature__.setter
    def __signature__(self, value):
        self.__dict__["_given_signature"] = value

    def __repr__(self):
        # JAX's text (its jitted functions are PjitFunction objects): chex's is_traceable reads it;
        # "<PjitFunction>" where the function's own repr fails, as JAX's.
        try:
            return f"<PjitFunction of {self._fun!r}>"
        except Exception:
            return "<PjitFunction>"


JittedFunction = PjitFunction


def _unpickle_jitted(cls, init_args, compiler_options):
    jitted = cls(*init_args)
    if compiler_options:
        jitted._compiler_options = compiler_options
    return jitted


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    inline: bool = False,
    device=None,
    backend: str | None = None,
    in_shardings=None,
    out_shardings=None,
    compiler_options: dict | None = None,
    **unsupported,
):
    """Compile ``fun`` with XLA; traced once per input shapes/dtypes (and static arguments).

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``. Every parameter is honoured
    or refused:

    - ``static_argnums``/``static_argnames``: parameters passed as Python values (hashable) and
      baked into the trace; a number outside the signature's positional parameters is an error
      (when the signature is known and has no ``*args``).
    - ``donate_argnums``/``donate_argnames``: the call consumes these arguments' device buffers
      (XLA reuses them for outputs), as in JAX. A donated Array an output can reuse is deleted
      afterwards (``is_deleted()``; using it raises JAX's "Array has been deleted" error saying
      what to do instead); one no output can reuse stays alive, with JAX's warning.
    - ``device`` (an element of ``funcgrad.devices()``) or ``backend`` (``"cpu"``, ``"cuda"``):
      where the computation runs; an unknown or unavailable backend, a ``device`` that is not a
      Device, or both at once raise an error naming the parameter.
    - ``in_shardings``/``out_shardings``: a ``Sharding`` (or a bare ``PartitionSpec`` inside
      ``with mesh:``) for all positional arguments/outputs, or a pytree prefix of them with
      ``None`` where the layout is left open (an argument keeps its own sharding, a value from the
      host is copied to every device; XLA picks an output's). The program is compiled once for
      all the mesh's devices and XLA's SPMD partitioner inserts the communication (NOTE: [SPMD
      call route] in xla_bridge/spmd.py); arguments laid out otherwise are resharded.
    - ``compiler_options``: XLA's options by name (``{"xla_cpu_enable_fast_math": True}``,
      ``{"optimization_level": 1}``) for the programs of this function, as JAX's: part of their
      cache key; XLA refuses an unknown name or a bad value at the first call
      (``JaxRuntimeError``: "No such compile option"). Programs over several devices are compiled
      without them.
    - ``keep_unused``: honoured -- the compiled program keeps every input, used or not (JAX may
      prune unused ones when it is False; funcgrad never does).
    - ``inline``: as JAX's, a function jitted with ``inline=True`` and called inside another
      transformation's trace puts its equations into the enclosing jaxpr instead of one ``jit``
      equation (the values are the same: XLA inlines the private function of a ``jit`` equation
      when it compiles the enclosing program anyway).

    >>> import funcgrad.numpy as fnp
    >>> f = jit(lambda x: fnp.sin(x) ** 2 + fnp.cos(x) ** 2)
    >>> float(f(1.0))
    1.0
    >>> jit(f, backend="cpu")(0.5).tolist()
    1.0
    """
    if unsupported:
        raise TypeError(f"jit got unsupported options {sorted(unsupported)}")
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            keep_unused=keep_unused,
            inline=inline,
            device=device,
            backend=backend,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            compiler_options=compiler_options,
        )
    if isinstance(fun, staticmethod):  # (JAX's errors, in its words)
        raise TypeError(f"staticmethod arguments are not supported, got {fun}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function: {fun}")
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")  # (JAX's words)
    placement = None
    if device is not None or backend is not None:
        # (JAX's refusals, in its words: a placement and shardings or two placements)
        if device is not None and backend is not None:
            raise ValueError(
                f"can't specify both a device and a backend for jit, got device={device!r} and "
                f"backend={backend!r} (give device= or backend=, not both)"
            )
        for what, given in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
            if given is not None:
                raise ValueError(
                    f"If backend or device is specified on jit, then {what} should not be specified."
                )
        try:
            placement = xla_bridge.resolve_device(device, backend)
        except (TypeError, ValueError) as e:
            name = getattr(fun, "__name__", None) or type(fun).__name__
            raise type(e)(f"jit({name}): {e}") from None
    options = _compiler_options(compiler_options)
    if in_shardings is not None or out_shardings is not None or options:
        _check_sharding_tree(in_shardings, "in_shardings")
        _check_sharding_tree(out_shardings, "out_shardings")
        jitted = JittedFunction(
            fun,
            static_argnums,
            static_argnames,
            donate_argnums,
            donate_argnames,
            placement,
            in_shardings,
            out_shardings,
        )
        jitted._compiler_options = options  # (its programs' cache keys hold them)
        jitted._keep_unused = keep_unused
        return jitted
    # As in JAX, jit(f) made twice shares one cache: `jit(f)(x)` in a loop traces once.
    config = tuple(_as_tuple(v) for v in (static_argnums, static_argnames, donate_argnums, donate_argnames))
    key = (id(fun), config, placement, bool(inline), bool(keep_unused))
    hit = _instances.get(key)
    if hit is not None and hit[0]() is fun:
        _instances.move_to_end(key)
        jitted = hit[1]()
        if jitted is None:  # (collected, `fun` alive: a new instance on the same state)
            jitted = JittedFunction._adopt(fun, hit[2])
            hit[1] = weakref.ref(jitted)
        return jitted
    jitted = JittedFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames, placement)
    jitted._inline = bool(inline)
    if keep_unused:  # (NOTE: [unread arguments choose no devices]: all of them do)
        jitted._keep_unused = True
    try:
        fun_ref = weakref.ref(fun, functools.partial(_drop_instance, key))
    except TypeError:
        return jitted  # (no weak reference to it: its jit objects share nothing)
    _instances[key] = [fun_ref, weakref.ref(jitted), jitted.__dict__]
    if len(_instances) > _MAX_INSTANCES:
        _instances.popitem(last=False)
    return jitted


# NOTE: [jit instances hold their function weakly]
# `jit(f)` made twice shares one state (traces, compiled programs), as JAX's weakref_lru_cache
# keyed on `f`: `_instances` maps (id(f), options) to [weakref(f), weakref(jitted), jitted's
# instance dict]. Only the jitted object holds `f` (in slots, outside that dict), so deleting
# the last jitted function (and `f`) frees `f`, its closure and the compiled programs at once,
# as in JAX (api_test's test_jit_reference_dropping); while `f` lives, `jit(f)` again gets the
# live jitted object, or a new one adopting the state. Nothing in the dict may refer to the
# instance strongly: the native dispatcher reaches it through a weak cell (`_owner_ref`,
# xla_bridge/dispatch.py's `_weak_miss`).
_instances: collections.OrderedDict = register_cache("jit.instances", collections.OrderedDict())


def _drop_instance(key, fun_ref, instances=_instances) -> None:
    # (`instances` bound here: at interpreter exit the module's globals may be gone)
    entry = instances.get(key)
    if entry is not None and entry[0] is fun_ref:  # (not a later function given the same id)
        del instances[key]


def library_jit(fun: Callable, **options) -> JittedFunction:
    """``jit(fun, **options)`` for a function the library jits on its caller's behalf (a sampler,
    a special function JAX jits): its retraces follow the shapes and dtypes the caller chose, so it
    never gives jit's retrace warning (JAX has none for them).

    >>> import funcgrad.numpy as fnp
    >>> float(library_jit(fnp.sin)(0.0))
    0.0
    """
    jitted = jit(fun, **options)
    jitted._warned = True  # the warning's once-only flag: already given
    return jitted


kernel.register(library_jit=library_jit)  # NOTE: [eager library functions as one program]


_MAX_INSTANCES = 256
# Each jitted function's traced and compiled programs (NOTE: [caches have an owner]).
_functions = register_cache(
    "jit.functions", CacheGroup(clear_owner=lambda f: f.clear_cache(), size_of=lambda f: f._cache_size())
)
