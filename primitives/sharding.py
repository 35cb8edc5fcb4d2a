"""Sharded programs: ``shard_map`` (a per-device body over a mesh) and ``sharding_constraint``.

Layer: primitives. Imports the funcgrad kernel (ir, core, ad, batching, partial_eval, callkit),
numpy and the sibling families ``call`` (an eager shard_map runs as a compiled one-equation
``jit``), ``collectives`` (psum of cotangents), ``elementwise`` and ``structure``.

A mesh is read duck-typed (``mesh.axis_names``, ``mesh.devices.shape``; the surface's
``funcgrad.sharding.Mesh``). A *spec* here is normalized: one tuple of mesh axis names per array
dimension (``(("x",), ())`` is ``P("x", None)``).

``shard_map_p`` carries the per-device body (``jaxpr``, over blocks), the ``mesh`` and the specs of
its inputs and outputs (``in_specs``/``out_specs``). Its body sees the mesh axes as named axes
(collectives over them lower to StableHLO collectives across devices, xla_bridge/rules/). Its
rules transform the body and bind shard_map again:

- jvp: tangents share their primal's spec;
- batch: the batch dimension is an unsplit dimension of every block (a ``()`` inserted in the
  specs);
- partial evaluation: residuals leave the known body with one leading block dimension split over
  every mesh axis, and enter the unknown body the same way;
- transpose: NOTE: [shard_map transpose].

# NOTE: [shard_map transpose]
# A shard_map is a function of global arrays: an input split over the mesh is scattered, one left
# whole along some axes is *broadcast* to the devices of those axes; an output left whole along an
# axis is one of the (identical) copies its devices hold. Transposed: the cotangent of an input
# broadcast along axes ``A`` is the ``psum`` over ``A`` of the devices' cotangents, and the
# cotangent of an output replicated along ``A`` is shared by its copies (divided by the size of
# ``A``); inside, collectives transpose per NOTE: [transposes of collectives]. This gives the
# gradient of the global function (``grad`` outside the shard_map, the data-parallel pattern of
# JAX's shard_map tutorial) without JAX's varying-axes types (``pvary``).

``sharding_constraint_p`` asks the partitioner to lay its operand out as ``spec`` over ``mesh``
(``lax.with_sharding_constraint``); it is the identity on values.

``xla_metadata_value_p`` (``set_xla_metadata(x, **kvs)``) is the identity too: its lowering puts
``kvs`` on the operation that computed its operand as XLA frontend attributes (NOTE: [xla
metadata] in xla_bridge/emitter.py). Linear, as JAX's: a tangent is tagged as its primal, a
cotangent passes untagged (JAX's backward pass is not tagged either).
"""

from __future__ import annotations

import contextlib
import functools
import math
import weakref

import numpy as np
from funcgrad.primitives import _unreduced_rules as _ur
from funcgrad.primitives import collectives as co
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st
from funcgrad.primitives._rules import JET_OF_SUBPROGRAM
from funcgrad.primitives._sharding_rules import _explicit_axes, _spmd_axes, spec_of, vmapped_axes
from funcgrad.primitives.call import jit_p

from funcgrad.kernel import batching, core
from funcgrad.kernel.ad import Zero, deflinear, instantiate, is_undefined_primal, linear_taylor
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.callkit import DerivedJaxprs, derived_jvp, derived_partial_eval, derived_transpose
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from funcgrad.kernel.partial_eval import trace_to_jaxpr, typed_outputs

__all__ = [
    "mesh_frames",
    "meshes_in",
    "shard_map_p",
    "sharding_constraint_p",
    "spmd_axis_name",
    "xla_metadata_value_p",
]


def mesh_sizes(mesh) -> dict:
    return dict(zip(mesh.axis_names, mesh.devices.shape))


def mesh_frames(mesh, manual_axes=None) -> list:
    """The named axes a shard_map body over ``mesh`` sees: ``[(name, size), ...]``, those of
    ``manual_axes`` (default: every axis) in mesh order."""
    return [
        (n, k) for n, k in zip(mesh.axis_names, mesh.devices.shape) if manual_axes is None or n in manual_axes
    ]


