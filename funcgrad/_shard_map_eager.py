"""Eager ``shard_map``: an un-jitted call runs its body per device, one primitive at a time.

Layer: surface. Imports numpy, the kernel (``core``, ``batching``, ``caches``, ``ir``), the
primitive catalog (``structure``: the reshapes that add and drop the device dimension) and
``funcgrad.jitting``. The staged ``shard_map`` (``funcgrad.parallel``, which imports this module)
is handed in as ``staged``.

# NOTE: [eager shard_map]
# As in JAX 0.10, ``shard_map(f, ...)(x)`` outside ``jit`` does not stage ``f``: it runs ``f`` with a
# ``ShardMapTrace`` current, whose tracers hold every device's block at once, stacked along a
# leading dimension split over the manual mesh axes (row-major in mesh order), so block ``k``
# lives on the devices at manual coordinate ``k``. Each primitive the body binds runs on the
# devices as a small compiled shard_map of that one primitive (cached per primitive, parameters
# and operand kinds), so collectives are the same StableHLO collectives as in a jitted
# shard_map and every value stays on its device. A tracer knows along which manual axes its
# blocks may differ (``vma``, the same rule as the staged check, ``parallel.eqn_varying``), which
# gives ``check_vma``'s error at the end and lets an invariant value be used as a Python value
# (``if x > 0:``, ``float(x)``). ``print(x)`` shows each device's block, in JAX's words:
# ``On cpu:0 at mesh coordinates (x,) = (0,):`` and the block.
"""

from __future__ import annotations

import threading

import numpy as np

from funcgrad._disable_jit import jit_disabled
from funcgrad._sharding_types import drop_size_one_axes
from funcgrad._shardings import ManualAxisType, Mesh, NamedSharding, PartitionSpec
from funcgrad.jitting import JittedFunction
from funcgrad.kernel import batching, core
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.ir import ShapedArray
from funcgrad.primitives import structure as st

__all__ = [
    "ManualAval",
    "ShardMapTrace",
    "ShardMapTracer",
    "in_own_program",
    "mark_varying",
    "runs_eagerly",
    "spec_of_norm",
]


class _Programs(threading.local):
    depth = 0


_own = _Programs()


def in_own_program() -> bool:
    """Whether an eager shard_map's own per-primitive program is being traced or run now."""
    return _own.depth > 0


def runs_eagerly() -> bool:
    """Whether a shard_map called now runs per device (outside ``jit`` and every transformation)."""
    return type(core.current_trace()) is core.EvalTrace


def spec_of_norm(norm) -> PartitionSpec:
    """The PartitionSpec of a normalized spec (one tuple of axis names per dimension)."""
    return PartitionSpec(*[None if not d else d[0] if len(d) == 1 else tuple(d) for d in norm])


_programs: dict = register_cache("parallel.eager_shard_map_programs", {})  # NOTE: [caches have an owner]


def _auto_spec(aval, manual) -> tuple | None:
    """Per dimension of a block of the stacked ``aval`` (its leading device dimension dropped),
    the explicit mesh axes other than the ``manual`` ones that split it; ``None`` when none do."""
    s = aval._sharding
    if s is None or s.spec.unreduced or s.spec.reduced:
        return None
    spec = (*s.spec, *([None] * (aval.ndim - len(s.spec))))[1:]
    kept = [tuple(n for n in ((d,) if isinstance(d, str) else d or ()) if n not in manual) for d in spec]
    return tuple(kept) if any(kept) else None


def _auto_sharding(aval, manual):
    """A block's sharding along the automatic (explicit) axes of a partially manual body, as
    JAX's types show it inside (``f32[4,2@y]{V:x}``); ``None`` without such axes."""
    kept = _auto_spec(aval, manual)
    if kept is None:
        return None
    return aval._sharding.with_spec(spec_of_norm(kept))


def _add_device_dim(x):
    return st.reshape(x, (1, *core.get_aval(x).shape))


def _block_aval(x) -> ShapedArray:
    a = core.get_aval(x)
    return ShapedArray(a.shape[1:], a.dtype, a.weak_type)


def _drop_device_dim(x):
    return st.reshape(x, core.get_aval(x).shape[1:])


def _sig(x) -> tuple:
    """What a program is compiled for (one jitted function per signature: no retracing)."""
    a = core.get_aval(x)
    return (a.shape, a.dtype, a.weak_type, type(x) is not core.Array)


# The ids of staged variables ``pvary``/``pcast(to="varying")`` was applied to: such a value's
# varying axes are not in its type (pcast is not staged), so a jaxpr reading one is not refused
# for varying along other axes than another (``_vma.check_control_flow_vma``).
pcast_vars: set = set()


