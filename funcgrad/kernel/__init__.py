"""The kernel: the IR, tracing, the transformations, pytrees, dtypes and the ``Array`` type.

Layer: kernel (bottom). Modules under ``funcgrad/kernel/`` import numpy, ml_dtypes, jaxlib's
standalone pytree extension and each other -- never ``primitives``, ``xla_bridge`` or any surface
module (the import-linter contract in pyproject.toml, checked by a test).

- ``ir``: avals, Var/Literal/JaxprEqn/Jaxpr/ClosedJaxpr, the type checker, the printer
- ``core``: ``Primitive``, traces, the current trace (re-exporting the modules split out of it:
  ``errors``, the tracer errors; ``values``, ``Tracer`` and ``get_aval``; ``eager_step``, an eager
  primitive's host step; ``leaks``, the leak checker; ``source_info``, source lines;
  ``jaxpr_eval``, ``eval_jaxpr``)
- ``partial_eval``: staging Python to jaxprs, partial evaluation
- ``ad``: jvp, linearize, transposition; ``batching``: vmap
- ``callkit``: the rules of primitives that carry a jaxpr (jit, checkpoint, ...), dependency sweeps
- ``custom_derivatives``: custom_jvp / custom_vjp
- ``recording``: eager ``grad``'s recording trace and its cache of derivative programs;
  ``simplify``: CSE, constant folding and ``x * 1`` removal for programs interpreted many times
- ``library_programs``: ``jitted_eagerly``, a library function JAX jits run eagerly as one
  compiled program (NOTE: [eager library functions as one program])
- ``tree_util``, ``dtypes``, ``array``; ``hooks``: what the upper layers registered

The upper layers hand the kernel what it needs through ``register`` (NOTE: [kernel registration]
in ``hooks.py``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from funcgrad.kernel import core as _core
from funcgrad.kernel.array import Array as _Array
from funcgrad.kernel.hooks import _PROVIDERS, hooks


def register(
    *,
    array_ops: dict[str, Callable] | None = None,
    jit_impl: Callable | None = None,
    device_to_numpy: Callable | None = None,
    eager_on_devices: Callable | None = None,
    buffer_placed: Callable | None = None,
    eager_compiled: Callable | None = None,
    library_dir: str | None = None,
    sharding_types: tuple[Callable, Callable] | None = None,
    array_methods: dict[str, Callable] | None = None,
    array_properties: dict[str, Callable] | None = None,
    catalog: frozenset | None = None,
    mode_key: tuple[tuple[str, ...], Callable[[], tuple]] | None = None,
    default_precision: Callable | None = None,
    aliased_ref_error: Callable | None = None,
    state_discovery: Callable | None = None,
    library_jit: Callable | None = None,
    array_interface: type | None = None,
) -> None:
    """Hand the kernel what an upper layer provides (NOTE: [kernel registration]).

    - ``array_ops``: the array operations the transformations need (``primitives``);
    - ``jit_impl``: how an eager ``jit`` call runs (``xla_bridge``; until then it is interpreted);
    - ``device_to_numpy``: how a device-backed ``Array`` reads its buffer (``xla_bridge``);
    - ``eager_on_devices``: how an eager primitive with a device-backed operand runs where that
      operand lives, or ``NotImplemented`` to run on the host (``xla_bridge``: values sharded
      over several devices stay there, as computation follows data in JAX);
    - ``buffer_placed``: whether a device buffer's value is computed where it lives (committed,
      or over several devices) rather than on the host (``xla_bridge``);
    - ``eager_compiled``: how an eager primitive runs compiled on its own (``xla_bridge``), for
      operands NumPy cannot compute (NOTE: [narrow dtypes on the host]);
    - ``sharding_types``: ``(apply_sharding, aval_sharding, default_sharding)``, the output
      shardings of a staged equation, the sharding of a device buffer's abstract value on explicit
      mesh axes, and what ``ShapedArray.sharding`` reads where the type holds none (the surface's
      ``funcgrad._sharding_types``, NOTE: [sharding in types]);
    - ``library_dir``: a directory whose frames are library code, skipped in source lines;
    - ``array_methods`` / ``array_properties``: operators, methods and properties installed on
      ``Array`` and on every ``Tracer`` (the NumPy surface);
    - ``catalog``: the primitives of the catalog (``primitives``), whose operands are arrays unless
      their traits say otherwise (a token operand is refused there, NOTE: [tokens]).
    - ``mode_key``: ``(names, key)``, the settings that change what a trace makes (the 64-bit
      mode, the promotion flags, the matmul precision: ``funcgrad._config``) and the function of
      their values in the calling thread, in that order, which ``jit``'s and control flow's trace
      caches key on (jit's cache-miss explanation names them);
    - ``default_precision``: what a dot's ``precision=None`` stands for in the calling thread
      (``funcgrad._config``'s ``jax_default_matmul_precision``);
    - ``aliased_ref_error``: the error for one Ref passed at two places of a traced function, in
      JAX's words (``funcgrad._ref_errors``; NOTE: [held state operands]);
    - ``state_discovery``: ``() -> context manager`` entered inside a trace, through which the Refs
      touched there from outside become its extra inputs and outputs (``funcgrad._ref_scopes``;
      NOTE: [state written by a backward pass]);
    - ``library_jit``: ``jit`` for a function the library jits on its caller's behalf
      (``funcgrad.jitting``; NOTE: [eager library functions as one program]);
    - ``array_interface``: the class standing for arrays and tracers in ``isinstance`` checks and
      annotations (the surface's ``funcgrad.Array``, JAX's ``jax.Array``). It gets every operator,
      method and property of ``Array`` as an abstract member, as JAX's base class has them
      (``_set_array_abstract_methods``): ``funcgrad.Array.sum`` is named and documented as the
      method and raises NotImplementedError when called (penzai wraps ``getattr(jax.Array,
      name)`` for each method).

    >>> import funcgrad.kernel as kernel
    >>> kernel.hooks.add_any is not None  # registered by the catalog (imported by the doctests)
    True
    """
    if array_ops:
        unknown = set(array_ops) - set(_PROVIDERS)
        if unknown:
            raise TypeError(f"register: unknown kernel array operations {sorted(unknown)}")
        for name, fn in array_ops.items():
            setattr(hooks, name, fn)
    if jit_impl is not None:
        hooks.jit_impl = jit_impl
    if device_to_numpy is not None:
        hooks.device_to_numpy = device_to_numpy
    if eager_on_devices is not None:
        hooks.eager_on_devices = eager_on_devices
    if buffer_placed is not None:
        hooks.buffer_placed = buffer_placed
    if eager_compiled is not None:
        hooks.eager_compiled = eager_compiled
    if sharding_types is not None:
        hooks.apply_sharding, hooks.aval_sharding, hooks.default_sharding = sharding_types
    if catalog is not None:
        hooks.catalog = frozenset(catalog)
    if mode_key is not None:
        hooks.mode_names, hooks.mode_key = mode_key
    if default_precision is not None:
        hooks.default_precision = default_precision
    if aliased_ref_error is not None:
        hooks.aliased_ref_error = aliased_ref_error
    if state_discovery is not None:
        hooks.state_discovery = state_discovery
    if library_jit is not None:
        hooks.library_jit = library_jit
    if array_interface is not None:
        hooks.array_interfaces = (*hooks.array_interfaces, array_interface)
        for name in _BASE_MEMBERS:  # the concrete class's own, as JAX's base class declares them
            member = inspect.getattr_static(_Array, name)
            is_property = isinstance(member, property)
            _declare_abstract(array_interface, name, member.fget if is_property else member, is_property)
        for name, (fn, is_property) in hooks.array_members.items():  # those installed before
            _declare_abstract(array_interface, name, fn, is_property)
    for name, fn in (array_methods or {}).items():
        hooks.array_members[name] = (fn, False)
    for name, fget in (array_properties or {}).items():
        hooks.array_members[name] = (fget, True)
    for interface in hooks.array_interfaces:
        for name, fn in (array_methods or {}).items():
            _declare_abstract(interface, name, fn, False)
        for name, fget in (array_properties or {}).items():
            _declare_abstract(interface, name, fget, True)
    if library_dir is not None and library_dir not in hooks.library_dirs:
        hooks.library_dirs = (*hooks.library_dirs, library_dir)
    for cls in (_Array, _core.Tracer):
        own_hash = cls.__dict__.get("__hash__")
        # A tracer's methods refuse a leaked tracer first, as JAX's jitted ones do (even those whose
        # result would be the tracer itself: x.ravel() of a vector); an Array's stay as they are.
        live = (lambda fn: fn) if cls is _Array else _live_method
        for name, fn in (array_methods or {}).items():
            setattr(cls, name, fn if name in _COPY_METHODS or name in _BINDING_OPERATORS else live(fn))
        for name, fget in (array_properties or {}).items():
            setattr(cls, name, property(live(fget), doc=_summary(fget)))
        # Defining __eq__ must not make the classes unhashable in a different way than they chose.
        if own_hash is not None:
            cls.__hash__ = own_hash


# The members ``Array`` defines itself that JAX's ``jax.Array`` declares (``basearray.Array``;
# its others, ``sharding``, ``device``, ``addressable_shards``..., the surface installs).
_BASE_MEMBERS = ("dtype", "ndim", "size", "shape", "item", "__numpy_dtype__")


def _declare_abstract(interface: type, name: str, fn: Callable, is_property: bool) -> None:
    """``interface.name``: ``fn`` (a method, or a property's getter) as an abstract member that
    raises JAX's NotImplementedError, named and documented as ``fn``."""

    def abstract(*args, **kwargs):
        raise NotImplementedError(f"Cannot call abstract method {name}")

    functools.update_wrapper(abstract, fn)
    abstract.__isabstractmethod__ = True
    setattr(interface, name, property(abstract, doc=_summary(fn)) if is_property else abstract)


def _summary(fn: Callable) -> str | None:
    """The summary line of ``fn``'s docstring, a property's doc: its example calls the function by
    its own name, which doctest (it collects every property's docstring) would run, and fail, in
    the namespace of the class's module."""
    return (fn.__doc__ or "").strip().partition("\n")[0] or None


# (copying a structure that holds a leaked tracer is not using it)
_COPY_METHODS = frozenset({"__copy__", "__deepcopy__"})
# The operators that always bind a primitive, whose trace refuses a leaked tracer itself: left
# unwrapped, as the most frequent calls while tracing (``x ** 1`` returns ``x``: not among them;
# tests/surface/api/test_errors.py uses each on a leaked tracer).
_BINDING_OPERATORS = frozenset(
    f"__{r}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "matmul") for r in ("", "r")
) | frozenset({"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__", "__abs__"})


def _live_method(fn: Callable) -> Callable:
    """``fn`` as a tracer's method: a tracer whose transformation has finished is refused first, in
    JAX's words (``core.check_live``)."""

    def method(self, *args, **kwargs):
        if not self._trace.alive:
            _core.check_live(self)
        return fn(self, *args, **kwargs)

    method.__name__ = getattr(fn, "__name__", "method")
    method.__qualname__ = getattr(fn, "__qualname__", method.__name__)
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn
    return method