def manual_of(mesh, manual_axes) -> tuple:
    """``manual_axes`` in mesh order (``None``: every axis of ``mesh``)."""
    if manual_axes is None:
        return tuple(mesh.axis_names)
    return tuple(n for n in mesh.axis_names if n in manual_axes)


def _factors(mesh, spec) -> list[int]:
    sizes = mesh_sizes(mesh)
    return [math.prod(sizes[n] for n in dim) for dim in spec]


def block_aval(aval: ShapedArray, mesh, spec, what: str) -> ShapedArray:
    """The per-device block of a global ``aval`` split as ``spec``."""
    if len(spec) != aval.ndim:
        raise ValueError(f"{what}: the spec has {len(spec)} dimensions but the value is {aval.str_short()}")
    shape = []
    for d, (n, k, names) in enumerate(zip(aval.shape, _factors(mesh, spec), spec)):
        if n % k:
            raise ValueError(
                f"{what}: dimension {d} of {aval.str_short()} is split over the mesh axes {names} ({k} "
                f"devices) but {n} is not divisible by {k}"
            )
        shape.append(n // k)
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def global_aval(aval: ShapedArray, mesh, spec) -> ShapedArray:
    shape = tuple(n * k for n, k in zip(aval.shape, _factors(mesh, spec)))
    return ShapedArray(shape, aval.dtype, aval.weak_type)


class URSpec(tuple):
    """A normalized spec (one tuple of mesh axis names per dimension) of a shard_map output typed
    unreduced over manual axes (``out_specs=P(..., unreduced={'y'})``, JAX 0.10: each device's
    block is a partial sum along them) or reduced: a tuple, so every rule reads its dimensions,
    and equal only to a spec with the same ``unreduced``/``reduced`` axes.

    >>> s = URSpec((("x",), ()), unreduced={"y"})
    >>> s == (("x",), ()), s.unreduced, s.swapped().reduced
    (False, frozenset({'y'}), frozenset({'y'}))
    """

    def __new__(cls, dims, unreduced=frozenset(), reduced=frozenset()):
        self = super().__new__(cls, dims)
        self.unreduced, self.reduced = frozenset(unreduced), frozenset(reduced)
        return self

    def _key(self):
        return (tuple(self), self.unreduced, self.reduced)

    def __eq__(self, other):
        ur = (getattr(other, "unreduced", frozenset()), getattr(other, "reduced", frozenset()))
        return (
            isinstance(other, tuple) and tuple(self) == tuple(other) and ur == (self.unreduced, self.reduced)
        )

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"URSpec({tuple(self)!r}, unreduced={set(self.unreduced)}, reduced={set(self.reduced)})"

    def __reduce__(self):
        return (URSpec, (tuple(self), self.unreduced, self.reduced))

    def swapped(self) -> URSpec:
        """The spec of a cotangent (JAX's to_ct_spec: unreduced and reduced swap)."""
        return URSpec(self, self.reduced, self.unreduced)


def spec_unreduced(spec) -> frozenset:
    return getattr(spec, "unreduced", frozenset())


def _unmentioned(mesh, spec, manual_axes) -> tuple:
    # (an output unreduced or reduced over an axis holds its own block along it: no broadcast)
    used = {n for dim in spec for n in dim} | spec_unreduced(spec) | getattr(spec, "reduced", frozenset())
    return tuple(n for n in manual_of(mesh, manual_axes) if n not in used)


def _insert(spec, d, names=()):
    return (*spec[:d], tuple(names), *spec[d:])


@contextlib.contextmanager
def explicit_mesh_axis(names: tuple):
    """While a ``vmap`` whose mapped inputs are split over the explicit mesh axes ``names``
    traces, a value it broadcasts along the mapped dimension (an unbatched output, an unbatched
    operand) is split over them too, as JAX's ``get_sharding_for_vmap``.

    >>> with explicit_mesh_axis(("x",)):
    ...     _explicit_axes.get()
    ('x',)
    """
    token = _explicit_axes.set(tuple(names))
    try:
        yield
    finally:
        _explicit_axes.reset(token)


@contextlib.contextmanager
def spmd_axis_name(names: tuple):
    """While ``vmap(..., spmd_axis_name=names)`` traces, a sharding constraint it batches splits
    the new (mapped) dimension over the mesh axes ``names`` (JAX's ``spmd_axis_name``).

    >>> with spmd_axis_name(("x",)):
    ...     _spmd_axes.get()
    ('x',)
    """
    token = _spmd_axes.set(tuple(names))
    try:
        yield
    finally:
        _spmd_axes.reset(token)


def _constraint_batch(axis_size, vals, dims, *, mesh, spec, **ur):
    spmd = tuple(_spmd_axes.get())
    if spmd and set(spmd) & {n for p in spec for n in p}:  # (JAX's words)
        shown = ", ".join("None" if not p else repr(p[0]) if len(p) == 1 else repr(p) for p in spec)
        raise ValueError(
            f"vmap spmd_axis_name {spmd} cannot appear in with_sharding_constraint spec, but got "
            f"spec P({shown})"
        )
    vmapped = vmapped_axes()
    names = tuple(n for n in vmapped if n in mesh.axis_names and all(n not in p for p in spec))
    return sharding_constraint_p.bind(vals[0], mesh=mesh, spec=_insert(spec, dims[0], names), **ur), dims[0]


def _env(mesh, manual_axes=None):
    return batching.extend_axis_env(mesh_frames(mesh, manual_axes))


# ----------------------------------------------------------------------------------------------
# shard_map


shard_map_p = Primitive("shard_map", multiple_results=True)
shard_map_p.def_traits(jaxpr_params=("jaxpr",), taylor_from_jvp=JET_OF_SUBPROGRAM)
# The body's collectives name the mesh axes: bind them while its jaxpr is typechecked.
shard_map_p.def_traits(inner_axis_env=lambda params: _env(params["mesh"], params["manual_axes"]))


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, manual_axes):
    if len(avals) != len(jaxpr.in_avals):
        raise TypeError(f"shard_map expects {len(jaxpr.in_avals)} arguments, got {len(avals)}")
    for i, (a, spec, want) in enumerate(zip(avals, in_specs, jaxpr.in_avals)):
        blk = block_aval(a, mesh, spec, f"shard_map argument {i}")
        if (blk.shape, blk.dtype) != (want.shape, want.dtype):
            raise TypeError(
                f"shard_map argument {i}: its block is {blk.str_short()} but the body expects "
                f"{want.str_short()}"
            )
    return [global_aval(a, mesh, s) for a, s in zip(jaxpr.out_avals, out_specs)]


