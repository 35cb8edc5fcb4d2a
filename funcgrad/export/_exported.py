"""``funcgrad.export.export`` and the ``Exported`` object (JAX's ``jax.export``): a jitted
function lowered to a portable StableHLO artifact with its calling convention, and called back
from funcgrad eagerly or inside ``jit``.

Layer: surface. Imports the kernel, the catalog's ``primitives.exported``, ``xla_bridge``
(``lowering``, ``portable``, ``emitter``), ``funcgrad.jitting`` and ``funcgrad.api`` (``vjp``).

Exporting traces the jitted function once for the given arguments (arrays or
``ShapeDtypeStruct``), lowers the program with funcgrad's emitter once per target platform, and
writes the module as JAX's callers expect it (NOTE: [the exported calling convention]).
Calling an ``Exported`` checks the arguments against ``in_avals`` (structure, rank, dtype,
sizes, binding each symbolic dimension once), prepares the module for the concrete shapes
(NOTE: [embedding an exported module], cached per argument signature) and binds
``call_exported_p`` inside a ``custom_vjp`` whose backward pass calls ``Exported.vjp()``, as in
JAX; an eager call runs one jitted caller per ``Exported``. Python scalars take the exported
dtype of their kind. Symbolic argument shapes export through NOTE: [exporting with symbolic
dimensions] (``_polymorphic.py``); JAX's symbolic artifacts run here for any sizes they allow.

# NOTE: [the exported calling convention]
# Version 10 of JAX's convention (versions 9 and 10 are read): ``@main`` takes, in order, the
# platform index (an ``i32`` scalar with ``jax.global_constant = "_platform_index"``) when the
# module was lowered for several platforms, one token per ordered effect (funcgrad exports
# none), then the arguments listed in ``module_kept_var_idx``; it returns the results (each with
# a ``jax.result_info`` naming its pytree path). The module says
# ``jax.uses_shape_polymorphism``. A module for several platforms is a ``stablehlo.case`` on the
# index over one lowering per distinct lowering (platforms lowered alike share one copy, then
# the index is unused). A symbolic module's ``@main`` computes the dimension variables and calls
# ``@_wrapped_jax_export_main`` with them (NOTE: [one module for all sizes]); a module exported
# with shardings carries Shardy annotations (NOTE: [exporting with shardings]). funcgrad writes
# all arguments (none is dropped).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad import xla_bridge
from funcgrad._config import config
from funcgrad._shardings import NamedSharding
from funcgrad.api import vjp as _vjp
from funcgrad.custom_derivatives import custom_vjp
from funcgrad.export._poly_module import arg_names, check_call
from funcgrad.export._polymorphic import SymbolicExport, constraints, is_symbolic_spec, note_computed
from funcgrad.export._safety import DisabledSafetyCheck, check_custom_calls
from funcgrad.export._shape_poly import DimExpr, UnexpectedDimVar
from funcgrad.export._sharded import (
    ShardedExport,
    constraint_mesh,
    find_mesh,
    shard_map_lowering,
    with_shardings,
)
from funcgrad.jitting import JittedFunction, ShapeDtypeStruct, jit, result_paths
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import CacheGroup, register_cache
from funcgrad.kernel.dtypes import canonical, float0
from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives.elementwise import convert_element_type
from funcgrad.primitives.exported import ExportedCallee, call_exported_p
from funcgrad.xla_bridge import portable
from funcgrad.xla_bridge.emitter import aval_type
from funcgrad.xla_bridge.lapack import needs_lapack
from funcgrad.xla_bridge.lowering import lower_jaxpr

__all__ = [
    "DisabledSafetyCheck",
    "Exported",
    "default_export_platform",
    "export",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
]

minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10


def _calling_convention_version() -> int:
    """The version ``jax_export_calling_convention_version`` asks for, checked as JAX's."""
    version = config.read("jax_export_calling_convention_version")
    lo, hi = minimum_supported_calling_convention_version, maximum_supported_calling_convention_version
    if not lo <= version <= hi:
        raise ValueError(
            f"The requested export calling convention version {version} is outside the range of "
            f"supported versions [{lo}..{hi}]"
        )
    return version


def default_export_platform() -> str:
    """The platform ``export`` lowers for when none is given: the default backend's.

    >>> default_export_platform() in ("cpu", "cuda")
    True
    """
    return xla_bridge.normalize_platform(xla_bridge.default_platform())


