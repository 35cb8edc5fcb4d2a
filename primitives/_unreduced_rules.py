"""Unreduced and reduced results on explicit mesh axes (JAX 0.10's ``ur_rule``s): for each
equation, the mesh axes its results are unreduced over (a partial sum, ``P(..., unreduced=...)``)
and reduced over (a complete copy whose cotangent will be unreduced, ``P(..., reduced=...)``).
NOTE: [unreduced values] in funcgrad/_sharding_unreduced.py.

Layer: primitives (a helper module beside ``_sharding_rules``, whose spec helpers it reads).
``install()`` reads the catalog's family modules; the surface's ``apply_sharding`` hook
(funcgrad/_sharding_types.py) calls ``out_unreduced``/``out_reduced`` after each primitive's
sharding rule.

>>> unreduced_of(None), reduced_of(None)  # (an untyped value: none)
(frozenset(), frozenset())
"""

from __future__ import annotations

import contextlib
import contextvars

from funcgrad.primitives._sharding_rules import ShardingTypeError, _show, spec_of

from funcgrad.kernel.core import Primitive

__all__ = [
    "bound_unreduced",
    "contraction_unreduced",
    "install",
    "out_reduced",
    "out_unreduced",
    "reduced_of",
    "unreduced_of",
]


# Unreduced results (NOTE: [unreduced values] in funcgrad/_sharding_unreduced.py)
#
# A value typed unreduced over mesh axes (``{U:y}``) is the sum of the devices' blocks along them.
# Under ``jit`` only operations linear in it keep that (JAX 0.10's ``ur_rule``s): a contraction
# whose ``out_sharding`` names its sharded contracting axes unreduced, ``add`` of two values
# unreduced alike, ``mul`` by a value reduced along them, and the structural operations and
# ``reduce_sum``, which act on each block alone. Any other operation on one is JAX's error.


def unreduced_of(aval) -> frozenset:
    """The mesh axes ``aval``'s type is unreduced over (empty for most values)."""
    s = getattr(aval, "_sharding", None)
    # (in a fully manual shard_map body, its manual axis type's: JAX's getu)
    mat = getattr(getattr(aval, "mat", None), "unreduced", frozenset())
    return frozenset(getattr(getattr(s, "spec", None), "unreduced", None) or ()) | mat


def reduced_of(aval) -> frozenset:
    """The mesh axes ``aval``'s type is reduced over (``P(..., reduced=...)``)."""
    s = getattr(aval, "_sharding", None)
    mat = getattr(getattr(aval, "mat", None), "reduced", frozenset())  # (JAX's getr)
    return frozenset(getattr(getattr(s, "spec", None), "reduced", None) or ()) | mat


def _keeps_unreduced(avals_in, avals_out, **params):
    return [unreduced_of(avals_in[0])] * len(avals_out)


def _unreduced_alike(name: str, first: int = 0):
    """``add``/``concatenate``/``select_n``'s cases: operands unreduced along the same axes."""

    def rule(avals_in, avals_out, **params):
        us = [unreduced_of(a) for a in avals_in[first:]]
        if not any(us):
            return [frozenset()] * len(avals_out)
        if len(set(us)) > 1:
            if all(us) or name != "add":
                raise ShardingTypeError(
                    f"lhs and rhs to `{name}` must be unreduced along the same mesh axes. Got "
                    + ", ".join(str(set(u)) for u in us)
                )
            lhs, rhs = ("lhs", "rhs") if us[0] else ("rhs", "lhs")
            raise ShardingTypeError(
                f"{lhs} is unreduced while {rhs} is not. `add` operation does not allow this because there "
                f"will be implicit communication. Please reduce {lhs} via `reshard` before calling `add`."
            )
        return [us[0]] * len(avals_out)

    return rule


def _dus_unreduced(avals_in, avals_out, **params):
    """JAX's ``dynamic_update_slice`` rule: the operand and the update unreduced alike (a
    cotangent of a dynamic slice of a reduced value is written into unreduced zeros)."""
    operand, update = avals_in[:2]
    if unreduced_of(operand) != unreduced_of(update):
        raise ShardingTypeError(
            "dynamic_update_slice operand and update must be unreduced along the same axes. Got operand "
            f"sharding {operand.str_short()} and update sharding {update.str_short()}."
        )
    return [unreduced_of(operand)]