shard_map_p.def_abstract_eval(_abstract_eval)


def _typed_results(avals_in, avals_out, *, out_specs, jaxpr, **params) -> list:
    """On explicit mesh axes (NOTE: [sharding in types]) the results are typed as out_specs says
    along the manual axes, and as the body's results are along the explicit axes a partially
    manual shard_map (``axis_names=``) leaves to the partitioner (JAX's ``f32[8@x,4@y]``)."""
    out = []
    for spec, body in zip(out_specs, jaxpr.out_avals):
        inner = spec_of(body) if body._sharding is not None and body.ndim == len(spec) else ((),) * len(spec)
        out.append(tuple(tuple(d) + tuple(n for n in b if n not in d) for d, b in zip(spec, inner)))
    return out


shard_map_p.def_sharding_rule(_typed_results, from_params=True)
# (results typed unreduced as their out_specs say: URSpec; NOTE: [unreduced values])
_ur._unreduced_rules[shard_map_p] = lambda avals_in, avals_out, *, out_specs, **params: [
    spec_unreduced(s) for s in out_specs
]
_ur.reduced_rules[shard_map_p] = lambda avals_in, avals_out, *, out_specs, **params: [
    getattr(s, "reduced", frozenset()) for s in out_specs
]

_programs: dict = register_cache("primitives.shard_map_programs", {})  # NOTE: [caches have an owner]


def _program(params, avals) -> ClosedJaxpr:
    """A one-equation jaxpr calling shard_map (what an eager shard_map compiles), memoised."""
    key = (
        id(params["jaxpr"]),
        params["in_specs"],
        params["out_specs"],
        params["mesh"],
        params["manual_axes"],
    )
    hit = _programs.get(key)
    if hit is not None and hit[0] is params["jaxpr"]:
        return hit[1]
    invars = [Var(a) for a in avals]
    # (typed as a staged shard_map's results are: the explicit axes of a vmap over it stay)
    outvars = [Var(a) for a in typed_outputs(shard_map_p, avals, _abstract_eval(*avals, **params), params)]
    eqn = JaxprEqn(shard_map_p, invars, params, outvars, None)
    program = ClosedJaxpr(Jaxpr([], invars, [eqn], outvars), [])
    if len(_programs) > 256:
        _programs.pop(next(iter(_programs)))
    _programs[key] = (params["jaxpr"], program)
    return program