def mark_varying(x, names):
    """``pvary``/``pcast(to="varying")`` of a value of an eager body: the same blocks, varying
    along ``names`` too (its ``manual_axis_type``); any other value as it is."""
    if type(x) is ShardMapTracer and x._trace.check:
        return ShardMapTracer(x._trace, x._stacked, x.vma | frozenset(names))
    var = getattr(x, "_var", None)
    if var is not None:  # (a staged value: its type does not change, but the pass notes it)
        if len(pcast_vars) > 4096:
            pcast_vars.clear()
        pcast_vars.add(id(var))
    trace = core.current_trace()
    if type(trace) is ShardMapTrace and trace.check and not isinstance(x, core.Tracer):
        # (a value made in the body, the same on every device: its blocks, now varying)
        return ShardMapTracer(trace, trace.stacked(x)[0], frozenset(names))
    return x


def is_eager_tracer(x) -> bool:
    """Whether ``x`` is a value of an eager shard_map body (its blocks, not a staged value)."""
    return type(x) is ShardMapTracer


def refuse_explicit_const(x, mesh, manual) -> None:
    """JAX's refusal of a value a shard_map body closes over (not an argument) typed over a mesh
    with ``Explicit`` axes, where every axis of the body's mesh is manual or automatic (its
    NotImplementedError, in its words: JAX does not cast such a value into the body)."""
    if isinstance(x, core.Tracer):
        return
    s = getattr(core.get_aval(x), "_sharding", None)
    if s is None or not any(t.name == "Explicit" for t in (getattr(s.mesh, "axis_types", None) or ())):
        return
    types = dict(zip(mesh.axis_names, getattr(mesh, "axis_types", None) or ()))
    if any(n not in manual and getattr(types.get(n), "name", "Auto") != "Auto" for n in mesh.axis_names):
        return  # (an explicit axis left automatic in the body: JAX takes the value as it is typed)
    raise NotImplementedError(
        "Closing over inputs to shard_map where the input is sharded on `Explicit` axes is not "
        "implemented. As a workaround, please pass those inputs as an argument to shard_map. Got input "
        f"with shape {core.get_aval(x).str_short(True, True)}"
    )