@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
    """A function lowered to StableHLO with its calling convention (``jax.export.Exported``).

    ``fun_name``; ``in_tree``/``out_tree`` (the pytrees of ``(args, kwargs)`` and of the
    result); ``in_avals``/``out_avals`` (flat, possibly with symbolic dimensions);
    ``in_shardings_hlo``/``out_shardings_hlo`` (None per value: one device); ``nr_devices``;
    ``platforms``; ``ordered_effects``/``unordered_effects``; ``disabled_safety_checks``;
    ``mlir_module_serialized`` (the portable artifact); ``calling_convention_version``;
    ``module_kept_var_idx`` (the arguments ``@main`` takes); ``uses_global_constants``.
    ``mlir_module()`` is its text, ``call`` runs it, ``vjp()`` is the exported VJP,
    ``serialize()`` writes it in JAX's format.
    """

    fun_name: str
    in_tree: Any
    in_avals: tuple
    out_tree: Any
    out_avals: tuple
    in_shardings_hlo: tuple
    out_shardings_hlo: tuple
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple
    unordered_effects: tuple
    disabled_safety_checks: tuple
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    _get_vjp: Callable | None = None
    # (funcgrad's symbolic exports: NOTE: [exporting with symbolic dimensions])
    _symbolic: SymbolicExport | None = None
    # (exports with shardings: NOTE: [exporting with shardings])
    _sharded: ShardedExport | None = None
    # (the one-device view of a deserialized multi-device export: its sharding annotations dropped)
    _strip: bool = False

    def __post_init__(self):
        # Prepared modules by argument signature, and the jitted caller (not fields: caches).
        object.__setattr__(self, "_calls", {})
        # Fields given as ``_Lazy`` (a symbolic export's module for all sizes) are left unset,
        # so that reading one reaches ``__getattr__``, which makes it once; other reads cost nothing.
        lazy = {k: v for k, v in self.__dict__.items() if type(v) is _Lazy}
        for k in lazy:
            object.__delattr__(self, k)
        object.__setattr__(self, "_lazy", lazy)
        _calls_group.add(self)

    def __getattr__(self, name):
        # (only reached for an attribute that is not set: a lazy field not read yet)
        lazy = self.__dict__.get("_lazy", {}).get(name)
        if lazy is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = lazy.make()
        object.__setattr__(self, name, value)
        del self._lazy[name]
        return value

    def mlir_module(self, serialized: bool = True):
        """The module's StableHLO text with its locations, as JAX prints it (``serialized=False``:
        an ``ir.Module`` of jaxlib's MLIR bindings, in a context of its own)."""
        if serialized:
            return portable.deserialize(self.mlir_module_serialized, debug_info=True)
        return portable.load(self.mlir_module_serialized)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"  # (JAX's text)

    def in_shardings_jax(self, mesh=None) -> tuple:
        """The input shardings as ``NamedSharding``s over ``mesh`` (a mesh, abstract or concrete,
        of the exported mesh's shape), None where the export has none (each, for a one-device
        export)."""
        if self._sharded is not None:
            return self._sharded.shardings(
                self._sharded.in_specs, self._sharded.mesh if mesh is None else mesh
            )
        return self._shardings(self.in_shardings_hlo, mesh)

    def out_shardings_jax(self, mesh=None) -> tuple:
        """The output shardings over ``mesh``, as ``in_shardings_jax``."""
        if self._sharded is not None:
            return self._sharded.shardings(
                self._sharded.out_specs, self._sharded.mesh if mesh is None else mesh
            )
        return self._shardings(self.out_shardings_hlo, mesh)

    def _shardings(self, hlo, mesh) -> tuple:
        # (a deserialized export's NamedShardings, over their abstract mesh or the given one)
        out = []
        for s in hlo:
            if s is None or mesh is None:
                out.append(s)
                continue
            if tuple(mesh.axis_sizes) != tuple(s.mesh.axis_sizes):
                raise ValueError(
                    f"in_shardings_jax: the mesh {mesh} does not have the exported mesh's shape {s.mesh}"
                )
            out.append(NamedSharding(mesh, s.spec, memory_kind=s._memory_kind))
        return tuple(out)

    def has_vjp(self) -> bool:
        """Whether ``vjp()`` is available (not after deserializing with ``vjp_order=0``)."""
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP: takes the primal arguments and the output cotangents (flat), returns
        the input cotangents (flat)."""
        if self._get_vjp is None:
            raise ValueError(
                f"No VJP is available for {self.fun_name}: it was deserialized from a serialization "
                "without one; serialize with vjp_order >= 1 to differentiate it"
            )
        return self._get_vjp(self)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """JAX's flatbuffer serialization (``jax.export.deserialize`` reads it), with the VJPs up to
        ``vjp_order`` (2 allows ``grad(grad(...))`` of the deserialized function)."""
        # The format lives in funcgrad/export/_serialization.py, which imports this module and
        # registers its writer here when it is imported (the package imports it).
        return _serializer[0](self, vjp_order=vjp_order)

    def call(self, *args, **kwargs):
        """Call the exported function on arrays (eagerly, or inside ``jit``/``grad``/``vmap``):
        arguments with the pytree structure, ranks and dtypes it was exported for; symbolic
        dimensions take the sizes of the arguments."""
        return _call(self, args, kwargs)


_serializer: list = []


class _Lazy:
    """A field's value made when the field is first read (``Exported.__getattr__``)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def _avals_str(avals) -> str:
    return f"({', '.join(a.str_short() for a in avals)})"