def _impl(*args, **params):
    program = _program(params, [core.get_aval(a) for a in args])
    return jit_p.bind(*args, jaxpr=program, name="shard_map", donated_invars=(False,) * len(args))


shard_map_p.def_impl(_impl)
shard_map_p.impl_takes_arrays = True


def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, manual_axes):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    with _env(mesh, manual_axes):
        jvp_closed, out_nonzeros = derived_jvp(jaxpr, nonzeros)
    args = [*primals, *(t for t in tangents if type(t) is not Zero)]
    specs = (*in_specs, *(s for s, nz in zip(in_specs, nonzeros) if nz))
    outs_spec = (*out_specs, *(s for s, nz in zip(out_specs, out_nonzeros) if nz))
    outs = shard_map_p.bind(
        *args, jaxpr=jvp_closed, mesh=mesh, in_specs=specs, out_specs=outs_spec, manual_axes=manual_axes
    )
    n = len(out_specs)
    out_primals, nz = outs[:n], iter(outs[n:])
    return out_primals, [
        next(nz) if k else Zero.from_primal_value(p) for p, k in zip(out_primals, out_nonzeros)
    ]


shard_map_p.def_jvp(_jvp)


def _transposed_body(jaxpr, mesh, in_specs, out_specs, linear, ct_zero, manual_axes, spmd=(), kept=None):
    # NOTE: [shard_map transpose]; the axes of an enclosing vmap's spmd_axis_name are not
    # broadcast along (its batch rule splits the batch over them: JAX's
    # _all_newly_manual_mesh_names), so no cotangent is summed or shared over them
    with _env(mesh, manual_axes):
        transposed, written = derived_transpose(jaxpr, linear, ct_zero)
        if written:  # (NOTE: [state written by a backward pass]: not threaded through shard_map)
            raise NotImplementedError("shard_map of a custom_vjp whose bwd writes a Ref")
        sizes = mesh_sizes(mesh)
        n_nonlin = sum(not lin for lin in linear)

        def unmentioned(spec):
            return tuple(n for n in _unmentioned(mesh, spec, manual_axes) if n not in spmd)

        ct_scale = [math.prod(sizes[n] for n in unmentioned(s)) for s, z in zip(out_specs, ct_zero) if not z]
        kept = kept or ((),) * len(in_specs)
        sums = [
            tuple(n for n in unmentioned(s) if n not in k) for s, lin, k in zip(in_specs, linear, kept) if lin
        ]

        zeros = _zero_outputs(transposed.jaxpr)

        def body(*args):
            nonlin, cts = args[:n_nonlin], args[n_nonlin:]
            cts = [ct if k == 1 else ew.div(ct, k) for ct, k in zip(cts, ct_scale)]
            outs = core.eval_jaxpr(transposed.jaxpr, transposed.consts, *nonlin, *cts)
            return [
                o if not axes or i in zeros else co.psum_p.bind(o, axis_name=axes)
                for i, (o, axes) in enumerate(zip(outs, sums))
            ]

        return trace_to_jaxpr(body, transposed.in_avals)


def _zero_outputs(jaxpr) -> set:
    """The outputs of a transposed body that are zeros it made (the cotangent of an input the body
    never reads): their sum over the devices is the zeros themselves, so no psum is bound for them
    (XLA's CPU simplifier aborted the process on an all-reduce of a broadcast complex zero: the
    sharded-program fuzzer, seed 17013)."""
    made = {
        e.outvars[0]: e.invars[0]
        for e in jaxpr.eqns
        if e.primitive is st.broadcast_in_dim_p and type(e.invars[0]) is Literal
    }
    out = set()
    for i, v in enumerate(jaxpr.outvars):
        lit = v if type(v) is Literal else made.get(v)
        if lit is not None and not np.any(np.asarray(lit.val)):
            out.add(i)
    return out


