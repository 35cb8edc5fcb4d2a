"""The bodies of ``shard_map`` (and ``pmap``, built on it) being traced: which mesh axes the
enclosing bodies bind (``_bodies``, the default mesh and ``axis_names`` of a nested shard_map, and
pmap's refusal inside one), and the types of a checked body's staged values -- the manual axes
each varies along, and in a fully manual body its unreduced and reduced axes (NOTE: [varying axes
in staged types]), set on every staged equation's results through ``hooks.apply_vma`` and read by
``typeof`` (``staged_manual_aval``, registered with ``funcgrad._sharding_types``).

Layer: surface, a floor below ``funcgrad._shard_map_specs`` and ``funcgrad.parallel``. Imports the
kernel (hooks, the IR, staging tracers), the primitive catalog (``primitives.collectives``,
``primitives._unreduced_rules``), ``funcgrad._vma`` (the rule of ``check_vma``),
``funcgrad._shard_map_eager`` (``ManualAval``), ``funcgrad._shardings`` and
``funcgrad._sharding_types``.
"""

from __future__ import annotations

import threading

from funcgrad import _shard_map_eager as _eager
from funcgrad import _sharding_types
from funcgrad._meshes import body_meshes
from funcgrad._shardings import AxisType
from funcgrad._vma import _unwrap, _varying_env, check_matching_vma, eqn_varying
from funcgrad.kernel import ad, core, ir
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import StagingTracer
from funcgrad.primitives import _unreduced_rules as ur
from funcgrad.primitives import collectives as co
from funcgrad.primitives import elementwise as ew


class _BodyDepth(threading.local):
    depth = 0
    manual: frozenset = frozenset()  # the mesh axes the enclosing shard_map bodies are manual over
    mesh = None  # the innermost enclosing body's mesh (the default of a nested shard_map's mesh=)
    eager_check = False  # the innermost body runs eagerly, checked (NOTE: [eager shard_map])


_bodies = _BodyDepth()


class _inside_body:
    """Marks the tracing of a shard_map (or pmap) body: a pmap there is refused, as in JAX. A
    checked staged body also gives its ``(trace, seeds, mesh, manual)``, so ``typeof`` of its
    values shows the manual axes they vary along (``staged_manual_aval``)."""

    def __init__(self, frame=None, manual=(), mesh=None, eager_check=False):
        self.frame = frame
        self.manual = frozenset(manual)
        self.mesh = mesh
        self.eager_check = eager_check

    def __enter__(self):
        _bodies.depth += 1
        self.outer_eager, _bodies.eager_check = _bodies.eager_check, self.eager_check
        self.outer, _bodies.manual = _bodies.manual, _bodies.manual | self.manual
        self.outer_mesh = _bodies.mesh
        if self.mesh is not None:
            _bodies.mesh = self.mesh
        if self.frame is not None:
            _staged_frames.stack = (*getattr(_staged_frames, "stack", ()), self.frame)
            _vma_typing.count += 1
            hooks.apply_vma = _apply_vma
        # As JAX's: inside the body the abstract mesh in scope is the shard_map's, its manual axes
        # (these and the enclosing bodies') of type Manual (get_abstract_mesh().manual_axes)
        self.scope = None
        # (only a partially manual body's mesh lays out a bare spec: in a fully manual one, a pmap's
        # body included, there is no axis left to lay out along)
        partial = self.mesh is not None and any(n not in _bodies.manual for n in self.mesh.axis_names)
        body_meshes().append(self.mesh if partial else None)
        if self.mesh is not None:
            am = self.mesh.abstract_mesh
            manual = {n: AxisType.Manual for n in am.axis_names if n in _bodies.manual}
            self.scope = am.update_axis_types(manual)
            self.scope.__enter__()

    def __exit__(self, *exc):
        if self.scope is not None:
            self.scope.__exit__(*exc)
        body_meshes().pop()
        _bodies.depth -= 1
        _bodies.eager_check = self.outer_eager
        _bodies.manual = self.outer
        _bodies.mesh = self.outer_mesh
        if self.frame is not None:
            _staged_frames.stack = _staged_frames.stack[:-1]
            _vma_typing.count -= 1
            if not _vma_typing.count:
                hooks.apply_vma = None