# ----------------------------------------------------------------------------------------------
# Exporting


def export(
    fun_jit, *, platforms: Sequence[str] | None = None, disabled_checks: Sequence[DisabledSafetyCheck] = ()
):
    """Export a jitted function: ``export(jit(f))(*args, **kwargs)`` is an ``Exported`` for
    arguments shaped like ``args`` (arrays or ``ShapeDtypeStruct``). ``platforms``: the targets
    (default: ``default_export_platform()``); a module for several carries one lowering each.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> exp = export(funcgrad.jit(fnp.sin))(funcgrad.ShapeDtypeStruct((3,), np.float32))
    >>> exp.in_avals, exp.platforms
    ((ShapedArray(float32[3]),), ('cpu',))
    >>> exp.call(np.zeros(3, np.float32))
    Array([0., 0., 0.], dtype=float32)
    """
    if not isinstance(fun_jit, JittedFunction) and _library_function(fun_jit):
        # JAX's own functions (jnp.sin, lax.add, nn.relu...) are jitted, and its docs export them
        # as they are: funcgrad's are plain functions, so jit them here.
        fun_jit = jit(fun_jit)
    if not isinstance(fun_jit, JittedFunction):
        raise ValueError(  # (JAX 0.10's type)
            f"Function to be exported must be the result of `jit` but is: {fun_jit!r}. Wrap it "
            "first: funcgrad.export.export(funcgrad.jit(f))"
        )
    sharded = _multi_device(fun_jit._in_shardings) or _multi_device(fun_jit._out_shardings)
    if sharded and find_mesh(fun_jit, []) is None:
        raise ValueError(
            f"export: jit({fun_jit._name}) has in_shardings/out_shardings that are not NamedShardings "
            "over a mesh; funcgrad exports programs for one device or for a mesh (export the function "
            "without shardings, or with NamedShardings)"
        )
    targets = _check_platforms(platforms)
    if (fun_jit._donate_argnums or fun_jit._donate_names) and len(
        {p in _DONATING_PLATFORMS for p in targets}
    ) > 1:
        raise NotImplementedError(  # (JAX's words)
            "In multi-platform lowering either all or no lowering platforms should support donation. "
            f"Lowering for {list(targets)} of which only {[p for p in targets if p in _DONATING_PLATFORMS]} "
            "support donation"
        )
    checks = tuple(disabled_checks)
    for c in checks:
        if not isinstance(c, DisabledSafetyCheck):
            raise TypeError(f"disabled_checks: {c!r} is not a DisabledSafetyCheck")

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        return _export(fun_jit, targets, checks, args_specs, kwargs_specs)

    return do_export


# The platforms whose lowerings take buffer donation (JAX's ``_platforms_with_donation``).
_DONATING_PLATFORMS = ("cpu", "cuda", "rocm", "tpu", "neuron")


def _multi_device(shardings) -> bool:
    """Whether a jit's in/out shardings place a value on several devices (a one-device sharding
    exports as no sharding, as JAX's ``nr_devices=1`` export)."""
    if shardings is None:
        return False
    leaves = tu.tree_leaves(shardings, is_leaf=lambda s: hasattr(s, "device_set"))
    return any(len(getattr(s, "device_set", ())) > 1 for s in leaves)


