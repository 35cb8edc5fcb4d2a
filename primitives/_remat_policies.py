"""Checkpoint's saving policies: ``policy(primitive, *in_avals, **params)`` says whether the outputs of
one equation may be saved, with JAX's names and meanings (``jax.checkpoint_policies``).

Layer: primitives (a helper of the rematerialisation family, ``primitives.remat``, whose partial
evaluation asks them). Imports ``primitives.dot`` (the dot policies ask for ``dot_general``) and
``primitives.naming`` (the name policies ask for ``name``), nothing else of the catalog.

A policy answers a bool, ``Saveable``, ``Recompute`` or ``Offloadable(src, dst)`` (NOTE: [offloaded
residuals]); ``is_saved`` reads any answer as a bool. funcgrad also takes ``None`` (nothing
saveable) and the names of the parameterless policies as strings (``resolve_policy``).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import NamedTuple

from funcgrad.primitives.dot import dot_general_p
from funcgrad.primitives.naming import name_p


class _Decision:
    """A policy's answer other than a bool: ``Saveable`` or ``Recompute`` (JAX's markers)."""

    def __init__(self, name: str, saved: bool):
        self.name, self.saved = name, saved

    def __repr__(self) -> str:
        return self.name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable(NamedTuple):
    """A policy's answer: save the value, moved from memory kind ``src`` to ``dst``.

    # NOTE: [offloaded residuals]
    # As JAX's: an offloaded residual leaves the forward pass through a ``device_put`` to ``dst``'s
    # memory space (typed ``f32<host>[...]`` for ``"pinned_host"``, NOTE: [memory space in types]
    # in kernel/partial_eval.py) and the backward pass moves it back with a ``device_put`` to
    # ``src``'s before recomputing from it; the gradients are the saved-in-place ones. On the CPU
    # both memories are the same RAM: the ``device_put`` lowers to nothing (as JAX's on CPU), so the
    # compiled program and its ``memory_analysis()`` are those of saving in place. A value offloaded
    # inside a ``scan`` body is moved stacked, after the scan (JAX's ``f32<host>[n,...]``); inside a
    # ``jit`` or ``cond`` within the checkpoint it is saved in place.
    """

    src: str
    dst: str


def is_saved(decision) -> bool:
    """A policy's answer as a bool: ``True``/``Saveable``/``Offloadable`` save, ``False``/``Recompute``
    recompute.

    >>> is_saved(Recompute), is_saved(Offloadable("device", "pinned_host")), is_saved(True)
    (False, True, True)
    """
    if type(decision) is _Decision:
        return decision.saved
    if isinstance(decision, Offloadable):
        return True  # NOTE: [offloaded residuals]
    return bool(decision)


def everything_saveable(*_, **__) -> bool:
    """Save every value the backward pass needs (as if there were no checkpoint)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Save nothing: recompute every value the backward pass needs from the checkpoint's inputs."""
    return False