class ShardMapTrace(core.Trace):
    """The trace of an eager shard_map body (NOTE: [eager shard_map])."""

    eager_shard_map = True  # (funcgrad.ref.new_ref refuses a Ref made here, as JAX's eager rule)

    def __init__(self, parent, mesh, manual, check, staged, eqn_varying):
        super().__init__(parent)
        self.mesh = mesh
        self.manual = tuple(manual)
        self.check = check
        self.staged = staged  # funcgrad.parallel.shard_map
        self.eqn_varying = eqn_varying
        self.lead = PartitionSpec(self.manual)  # the stacked blocks' leading dimension
        # (primitive, avals, out avals, params) -> each result's (unreduced, reduced) manual axes
        # in a checked body (funcgrad._shard_map_body's rule, set by funcgrad.parallel), or None
        self.ur_rule = None

    def describe(self) -> str:
        return "an eager shard_map body"

    def _jitted(self, body, in_specs, out_specs, out_shardings=None):
        sm = self.staged(
            body,
            mesh=self.mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            axis_names=frozenset(self.manual),
            check_vma=False,
        )
        return JittedFunction(sm, out_shardings=out_shardings)

    def _program(self, key, make):
        try:
            hit = _programs.get(key)
        except TypeError:  # parameters that cannot be hashed: compile without caching
            return make()
        if hit is None:
            hit = make()
            if len(_programs) > 512:
                _programs.pop(next(iter(_programs)))
            _programs[key] = hit
        return hit

    def _run(self, program, *args):
        _own.depth += 1
        try:
            with core.set_current_trace(self.parent), batching.cleared_axis_env():
                # These programs are how an eager shard_map runs (each is a jit of a shard_map):
                # under disable_jit they must still run compiled, or running one would run
                # the eager shard_map again, without end (chex's fake_jit of a pmap).
                if jit_disabled():
                    return program._call(args, {})
                return program(*args)
        finally:
            _own.depth -= 1

    # -- in and out ------------------------------------------------------------------------

    def enter(self, values, norm_specs) -> list:
        """Tracers of the arguments ``values`` (global arrays split as ``norm_specs``)."""
        out = []
        for x, norm in zip(values, norm_specs):
            spec = spec_of_norm(norm)
            # (an argument typed unreduced or reduced: its blocks as held, partial sums of one)
            have = getattr(getattr(core.get_aval(x), "_sharding", None), "spec", None)
            if have is not None and (have.unreduced or have.reduced):
                spec = spec.update(unreduced=have.unreduced, reduced=have.reduced)
            key = ("enter", self.mesh, self.manual, spec, _sig(x))
            prog = self._program(key, lambda spec=spec: self._jitted(_add_device_dim, (spec,), self.lead))
            vma = frozenset(drop_size_one_axes((n for d in norm for n in d), self.mesh))
            out.append(
                ShardMapTracer(self, self._run(prog, x), vma if self.check else frozenset(self.manual))
            )
        return out

    def stacked(self, x):
        """``(stacked blocks, vma)`` of an output or operand of the body."""
        if type(x) is ShardMapTracer and x._trace is self:
            return x._stacked, x.vma
        if isinstance(x, core.Tracer):
            core.check_foreign_tracer(self, x)
        refuse_explicit_const(x, self.mesh, self.manual)
        key = ("const", self.mesh, self.manual, _sig(x))
        prog = self._program(key, lambda: self._jitted(_add_device_dim, (PartitionSpec(),), self.lead))
        return self._run(prog, x), frozenset()

    def leave(self, stacked, norm_spec, given=None):
        """The global array of one output from its stacked blocks, laid out as ``norm_spec``; its
        ``.sharding`` names ``given`` (the out_specs leaf as written, as JAX's eager shard_map
        reports it: ``P()`` stays ``P()``) when that is a PartitionSpec over a concrete mesh."""
        spec = spec_of_norm(norm_spec)
        ur = (getattr(given, "unreduced", None), getattr(given, "reduced", None))
        if isinstance(given, PartitionSpec) and any(ur):
            # (an output unreduced or reduced along axes: each device's block as it is, the
            # partial sums or copies its type says, as JAX's eager shard_map keeps them)
            spec = PartitionSpec(*spec, unreduced=ur[0] or frozenset(), reduced=ur[1] or frozenset())
        auto = _auto_spec(core.get_aval(stacked), self.manual)
        if auto is not None:
            # (a partially manual body's result keeps its type along the automatic axes, as the
            # staged shard_map's does: f32[8@x,2@y], not f32[8@x,2])
            merged = tuple(tuple(d) + tuple(n for n in a if n not in d) for d, a in zip(norm_spec, auto))
            given = spec_of_norm(merged)
        literal = None
        if isinstance(given, PartitionSpec) and isinstance(self.mesh, Mesh):
            # (also when it equals the normalized spec: the compiled program's own sharding drops
            # the axes of size 1, where JAX reports P('x', 'y') over a mesh with 'x' of size 1)
            literal = NamedSharding(self.mesh, given)
        key = ("leave", self.mesh, self.manual, spec, _sig(stacked), literal)
        prog = self._program(key, lambda: self._jitted(_drop_device_dim, (self.lead,), spec, literal))
        return self._run(prog, stacked)

    # -- the body's primitives ---------------------------------------------------------------

    def process_primitive(self, primitive, args, params):
        vals, vmas, _ = self.unpack(args, ShardMapTracer, lambda t: (t._stacked, t.vma))
        own = tuple(v is not None for v in vmas)
        for v, o in zip(vals, own):
            if not o:
                refuse_explicit_const(v, self.mesh, self.manual)
        vin = [v if v is not None else frozenset() for v in vmas]
        try:
            sig = tuple(_sig(v) for v in vals)
            key = ("prim", primitive, tuple(sorted(params.items())), own, self.mesh, self.manual, sig)
            hash(key)
        except TypeError:
            key = [None]  # unhashable: _program compiles without caching

        def make():
            def body(*xs):
                ys = [_drop_device_dim(x) if o else x for x, o in zip(xs, own)]
                out = primitive.bind(*ys, **params)
                outs = out if primitive.multiple_results else [out]
                # A primitive without results (debug.print's callback) gets a placeholder one, so
                # its program is not an equation without outputs, which dead-code elimination drops.
                return [_add_device_dim(o) for o in outs] or [_add_device_dim(np.zeros((), np.int8))]

            specs = tuple(self.lead if o else PartitionSpec() for o in own)
            return self._jitted(body, specs, self.lead)

        outs = self._run(self._program(key, make), *vals)
        if primitive.multiple_results and len(outs) == 1 and core.get_aval(outs[0]).dtype == np.int8:
            blocks = [_block_aval(v) if o else core.get_aval(v) for v, o in zip(vals, own)]
            if not primitive.abstract_eval(*blocks, **params):
                outs = []  # (the placeholder of a primitive without results)
        if self.check:
            out_vma = self.eqn_varying(primitive, params, vin, len(outs))
        else:
            out_vma = [frozenset(self.manual)] * len(outs)
        tracers = [ShardMapTracer(self, o, v) for o, v in zip(outs, out_vma)]
        if self.check and self.ur_rule is not None and tracers:
            # (the unreduced and reduced axes of a fully manual body's values, as a staged body
            # types them: an operation without a rule for them is refused, as JAX's)
            avals = [core.get_aval(a) for a in args]
            urs = self.ur_rule(primitive, avals, [t.aval for t in tracers], params)
            for t, (u, r) in zip(tracers, urs):
                if u or r:
                    t.vma = t.vma - u - r
                    t._aval.manual_axis_type = ManualAxisType(varying=t.vma, unreduced=u, reduced=r)
        return tracers if primitive.multiple_results else tracers[0]