def _library_function(fun) -> bool:
    """Whether ``fun`` is one of funcgrad's public functions (``funcgrad.numpy.sin``), not a user's.
    (Under ``funcgrad.as_jax`` they read as JAX's public paths, ``jax.numpy``: the alias's _naming.)"""
    module = getattr(fun, "__module__", None) or ""
    return callable(fun) and not isinstance(fun, type) and module.split(".")[0] in ("funcgrad", "jax")


def _check_platforms(platforms) -> tuple[str, ...]:
    if platforms is None:
        return (default_export_platform(),)
    if isinstance(platforms, str):
        raise TypeError(f"platforms must be a sequence of platform names, e.g. ['cpu'], not {platforms!r}")
    out = []
    for p in platforms:
        # (a platform JAX does not know is lowered with the general rules, as JAX's does)
        q = xla_bridge.normalize_platform(str(p))
        if q in out:
            raise ValueError(f"platforms: {p!r} is given twice")
        out.append(q)
    if not out:
        raise ValueError("platforms: give at least one platform")
    return tuple(out)


def _spec_aval(x, where: str) -> ShapedArray:
    if isinstance(x, core.Tracer):  # (exporting inside a jit: the traced value's type, as JAX's)
        a = core.get_aval(x)
        return ShapedArray(tuple(a.shape), a.dtype, a.weak_type)
    if core.is_array_like(x) or isinstance(x, bool | int | float | complex | np.generic):
        return core.get_aval(x)
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"export: {where} is a {type(x).__name__}; pass an array or a ShapeDtypeStruct "
            "(static arguments go in static_argnums/static_argnames of the jit)"
        )
    shape = tuple(shape)
    return ShapedArray(
        tuple(int(d) for d in shape), canonical(np.dtype(dtype)), bool(getattr(x, "weak_type", False))
    )


def _export(fun_jit, targets, checks, args, kwargs, raw: bool = False) -> Exported:
    for leaf in tu.tree_leaves((args, kwargs)):
        if isinstance(leaf, DimExpr):  # (a symbolic dimension as a static argument: JAX's error)
            raise UnexpectedDimVar(
                f"Encountered dimension variable '{leaf}' that is not appearing in the shapes of the "
                f"function arguments of {fun_jit._name}: pass it through the shape of an argument "
                "(e.g. an array of shape (0, k))"
            )
    if any(is_symbolic_spec(x) for x in tu.tree_leaves((args, kwargs))):
        return _export_symbolic(fun_jit, targets, checks, args, kwargs)
    static_key, static_kw, dyn_args, dyn_kwargs = fun_jit._split(args, kwargs)
    if not raw:
        mesh = find_mesh(fun_jit, tu.tree_leaves((dyn_args, dyn_kwargs)))
        if mesh is not None:
            return _export_sharded(fun_jit, targets, checks, args, kwargs, mesh)
    statics = dict(static_key)
    n_total = len(dyn_args) + len(statics)
    flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
    names = fun_jit._arg_names(static_key, dyn_args, dyn_kwargs)
    in_avals = tuple(_spec_aval(x, f"argument {n}") for x, n in zip(flat, names))
    name = fun_jit._name
    out_box = []

    def flat_fun(*leaves):
        d_args, d_kwargs = tu.tree_unflatten(in_tree, leaves)
        it = iter(d_args)
        full = [statics[i] if i in statics else next(it) for i in range(n_total)]
        # (raw: the jitted function's Python function, without its shardings)
        out = (fun_jit._fun if raw else fun_jit)(*full, **d_kwargs, **dict(static_kw))
        out_leaves, out_tree = tu.tree_flatten(out)
        out_box.append(out_tree)
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, in_avals, names, f"export({name})")
    if any(isinstance(c, core.Tracer) for c in closed.consts):
        raise TypeError(
            f"export({name}): the function closes over a traced value; export it outside transformations"
        )
    out_tree = out_box[0]
    out_avals = tuple(closed.out_avals)
    infos = result_paths(out_tree)  # (JAX's jax.result_info, as jit's lowering writes them)
    texts = []
    # (a shard_map body is per device: lowered over its mesh, NOTE: [exporting with shardings])
    spmd = shard_map_lowering(closed.jaxpr)
    for p in targets:
        try:
            lowered = lower_jaxpr(closed, name, spmd=spmd, platform=p, arg_names=names, result_names=infos)
        except NotImplementedError as e:  # (LoweringError is one; so is a missing rule)
            raise ValueError(f"export({name}): cannot lower for the platform {p!r}: {e}") from None
        check_custom_calls(lowered.text, checks)
        if p not in ("cpu", "cuda") and needs_lapack(lowered.text):
            raise ValueError(
                f"export({name}): cannot lower for the platform {p!r}: the program uses dense linear "
                "algebra, which funcgrad lowers to jaxlib's LAPACK (cpu) or cuSOLVER (cuda) kernels only"
            )
        if lowered.const_args or lowered.host_callbacks:
            raise ValueError(
                f"export({name}): the program calls back into Python (pure_callback/io_callback/"
                "debug) or holds hoisted constants; an exported module must be self-contained"
            )
        texts.append(lowered.text)
    text = texts[0] if len(texts) == 1 else portable.multi_platform(texts)
    # (JAX: a module taking the platform index, or calling an export that takes one or dimension
    # variables, uses global constants and is refined before it compiles, as a symbolic one)
    global_constants = len(targets) > 1 or "jax.global_constant" in text
    text = portable.annotate_for_export(text, infos, uses_shape_polymorphism=global_constants)
    # (and one calling an Exported whose module uses them, embedded refined here, as JAX's)
    global_constants = global_constants or _calls_global_constants(closed.jaxpr)
    blob = portable.serialize(text, with_sdy=spmd is not None)
    n_in = len(in_avals)
    one = Exported(
        fun_name=name,
        in_tree=in_tree,
        in_avals=in_avals,
        out_tree=out_tree,
        out_avals=out_avals,
        in_shardings_hlo=(None,) * n_in,
        out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=1,
        platforms=targets,
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=checks,
        mlir_module_serialized=blob,
        calling_convention_version=_calling_convention_version(),
        module_kept_var_idx=tuple(range(n_in)),
        uses_global_constants=global_constants,
        _get_vjp=functools.partial(_exported_vjp, closed),
    )
    mesh = None if raw else constraint_mesh(closed.jaxpr)
    if mesh is not None:  # (a sharding constraint over several devices: JAX's nr_devices is its mesh's)
        return _export_sharded(fun_jit, targets, checks, args, kwargs, mesh, one=one)
    return one