_derived_transpose = DerivedJaxprs(
    lambda closed, mesh, in_specs, out_specs, linear, ct_zero, manual_axes, spmd, kept: _transposed_body(
        closed, mesh, in_specs, out_specs, linear, ct_zero, manual_axes, spmd, kept
    )
)


def _ur_of(aval, manual, block=None) -> tuple:
    """The manual axes ``aval``'s type is unreduced and reduced over (explicit mesh axes), or
    the body's ``block`` is (its manual axis type)."""
    spec = getattr(getattr(aval, "_sharding", None), "spec", None)
    mat = getattr(block, "mat", None)
    u = frozenset(getattr(spec, "unreduced", None) or ()) | getattr(mat, "unreduced", frozenset())
    r = frozenset(getattr(spec, "reduced", None) or ()) | getattr(mat, "reduced", frozenset())
    return u & frozenset(manual), r & frozenset(manual)


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, manual_axes):
    linear = tuple(is_undefined_primal(a) for a in args)
    ct_zero = tuple(type(ct) is Zero for ct in cts)
    if all(ct_zero):
        return [Zero(a.aval) if lin else None for a, lin in zip(args, linear)]
    spmd = tuple(n for n in _spmd_axes.get() if n in manual_axes)
    # An input typed unreduced or reduced over manual axes: its cotangent is not summed over them;
    # it is typed reduced or unreduced there (JAX's to_ct_aval; NOTE: [unreduced values]): the
    # transposed shard_map's out spec says so (URSpec), so a reduced input's cotangent is each
    # device's partial sum, declared unreduced, and an unreduced input's the same on each device.
    manual = manual_of(mesh, manual_axes)
    # (the argument's type, or the body's block's manual axis type where a derived program's
    # linear input lost the former: grad of a jit around the shard_map)
    urs = [
        _ur_of(a.aval, manual, b) if lin else (frozenset(), frozenset())
        for a, lin, b in zip(args, linear, jaxpr.in_avals)
    ]
    # Under check_vma=False (the body's block carries no manual axis type) JAX sums an unreduced
    # input's cotangent over its unreduced axes all the same (_unmentioned2 of the cotangent's
    # spec, reduced there): the body's cotangents are each device's share of the reduced value
    # only if the body was typed (JAX's test_check_vma_false_unreduced_fwd_psum_on_bwd).
    typed_u = [getattr(getattr(b, "mat", None), "unreduced", frozenset()) for b in jaxpr.in_avals]
    kept = tuple(tuple(sorted((u & tu) | r, key=str)) for (u, r), tu in zip(urs, typed_u))
    body = _derived_transpose(jaxpr, mesh, in_specs, out_specs, linear, ct_zero, manual_axes, spmd, kept)
    call_args = [*(a for a in args if not is_undefined_primal(a)), *(c for c in cts if type(c) is not Zero)]
    specs = (
        *(s for s, lin in zip(in_specs, linear) if not lin),
        *(s.swapped() if type(s) is URSpec else s for s, z in zip(out_specs, ct_zero) if not z),
    )
    ct_specs = tuple(
        URSpec(s, unreduced=r, reduced=u) if u or r else s
        for s, lin, (u, r) in zip(in_specs, linear, urs)
        if lin
    )
    outs = iter(
        shard_map_p.bind(
            *call_args, jaxpr=body, mesh=mesh, in_specs=specs, out_specs=ct_specs, manual_axes=manual_axes
        )
    )
    return [next(outs) if lin else None for lin in linear]


shard_map_p.def_transpose(_transpose)
shard_map_p.def_traits(linear=True)  # may appear in linear programs: its transpose transposes its body