def _mul_unreduced(avals_in, avals_out, **params):
    x, y = avals_in
    xu, yu = unreduced_of(x), unreduced_of(y)
    if xu and yu:
        raise ShardingTypeError(
            "lhs and rhs to `mul` cannot be unreduced since mul is bilinear. Got "
            f"lhs={set(xu)}, rhs={set(yu)}"
        )
    if xu and xu != reduced_of(y):
        raise ShardingTypeError(
            f"RHS should be reduced along the same axes LHS is unreduced on. Got lhs={x.str_short()} and "
            f"rhs={y.str_short()}"
        )
    if yu and yu != reduced_of(x):
        raise ShardingTypeError(
            f"LHS should be reduced along the same axes RHS is unreduced on. Got lhs={x.str_short()} and "
            f"rhs={y.str_short()}"
        )
    return [xu or yu]


def _dot_general_unreduced(avals_in, avals_out, *, dimension_numbers, out_unreduced=frozenset(), **params):
    """JAX's rule: the operands may not be unreduced; ``out_sharding=`` may leave the result
    unreduced over exactly the axes its contracting dimensions are sharded over (alike on both
    sides): the equation's ``out_unreduced`` param (NOTE: [unreduced in the equation])."""
    lhs, rhs = avals_in[:2]
    if unreduced_of(lhs) or unreduced_of(rhs):
        raise ShardingTypeError(
            f"lhs or rhs passed to dot_general cannot be unreduced. Got lhs={lhs.str_short()} and "
            f"rhs={rhs.str_short()}"
        )
    wanted = out_unreduced
    if not wanted:
        return [frozenset()]
    (lc, rc), _ = dimension_numbers
    lcs = tuple(spec_of(lhs)[i] for i in lc)
    rcs = tuple(spec_of(rhs)[i] for i in rc)
    if lcs != rcs:
        raise ShardingTypeError(
            "lhs and rhs contracting dims should be sharded identically when out_sharding provided to "
            f"dot_general mentions unreduced_axes. Got lhs_contracting_spec={_show(lcs)}, "
            f"rhs_contracting_spec={_show(rcs)}"
        )
    if frozenset(n for d in lcs for n in d) != wanted:
        raise ShardingTypeError(
            "out_sharding's unreduced axes should be equal to the contracting specs. Got unreduced "
            f"axes={set(wanted)} and contracting spec={_show(lcs)}"
        )
    return [wanted]


def _reduce_sum_unreduced(avals_in, avals_out, *, axes, **params):
    """JAX's rule: ``out_sharding=P(..., unreduced=...)`` may leave the sum unreduced over axes its
    summed dimensions are sharded over (or the operand is unreduced over); else the operand's."""
    (x,) = avals_in
    wanted = _contraction_unreduced.get()
    if not wanted:
        return [unreduced_of(x)]
    used = frozenset(n for i, d in enumerate(spec_of(x)) if i in axes for n in d) | unreduced_of(x)
    if not wanted <= used:
        raise ShardingTypeError(
            "out_sharding's unreduced axes should be in operand's specs that were summed over. Got "
            f"operand={x.str_short()}, axes={tuple(axes)}, unreduced_spec={set(wanted)}"
        )
    return [wanted]


# NOTE: [unreduced in the equation] Whether a contraction's result is unreduced (JAX's
# ``out_sharding=P(..., unreduced=...)``) is part of its equation, as JAX's ``out_sharding``
# param: ``dot_general``'s ``out_unreduced`` param (a frozenset of mesh axes, present only when
# not empty; hidden when printed, as JAX hides ``out_sharding``: the binder's type shows it). The
# ``contraction_unreduced`` block below only says which value the binding function
# (primitives/dot.py's ``dot_general``) records; the rule reads the param, so binding the
# equation again (evaluating a jaxpr, scan/cond/remat transposes, partial evaluation, vmap)
# types the result alike.
_contraction_unreduced: contextvars.ContextVar = contextvars.ContextVar("contraction_unreduced", default=None)