def _calls_global_constants(jaxpr) -> bool:
    """Whether ``jaxpr`` (or a jaxpr its equations hold) calls an exported module that uses
    global constants (``call_exported_p`` of a symbolic or multi-platform export)."""
    for eqn in jaxpr.eqns:
        callee = eqn.params.get("callee")
        if getattr(callee, "global_constants", False):
            return True
        for v in eqn.params.values():
            for x in v if isinstance(v, tuple | list) else (v,):
                inner = getattr(x, "jaxpr", x)
                if hasattr(inner, "eqns") and _calls_global_constants(inner):
                    return True
    return False


def _export_symbolic(fun_jit, targets, checks, args, kwargs) -> Exported:
    """NOTE: [exporting with symbolic dimensions]."""
    sym = SymbolicExport(fun_jit, args, kwargs, _export)
    first = sym.specialize(sym._concrete_avals(sym.first_env), targets, checks)
    multi = len(targets) > 1

    def module() -> bytes:  # (None from portable_module: no module for all sizes)
        blob = sym.portable_module(targets, checks, multi)
        return first.mlir_module_serialized if blob is None else blob

    n_in = len(sym.in_avals)
    return Exported(
        fun_name=fun_jit._name,
        in_tree=sym.in_tree,
        in_avals=sym.in_avals,
        out_tree=sym.out_tree,
        out_avals=sym.out_avals,
        in_shardings_hlo=(None,) * n_in,
        out_shardings_hlo=(None,) * len(sym.out_avals),
        nr_devices=1,
        platforms=targets,
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=checks,
        # (made when first read: calls in this process specialize per size and never need it)
        mlir_module_serialized=_Lazy(module),
        calling_convention_version=_calling_convention_version(),
        module_kept_var_idx=tuple(range(n_in)),
        uses_global_constants=True,  # (JAX: the module computes dimension variables)
        _get_vjp=_symbolic_vjp,
        _symbolic=sym,
    )


