"""The closed primitive catalog: every operation funcgrad programs are made of, with its rules.

Layer: primitives. Imports only the funcgrad kernel (and numpy/scipy for impls).

One module per family (elementwise, structure, reductions, dot, call, ...); a module whose name
starts with ``_`` holds shared helpers. Importing this package imports every family and hands the
kernel the few array operations its transformations need (``funcgrad.kernel.register``, NOTE:
[kernel registration]). ``all_primitives()`` and ``families()`` are derived from the modules, so a
new primitive is listed by being declared in its family file.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from types import ModuleType

import numpy as np

from funcgrad import kernel
from funcgrad.kernel import custom_derivatives as _custom_derivatives
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import extended as _ext
from funcgrad.kernel.array import Array
from funcgrad.kernel.core import Primitive


def _family_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


# Importing a family module binds it as an attribute of this package (``primitives.structure``).
_FAMILIES: dict[str, ModuleType] = {
    name: importlib.import_module(f"{__name__}.{name}") for name in _family_names()
}

from funcgrad.primitives import (  # noqa: E402 - the helpers below use them
    _reshape_sharding,  # noqa: E402 - reshape's rule
    _sharding_rules,  # noqa: E402 - installs the rules on the families above
    _unreduced_rules,  # noqa: E402 - and the unreduced/reduced ones
    elementwise,
    reductions,
    structure,
)


def families() -> dict[str, ModuleType]:
    """The catalog's family modules by name (``primitives/<family>.py``).

    >>> "elementwise" in families()
    True
    """
    return dict(_FAMILIES)


def _zeros(aval):
    if _ext.is_extended(aval.dtype):  # its rules' zero (NOTE: [extended dtypes])
        zero = _ext.rules(aval.dtype, "zero")(aval.dtype)
        return structure.broadcast_in_dim(zero, aval.shape, ())
    if aval.dtype == _dt.float0:
        return np.zeros(aval.shape, _dt.float0)
    # (A weakly typed value's zero is weak too, as JAX's zero cotangent of a Python scalar.)
    zero = Array._from_owned(np.zeros((), aval.dtype), True) if aval.weak_type else np.zeros((), aval.dtype)
    # (A zero typed with a sharding on explicit mesh axes keeps it, as JAX's ``zeros_like_aval``:
    # a cotangent's or a scatter's zeros typed as the value they stand for, its unreduced and
    # reduced axes too: NOTE: [unreduced values].)
    out = _typed_as(structure.broadcast_in_dim(zero, aval.shape, ()), aval)
    sharding = getattr(aval, "_sharding", None)
    if sharding is None or not (sharding.spec.unreduced or sharding.spec.reduced):
        return out
    mesh = _constraint_mesh(sharding.mesh)
    if mesh is None:
        return out
    ur = _FAMILIES["sharding"].ur_params(sharding.spec.unreduced, sharding.spec.reduced)
    spec = _sharding_rules.spec_of(aval)
    return _FAMILIES["sharding"].sharding_constraint_p.bind(out, mesh=mesh, spec=spec, **ur)


def _add_any(x, y):
    """The sum of two tangents or cotangents (``add_any``); of an extended dtype, its rules' ``add``
    (NOTE: [extended dtypes])."""
    dtype = getattr(x, "dtype", None)  # (an Array's or a tracer's: no aval made on this hot path)
    if _ext.is_extended(dtype):
        return _ext.rules(dtype, "add")(dtype, x, y)
    return elementwise.add_any_p.bind(x, y)


def _constraint_mesh(mesh):
    """``mesh`` for a sharding constraint: over an abstract mesh the concrete mesh in scope when it
    is that mesh, else None."""
    if hasattr(mesh, "_flat"):
        return mesh
    context = kernel.hooks.context_mesh() if kernel.hooks.context_mesh is not None else None
    return context if context is not None and context.abstract_mesh == mesh else None


def _typed_as(x, aval, from_reduced: bool = False):
    """``x`` typed with ``aval``'s sharding on explicit mesh axes (NOTE: [sharding in types]),
    as JAX's transpose rules type a cotangent as its primal (``_unbroadcast``'s reshard, a
    ``broadcast_in_dim`` with ``out_sharding=``): a sharding constraint where the two differ.
    Unreduced and reduced axes are left as the rules give them, except that ``from_reduced``
    splits a reduced ``x`` as ``aval`` is (JAX's ``broadcast_in_dim(out_sharding=)`` of a reduced
    value: each device keeps its part, the value is no longer reduced). Over an abstract mesh the
    constraint names the concrete mesh in scope when it is that mesh; else ``x`` is unchanged."""
    sharding = getattr(aval, "_sharding", None)
    if sharding is None or sharding.spec.unreduced or sharding.spec.reduced:
        return x
    have = elementwise.aval_of(x)
    if have.shape != aval.shape:
        return x
    spec = _sharding_rules.spec_of(aval)
    if have._sharding is not None:
        if (
            have._sharding.spec.unreduced
            or (have._sharding.spec.reduced and not from_reduced)
            or _sharding_rules.spec_of(have) == spec
        ):
            return x
    elif not any(spec):
        return x
    mesh = _constraint_mesh(sharding.mesh)
    if mesh is None:
        return x
    return _FAMILIES["sharding"].sharding_constraint_p.bind(x, mesh=mesh, spec=spec)


def _full_like(x, value):
    aval = elementwise.aval_of(x)
    return structure.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())


def _broadcast_batch(x, axis_size, dim):
    aval = elementwise.aval_of(x)
    shape = list(aval.shape)
    shape.insert(dim, axis_size)
    dims = [d for d in range(len(shape)) if d != dim]
    out = structure.broadcast_in_dim(x, shape, dims)
    # (a size-1 dimension is the elementwise rule's broadcasting one, which JAX's
    # broadcast_batcher inserts with no mesh axis: only the vmap's own size is split)
    names = _sharding_rules._explicit_axes.get() if axis_size != 1 else ()
    sharding = aval._sharding if names else None
    if sharding is not None and not sharding.spec.unreduced and not sharding.spec.reduced:
        # (the mapped dimension split as the vmap's inputs are: JAX's get_sharding_for_vmap)
        spec = list(_sharding_rules.spec_of(aval))
        if not any(n in d for d in spec for n in names):
            spec.insert(dim, tuple(names))
            typed = type(sharding)(sharding.mesh, type(sharding.spec)(*[d or None for d in spec]))
            out = _typed_as(out, elementwise.aval_of(out).update(sharding=typed))
    return out


def _batched_aval(aval, axis_size, dim):
    """``aval`` with a mapped dimension of ``axis_size`` inserted at ``dim``, as JAX's
    ``core.unmapped_aval`` types a batched jaxpr's inputs: the other dimensions keep their
    shardings (unreduced and reduced axes too) and the new one is split over the explicit mesh
    axes the vmap's inputs are (``AxisData.explicit_mesh_axis``), so a scan's carry or a loop's
    state keeps its sharding under ``vmap``."""
    shape = list(aval.shape)
    shape.insert(dim, axis_size)
    sharding = aval._sharding
    if sharding is None:
        return aval.update(shape=tuple(shape))
    names = _sharding_rules._explicit_axes.get() if axis_size != 1 else ()
    spec = [d or None for d in _sharding_rules.spec_of(aval)]
    spec.insert(dim, (names[0] if len(names) == 1 else tuple(names)) if names else None)
    old = sharding.spec
    new = type(old)(*spec, unreduced=old.unreduced, reduced=old.reduced)
    return aval.update(shape=tuple(shape), sharding=sharding.with_spec(new))


kernel.register(
    library_dir=os.path.dirname(os.path.abspath(__file__)) + os.sep,
    array_ops=dict(
        add_any=_add_any,
        mul=elementwise.mul,
        zeros=_zeros,
        full_like=_full_like,
        moveaxis=structure.moveaxis,
        broadcast_batch=_broadcast_batch,
        batched_aval=_batched_aval,
        broadcast_in_dim=structure.broadcast_in_dim,
        reduce_sum=reductions.reduce_sum,
        reshape=structure.reshape,
        sum_to_scalar=lambda x: reductions.reduce_sum(x, tuple(range(elementwise.aval_of(x).ndim))),
        typed_as=_typed_as,
    ),
)


# Each primitive's output sharding on explicit mesh axes, by kind (NOTE: [sharding in types]),
# and its unreduced/reduced axes (NOTE: [unreduced values]).
_sharding_rules.install(_FAMILIES)
_reshape_sharding.install(_FAMILIES)
_unreduced_rules.install(_FAMILIES)


def primitives_of(module: ModuleType) -> list[Primitive]:
    """The primitives a module declares (module-level names bound to a ``Primitive``)."""
    found = []
    for value in vars(module).values():
        if isinstance(value, Primitive) and value not in found:
            found.append(value)
    return found


def all_primitives() -> list[Primitive]:
    """Every primitive of the catalog (for completeness tests and the lowering table).

    >>> any(p.name == "sin" for p in all_primitives())
    True
    """
    found = []
    # The kernel declares the custom-derivative primitives; they belong to the catalog too.
    for module in (*_FAMILIES.values(), _custom_derivatives):
        for p in primitives_of(module):
            if p not in found:
                found.append(p)
    return found


# The catalog's primitives take arrays unless their traits say otherwise: the kernel refuses a
# token operand there (NOTE: [tokens]), never a user's primitive's, as JAX's lax does.
kernel.register(catalog=frozenset(all_primitives()))