class ManualAval(ShapedArray):
    """The abstract value of an eager shard_map body's value: a block's, plus JAX's
    ``manual_axis_type`` (``typeof(x).manual_axis_type.varying``: the manual axes it varies
    along), shown as ``{V:i}`` after the shape."""

    __slots__ = ("manual_axis_type", "_order")

    def __init__(self, shape, dtype, weak_type, varying, mesh_axes, sharding=None):
        super().__init__(shape, dtype, weak_type, sharding)
        self.manual_axis_type = ManualAxisType(varying=varying)
        self._order = tuple(n for n in mesh_axes if n in varying)

    @property
    def mat(self) -> ManualAxisType:
        """JAX's short name of ``manual_axis_type`` (``typeof(x).mat.varying``)."""
        return self.manual_axis_type

    def with_sharding(self, sharding) -> ManualAval:
        """The same block type with ``sharding`` (``typeof``'s default where the type has none)."""
        vma = self.manual_axis_type.varying
        out = ManualAval(self.shape, self.dtype, self.weak_type, vma, self._order, sharding)
        out.manual_axis_type = self.manual_axis_type  # (its unreduced/reduced axes too)
        return out

    def __str__(self) -> str:
        names = self._order
        if not names:
            return super().__str__()
        return super().__str__() + "{V:" + (names[0] if len(names) == 1 else f"({','.join(names)})") + "}"


class ShardMapTracer(core.Tracer):
    """Every device's block of one value of an eager shard_map body (NOTE: [eager shard_map]):
    ``_stacked`` (the blocks along a leading dimension) and ``vma`` (the manual axes along which
    the blocks may differ)."""

    __slots__ = ("_stacked", "vma", "_aval")

    def __init__(self, trace, stacked, vma):
        self._trace = trace
        self._stacked = stacked
        self.vma = frozenset(vma)
        a = core.get_aval(stacked)
        names = [str(n) for n in trace.mesh.axis_names]
        self._aval = ManualAval(
            a.shape[1:],
            a.dtype,
            a.weak_type,
            {str(n) for n in self.vma},
            names,
            _auto_sharding(a, trace.manual),
        )

    @property
    def aval(self):
        return self._aval

    def _blocks(self) -> np.ndarray:
        with core.set_current_trace(self._trace.parent):
            return np.asarray(self._stacked)

    def __str__(self) -> str:
        trace = self._trace
        mesh = trace.mesh
        names = list(mesh.axis_names)
        sizes = dict(zip(names, mesh.devices.shape))
        blocks = self._blocks()
        axis_names = f"({', '.join(map(str, names))},)"
        parts = []
        for idx, device in np.ndenumerate(mesh.devices):
            k = 0
            for n, i in zip(names, idx):
                if n in trace.manual:
                    k = k * sizes[n] + i
            parts.append(f"On {device} at mesh coordinates {axis_names} = {idx}:\n{blocks[k]}\n")
        return "\n".join(parts)

    __repr__ = __str__

    def _concrete(self, what, usage):
        if self._trace.check and not self.vma:
            return self._blocks()[0]
        raise core.ConcretizationTypeError(
            self._concretization_message(what, usage)
            + " Inside an eager shard_map only a value that is the same on every device (reduced with "
            "psum/pmean/all_gather, or not computed from a mapped argument) has a Python value."
        )

    def __bool__(self):
        return bool(self._concrete("bool()", "if/while/and/or"))

    def __float__(self):
        return float(self._concrete("float()", "float(x)"))

    def __int__(self):
        return int(self._concrete("int()", "int(x)"))

    def __complex__(self):
        return complex(self._concrete("complex()", "complex(x)"))

    def __index__(self):
        return int(self._concrete("__index__", "using it as an index or size"))

    def item(self):
        return self._concrete("item()", "x.item()").item()

    def tolist(self):
        return self._concrete("tolist()", "x.tolist()").tolist()
