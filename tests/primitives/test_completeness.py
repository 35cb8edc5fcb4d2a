"""Every primitive of the catalog has all of its rules.

Fails when a primitive in ``primitives.all_primitives()`` lacks an impl, an abstract eval, a JVP
(or an explicit not-differentiable mark from ``defjvp_zero``), a batch rule, a transpose rule
while declared linear, or a Taylor rule (``jet``) without being listed in ``TAYLOR_FROM_JVP`` with
the reason it takes its series from its JVP rule. The lowering check reads
``xla_bridge.lowering.lowering_rules`` (a dict keyed by Primitive, filled by importing
``xla_bridge.rules``) and reports primitives without a lowering as an explicit xfail that names
them, never a silent skip, until they all exist.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from funcgrad import primitives
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks

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
        ("transpose (declared linear)", lambda p: not p.is_linear or p.transpose is not None),
    ],
)
def test_every_primitive_has_the_rule(rule, present):
    missing = _missing(present)
    assert not missing, f"primitives without a {rule} rule: {missing}"


# Primitives whose jet is the kernel's rule from the JVP rule (``taylor_from_jvp``: the jet, one
# order lower, of the JVP rule), with the reason they have no series rule of their own. Every other
# differentiable primitive has a ``taylor`` rule; not-differentiable ones have zero series.
_SELECTIONS = "a selection of one operand's series by primal comparisons (its JVP rule is that selection)"
_SPECIAL = "a special function whose derivative is another special function of the family"
_MATRIX = "a matrix decomposition or solve: its JVP rule is a few solves and products"
_SUBPROGRAM = "carries a sub-program whose JVP rule transforms it (its jet follows that rule)"
TAYLOR_FROM_JVP = {
    **dict.fromkeys(
        ("max", "min", "clamp", "pmax", "pmin", "reduce_max", "reduce_min", "cummax", "cummin", "sort"),
        _SELECTIONS,
    ),
    **dict.fromkeys(
        ("reduce_window_max", "reduce_window_min", "select_and_gather_add", "select_and_scatter_add"),
        _SELECTIONS,
    ),
    **dict.fromkeys(("scatter-max", "scatter-min"), _SELECTIONS),
    **dict.fromkeys(
        ("lgamma", "digamma", "polygamma", "trigamma", "zeta", "bessel_i0e", "bessel_i1e"), _SPECIAL
    ),
    **dict.fromkeys(
        ("cholesky", "lu", "qr", "geqrf", "householder_product", "tridiagonal_solve"),
        _MATRIX,
    ),
    **dict.fromkeys(("eigh", "svd", "eig", "schur", "hessenberg", "tridiagonal"), _MATRIX),
    **dict.fromkeys(("custom_root", "shard_map", "reduce_window", "reduce"), _SUBPROGRAM),
    "custom_jvp_call": "its series follow the user's custom JVP rule, by design",
    "custom_vmap_call": "its JVP rule binds calls whose rule is the vmap rule's JVP: jet keeps the rule",
    "custom_lin": "the tangent of a custom_vjp call: its JVP rule raises the custom_vjp error",
    "pure_callback": "a host function: its JVP rule raises the error that says to use custom_jvp",
    "io_callback": "a host function with side effects: its JVP rule raises the error that explains why",
    "rem": "x - y * trunc(x / y): its JVP rule is linear with a piecewise-constant factor",
    "atan2": "its JVP rule is a few products and one quotient",
    "reduce_prod": "its JVP rule is a product of prefix and suffix products",
    "cumprod": "its JVP rule is a cumulative sum of quotients",
    "scatter-mul": "its JVP rule is a scatter-mul of the tangents",
}


def test_every_primitive_has_a_taylor_rule_or_a_reason():
    missing = _missing(lambda p: p.taylor is not None or p.not_differentiable or p.name in TAYLOR_FROM_JVP)
    assert not missing, (
        f"primitives without a Taylor rule (def_taylor) for jet and not listed in TAYLOR_FROM_JVP: {missing}"
    )
    stale = sorted(n for n in TAYLOR_FROM_JVP if n in {p.name for p in ALL if p.taylor is not None})
    assert not stale, f"listed in TAYLOR_FROM_JVP but they have a Taylor rule: {stale}"
    no_jvp = sorted(n for n in TAYLOR_FROM_JVP if n in {p.name for p in ALL if p.jvp is None})
    assert not no_jvp, f"listed in TAYLOR_FROM_JVP without a JVP rule: {no_jvp}"


def test_not_differentiable_marks_come_with_a_zero_jvp():
    # defjvp_zero sets both; a mark without a rule (or a rule named otherwise) is a declaration bug.
    inconsistent = _missing(lambda p: not p.not_differentiable or p.jvp is not None)
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
    stale = sorted(getattr(p, "name", repr(p)) for p in rules if p not in ALL)
    assert not stale, f"lowering rules registered for primitives outside the catalog: {stale}"