def _batch(axis_size, vals, dims, *, jaxpr, mesh, in_specs, out_specs, manual_axes):
    # As JAX's _shard_map_batch: under vmap(spmd_axis_name=names) the mapped dimension of every
    # block is split over those (manual) axes, so the body maps a part of the batch; a vmap over
    # explicit mesh axes leaves the mapped dimension to them (the shard_map is not manual over
    # them: the surface's axis_names left them out) and the body's types keep them.
    spmd = tuple(n for n in _spmd_axes.get() if n in manual_axes)
    explicit = () if spmd else tuple(_explicit_axes.get())
    _check_vmapped_axes(in_specs, spmd, explicit, "in_specs")
    size = axis_size // math.prod(dict(mesh.shape)[n] for n in spmd)
    specs = tuple(s if d is None else _insert(s, d, spmd) for s, d in zip(in_specs, dims))
    typed = [
        None if d is None else _batched_block(v, mesh, s, manual_axes) for v, d, s in zip(vals, dims, specs)
    ]
    with _env(mesh, manual_axes):
        batched, out_dims = batching.batch_jaxpr(
            jaxpr, size, list(dims), instantiate=False, batched_avals=typed
        )
    _check_vmapped_axes(out_specs, spmd, explicit, "out_specs")
    outs_spec = tuple(s if d is None else _insert(s, d, spmd) for s, d in zip(out_specs, out_dims))
    outs = shard_map_p.bind(
        *vals, jaxpr=batched, mesh=mesh, in_specs=specs, out_specs=outs_spec, manual_axes=manual_axes
    )
    return outs, out_dims


shard_map_p.def_batch(_batch)


def _batched_block(x, mesh, spec, manual_axes):
    """The body's batched block of ``x`` (a batched argument) split as ``spec``, typed as ``x``
    is along the axes the body leaves automatic (the mapped dimension's explicit axes among
    them); ``None`` (the default typing) when ``x`` has no sharding on those axes."""
    aval = core.get_aval(x)
    s = getattr(aval, "_sharding", None)
    if s is None or s.spec.unreduced or s.spec.reduced or len(spec) != aval.ndim:
        return None
    kept = [tuple(n for n in d if n not in manual_axes) for d in spec_of(aval)]
    if not any(kept):
        return None
    block = block_aval(aval, mesh, spec, "shard_map")
    return block.update(sharding=s.with_spec(type(s.spec)(*[d or None for d in kept])))


_vmap_shmap_error = [True]  # (config jax_disable_vmap_shmap_error turns the spmd refusal off)


def set_vmap_shmap_error_disabled(disabled: bool) -> None:
    """``jax_disable_vmap_shmap_error``: whether ``vmap(spmd_axis_name=names)`` of a shard_map
    whose specs name those axes is let through (JAX's temporary flag)."""
    _vmap_shmap_error[0] = not disabled


def _check_vmapped_axes(specs, spmd, explicit, what) -> None:
    used = {n for spec in specs for dim in spec for n in dim}
    if spmd and used & set(spmd) and _vmap_shmap_error[0]:
        raise ValueError(f"vmap spmd_axis_name cannot appear in shard_map {what}")
    if explicit and used & set(explicit):
        raise ValueError(f"vmapped away explicit mesh axis cannot appear in shard_map {what}")


def _residual_spec(mesh, aval, manual_axes):
    """A residual block ``(1, *shape)``: its leading dimension split over every manual mesh axis
    but those of an enclosing vmap's spmd_axis_name (JAX's _all_mesh_names_except_spmd: its batch
    rule splits the batch dimension over them)."""
    spmd = _spmd_axes.get()
    return (tuple(n for n in manual_of(mesh, manual_axes) if n not in spmd), *(((),) * (aval.ndim - 1)))


def _split_residuals(known, n_known_outs, mesh, manual_axes):
    """The known body with each residual given a leading block dimension of size 1."""
    with _env(mesh, manual_axes):

        def body(*args):
            outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
            res = [st.reshape(r, (1, *core.get_aval(r).shape)) for r in outs[n_known_outs:]]
            return [*outs[:n_known_outs], *res]

        return trace_to_jaxpr(body, known.in_avals)


def _join_residuals(unknown, num_res, mesh, manual_axes):
    with _env(mesh, manual_axes):
        res_avals = unknown.in_avals[:num_res]

        def body(*args):
            res = [st.reshape(r, a.shape) for r, a in zip(args[:num_res], res_avals)]
            return core.eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *args[num_res:])

        in_avals = [ShapedArray((1, *a.shape), a.dtype, a.weak_type) for a in res_avals]
        return trace_to_jaxpr(body, [*in_avals, *unknown.in_avals[num_res:]])