def _export_sharded(fun_jit, targets, checks, args, kwargs, mesh, one=None) -> Exported:
    """NOTE: [exporting with shardings] (``one``: the one-device export, when already made)."""
    if one is None:
        one = _export(fun_jit, targets, checks, args, kwargs, raw=True)
    sh = ShardedExport(fun_jit, args, kwargs, mesh, one.in_tree, one.out_tree, len(one.out_avals))
    sh.take_types(one.in_avals, one.out_avals)
    ins, outs = sh.shardings(sh.in_specs, sh.mesh), sh.shardings(sh.out_specs, sh.mesh)
    return with_shardings(one, sh.nr_devices, ins, outs, sh)


def _symbolic_vjp(primal: Exported) -> Exported:
    """The exported VJP of a symbolic export, itself symbolic in the same variables."""
    sym = primal._symbolic
    n = len(primal.in_avals)

    def program(*xs):
        args, kwargs = sym._call_args(xs)
        # (the Python function: each size traced here would otherwise count as a retrace of the jit)
        return tu.tree_leaves(sym.fun_jit._fun(*args, **kwargs))

    def fun_vjp(*args_and_cts):
        _, pullback = _vjp(program, *args_and_cts[:n])
        return list(pullback(list(args_and_cts[n:])))

    specs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in primal.in_avals]
    specs += [ShapeDtypeStruct(t.shape, t.dtype) for t in map(_tangent_aval, primal.out_avals)]
    fun_vjp.__name__ = "fun_vjp_jax"  # (JAX's name for an exported VJP)
    return export(jit(fun_vjp), platforms=primal.platforms, disabled_checks=primal.disabled_safety_checks)(
        *specs
    )


def _tangent_aval(a) -> ShapedArray:
    if np.issubdtype(a.dtype, np.inexact):
        return ShapedArray(a.shape, a.dtype)
    return ShapedArray(a.shape, float0)


def _exported_vjp(closed, primal: Exported) -> Exported:
    """Export the VJP of ``primal``, the program ``closed``: ``(*args, *out_cts) -> in_cts``
    (flat), as JAX's. It differentiates the traced program, never the exported call (whose
    derivative is this function)."""
    n = len(primal.in_avals)

    def program(*xs):
        return list(core.eval_jaxpr(closed.jaxpr, closed.consts, *xs))

    def fun_vjp(*args_and_cts):
        args, cts = args_and_cts[:n], args_and_cts[n:]
        _, pullback = _vjp(program, *args)
        return list(pullback(list(cts)))

    specs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in primal.in_avals]
    specs += [ShapeDtypeStruct(t.shape, t.dtype) for t in map(_tangent_aval, primal.out_avals)]
    fun_vjp.__name__ = "fun_vjp_jax"  # (JAX's name for an exported VJP)
    vjp = export(jit(fun_vjp), platforms=primal.platforms, disabled_checks=primal.disabled_safety_checks)(
        *specs
    )
    if primal.nr_devices > 1:  # (JAX's: the primal's devices; inputs and cotangents sharded alike)
        ins = (*primal.in_shardings_hlo, *primal.out_shardings_hlo)
        vjp = with_shardings(vjp, primal.nr_devices, ins, primal.in_shardings_hlo)
    return vjp


# ----------------------------------------------------------------------------------------------
# Calling


# Prepared modules by (Exported, argument signature, platform): preparing parses, refines and
# prints the module (milliseconds), a call with a prepared signature costs a dict lookup.
# Each Exported keeps them in its own ``_calls`` dict (with its jitted caller under "caller"), so a
# dropped Exported takes them with it; the group empties them all on clear_caches().
_calls_group = register_cache("export.calls", CacheGroup(lambda exp: exp._calls))


