"""``jit``'s parameters, resolved and checked: the static and donated arguments by number and by
name against the function's signature, ``compiler_options``, and the ``in_shardings``/
``out_shardings`` trees (their leaves checked at ``jit``, placed on the values at a trace, and
dropped where no argument they place is read).

Layer: surface, below ``funcgrad.jitting`` (which calls these when ``jit`` is made and when it
traces). Imports the kernel's pytrees and IR, ``_trace_key``, ``_aot``'s option check, the sharding
and layout types.
"""

from __future__ import annotations

import inspect

from funcgrad._aot import _compiler_options as _check_compiler_options
from funcgrad._layouts import Format, Layout, check_default_layout
from funcgrad._shardings import (
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    check_aval_sharding,
    sharding_leaves,
)
from funcgrad._trace_key import _argnums, _as_tuple
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import Var


def _validate_argnames(sig: inspect.Signature, argnames, what: str) -> None:
    """``static_argnames``/``donate_argnames`` checked against the signature, as JAX's: a
    positional-only or ``*args`` parameter cannot be named; another name needs ``**kwargs``."""
    kinds = {name: p.kind for name, p in sig.parameters.items()}
    bad = {
        n
        for n in argnames
        if kinds.get(n) in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)
    }
    if bad:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are positional-only")
    if inspect.Parameter.VAR_KEYWORD in kinds.values():
        return
    missing = {n for n in argnames if n not in kinds}
    if missing:
        raise ValueError(
            f"Jitted function has invalid argnames {missing} in {what}. Function does not take these args."
        )


def argument_options(name: str, signature, static_argnums, static_argnames, donate_argnums, donate_argnames):
    """``jit``'s static and donated arguments resolved against ``signature`` (``None`` when it is
    not known), in JAX's words where they are wrong: ``(static numbers, static names, donated
    numbers, donated names, number of positional parameters)``, each set holding the parameters
    given both ways (a static argument may be passed by position or by keyword).

    >>> import inspect
    >>> argument_options("f", inspect.signature(lambda x, n: x), 1, None, None, None)
    ({1}, {'n'}, set(), set(), 2)
    """
    if signature is not None:
        _validate_argnames(signature, _as_tuple(static_argnames), "static_argnames")
        _validate_argnames(signature, _as_tuple(donate_argnames), "donate_argnames")
    params = list(signature.parameters.values()) if signature is not None else []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    bounded = signature is not None and not any(p.kind == p.VAR_POSITIONAL for p in params)
    n_positional = len(positional) if bounded else None
    nums = _argnums(name, "static_argnums", static_argnums, n_positional)
    names = set(_as_tuple(static_argnames))
    # As in JAX, static_argnums and static_argnames name the same parameters both ways, so a
    # static argument may be passed by position or by keyword -- unless both are given: then
    # each is used as it is (flax's lifted jit makes its wrapper's argument 0 static by
    # number and the wrapped method's keyword by name).
    if static_argnums is None or static_argnames is None:
        for n in list(nums):
            if 0 <= n < len(positional):
                names.add(positional[n])
        for s in list(names):
            if s in positional:
                nums.add(positional.index(s))
    donate = _argnums(name, "donate_argnums", donate_argnums, n_positional)
    donate_names = set(_as_tuple(donate_argnames))
    takes_any_keyword = any(p.kind == p.VAR_KEYWORD for p in params) or signature is None
    for s in donate_names:
        if s in positional:
            donate.add(positional.index(s))
        elif not takes_any_keyword and s not in {p.name for p in params}:
            raise ValueError(f"jit({name}): donate_argnames has {s!r}, which is not a parameter")
    donate_names.update(positional[n] for n in donate if 0 <= n < len(positional))
    both = donate & nums
    if both:  # (JAX's words: by name when names meet, else by number)
        common = names & donate_names  # (the names of numbered arguments too, as JAX infers)
        if common:
            raise ValueError(
                f"static_argnames and donate_argnames cannot intersect. Argument names {common} "
                "appear in both static_argnames and donate_argnames"
            )
        raise ValueError(
            f"`static_argnums` {tuple(sorted(nums))} and `donate_argnums` {tuple(sorted(donate))} "
            "cannot intersect."
        )
    return nums, names, donate, donate_names, len(positional)