_derived_split = DerivedJaxprs(lambda closed, n, mesh, manual: _split_residuals(closed, n, mesh, manual))
_derived_join = DerivedJaxprs(lambda closed, n, mesh, manual: _join_residuals(closed, n, mesh, manual))


def _partial_eval(trace, args, unknowns, *, jaxpr, mesh, in_specs, out_specs, manual_axes):
    with _env(mesh, manual_axes):
        known, unknown, out_unknowns, num_res = derived_partial_eval(jaxpr, tuple(unknowns))
    n_known_outs = len(known.out_avals) - num_res
    known = _derived_split(known, n_known_outs, mesh, manual_axes)
    unknown = _derived_join(unknown, num_res, mesh, manual_axes)
    res_specs = tuple(_residual_spec(mesh, a, manual_axes) for a in unknown.in_avals[:num_res])
    known_args = [a for a, uk in zip(args, unknowns) if not uk]
    known_in = tuple(s for s, uk in zip(in_specs, unknowns) if not uk)
    known_out = (*(s for s, uk in zip(out_specs, out_unknowns) if not uk), *res_specs)
    with core.set_current_trace(trace.parent):
        known_outs = shard_map_p.bind(
            *known_args,
            jaxpr=known,
            mesh=mesh,
            in_specs=known_in,
            out_specs=known_out,
            manual_axes=manual_axes,
        )
    unknown_args = [*known_outs[n_known_outs:], *(a for a, uk in zip(args, unknowns) if uk)]
    unknown_in = (*res_specs, *(s for s, uk in zip(in_specs, unknowns) if uk))
    unknown_out = tuple(s for s, uk in zip(out_specs, out_unknowns) if uk)
    params = dict(
        jaxpr=unknown, mesh=mesh, in_specs=unknown_in, out_specs=unknown_out, manual_axes=manual_axes
    )
    unknown_outs = trace.stage(shard_map_p, unknown_args, params)
    it_known, it_unknown = iter(known_outs[:n_known_outs]), iter(unknown_outs)
    return [next(it_unknown) if uk else next(it_known) for uk in out_unknowns]


shard_map_p.def_partial_eval(_partial_eval)


_meshes: dict = register_cache("primitives.meshes_in", {})


def _walk_meshes(jaxpr, found: list) -> None:
    # (a module function, not a recursive closure: a closure that calls itself is a reference
    # cycle, garbage left for the collector after every jit trace -- JAX's core_test checks none)
    for eqn in jaxpr.eqns:
        if eqn.primitive is shard_map_p or eqn.primitive is sharding_constraint_p:
            m = eqn.params["mesh"]
            if m not in found:
                found.append(m)
        # a nested jit's shardings (a user's, or a derived call's: a gradient laid out as its
        # primal) run the enclosing program over their mesh too, as JAX's
        for key in ("in_shardings", "out_shardings"):
            for sh in eqn.params.get(key) or ():
                m = getattr(sh, "_fg_mesh", None)
                if m is not None and m not in found:
                    found.append(m)
        for sub in eqn.primitive.traits.jaxpr_params:
            v = eqn.params[sub]
            for j in v if isinstance(v, tuple | list) else (v,):
                j = j.jaxpr if isinstance(j, ClosedJaxpr) else j
                if hasattr(j, "eqns"):  # (custom_lin's bwd may be a Python function)
                    _walk_meshes(j, found)


def meshes_in(closed) -> list:
    """The meshes of the shard_maps and sharding constraints in a jaxpr (nested ones too)."""
    hit = _meshes.get(id(closed))
    if hit is not None and hit[0]() is closed:
        return hit[1]
    found: list = []
    _walk_meshes(closed.jaxpr, found)
    if len(_meshes) > 1024:
        _meshes.pop(next(iter(_meshes)))
    # held weakly: a jaxpr's consts (a closure's arrays) die with it, as JAX's weakref_lru_cache
    # (NOTE: [jit instances hold their function weakly] in funcgrad/jitting.py)
    _meshes[id(closed)] = (weakref.ref(closed, functools.partial(_drop_meshes, id(closed))), found)
    return found


def _drop_meshes(key, ref, meshes=_meshes) -> None:
    hit = meshes.get(key)  # (`meshes` bound here: at interpreter exit the globals may be gone)
    if hit is not None and hit[0] is ref:  # (not a later jaxpr given the same id)
        del meshes[key]