# NOTE: [varying axes in staged types]
# As JAX's types, a value of a checked shard_map body being staged carries the manual axes it
# varies along in its ShapedArray (``typeof(x).vma``, ``x.aval.mat.varying``): the body's inputs
# vary along the axes their in_specs name (and those the arguments of a nested shard_map vary
# along), and while such a body is staged every staged equation's results are typed by
# ``eqn_varying`` (the rule of ``check_vma``'s dataflow pass, funcgrad/_vma.py) through
# ``hooks.apply_vma`` -- in the jaxprs a ``jit``, ``cond`` or ``scan`` inside traces too, whose
# inputs are typed as their arguments. The axes are not part of type equality (a carry's type
# check, caches): JAX's "pvary" refusals are not made from them.
_UR = ("unreduced", "reduced")


class _VmaTyping:
    count = 0  # checked bodies being staged, in all threads (the hook is set while any is)


_vma_typing = _VmaTyping()


def _apply_vma(primitive, avals, out, params):
    manual = _bodies.manual
    if not manual or not getattr(_staged_frames, "stack", ()):
        return out
    vin = [getattr(a, "manual_axis_type", ir.ManualAxisType()).varying for a in avals]
    check_matching_vma(primitive, vin)
    many = primitive.multiple_results
    outs = list(out) if many else [out]
    varying = eqn_varying(primitive, params, vin, len(outs))
    urs = _manual_ur(primitive, avals, outs, params)
    typed = []
    for a, v, (u, r) in zip(outs, varying, urs):
        v = frozenset(v) & manual
        if type(a) is core.ShapedArray and (v or u or r or not a.mat.empty):
            mat = ir.ManualAxisType(varying=v - u - r, unreduced=u, reduced=r)
            if a.mat != mat:
                a = a.with_manual_axis_type(mat)
        typed.append(a)
    return typed if many else typed[0]


def _manual_ur(primitive, avals, outs, params) -> list:
    """The unreduced and reduced manual axes of an equation's results in a fully manual checked
    body (JAX's manual_rule: its ur rules read the values' manual axis types, NOTE: [unreduced
    values]); none in a partially manual one (as JAX's)."""
    none = [(frozenset(), frozenset())] * len(outs)
    stack = getattr(_staged_frames, "stack", ())
    mesh = stack[-1][2] if stack else None
    if mesh is None or frozenset(_bodies.manual) != frozenset(mesh.axis_names):
        return none
    if not any(not a.mat.empty for a in avals) and primitive not in (co.all_gather_reduced_p, co.pcast_p):
        return none
    if primitive is co.pcast_p:
        a, axes = avals[0], frozenset(params["axis_name"])
        kind = params["to"]
        if kind == "varying":  # (JAX's pvary, or reduced_vary_cast of a reduced value)
            return [(a.mat.unreduced, a.mat.reduced - axes)]
        return [
            (a.mat.unreduced | axes, a.mat.reduced)
            if kind == "unreduced"
            else (a.mat.unreduced, a.mat.reduced | axes)
        ]
    if primitive.traits.jaxpr_params:  # (a call or control flow: its body typed its results)
        return [(o.mat.unreduced, o.mat.reduced) for o in outs]
    if primitive in _COLLECTIVE_UR:
        return [_COLLECTIVE_UR[primitive](avals[0], frozenset(params["axis_name"]))] * len(outs)
    u = ur.out_unreduced(primitive, avals, outs, params)
    # (JAX's auto_insert_reshard: an operand reduced along axes another varies along is cast to
    # varying first, so the result is not reduced there)
    varying = frozenset().union(*(a.mat.varying for a in avals))
    return [(uo, ro - varying) for uo, ro in zip(u, ur.out_reduced(primitive, avals, outs, u, params))]