def _call(exp: Exported, args, kwargs):
    flat, in_tree = tu.tree_flatten((args, kwargs))
    if in_tree != exp.in_tree:
        raise ValueError(
            f"The invocation args and kwargs must have the same pytree structure as when the "
            f"function '{exp.fun_name}' was exported: it was exported for {exp.in_tree} and is "
            f"called with {in_tree}"
        )
    if exp._sharded is not None:
        _bind_args(exp, [core.get_aval(x) for x in flat])
        return tu.tree_unflatten(exp.out_tree, exp._sharded.call(exp.fun_name, flat))
    if exp.nr_devices > 1:  # (a deserialized multi-device export: NOTE: [exporting with shardings])
        _bind_args(exp, [core.get_aval(x) for x in flat])
        runner = exp._calls.get("sharded")
        if runner is None:
            runner = exp._calls["sharded"] = ShardedExport.from_exported(exp, lambda *xs: _call_flat(exp, xs))
        return tu.tree_unflatten(exp.out_tree, runner.call(exp.fun_name, flat))
    fn = exp._calls.get("caller")
    if fn is None:
        # One jitted caller per Exported: an eager call is then one cached executable (the
        # module embedded once per argument signature), not a custom_vjp and a primitive
        # dispatched each time; under a transformation it is a nested jit like any other.
        def flat_call(*xs):
            return _call_flat(exp, xs)

        flat_call.__name__ = flat_call.__qualname__ = re.sub(r"\W", "_", exp.fun_name) or "exported"
        fn = exp._calls["caller"] = jit(flat_call)
    return tu.tree_unflatten(exp.out_tree, fn(*flat))


def _weak_to_exported(x, want):
    """A weakly typed argument (a Python scalar) of the exported dtype's kind takes that dtype, as
    JAX's Python scalars do (funcgrad's Python floats are float64, an export's often float32)."""
    a = core.get_aval(x)
    if a.weak_type and a.dtype != want.dtype and _kind(a.dtype) == _kind(want.dtype):
        return convert_element_type(x, want.dtype)
    return x


def _kind(dtype) -> str:
    dtype = np.dtype(dtype)
    return (
        "c" if dtype.kind == "c" else "f" if dtype.kind in "fV" else "i" if dtype.kind in "iu" else dtype.kind
    )


def _call_flat(exp: Exported, flat):
    flat = (
        [_weak_to_exported(x, want) for x, want in zip(flat, exp.in_avals)]
        if len(flat) == len(exp.in_avals)
        else list(flat)
    )
    if exp._symbolic is not None:
        return _call_flat(_specialized(exp, [core.get_aval(x) for x in flat]), flat)
    if exp.nr_devices > 1 and exp._sharded is None:
        # (inside the program partitioned with the export's shardings: its one-device semantics)
        view = exp._calls.get("one device")
        if view is None:
            n, m = len(exp.in_avals), len(exp.out_avals)
            view = exp._calls["one device"] = dataclasses.replace(
                exp, nr_devices=1, in_shardings_hlo=(None,) * n, out_shardings_hlo=(None,) * m, _strip=True
            )
        exp = view
    callee = _callee(exp, [core.get_aval(x) for x in flat])
    # Always through the custom_vjp, as JAX's: without a VJP, reverse mode says "No VJP is
    # available" when it asks for it.
    return _differentiable(exp, callee)(*flat)


def _differentiable(exp: Exported, callee: ExportedCallee):
    @custom_vjp
    def f(*xs):
        return call_exported_p.bind(*xs, callee=callee)

    def fwd(*xs):
        return f(*xs), xs

    def bwd(xs, cts):
        vjp_exp = exp.vjp()
        return tuple(_call_flat(vjp_exp, [*xs, *_fix_float0(cts, vjp_exp.in_avals[len(xs) :])]))

    f.defvjp(fwd, bwd)
    return f


def _fix_float0(cts, avals):
    # (the cotangent's own shape: a symbolic export's avals have symbolic dimensions)
    return [np.zeros(np.shape(c), float0) if a.dtype == float0 else c for c, a in zip(cts, avals)]


def _specialized(exp: Exported, avals) -> Exported:
    """The concrete export of a symbolic one for arguments shaped as ``avals`` (made once)."""
    key = ("symbolic", tuple((a.shape, a.dtype) for a in avals))
    concrete = exp._calls.get(key)
    if concrete is not None:
        if any(hasattr(d, "expr") for a in avals for d in a.shape):  # (traced sizes: checked for all)
            note_computed(exp.out_avals, _bind_args(exp, avals))
        return concrete
    note_computed(exp.out_avals, _bind_args(exp, avals))
    concrete = exp._symbolic.specialize(avals, exp.platforms, exp.disabled_safety_checks)
    # (what a caller's export reads: the symbolic module it calls uses global constants)
    concrete = dataclasses.replace(concrete, uses_global_constants=True)
    exp._calls[key] = concrete
    return concrete