def _no_batch_dims(prim, params) -> bool:
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Save the results of contractions (``dot_general`` and convolutions; with
    ``only_if_no_batch_dims`` only ``dot_general`` without batch dimensions)."""

    only_if_no_batch_dims: bool

    def __call__(self, prim, *avals, **params) -> bool:
        if self.only_if_no_batch_dims:
            return _no_batch_dims(prim, params)
        return prim.traits.contraction


dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Save only values named (``checkpoint_name``) with one of ``names``."""

    names: frozenset

    def __call__(self, prim, *avals, **params) -> bool:
        return prim is name_p and params["name"] in self.names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Save only named values, except those named with one of ``names``."""

    names: frozenset

    def __call__(self, prim, *avals, **params) -> bool:
        return prim is name_p and params["name"] not in self.names


@dataclasses.dataclass(frozen=True)
class SaveAnythingExceptTheseNames:
    """JAX 0.10's ``save_anything_except_these_names``: every value is saveable. (Refusing only the
    named outputs would change nothing: the named value is then recomputed from its operand, which
    is saved instead.)"""

    names: frozenset

    def __call__(self, prim, *avals, **params) -> bool:
        return True


@dataclasses.dataclass(frozen=True)
class SaveFromBothPolicies:
    """Saveable where either policy says so (both must answer with a bool)."""

    policy_1: Callable
    policy_2: Callable

    def __call__(self, prim, *avals, **params) -> bool:
        out1 = self.policy_1(prim, *avals, **params)
        out2 = self.policy_2(prim, *avals, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError(
                "The return value of the policies should be a boolean. Got:"
                f" {out1} and {out2}. Please write a custom policy function directly,"
                " rather than using this helper function."
            )
        return out1 or out2


@dataclasses.dataclass(frozen=True)
class SaveAndOffloadOnlyTheseNames:
    """Names in ``saved`` are saved, names in ``offloaded`` offloaded (NOTE: [offloaded
    residuals]), everything else recomputed."""

    saved: frozenset
    offloaded: frozenset
    src: str
    dst: str

    def __call__(self, prim, *avals, **params):
        if prim is name_p and params["name"] in self.saved:
            return Saveable
        if prim is name_p and params["name"] in self.offloaded:
            return Offloadable(src=self.src, dst=self.dst)
        return Recompute


@dataclasses.dataclass(frozen=True)
class OffloadDotWithNoBatchDims:
    """``dots_with_no_batch_dims_saveable``, its dots offloaded (NOTE: [offloaded residuals])."""

    src: str
    dst: str

    def __call__(self, prim, *avals, **params):
        return Offloadable(src=self.src, dst=self.dst) if _no_batch_dims(prim, params) else Recompute


def save_only_these_names(*names_which_can_be_saved: str) -> SaveOnlyTheseNames:
    """Save only named values, and only among the names given.

    >>> save_only_these_names("a")(name_p, name="a"), save_only_these_names("a")(name_p, name="b")
    (True, False)
    """
    return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save: str) -> SaveAnyNamesButThese:
    """Save only named values (outputs of ``checkpoint_name``), excluding the names given.

    >>> save_any_names_but_these("a")(name_p, name="b"), save_any_names_but_these("a")(name_p, name="a")
    (True, False)
    """
    return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_anything_except_these_names(*names_not_to_save: str) -> SaveAnythingExceptTheseNames:
    """Save any values (not just named ones) excluding the names given; as in JAX 0.10, every value
    is saveable (``SaveAnythingExceptTheseNames``).

    >>> save_anything_except_these_names("a")(name_p, name="a")
    True
    """
    return SaveAnythingExceptTheseNames(frozenset(names_not_to_save))


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> SaveFromBothPolicies:
    """Logical OR of the given policies: saveable iff saveable according to either.

    >>> both = save_from_both_policies(dots_saveable, save_only_these_names("a"))
    >>> both(name_p, name="a"), both(name_p, name="b")
    (True, False)
    """
    return SaveFromBothPolicies(policy_1, policy_2)


def save_and_offload_only_these_names(
    *, names_which_can_be_saved, names_which_can_be_offloaded, offload_src, offload_dst
) -> SaveAndOffloadOnlyTheseNames:
    """``save_only_these_names``, with a second set of names offloaded from memory kind
    ``offload_src`` to ``offload_dst`` instead of recomputed (moved there by a ``device_put``:
    NOTE: [offloaded residuals]).

    >>> p = save_and_offload_only_these_names(names_which_can_be_saved=["y"],
    ...     names_which_can_be_offloaded=["z"], offload_src="device", offload_dst="pinned_host")
    >>> p(name_p, name="y"), p(name_p, name="z"), p(name_p, name="w")
    (Saveable, Offloadable(src='device', dst='pinned_host'), Recompute)
    """
    saved, offloaded = frozenset(names_which_can_be_saved), frozenset(names_which_can_be_offloaded)
    intersection = saved & offloaded
    if intersection:
        raise ValueError(
            "The names should be exclusive and should not intersect in"
            " `names_which_can_be_saved` and `names_which_can_be_offloaded`. Got"
            f" names_which_can_be_saved={set(saved)},"
            f" names_which_can_be_offloaded={set(offloaded)} and the"
            f" intersection={set(intersection)}"
        )
    return SaveAndOffloadOnlyTheseNames(saved, offloaded, offload_src, offload_dst)


def offload_dot_with_no_batch_dims(offload_src, offload_dst) -> OffloadDotWithNoBatchDims:
    """``dots_with_no_batch_dims_saveable``, but offloaded from memory kind ``offload_src`` to
    ``offload_dst`` instead of recomputed (NOTE: [offloaded residuals]).

    >>> offload_dot_with_no_batch_dims("device", "pinned_host")(name_p, name="a")
    Recompute
    """
    return OffloadDotWithNoBatchDims(offload_src, offload_dst)


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)
"""JAX's saving policies by name (``checkpoint(f, policy=checkpoint_policies.dots_saveable)``)."""

# funcgrad also takes a policy by its name (the string forms).
_NAMED = {
    None: nothing_saveable,
    "nothing_saveable": nothing_saveable,
    "everything_saveable": everything_saveable,
    "dots_saveable": dots_saveable,
    "checkpoint_dots": dots_saveable,
    "dots": dots_saveable,
    "dots_with_no_batch_dims_saveable": dots_with_no_batch_dims_saveable,
    "checkpoint_dots_with_no_batch_dims": dots_with_no_batch_dims_saveable,
}


def resolve_policy(policy) -> Callable:
    if callable(policy):
        return policy
    try:
        return _NAMED[policy]
    except (KeyError, TypeError):
        raise ValueError(
            f"checkpoint: unknown policy {policy!r}; use None, a policy of checkpoint_policies, one of "
            f"{sorted(k for k in _NAMED if k)} or a predicate(primitive, *avals, **params)"
        ) from None
