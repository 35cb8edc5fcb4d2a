"""Top-level utilities of JAX's namespace: ``typeof``, ``named_scope``/``named_call``,
``ensure_compile_time_eval``, ``clear_caches``, ``live_arrays``, ``effects_barrier``,
``print_environment_info``; ``ds`` (defined with indexing, funcgrad/numpy/indexing.py).

Layer: surface. Imports the kernel (the current trace, the source-info state equations record
their scope in, the cache registry), ``funcgrad.jitting`` and ``xla_bridge`` (platform names).

>>> import funcgrad, funcgrad.numpy as fnp
>>> typeof(fnp.ones((2, 3), dtype="float32"))
ShapedArray(float32[2,3])
"""

from __future__ import annotations

import contextlib
import functools
import gc
import platform as _platform
import sys
from collections.abc import Callable

import numpy as np

import funcgrad
from funcgrad import xla_bridge
from funcgrad._api_util import abstractify, is_abstract
from funcgrad._devices import default_backend, devices, process_count
from funcgrad._ref_scopes import HITYPES
from funcgrad._sharding_types import with_default_sharding  # typeof's sharding where the type has none
from funcgrad.kernel import caches, core, custom_dispatch
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import source_info_config
from funcgrad.numpy._dtypes import ExtendedArray
from funcgrad.numpy.indexing import dslice as ds  # (jax.ds: a slice whose start may be traced)
from funcgrad.ref import Ref, abstract_ref
from funcgrad.xla_bridge import runtime_tokens

__all__ = [
    "clear_caches",
    "ds",
    "effects_barrier",
    "ensure_compile_time_eval",
    "live_arrays",
    "named_call",
    "named_scope",
    "print_environment_info",
    "typeof",
]


def typeof(x) -> core.ShapedArray:
    """The abstract value (shape, dtype, weak type, sharding) of an array, a scalar or a traced
    value; ``.sharding`` is a ``NamedSharding`` over an abstract mesh, as JAX's (replicated where
    the type holds none, NOTE: [sharding in types]).

    >>> import funcgrad
    >>> typeof(1.0)
    ShapedArray(float64[], weak_type=True)
    >>> funcgrad.jit(lambda x: print(typeof(x)) or x)(np.zeros(3, np.int32)).shape
    int32[3]
    (3,)
    >>> typeof(np.zeros((2, 3))).sharding.spec
    P(None, None)
    """
    if isinstance(x, ExtendedArray | Ref):  # typed PRNG keys: ShapedArray(key<fry>[]); Ref{...}
        return x.aval
    if getattr(x, "is_ref", False) and is_abstract(x):  # ShapeDtypeStruct(is_ref=True): Ref{...}
        return abstract_ref(x).aval
    if type(x) in HITYPES:  # a registered high-level type (funcgrad.experimental.hijax)
        return HITYPES[type(x)](x)
    if not core.is_array_like(x) and not isinstance(x, core.Tracer) and is_abstract(x):
        return abstractify(x)  # a ShapeDtypeStruct (or an aval) stands for its type, as in JAX
    if isinstance(x, list | tuple | dict):  # (a container is not an array: JAX's TypeError)
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type")
    return with_default_sharding(x, core.get_aval(x))


@contextlib.contextmanager
def named_scope(name: str):
    """Equations staged inside the block (under ``jit``, ``make_jaxpr``, ``grad``'s staging)
    record ``name`` in their source information; scopes nest as ``outer/inner``. The scope shows
    in ``jaxpr.pretty_print(name_stack=True)`` and wherever a staged equation's source line is
    reported (``check_finite``'s errors, ``memory_report``, ``graph``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> def f(x):
    ...     with named_scope("layer1"):
    ...         with named_scope("act"):
    ...             return fnp.tanh(x)
    >>> print(funcgrad.make_jaxpr(f)(1.0).pretty_print(name_stack=True))
    { lambda ; a:f64[]. let b:f64[] = tanh a in (b,) } # [layer1/act]
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a string, got {type(name).__name__}")
    outer = source_info_config.name_stack
    source_info_config.name_stack = f"{outer}/{name}" if outer else name
    try:
        yield
    finally:
        source_info_config.name_stack = outer


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` running inside ``named_scope(name)`` (by default its ``__name__``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> g = named_call(fnp.exp, name="head")
    >>> print(funcgrad.make_jaxpr(g)(0.0).pretty_print(name_stack=True))
    { lambda ; a:f64[]. let b:f64[] = exp a in (b,) } # [head]
    """
    if not callable(fun):
        raise TypeError(f"named_call expects a callable, got {type(fun).__name__}")
    scope = name if name is not None else getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)

    return named