def donated_flags(donate_argnums, donate_names, n_hoisted: int, static_key, args, dyn_kwargs) -> tuple:
    """Whether each input of a jitted call's jaxpr is donated: hoisted tracers (never), then the
    leaves of the dynamic positional arguments, then those of the keyword arguments (in the
    flattening's sorted key order), by ``argument_options``' donated numbers and names.

    >>> donated_flags((0,), frozenset(), 0, (), ((1.0, 2.0), 3.0), {})
    (True, True, False)
    """
    donated = [False] * n_hoisted
    static_pos = {j for j, _ in static_key}
    for i, a in enumerate(args):
        if i not in static_pos:
            donated.extend([i in donate_argnums] * len(tu.tree_leaves(a)))
    for k in sorted(dyn_kwargs):
        donated.extend([k in donate_names] * len(tu.tree_leaves(dyn_kwargs[k])))
    return tuple(donated)


def _compiler_options(options) -> dict | None:
    """``jit``'s ``compiler_options`` checked (``Lowered.compile``'s checks); None for none."""
    return dict(_check_compiler_options(options) or {}) or None


def _is_sharding_leaf(x) -> bool:
    return x is None or isinstance(x, Sharding | PartitionSpec | Format)


def _check_sharding_tree(tree, what) -> None:
    for leaf in tu.tree_leaves(tree, is_leaf=_is_sharding_leaf):
        if isinstance(leaf, Format):  # a layout and a sharding (funcgrad/_layouts.py)
            lay = leaf.layout
            if isinstance(lay, Layout):  # (XLA's default for its rank only)
                check_default_layout(lay, lay.major_to_minor, f"jit: {what}")  # (its own rank)
            continue
        if not _is_sharding_leaf(leaf):
            raise TypeError(
                f"jit: {what} leaves must be Shardings (NamedSharding(mesh, P(...))), PartitionSpecs or "
                "None, "
                f"got {leaf!r}"
            )
        if getattr(getattr(leaf, "mesh", None), "empty", False):  # (a mesh of no devices: JAX's words)
            raise ValueError(
                f"One of {what} leaf specifications got an empty NamedSharding: {leaf} which is not allowed."
            )
        spec = leaf if isinstance(leaf, PartitionSpec) else getattr(leaf, "spec", None)
        if isinstance(spec, PartitionSpec) and any(p is PartitionSpec.UNCONSTRAINED for p in spec):
            # (JAX's words: a jit's shardings say where values are; only constraints may leave a
            # dimension to the partitioner)
            raise ValueError(f"Unconstrained dims are not allowed when passed to {what}: {leaf}")


def _sharding_leaves(spec_tree, values, avals, where, what, names) -> list:
    """One bridge sharding (or None) per leaf of ``values``, from the prefix tree ``spec_tree``,
    each checked against its value's shape in JAX's words (``names``: the leaves' key paths)."""
    out = []
    checked = "pjit arguments" if what == "in_shardings" else "pjit outputs"
    for s, aval, name in zip(sharding_leaves(spec_tree, values, where, what), avals, names):
        if s is None:
            out.append(None)
            continue
        if isinstance(s, SingleDeviceSharding):
            out.append(s._program_bridge())  # (the SPMD route, on that one device)
            continue
        check_aval_sharding(s, aval.shape, checked, name)
        out.append(s._bridge(aval.ndim))
    return out


def _placed_if_used(jaxpr, user_ins):
    """``in_shardings``' leaves, or None where no argument they place is read: JAX prunes unused
    arguments (``keep_unused=False``) before it assigns devices, so a program whose sharded
    arguments are all unused runs as one without shardings (on one device, its results
    uncommitted), as JAX's."""
    read = {v for e in jaxpr.eqns for v in e.invars if type(v) is Var}
    read.update(v for v in jaxpr.outvars if type(v) is Var)
    if any(s is not None and jaxpr.invars[i] in read for i, s in enumerate(user_ins)):
        return user_ins
    return None