# (JAX's collectives' ur rules, on one operand: a sum over unreduced axes reduces them; an
# all_gather(to='reduced') makes a complete copy, reduced along its axes)
_COLLECTIVE_UR = {
    co.psum_p: lambda a, axes: (a.mat.unreduced - axes, a.mat.reduced),
    co.psum_scatter_p: lambda a, axes: (a.mat.unreduced - axes, a.mat.reduced),
    co.all_gather_reduced_p: lambda a, axes: (a.mat.unreduced, a.mat.reduced | axes),
}


_staged_frames = threading.local()  # .stack: the checked shard_map bodies being staged, innermost last


def staged_manual_aval(x, aval):
    """``typeof`` of a value of a checked shard_map body being staged (under ``jit``): its block's
    type with JAX's ``manual_axis_type`` (the manual axes it varies along, from the equations
    staged so far: the rule of ``check_vma``), printed ``{V:i}``; ``None`` for any other value."""
    stack = getattr(_staged_frames, "stack", ())
    if not stack or not isinstance(x, core.Tracer):
        return None
    x = _unwrap(x)
    typed = x.aval.mat.varying if isinstance(x, StagingTracer) else frozenset()
    mat = x.aval.mat if isinstance(x, StagingTracer) else None
    if typed or (mat is not None and (mat.unreduced or mat.reduced)):
        # (NOTE: [varying axes in staged types]: also a value of a jit inside the body; the
        # unreduced/reduced axes of a fully manual body's value with them)
        names = [str(n) for n in stack[-1][2].axis_names]
        vma = {str(n) for n in typed}
        out = _eager.ManualAval(aval.shape, aval.dtype, aval.weak_type, vma, names, aval._sharding)
        out.manual_axis_type = ir.ManualAxisType(varying=vma, unreduced=mat.unreduced, reduced=mat.reduced)
        return out
    for trace, seeds, mesh, _manual in reversed(stack):
        if isinstance(x, StagingTracer) and x._trace is trace:
            builder = trace.builder
            env = dict(zip(builder.invars, seeds))
            ins = [env.get(v, frozenset()) for v in builder.invars]
            known = _varying_env(ir.Jaxpr(builder.const_list, builder.invars, builder.eqns, []), ins)
            vma = {str(n) for n in known.get(x._var, frozenset())}
            names = [str(n) for n in mesh.axis_names]
            return _eager.ManualAval(aval.shape, aval.dtype, aval.weak_type, vma, names, aval._sharding)
    return None


_sharding_types.manual_aval_hooks.append(staged_manual_aval)


# NOTE: [custom_vjp in a checked body]
# A custom_vjp's bwd is written for JAX's typed cotangents: the cotangent of a value invariant
# along manual axes A is the whole cotangent, the same on every device, and bwd must return, for
# each argument, a cotangent of the argument's type (a psum where the argument is invariant).
# funcgrad's transposes in a shard_map body compute each device's share instead (the stacked
# Jacobian, NOTE: [shard_map transpose]): a value invariant along A gets shares summing to JAX's
# cotangent. So a custom_vjp called in a checked body (its arguments and results typed, NOTE:
# [varying axes in staged types]) hands bwd the psum over A of its results' shares, and divides
# the cotangent bwd returns for an argument invariant along A by |A| (equal shares). bwd's results
# are typed by the rule of check_vma (the staged equations from its inputs, typed as the results
# and the fwd's residuals) and refused, in JAX's words, where they do not have their argument's
# type. (Under check_vma=False JAX's cotangents are shares too: nothing to adapt.)
class _ManualCustomVJP:
    def __init__(self, in_avals, out_avals, manual, mesh):
        self.in_varying = [frozenset(getattr(a, "mat", ir.ManualAxisType()).varying) for a in in_avals]
        # (None: the results' types are read from fwd's, the call not being staged first)
        self.out_varying = (
            None
            if out_avals is None
            else [frozenset(getattr(a, "mat", ir.ManualAxisType()).varying) for a in out_avals]
        )
        self.manual = manual
        self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))

    def _invariant(self, varying) -> tuple:
        return tuple(n for n in self.sizes if n in self.manual and n not in varying)

    def cts_in(self, cts) -> list:
        out = []
        for c, v in zip(cts, self.out_varying):
            axes = self._invariant(v)
            if not isinstance(c, ad.Zero):
                c = co.psum_p.bind(c, axis_name=axes) if axes else c
                # (an eager body's value: typed as the result, as JAX's cotangent is)
                c = _eager.mark_varying(c, v) if _eager.is_eager_tracer(c) else c
            out.append(c)
        return out

    def cts_out(self, cts) -> list:
        out = []
        for c, v in zip(cts, self.in_varying):
            k = 1
            for n in self._invariant(v):
                k *= self.sizes[n]
            out.append(c if k == 1 or isinstance(c, ad.Zero) else ew.div(c, k))
        return out

    def watch(self, values, varying) -> _Watch:
        return _Watch(values, varying)

    def typed_results(self, outs, watch) -> None:
        if self.out_varying is None:
            self.out_varying = [
                v if (v := watch.varying(y)) is not None else frozenset(core.get_aval(y).mat.varying)
                for y in outs
            ]