@contextlib.contextmanager
def contraction_unreduced(axes):
    """Within the block, a ``dot_general`` or ``reduce_sum`` result is left unreduced over
    ``axes`` (its ``out_sharding=P(..., unreduced=axes)``, checked by JAX's rules)."""
    token = _contraction_unreduced.set(frozenset(axes) or None)
    try:
        yield
    finally:
        _contraction_unreduced.reset(token)


def bound_unreduced(axes=None) -> dict:
    """The params recording a contraction's unreduced axes (NOTE: [unreduced in the equation]):
    ``axes``, else those of the ``contraction_unreduced`` block being run; ``{}`` when none.

    >>> bound_unreduced(), bound_unreduced({"x"})
    ({}, {'out_unreduced': frozenset({'x'})})
    """
    axes = _contraction_unreduced.get() if axes is None else frozenset(axes)
    return {"out_unreduced": frozenset(axes)} if axes else {}


_unreduced_rules: dict = {}  # primitive -> rule (NOTE: [unreduced values]); filled by install()
reduced_rules: dict = {}  # primitive -> rule of its results' reduced axes (shard_map's out_specs)
_drops_reduced: set = set()  # primitives whose results are never reduced (a contraction)
_reduced_from_params: set = set()  # primitives whose ``reduced`` param says (a reshard)
_nary: set = set()  # the elementwise primitives: JAX's default_nary_reduced_rule checks their operands


def _check_nary_reduced(avals_in, reduced: frozenset) -> None:
    """JAX's ``default_nary_reduced_rule``: no operand of an elementwise operation may be
    replicated or sharded along axes another operand is reduced over (a scalar replicated there
    is taken as reduced, as JAX's ``insert_reduced_reshard`` reshards it, for two operands)."""
    for a in avals_in:
        s = a._sharding
        if s is None or reduced_of(a) == reduced:
            continue
        used = frozenset(n for d in spec_of(a) for n in d)
        replicated = frozenset(s.mesh.axis_names) - used - unreduced_of(a) - reduced_of(a)
        if a.ndim == 0 and len(avals_in) == 2 and replicated >= reduced:
            continue
        if replicated & reduced:
            raise ShardingTypeError(
                "Inputs cannot be replicated on the same axes that another input is reduced on. Got input "
                f"type: {a.str_short()} and reduced spec: {set(reduced)}"
            )
        if used & reduced:
            raise ShardingTypeError(
                "Inputs cannot be sharded/varying on the same axes that another input is reduced on. "
                "Reshard the input which is reduced to be sharded on the mesh axes it is reduced on via "
                f"`funcgrad.sharding.reshard(inp, P(...))`. Got input type: {a.str_short()} and reduced "
                f"spec: {set(reduced)}"
            )


def out_reduced(primitive, avals_in, avals_out, unreduced, params=None) -> list:
    """One frozenset of reduced mesh axes per result (``P(..., reduced=...)``: a value replicated
    along them whose cotangent will be unreduced there), JAX 0.10's default: the operands' (which
    must agree), unless the result is unreduced along them (``mul`` of an unreduced value by a
    reduced one) or ``primitive`` drops them (a contraction) or sets them (a reshard's
    ``reduced`` param, a call's body)."""
    if primitive in _reduced_from_params:
        return [frozenset((params or {}).get("reduced", ()))] * len(unreduced)
    if primitive in reduced_rules:
        return reduced_rules[primitive](avals_in, avals_out, **(params or {}))
    if _typed_by_body(primitive):
        return [reduced_of(a) for a in avals_out]
    given = {r for a in avals_in if (r := reduced_of(a))}
    if not given or primitive in _drops_reduced:
        return [frozenset()] * len(unreduced)
    if len(given) > 1:
        raise ShardingTypeError(
            "All inputs should be reduced across the same mesh axes. Got specs: "
            + ", ".join(str(set(r)) for r in given)
        )
    (r,) = given
    if primitive in _nary and len(avals_in) > 1:
        _check_nary_reduced(avals_in, r)
    return [frozenset() if u else r for u in unreduced]