# ----------------------------------------------------------------------------------------------
# sharding_constraint


def _constraint_abstract_eval(x, *, mesh, spec, **ur):
    # (a dimension the mesh axes do not divide is XLA's to pad, as under JAX's jit)
    if len(spec) != x.ndim:
        raise ValueError(
            f"with_sharding_constraint: the spec has {len(spec)} dimensions but the value is {x.str_short()}"
        )
    return x


# NOTE: [unreduced values] (funcgrad/_sharding_unreduced.py): a constraint may also name the axes
# its result is unreduced or reduced over (params ``unreduced``/``reduced``, present only when not
# empty): ``reshard(x, P(None, unreduced={'x'}))`` inside ``jit``, XLA's replicated-to-unreduced
# cast. Its transpose sends the cotangent to the operand's cotangent type, where the two swap (JAX's
# ``to_ct_spec``: the cotangent of a reduced value is unreduced, and the reverse). A constraint with
# ``retype=True`` is JAX's ``reshard`` in or out of ``auto_axes``/``explicit_axes`` (funcgrad._placement
# ``recast``): it lowers to its result type's constraint alone (none onto Auto axes only) and transposes
# to the operand's type over the operand's axis types.
def ur_params(unreduced=frozenset(), reduced=frozenset()) -> dict:
    """The ``unreduced``/``reduced`` params of a constraint (absent when empty)."""
    out = {}
    if unreduced:
        out["unreduced"] = frozenset(unreduced)
    if reduced:
        out["reduced"] = frozenset(reduced)
    return out


def _constraint_transpose(ct, x, *, mesh, spec, retype=False, **ur):
    aval = x.aval
    sharding = getattr(aval, "_sharding", None)
    u = frozenset(getattr(getattr(sharding, "spec", None), "reduced", None) or ())
    r = frozenset(getattr(getattr(sharding, "spec", None), "unreduced", None) or ())
    if retype and mesh.axis_names:
        # JAX's reshard transpose (auto_axes/explicit_axes): the cotangent back to the operand's
        # type over the operand's mesh -- the same devices, its axis types; an untyped operand's
        # mesh has Auto axes only (the constraint then lowers to nothing).
        kind = type(mesh.axis_types[0])  # (the surface's AxisType, which this layer does not import)
        if sharding is None:
            back = mesh.update_axis_types({n: kind.Auto for n in mesh.axis_names})
            return [
                sharding_constraint_p.bind(instantiate(ct), mesh=back, spec=((),) * aval.ndim, retype=True)
            ]
        back = mesh.update_axis_types(dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types)))
        ur_back = ur_params(u, r)
        return [
            sharding_constraint_p.bind(instantiate(ct), mesh=back, spec=spec_of(aval), retype=True, **ur_back)
        ]
    if not (u or r or ur):
        return [sharding_constraint_p.bind(instantiate(ct), mesh=mesh, spec=spec)]
    # (to the operand's own type, its unreduced and reduced axes swapped)
    return [sharding_constraint_p.bind(instantiate(ct), mesh=mesh, spec=spec_of(aval), **ur_params(u, r))]


sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.def_impl(lambda x, *, mesh, spec, **ur: x)
sharding_constraint_p.def_abstract_eval(_constraint_abstract_eval)
deflinear(sharding_constraint_p, _constraint_transpose)
sharding_constraint_p.def_batch(_constraint_batch)
sharding_constraint_p.def_taylor(linear_taylor(sharding_constraint_p))  # (linear in its inexact operands)


xla_metadata_value_p = Primitive("xla_metadata_value")
xla_metadata_value_p.def_impl(lambda x, *, xla_metadata_kvs: x)
xla_metadata_value_p.def_abstract_eval(lambda x, *, xla_metadata_kvs: x)
deflinear(xla_metadata_value_p, lambda ct, x, *, xla_metadata_kvs: [ct])
xla_metadata_value_p.def_batch(
    lambda axis_size, vals, dims, *, xla_metadata_kvs: (
        xla_metadata_value_p.bind(vals[0], xla_metadata_kvs=xla_metadata_kvs),
        dims[0],
    )
)
xla_metadata_value_p.def_traits(forwards_operands=True)