class _Watching(threading.local):
    stack: tuple = ()  # custom_vjp bwd rules of checked bodies being staged (_Watch), innermost last


_watching = _Watching()


def body_manual_axes() -> frozenset:
    """The manual axes of the shard_map bodies being traced (none outside them)."""
    return _bodies.manual


def in_typed_bwd() -> bool:
    """Whether a custom_vjp's bwd called in a checked shard_map body is being staged."""
    return bool(_watching.stack)


def typed_bwd_varying(x):
    """The manual axes ``x`` varies along in the innermost such bwd (None: not known)."""
    return _watching.stack[-1].varying(x) if _watching.stack else None


class _Watch:
    """The manual axes of the values staged from ``values`` (typed ``varying``, None: as their
    type says) from here on: the rule of check_vma over the equations staged since; an eager
    body's values carry theirs (NOTE: [eager shard_map])."""

    def __init__(self, values, varying):
        trace = core.current_trace()
        self.builder = getattr(trace, "builder", None)
        self.trace = trace
        self.mark = len(self.builder.eqns) if self.builder is not None else 0
        self.seeds = {}
        for x, v in zip(values, varying):
            if isinstance(x, StagingTracer) and x._trace is trace:
                self.seeds[x._var] = frozenset(v) if v is not None else frozenset(x.aval.mat.varying)
        self.env = dict(self.seeds)
        self.done = self.mark

    def __enter__(self):
        # (bwd's pvary is staged as the typed cast it is in a checked body, also where the
        # transposed body is not being typed: its type is what the check reads)
        _watching.stack = (*_watching.stack, self)
        return self

    def __exit__(self, *exc):
        _watching.stack = _watching.stack[:-1]

    def varying(self, x):
        if _eager.is_eager_tracer(x):
            return x.vma
        if self.builder is None and not _bodies.eager_check:
            return None
        if not isinstance(x, core.Tracer):
            return frozenset()  # (a constant: the same on every device)
        if self.builder is None or not (isinstance(x, StagingTracer) and x._trace is self.trace):
            return None
        env = self.env

        def of(a):
            if not isinstance(a, ir.Var):
                return frozenset()
            return env.get(a, frozenset(getattr(a.aval, "mat", ir.ManualAxisType()).varying))

        eqns = self.builder.eqns
        for eqn in eqns[self.done :]:  # (the equations staged since the last call)
            vin = [of(a) for a in eqn.invars]
            env.update(zip(eqn.outvars, eqn_varying(eqn.primitive, eqn.params, vin, len(eqn.outvars))))
        self.done = len(eqns)
        return frozenset(self.env.get(x._var, frozenset(x.aval.mat.varying)))


def _custom_vjp_manual(in_avals, out_avals):
    manual, mesh = _bodies.manual, _bodies.mesh
    if not manual or mesh is None or not (_bodies.eager_check or getattr(_staged_frames, "stack", ())):
        return None
    return _ManualCustomVJP(in_avals, out_avals, manual, mesh)


hooks.custom_vjp_manual = _custom_vjp_manual
