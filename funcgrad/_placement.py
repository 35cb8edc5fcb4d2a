"""Where an ``Array`` lives: its ``sharding``, ``devices()``, ``device``, ``addressable_shards``;
putting values on devices as a sharding says (``device_put``), building sharded arrays from
per-device pieces (``make_array_from_callback``, ``make_array_from_single_device_arrays``,
``make_array_from_process_local_data``), and ``with_sharding_constraint`` (``jax.lax``'s name,
re-exported by ``funcgrad.lax``).

Layer: surface. Imports the kernel (``Array``, registration, tree_util, core), the primitive
catalog (``primitives.sharding``'s constraint), ``xla_bridge`` (``sharded`` and ``runtime``),
``funcgrad._shardings`` and the three modules a floor below that it re-exports:
``funcgrad._device_put`` (putting values on devices and the sharding constraint),
``funcgrad._array_placement`` (an Array's placement properties and its buffer's life) and
``funcgrad._array_assembly`` (``make_array_from_*``); never ``funcgrad.numpy`` or ``funcgrad.lax``
(``funcgrad.numpy`` imports this module for the Array API's ``device``/``to_device``).

An Array holds a host value, a one-device buffer, or a sharded buffer (one jaxlib array over
several devices, ``xla_bridge.sharded``). Its placement properties are installed on ``Array``
(and, raising a clear error, on tracers) through ``kernel.register`` when this module is imported
(``funcgrad.api`` imports it; ``to_device`` by ``funcgrad._device_put``, the rest by
``funcgrad._array_placement``). A
host value is on the default device, as an uncommitted JAX array is. Reading a sharded Array on
the host (``np.asarray``, printing, an eager operation) assembles every shard; eager operations
compute on the host and return host Arrays (jitted functions keep values sharded on the
devices).

>>> import funcgrad, numpy as np
>>> x = funcgrad.device_put(np.arange(4.0), funcgrad.devices()[0])
>>> x.devices() == {funcgrad.devices()[0]}, x.sharding.is_fully_replicated
(True, True)
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

import funcgrad.xla_bridge.dispatch  # noqa: F401 - registers Array's device read-back (NOTE: [dispatch registration])
from funcgrad import xla_bridge
from funcgrad._array_assembly import (
    make_array_from_callback,
    make_array_from_single_device_arrays,
)
from funcgrad._array_placement import (
    Shard,
    _sharded_buffer,
    _sharding,
    copy_to_host_async,  # noqa: F401 - re-exported (NOTE: [derived namespaces])
)
from funcgrad._device_put import (
    _constrain,  # (and re-exported: tests' op_db)
    device_put_sharded,
    device_put_space,  # noqa: F401 - re-exported (funcgrad.api)
    device_put_traced,  # noqa: F401 - re-exported (funcgrad.api)
    make_array_from_process_local_data,  # noqa: F401 - re-exported (NOTE: [derived namespaces])
    placed_in_context,  # noqa: F401 - re-exported (funcgrad.numpy)
    with_sharding_constraint,  # noqa: F401 - re-exported (funcgrad.lax)
)
from funcgrad._memory import Space
from funcgrad._shardings import (
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    SingleDeviceSharding,
    concrete_mesh,
    from_bridge,
    get_abstract_mesh,
    resolve,
    sharding_leaves,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import canonical_value, python_scalar_types
from funcgrad.kernel.partial_eval import StagingTracer
from funcgrad.primitives import _sharding_rules, _unreduced_rules
from funcgrad.primitives import sharding as shp

__all__ = [
    "Shard",
    "reshard",
    "recast",
    "takes_out_sharding",
    "with_sharding_constraint",
    "device_put_sharded",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
]
# Re-exported at funcgrad's top level (NOTE: [derived namespaces]).
_REEXPORTED = (
    "memory",
    "Shard",
    "copy_to_host_async",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "make_array_from_process_local_data",
    "reshard",
)


# JAX's ``jax.memory``: a namespace holding ``Space`` (funcgrad/_memory.py).
memory = types.SimpleNamespace(Space=Space)


# ----------------------------------------------------------------------------------------------
# Typing placed values: reshard, recast, out_sharding= (values are put by funcgrad._device_put)


# NOTE: [unreduced values] (funcgrad/_sharding_unreduced.py): an eager contraction left unreduced
# is built on shard_map; funcgrad.sharding registers it here.
unreduced_ops: dict = {}
# ``auto_axes`` (funcgrad.sharding registers it): ``takes_out_sharding(in_auto_axes=True)``.
switched_ops: dict = {}


def reshard(x, out_shardings):
    """``x`` (a pytree) laid out as ``out_shardings`` (one ``NamedSharding`` or ``PartitionSpec``
    over the mesh in scope, or a pytree prefix of them): a sharded copy outside a
    transformation, a sharding constraint inside ``jit`` that also sets the value's type on
    explicit mesh axes (JAX's ``jax.sharding.reshard``). Resharding onto a mesh of other axes
    than the value's type is an error.

    >>> import funcgrad, numpy as np
    >>> from funcgrad.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> reshard(np.arange(2.0), s).sharding == s
    True
    """
    leaves, tree = tu.tree_flatten(x)
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(x)]
    targets = list(sharding_leaves(out_shardings, x, "reshard", "out_shardings"))
    for k, (v, s, path) in enumerate(zip(leaves, targets, paths)):
        if not isinstance(s, NamedSharding):
            continue
        ndim = len(np.shape(v))
        if len(s.spec) > ndim and all(p is None for p in tuple(s.spec)[ndim:]):
            # As JAX's reshard: one spec for a whole model may name more (unsharded) dimensions
            # than a leaf has (flax's optimisation cookbook reshards a model to P(None, None)).
            s = targets[k] = s.with_spec(s.spec.update(partitions=tuple(s.spec)[:ndim]))
        elif len(s.spec) < ndim and s.mesh.abstract_mesh.explicit_axes:
            # On explicit axes the result's sharding is its type's, one entry per dimension, as
            # JAX's (reshard(x, P("x")) of a 2-d x is P('x', None); device_put keeps the spec given)
            entries = (*tuple(s.spec), *[None] * (ndim - len(s.spec)))
            s = targets[k] = s.with_spec(s.spec.update(partitions=entries))
        _explicit_names_only(s, "reshard")
        have = _type_sharding(v)
        renamed = (
            get_abstract_mesh() == s.mesh.abstract_mesh and have is not None and have.mesh.size == s.mesh.size
        )
        if (
            have is not None
            and not renamed  # onto the abstract mesh in scope (use_abstract_mesh): the same devices
            and (have.mesh.axis_names, have.mesh.axis_sizes)
            != (s.mesh.axis_names, s.mesh.abstract_mesh.axis_sizes)
        ):
            raise ValueError(
                f"reshard: x{path} ({core.get_aval(v).str_short()}) is typed over the mesh {have.mesh} but "
                f"{s.spec!r} is over {s.mesh.abstract_mesh}: resharding across meshes is not supported; "
                "device_put the value onto the new mesh's devices outside jit (funcgrad.device_put(x, "
                "NamedSharding(new_mesh, spec))), or reshard over the value's own mesh"
            )
    if all(t is not None for t in targets):
        out_shardings = tu.tree_unflatten(tree, targets)
    return _constrain(x, out_shardings, strict=False)


def _type_sharding(v):
    """The sharding in ``v``'s type (NOTE: [sharding in types]), or None."""
    if isinstance(v, Array | core.Tracer):
        return core.get_aval(v)._sharding
    return None


def retyped(x):
    """``x`` (an Array) with its type made afresh in the mesh context in scope (the same buffer):
    inside ``auto_axes``/``explicit_axes`` a value is typed as the switched mesh's axes are."""
    if not isinstance(x, Array) or x._buffer is None:
        return x
    return Array._from_buffer(x._buffer, x.weak_type)


def insert_reduced_reshard(x, y):
    """JAX's ``insert_reduced_reshard`` before a binary operation: under a mesh whose axes are all
    explicit, a scalar operand replicated along the axes the other is reduced on is resharded
    reduced there (``x * 2`` of a reduced ``x``: the constant's type ``f32[]{R:x}``, so the
    cotangent ``ct * 2`` of an unreduced ``ct`` is typed). Anything else as it is (cheaply: no
    reduced operand, nothing to do)."""
    rx, ry = _reduced_axes(x), _reduced_axes(y)
    if not (rx or ry):
        return x, y
    scope = get_abstract_mesh()
    if scope.empty or not scope.are_all_axes_explicit:
        return x, y
    out_reduced = rx | ry
    out = []
    for v in (x, y):
        a = core.get_aval(v) if isinstance(v, Array | core.Tracer) else None
        ndim = a.ndim if a is not None else np.ndim(v)
        s = getattr(a, "_sharding", None)
        replicated = frozenset(scope.axis_names)
        if s is not None:
            used = {n for d in _sharding_rules.spec_of(a) for n in d}
            replicated = frozenset(s.mesh.axis_names) - used - s.spec.unreduced - s.spec.reduced
        if ndim == 0 and out_reduced <= replicated:
            v = reshard(v, PartitionSpec(reduced=out_reduced))
        out.append(v)
    return tuple(out)


def _reduced_axes(v) -> frozenset:
    if not isinstance(v, Array | core.Tracer):
        return frozenset()
    s = getattr(core.get_aval(v), "_sharding", None)
    return frozenset(s.spec.reduced) if s is not None else frozenset()


def recast(tree, mesh, shardings, where: str):
    """Every leaf of ``tree`` (values being traced) typed over ``mesh`` (the same devices with
    other axis types: ``auto_axes``/``explicit_axes``): as ``shardings`` says (a spec or sharding,
    or a pytree prefix of them), else as its type or its layout already is."""
    leaves, treedef = tu.tree_flatten(tree)
    if shardings is None:
        wanted = [None] * len(leaves)
    else:
        with mesh:  # a bare PartitionSpec is over the mesh being switched to
            wanted = sharding_leaves(shardings, tree, where, "the sharding")
    out = []
    for v, s in zip(leaves, wanted):
        if not isinstance(v, Array | core.Tracer):
            v = Array._from_owned(canonical_value(np.asarray(v)), type(v) in python_scalar_types)
        ndim = v.ndim
        ur = {}
        if s is not None:
            entries = tuple(s.spec)
            if len(entries) > ndim and all(e is None for e in entries[ndim:]):
                entries = entries[:ndim]  # (JAX's reshard takes trailing Nones: P(None) of a scalar)
            spec = PartitionSpec(*entries)._normalized(ndim, where)
            ur = shp.ur_params(s.spec.unreduced, s.spec.reduced)  # (auto_axes' out_sharding may name them)
        else:
            have = _type_sharding(v)
            if have is None and isinstance(v, Array) and _sharded_buffer(v) is not None:
                have = _sharding(v)
            spec = have.spec._normalized(ndim, where) if isinstance(have, NamedSharding) else ((),) * ndim
        # (retype: JAX's reshard, whose constraint is its result type's alone; none into Auto axes)
        out.append(shp.sharding_constraint_p.bind(v, mesh=mesh, spec=spec, retype=True, **ur))
    return tu.tree_unflatten(treedef, out)


def sharded_like(out, a):
    """``out`` (made by ``zeros_like``/``ones_like``/``full_like`` of ``a``, the same shape)
    laid out as ``a``, as JAX's ``full_like`` keeps its argument's sharding: an array over several
    devices or committed to one (not weakly typed) as it is laid out, in any mode; a traced value
    as its type says on explicit mesh axes (NOTE: [sharding in types]); otherwise ``out`` as it is.

    >>> import numpy as np
    >>> sharded_like(np.zeros(2), np.ones(2)).tolist()
    [0.0, 0.0]
    """
    duck = hasattr(a, "shape") and hasattr(a, "dtype")  # (read first, as JAX's full_like does)
    if not isinstance(a, Array | core.Tracer) and hasattr(a, "__jax_array__") and not duck:
        a = a.__jax_array__()  # (a value that stands for an array: that array)
    if not isinstance(a, Array | core.Tracer) and hasattr(a, "shape") and hasattr(a, "dtype"):
        # A ShapeDtypeStruct with a sharding: the result is laid out so, as JAX's full_like (an
        # abstract mesh's over the mesh in scope)
        given = getattr(a, "sharding", None)
        if isinstance(given, NamedSharding | SingleDeviceSharding) and core.get_aval(out).shape == tuple(
            a.shape
        ):
            try:
                (target,) = sharding_leaves(given, 0, "full_like", "sharding")
            except ValueError:  # (over an abstract mesh and no mesh in scope: left as it is, as JAX's,
                # but for a traced value over explicit axes alone: typed so, as JAX's full_like)
                if isinstance(out, core.Tracer) and given.mesh.are_all_axes_explicit:
                    spec = given.spec._normalized(out.ndim, "full_like")
                    return shp.sharding_constraint_p.bind(out, mesh=given.mesh, spec=spec)
                return out
            if not isinstance(target, NamedSharding):
                if not isinstance(out, Array):
                    return out
                buf = xla_bridge.device_put(out._numpy(), target._device, weak_type=out.weak_type)
                return Array._from_buffer(buf, out.weak_type)
            return _constrain(out, target, strict=False)
        return out
    if not isinstance(a, Array | core.Tracer) or core.get_aval(out).shape != core.get_aval(a).shape:
        return out
    b = _sharded_buffer(a) if isinstance(a, Array) else None
    if b is None and type(a) is Array and a._buffer is not None and a._buffer._committed:
        # committed to one device: the result is committed there too (NOTE: [committed arrays]
        # in xla_bridge/committed.py; JAX's full_like keeps a committed, strongly typed x's sharding)
        if a.weak_type or not isinstance(out, Array):
            return out
        device = a._buffer._sharding._fg_device
        return Array._from_buffer(
            xla_bridge.device_put(out._numpy(), device, weak_type=out.weak_type), out.weak_type
        )
    if b is not None:
        if a.weak_type:
            return out
        target = from_bridge(b._sharding, a.ndim)
        if isinstance(target, NamedSharding):
            return _constrain(out, target, strict=False)
        return out
    s = core.get_aval(a)._sharding
    mesh = None if s is None else concrete_mesh(s.mesh, "zeros_like")
    if mesh is None:
        return out
    if s.mesh.manual_axes:  # (in a partially manual shard_map body: typed as ``a``, its axes Manual)
        mesh = mesh.update_axis_types({n: AxisType.Manual for n in s.mesh.manual_axes})
    return _constrain(out, NamedSharding(mesh, s.spec), strict=False)


def _typed_as(out, s: NamedSharding) -> bool:
    """Whether the staged ``out`` is typed ``s`` already (spec, unreduced and reduced axes, over
    ``s``'s mesh): a reshard to it would stage a constraint JAX's program does not have."""
    if not isinstance(out, core.Tracer):
        return False
    aval = out.aval
    have = getattr(aval, "_sharding", None)
    if have is None or getattr(have.mesh, "abstract_mesh", have.mesh) != s.mesh.abstract_mesh:
        return False
    return (
        _sharding_rules.spec_of(aval) == s.spec._normalized(aval.ndim, "out_sharding")
        and frozenset(have.spec.unreduced or ()) == frozenset(s.spec.unreduced or ())
        and frozenset(have.spec.reduced or ()) == frozenset(s.spec.reduced or ())
    )


def _explicit_names_only(s: NamedSharding, where: str) -> None:
    """JAX 0.10: ``reshard`` and ``out_sharding=`` set a type, so they name Explicit axes only
    (on Auto axes ``with_sharding_constraint`` or ``device_put`` place values)."""
    types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
    for n in s.spec._names():
        t = types.get(n)
        if t is not None and t is not AxisType.Explicit:
            raise ValueError(
                f"PartitionSpec passed to {where} cannot contain axis names that are of type Auto or Manual. "
                f"Got PartitionSpec: {s.spec!r} with axis name: {n} of type: AxisType.{t.name}. Use "
                "with_sharding_constraint or device_put on Auto axes."
            )


def _same_ur_as_operand(name: str, s: NamedSharding, x) -> None:
    """JAX's ``reshape`` rules: ``out_sharding``'s unreduced and reduced axes are the operand's."""
    aval = core.get_aval(x) if isinstance(x, Array | core.Tracer) else None
    have = getattr(getattr(aval, "_sharding", None), "spec", None)
    for kind in ("unreduced", "reduced"):
        want, got = getattr(s.spec, kind), getattr(have, kind, frozenset())
        if got and want != got:
            raise ValueError(
                f"out_sharding passed to {name} must be {kind} over the same mesh axes as operand. Got "
                f"out_sharding: {s.spec!r} and operand type: {aval.str_short()}"
            )
        if want and not got:
            raise ValueError(f"out_sharding passed to `{name}` cannot contain {kind} axes. Got {s!r}")


def _unreduced_traced(f, name: str, s: NamedSharding, args, kwargs):
    """``f(*args, out_sharding=s)`` being traced with ``s`` unreduced: the contraction's result
    typed ``s`` (JAX's rule checks its axes; XLA leaves each device's partial product)."""
    with (
        _sharding_rules.contraction_out(tuple(s.spec)),
        _unreduced_rules.contraction_unreduced(s.spec.unreduced),
    ):
        out = f(*args, **kwargs)
    # (checked on a staged value: another transformation's, vmap's, types only its staged value)
    if isinstance(out, StagingTracer) and _unreduced_rules.unreduced_of(out.aval) != frozenset(
        s.spec.unreduced
    ):
        raise ValueError(
            f"{name}: out_sharding={s.spec!r} is unreduced, which only a contraction (dot, matmul, "
            "einsum) over the unreduced axes can give; reshard the result instead"
        )
    return out


def takes_out_sharding(
    f=None,
    *,
    typed_result: bool = False,
    unreduced: str | None = None,
    in_auto_axes: bool = False,
    auto_when=None,
):
    """Give ``f`` JAX's keyword ``out_sharding=`` (a ``NamedSharding``, or a ``PartitionSpec``
    over the mesh in scope): its result is resharded to it (a sharding constraint under ``jit``,
    on explicit mesh axes also the result's type). With ``typed_result`` (a contraction or
    reshape, whose result type may be ambiguous: NOTE: [sharding in types]), the primitive's
    result is typed ``out_sharding`` directly instead of by its sharding rule. ``unreduced`` says
    how an ``out_sharding`` with unreduced or reduced axes is met (NOTE: [unreduced values]):
    ``"rule"`` (a contraction or ``reduce_sum``, the default with ``typed_result``: the primitive's
    rule leaves the result unreduced over the axes it sums), ``"operand"`` (``reshape``: the axes
    must be the operand's, JAX's errors), else the result is resharded (XLA's replicated-to-
    unreduced cast: ``jnp.array(x, out_sharding=P(unreduced={'x'}))``).
    With ``in_auto_axes`` (JAX's ``jnp.percentile``, ``jnp.repeat``, ``.at[...]`` updates), an
    ``out_sharding`` on explicit mesh axes computes ``f`` in ``auto_axes`` over them: XLA lays out
    what the sharding rules would find ambiguous (a sort along a split axis), typed as asked.
    ``auto_when(args)`` says so for some calls only (JAX's ``einsum`` of more than one
    contraction), unreduced or reduced ``out_sharding`` included (reached by a reshard after).

    >>> import funcgrad.numpy as fnp
    >>> ones3 = takes_out_sharding(lambda n: fnp.ones(n))
    >>> ones3(3, out_sharding=None).tolist()
    [1.0, 1.0, 1.0]
    """
    if f is None:
        return functools.partial(
            takes_out_sharding,
            typed_result=typed_result,
            unreduced=unreduced,
            in_auto_axes=in_auto_axes,
            auto_when=auto_when,
        )
    if unreduced is None and typed_result:
        unreduced = "rule"

    @functools.wraps(f)
    def wrapped(*args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return f(*args, **kwargs)
        name = getattr(f, "__name__", "function")
        given = out_sharding
        if (
            isinstance(given, NamedSharding)
            and given._memory_kind is not None
            and not isinstance(given.mesh, Mesh)
        ):
            # (a type holds no memory kind: JAX's words where it makes the aval)
            raise ValueError(
                "sharding with memory_kind is not allowed. Please use `jax.device_put` to transfer to "
                f"different memory spaces. Got sharding={given!r}"
            )
        if isinstance(given, NamedSharding):
            # (JAX's canonicalize_sharding: a sharding over another mesh than the one in scope,
            # unless both are all Auto; inside auto_axes or a shard_map body the one in scope has
            # its switched or manual axes' types)
            scope = get_abstract_mesh()
            theirs = given.mesh.abstract_mesh
            both_auto = theirs.are_all_axes_auto and scope.are_all_axes_auto
            if not scope.empty and not both_auto and theirs != scope:
                raise ValueError(
                    f"Context mesh {scope} should match the mesh of sharding {theirs} passed to {name}."
                )
        s = resolve(out_sharding, name, "out_sharding")
        if isinstance(s, NamedSharding):
            _explicit_names_only(s, name)
        if not isinstance(s, NamedSharding):
            return device_put_sharded(f(*args, **kwargs), s)
        # (inside a shard_map body the manual axes are no longer the mesh's explicit ones)
        manual = set(get_abstract_mesh().manual_axes)
        explicit = tuple(n for n in s.mesh.abstract_mesh.explicit_axes if n not in manual)
        if auto_when is not None and explicit and auto_when(args):
            # (JAX's einsum of several contractions: computed in auto_axes, then resharded to
            # out_sharding, its unreduced/reduced axes by a reshard after, XLA's cast)
            plain = NamedSharding(s.mesh, PartitionSpec(*s.spec), memory_kind=s.memory_kind)
            arrays = [i for i, a in enumerate(args) if isinstance(a, Array | core.Tracer | np.ndarray)]

            def on_arrays(*a):  # (the other arguments, einsum's subscripts, closed over)
                full = list(args)
                for i, v in zip(arrays, a):
                    full[i] = v
                return f(*full, **kwargs)

            auto = switched_ops["auto_axes"](on_arrays, axes=explicit, out_sharding=plain)
            out = auto(*(args[i] for i in arrays))
            return out if not (s.spec.unreduced or s.spec.reduced) else reshard(out, s)
        if unreduced == "operand":
            _same_ur_as_operand(name, s, args[0])
        elif s.spec.unreduced and unreduced == "rule":
            if not any(isinstance(a, core.Tracer) for a in tu.tree_leaves((args, kwargs))):
                return unreduced_ops["result"](f, name, s, args, kwargs)
            return _unreduced_traced(f, name, s, args, kwargs)
        if in_auto_axes and explicit and not (s.spec.unreduced or s.spec.reduced):
            auto = switched_ops["auto_axes"](lambda *a: f(*a, **kwargs), axes=explicit, out_sharding=s)
            return auto(*args)
        if typed_result:
            with _sharding_rules.contraction_out(tuple(s.spec)):
                out = f(*args, **kwargs)
            if _typed_as(out, s):
                return out  # (its type is the one asked for: no constraint staged, as JAX's)
        else:
            out = f(*args, **kwargs)
        return reshard(out, s)

    try:
        sig = inspect.signature(f)
        params = list(sig.parameters.values())
        if "out_sharding" not in sig.parameters:
            extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
            at = next(
                (i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params)
            )
            params.insert(at, extra)
        wrapped.__signature__ = sig.replace(parameters=params)
    except (TypeError, ValueError):
        pass
    return wrapped
