"""Every primitive of the catalog has all of its rules.

Fails when a primitive in ``primitives.all_primitives()`` lacks an impl, an abstract eval, a JVP
(or an explicit not-differentiable mark from ``defjvp_zero``), a batch rule, a transpose rule
while declared linear (``traits.linear``), or a Taylor rule (``jet``) without the reason, stated in its
``traits.taylor_from_jvp``, why it takes its series from its JVP rule; and every primitive's traits
record is well formed (NOTE: [primitive traits]). The lowering check reads
``xla_bridge.lowering.lowering_rules`` (a dict keyed by Primitive, filled by importing
``xla_bridge.rules``) and reports primitives without a lowering as an explicit xfail that names
them, never a silent skip, until they all exist.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util

import pytest

from funcgrad import primitives
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.traits import SPARSE_KINDS, PrimitiveTraits

ALL = primitives.all_primitives()


def _missing(rule_of) -> list[str]:
    return sorted(p.name for p in ALL if not rule_of(p))


def test_catalog_is_not_empty_and_names_are_unique():
    assert len(ALL) > 50
    names = [p.name for p in ALL]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert all(isinstance(p, Primitive) for p in ALL)


@pytest.mark.parametrize(
    "rule, present",
    [
        ("impl", lambda p: p.impl is not None),
        ("abstract_eval", lambda p: p.abstract_eval is not None),
        ("jvp (or defjvp_zero's not-differentiable mark)", lambda p: p.jvp is not None),
        ("batch", lambda p: p.batch is not None),
        ("transpose (declared linear)", lambda p: not p.traits.linear or p.transpose is not None),
    ],
)
def test_every_primitive_has_the_rule(rule, present):
    missing = _missing(present)
    assert not missing, f"primitives without a {rule} rule: {missing}"


def test_every_primitive_has_a_taylor_rule_or_a_reason():
    # A primitive without a series rule of its own states why its jet is the jet of its JVP rule
    # (``traits.taylor_from_jvp``, in its family file): never a list of names kept here.
    missing = _missing(
        lambda p: p.taylor is not None or p.traits.not_differentiable or p.traits.taylor_from_jvp
    )
    assert not missing, (
        "primitives without a Taylor rule (def_taylor) for jet and no traits.taylor_from_jvp reason: "
        f"{missing}"
    )
    stale = _missing(lambda p: p.taylor is None or not p.traits.taylor_from_jvp)
    assert not stale, f"a taylor_from_jvp reason but a Taylor rule of their own: {stale}"
    no_jvp = _missing(lambda p: p.jvp is not None or not p.traits.taylor_from_jvp)
    assert not no_jvp, f"a taylor_from_jvp reason without a JVP rule: {no_jvp}"
    useless = _missing(lambda p: not (p.traits.not_differentiable and p.traits.taylor_from_jvp))
    assert not useless, f"not differentiable (zero series) and a taylor_from_jvp reason: {useless}"


def test_every_primitive_has_a_well_formed_traits_record():
    # One frozen record per primitive (NOTE: [primitive traits]), its facts consistent with the rules.
    assert all(type(p.traits) is PrimitiveTraits for p in ALL)
    for p in ALL:
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.traits.linear = True
        assert "is_linear" not in vars(p) and "not_differentiable" not in vars(p), p
        t = p.traits
        if t.sparse is not None:
            assert t.sparse in SPARSE_KINDS, p
        if t.sparse == "call" or t.call_jaxpr_param is not None:
            assert t.call_jaxpr_param in t.jaxpr_params, p
        if t.collective_batch is not None:  # a collective names its axes and can be staged too
            assert p.batch is not None and p.abstract_eval is not None, p
    collectives = sorted(p.name for p in ALL if p.traits.collective_batch is not None)
    assert {"psum", "pmax", "pmin", "all_gather", "ppermute", "axis_index"} <= set(collectives), collectives
    nan = {p.name for p in ALL if p.traits.may_produce_nan}
    assert {"log", "sqrt", "div", "dot_general", "psum"} <= nan and not nan & {"neg", "eq", "floor"}, nan
    sparse_kinds = {p.traits.sparse for p in ALL} - {None}
    assert sparse_kinds == set(SPARSE_KINDS), sparse_kinds ^ set(SPARSE_KINDS)


def test_a_fact_is_stated_through_def_traits_only():
    p = Primitive("traits_probe")
    with pytest.raises(AttributeError, match="def_traits\\(linear="):
        p.is_linear = True
    with pytest.raises(TypeError):
        p.def_traits(lineer=True)
    with pytest.raises(TypeError, match="may_produce_nan"):
        p.def_traits(may_produce_nan=1)
    with pytest.raises(ValueError, match="SPARSE_KINDS"):
        p.def_traits(sparse="mostly_zero")
    before = p.traits
    assert p.def_traits(linear=True) is p and p.traits.linear and not before.linear


def test_not_differentiable_marks_come_with_a_zero_jvp():
    # defjvp_zero sets both; a mark without a rule (or a rule named otherwise) is a declaration bug.
    inconsistent = _missing(lambda p: not p.traits.not_differentiable or p.jvp is not None)
    assert not inconsistent, inconsistent


def test_kernel_hooks_answer_protocol_probes_with_attribute_error():
    # inspect.unwrap (doctest collection) probes ``__wrapped__`` on module globals such as ``hooks``.
    assert not hasattr(hooks, "__wrapped__")


def _lowering_rules():
    if (
        importlib.util.find_spec("funcgrad.xla_bridge") is None
        or importlib.util.find_spec("funcgrad.xla_bridge.lowering") is None
    ):
        return None
    lowering = importlib.import_module("funcgrad.xla_bridge.lowering")
    if importlib.util.find_spec("funcgrad.xla_bridge.rules") is not None:
        importlib.import_module("funcgrad.xla_bridge.rules")  # registering the rules is importing them
    return lowering.lowering_rules


def test_every_primitive_has_a_lowering():
    rules = _lowering_rules()
    if rules is None:
        pytest.xfail("funcgrad.xla_bridge.lowering does not exist yet: no primitive can be lowered")
    missing = _missing(lambda p: p in rules)
    if missing:
        pytest.xfail(
            f"{len(missing)} primitives have no lowering in xla_bridge.lowering.lowering_rules: {missing}"
        )
    # The rule modules' registrations (``rule_modules``): a library's own primitive may have a
    # lowering too (funcgrad.interpreters.mlir.register_lowering, funcgrad.ffi's ffi_call).
    registered = importlib.import_module("funcgrad.xla_bridge.emitter").rule_modules
    stale = sorted(getattr(p, "name", repr(p)) for p in registered if p not in ALL)
    assert not stale, f"lowering rules registered for primitives outside the catalog: {stale}"