def _typed_by_body(primitive) -> bool:
    """A call or control flow (``jit``, ``scan``, ``cond``, ...): its results' types come from
    its body's."""
    return bool(primitive.traits.jaxpr_params)


def out_unreduced(primitive, avals_in, avals_out, params) -> list:
    """One frozenset of unreduced mesh axes per result of ``primitive`` (JAX 0.10's rules);
    an operand unreduced where no rule keeps it is JAX's error."""
    rule = _unreduced_rules.get(primitive)
    if rule is not None:
        return rule(avals_in, avals_out, **params)
    if _typed_by_body(primitive):  # (a call: its body's types say, unreduced and reduced axes too)
        return [unreduced_of(a) for a in avals_out]
    if any(unreduced_of(a) for a in avals_in):
        raise NotImplementedError(
            f"unreduced rule for {primitive.name} is not implemented (as in JAX): reduce the value first "
            "with funcgrad.sharding.reshard(x, P(...)) to a sharding without unreduced axes"
        )
    return [frozenset()] * len(avals_out)


def install(families) -> None:
    """Give the catalog's primitives their unreduced/reduced rules, by kind (keyed by the
    primitive objects): the elementwise families' primitives are checked as JAX's nary rule does;
    the linear structural ones, ``add``/``mul``/``select_n``/``concatenate``, contractions,
    ``reduce_sum`` and reshards get the rules above."""
    for name in ("elementwise", "complex", "special", "bitcast"):
        m = families.get(name)
        for p in vars(m).values() if m is not None else ():
            if isinstance(p, Primitive) and not p.multiple_results:
                _nary.add(p)
    st = families["structure"]
    ar = families["elementwise"]
    _unreduced_rules.update({ar.add_p: _unreduced_alike("add"), ar.add_any_p: _unreduced_alike("add")})
    _unreduced_rules[ar.mul_p] = _mul_unreduced
    _unreduced_rules[ar.select_n_p] = _unreduced_alike("select_n", first=1)
    _unreduced_rules[st.concatenate_p] = _unreduced_alike("concatenate")
    _unreduced_rules[families["stacking"].stack_p] = _unreduced_alike("stack")
    _unreduced_rules[families["dot"].dot_general_p] = _dot_general_unreduced
    _unreduced_rules[families["indexing"].dynamic_update_slice_p] = _dus_unreduced
    _drops_reduced.add(families["dot"].dot_general_p)
    _reduced_from_params.add(families["sharding"].sharding_constraint_p)
    for p in (
        st.broadcast_in_dim_p,
        ar.convert_element_type_p,
        families["bitcast"].reduce_precision_p,
        st.transpose_p,
        st.squeeze_p,
        st.reshape_p,
        st.pad_p,
        st.slice_p,
        families["indexing"].dynamic_slice_p,
        families["stacking"].unstack_p,
        families["stacking"].split_p,
    ):
        _unreduced_rules[p] = _keeps_unreduced
    _unreduced_rules[families["reductions"].reduce_sum_p] = _reduce_sum_unreduced
    # scan's results are its body's outputs, the stacked ones with a leading dimension its
    # abstract evaluation leaves untyped: their unreduced and reduced axes are the body's (a
    # gradient of stacked reduced weights scanned over is unreduced, JAX's to_ct_aval)
    scan_p = families["scan"].scan_p
    _unreduced_rules[scan_p] = lambda avals_in, avals_out, *, jaxpr, **params: [
        unreduced_of(o) for o in jaxpr.out_avals
    ]
    reduced_rules[scan_p] = lambda avals_in, avals_out, *, jaxpr, **params: [
        reduced_of(o) for o in jaxpr.out_avals
    ]
    # reshard/with_sharding_constraint to a sharding without the axes reduces (XLA's all-reduce).
    _unreduced_rules[families["sharding"].sharding_constraint_p] = lambda avals_in, avals_out, **params: [
        frozenset(params.get("unreduced", ()))
    ]