def _bind_args(exp: Exported, avals) -> dict:
    """JAX's checks of the arguments against ``in_avals`` (its ``call_exported`` abstract
    evaluation): rank, dtype, constant dimensions, then the dimension variables solved from the
    sizes and the shape constraints checked, each failure in JAX's words. Returns the variables'
    values."""
    name = exp.fun_name
    if len(avals) != len(exp.in_avals):
        raise ValueError(f"{name}: called with {len(avals)} arrays, it was exported for {len(exp.in_avals)}")
    names = arg_names(exp.in_tree)
    for i, (a, want) in enumerate(zip(avals, exp.in_avals)):
        if len(a.shape) != len(want.shape):
            raise ValueError(
                f"Rank mismatch for {names[i]}: expected {_shape_str(want.shape)} and called with "
                f"{_shape_str(a.shape)}"
            )
        if a.dtype != want.dtype:
            raise ValueError(  # (JAX's type and first words)
                f"Dtype mismatch for {names[i]}: expected {want.dtype} and called with {a.dtype}: "
                f"function {name} was exported for {want.str_short()}; cast the argument "
                f"(x.astype({want.dtype.name!r}))"
            )
        for k, (d, w) in enumerate(zip(a.shape, want.shape)):
            if not isinstance(w, DimExpr) and d != w:
                raise ValueError(
                    f"Shape mismatch for {names[i]}.shape[{k}] (expected same constant): expected "
                    f"{_shape_str(want.shape)} and called with {_shape_str(a.shape)}"
                )
    if not any(isinstance(d, DimExpr) for w in exp.in_avals for d in w.shape):
        return {}
    scope = next(d.scope for w in exp.in_avals for d in w.shape if isinstance(d, DimExpr))
    return check_call(exp.in_avals, [a.shape for a in avals], constraints(scope), names)


def _shape_str(shape) -> str:
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _callee(exp: Exported, avals) -> ExportedCallee:
    name = exp.fun_name
    note_computed(exp.out_avals, _bind_args(exp, avals))
    if exp.ordered_effects:
        raise ValueError(
            f"{name} was exported with ordered effects {exp.ordered_effects}: funcgrad cannot call it"
        )
    if exp.nr_devices != 1:
        raise ValueError(
            f"{name} was exported for {exp.nr_devices} devices; funcgrad calls exported modules on one device"
        )
    # (only a newer convention than funcgrad writes is refused: JAX calls an Exported of an older
    # version as it is -- its own stored exports of versions 4 and 6, export_back_compat_test --,
    # checking the range when exporting and deserializing only)
    if exp.calling_convention_version > maximum_supported_calling_convention_version:
        raise ValueError(
            f"{name} uses calling convention version {exp.calling_convention_version}; funcgrad "
            f"reads versions up to {maximum_supported_calling_convention_version}"
        )
    platform = default_export_platform()
    if platform in exp.platforms:
        index = exp.platforms.index(platform)
    elif DisabledSafetyCheck.platform() in exp.disabled_safety_checks:
        index = 0
    else:
        raise ValueError(
            f"Function '{name}' was exported for platforms '{exp.platforms}' but it is used on "
            f"'{(platform,)}': export it for this platform (platforms=[{platform!r}, ...]) or "
            "disable the check with DisabledSafetyCheck.platform()"
        )
    kept = exp.module_kept_var_idx
    key = (tuple((a.shape, a.dtype) for a in avals), platform)
    callee = exp._calls.get(key)
    if callee is not None:
        return callee
    arg_types = [aval_type(avals[i]) for i in kept]
    multi = len(exp.platforms) > 1
    if multi:
        arg_types.insert(0, None)  # the platform index, of the module's own integer type
    try:
        checks = DisabledSafetyCheck.shape_assertions() not in exp.disabled_safety_checks
        em = portable.embeddable(
            exp.mlir_module_serialized, arg_types, shape_assertions=checks, strip_shardings=exp._strip
        )
    except ValueError as e:
        raise ValueError(
            f"{name}: the exported module cannot be called with {_avals_str(avals)}: {e}"
        ) from None
    out_avals = []
    for (shape, _), want in zip(em.out_shapes, exp.out_avals):
        out_avals.append(ShapedArray(tuple(shape), want.dtype, want.weak_type))
    callee = ExportedCallee(name, [ShapedArray(a.shape, a.dtype) for a in avals], out_avals, em,
                            index if multi else None, kept, exp.uses_global_constants)  # fmt: skip
    exp._calls[key] = callee
    return callee