class _ConstantFoldingTrace(core.Trace):
    """``ensure_compile_time_eval``'s trace (JAX 0.10's eager constant folding): a primitive whose
    operands are all concrete is computed now, eagerly; one with a traced operand goes on to the
    enclosing trace (it is staged, differentiated... as outside the block)."""

    def process_primitive(self, primitive, args, params):
        for a in args:
            if isinstance(a, core.Tracer):
                return self.process_on_parent(primitive, args, params)
        with core.set_current_trace(core.EvalTrace(None)):
            return primitive.bind(*args, **params)

    def process_custom_call(self, call):
        """A custom_jvp/custom_vjp function of concrete arguments runs now, on them (JAX's test:
        its body may read them); one of traced arguments goes to the enclosing trace."""
        if not any(isinstance(a, core.Tracer) for a in call.flat):
            try:
                with core.set_current_trace(core.EvalTrace(None)):
                    return call.run()
            except core.UnexpectedTracerError:
                pass  # (it closes over a traced value: as outside the block)
        with core.set_current_trace(self.parent):
            return custom_dispatch.process_custom_call(call)

    def describe(self) -> str:
        return "ensure_compile_time_eval()"


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside the block, operations on concrete values are computed at once (in Python, at
    trace time) even under ``jit``: their results are concrete, so they can steer Python control
    flow or size a shape. An operation on a value traced by an enclosing transformation is traced
    as outside the block (as in JAX 0.10).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @funcgrad.jit
    ... def f(x):
    ...     with ensure_compile_time_eval():
    ...         n = int(fnp.sum(fnp.arange(4)))  # concrete: 6
    ...         y = fnp.sin(x)  # traced: x is jit's argument
    ...     return fnp.zeros(n) + y
    >>> f(0.0).shape
    (6,)
    """
    with core.new_trace(_ConstantFoldingTrace):
        yield


def clear_caches() -> None:
    """Forget every traced and compiled program: empties every cache registered with the kernel's
    registry (NOTE: [caches have an owner] in ``funcgrad/kernel/caches.py``) -- each jitted
    function's cache, the compiled programs and executables, eager ``grad``'s programs and plans,
    the surface templates, closure conversions. Later calls trace and compile again. The
    persistent on-disk compilation cache is left alone, as in JAX.

    >>> import funcgrad
    >>> f = funcgrad.jit(lambda x: x + 1)
    >>> _ = f(1.0); clear_caches(); f.cache_info().currsize
    0
    """
    caches.clear_all()


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every ``Array`` object alive now and not deleted (a donated argument is not live: JAX's
    list holds live buffers), or those of one ``platform`` (``"cpu"``, ``"cuda"`` or ``"gpu"``):
    an array computed on a device belongs to that device's platform, one held on the host (an
    eager result) to the default backend, where jit would put it.

    >>> import funcgrad.numpy as fnp
    >>> x = fnp.arange(3.0)
    >>> any(a is x for a in live_arrays()), any(a is x for a in live_arrays(default_backend()))
    (True, True)
    """
    arrays = [o for o in gc.get_objects() if type(o) is Array and not o.is_deleted()]
    if platform is None:
        return arrays
    want, default = xla_bridge.normalize_platform(platform), xla_bridge.default_platform()
    known = {"cpu", default} | {xla_bridge.normalize_platform(d.platform) for d in devices()}
    if want not in known:
        raise ValueError(f"live_arrays: no backend {platform!r}; the backends are {sorted(known)}")
    return [a for a in arrays if _platform_of(a, default) == want]


def effects_barrier() -> None:
    """Wait until every computation dispatched so far that has side effects has finished, its host
    callbacks included (``debug.print``, ``debug.callback``, ``io_callback``, ``pure_callback``),
    as ``jax.effects_barrier`` does: on one device or several, whether or not the program has
    results (a print-only program too). Like JAX, it waits on the runtime tokens those executions
    return (NOTE: [runtime tokens] in xla_bridge/runtime_tokens.py), not on arrays: a program
    without side effects is waited for by reading its results (``block_until_ready``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> funcgrad.jit(lambda x: funcgrad.debug.print("x = {}", x))(fnp.ones(2)); effects_barrier()
    x = [1. 1.]
    """
    runtime_tokens.wait_all()


def _platform_of(a: Array, default: str) -> str:
    """The backend an array lives on; a host-held one counts for the default backend."""
    if a._buffer is None:
        return default
    (device, *_) = a.devices()
    return xla_bridge.normalize_platform(device.platform)


# The JAX release whose public API funcgrad follows (``funcgrad.as_jax``'s ``jax.__version__``).
JAX_API_VERSION = "0.10.2"


def print_environment_info(return_string: bool = False) -> str | None:
    """Versions, devices and platform for bug reports, in JAX's layout (``jax:`` names the JAX
    API funcgrad follows, the ``jax.__version__`` of ``funcgrad.as_jax``), after funcgrad's own.

    >>> text = print_environment_info(return_string=True)
    >>> "jax:    0.10.2" in text and "jaxlib: " in text
    True
    """
    import jaxlib  # not a funcgrad module: loaded only when printing

    devs = devices()
    text = (
        f"funcgrad: {funcgrad.__version__}\n"
        f"jax:    {JAX_API_VERSION}\n"  # (JAX's layout from here)
        f"jaxlib: {jaxlib.__version__}\n"
        f"numpy:  {np.__version__}\n"
        f"python: {sys.version}\n"
        f"device info: {default_backend()}-{len(devs)}, {len(devs)} local devices\n"
        f"process_count: {process_count()}\n"
        f"platform: {_platform.uname()}\n"
    )
    if return_string:
        return text
    print(text)
    return None
