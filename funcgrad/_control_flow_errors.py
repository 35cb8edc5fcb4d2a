"""The type errors of ``cond``, ``switch``, ``while_loop``, ``fori_loop`` and ``scan`` (and the
tree differences ``vjp``'s backward function reports) in JAX's words: a loop carry or a pair of
branch outputs whose pytree structure or types differ, as JAX 0.10 words them
(``_check_carry_type``, ``_check_branch_outputs``, ``tree_util.equality_errors``), so a program or
test that matches on JAX's message reads the same text.

Layer: surface (reads the kernel's pytrees and avals; raises nothing by itself: each function
returns the ``TypeError`` for its caller to raise).

>>> import numpy as np
>>> from funcgrad.kernel.ir import ShapedArray
>>> i32, f32 = ShapedArray((), np.dtype("int32")), ShapedArray((), np.dtype("float32"))
>>> err = carry_type_error("scan body", lambda x, _: (x, None), [()], [i32], [f32])
>>> print(str(err).splitlines()[0])
scan body function carry input and carry output must have equal types, but they differ:
>>> print(str(err).splitlines()[2][:60])
The input carry x has type int32[] but the corresponding out
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator

from funcgrad._api_util import fun_sourceinfo
from funcgrad.kernel import tree_util as tu

__all__ = [
    "branch_error",
    "carry_structure_error",
    "carry_type_error",
    "equality_errors",
    "tree_differences",
]


def _capitalize(s: str) -> str:
    return s[0].upper() + s[1:]


def _plain(aval) -> str:
    """An aval as JAX's messages print it (``float32[3]``: no weak-type mark)."""
    return str(aval).lstrip("~")


def _mismatch_extra(a, b) -> str:
    """JAX's ``aval_mismatch_extra``: what differs between two array types."""
    what = []
    if getattr(a, "dtype", None) != getattr(b, "dtype", None):
        what.append("the dtypes do not match")
    if getattr(a, "shape", None) != getattr(b, "shape", None):
        what.append("the shapes do not match")
    if not what:
        return ""
    return ", so " + (what[0] if len(what) == 1 else ", ".join(what[:-1]) + ", and " + what[-1])


def _listed(diffs: list[str], capitalize: bool = True) -> str:
    if len(diffs) == 1:
        return f"{_capitalize(diffs[0]) if capitalize else diffs[0]}.\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


class _LeafType(type):
    def __repr__(cls):
        return "pytree leaf"


class _Leaf(metaclass=_LeafType):
    """What a leaf of a tree structure stands as (its type prints ``pytree leaf``, as JAX's)."""


def equality_errors(t1, t2, path: tuple = ()) -> Iterator[tuple[tuple, str, str, str]]:
    """JAX's ``tree_util.equality_errors``: ``(key path, thing1, thing2, explanation)`` for each
    place where the pytrees ``t1`` and ``t2`` differ in structure."""
    reg = tu.public_registry
    one1, one2 = reg.flatten_one_level_with_keys(t1), reg.flatten_one_level_with_keys(t2)
    if one1 is None and one2 is None:  # (both leaves: no structural difference here)
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, list | tuple) and len(t1) != len(t2):
        n1, n2 = f"{type(t1).__name__} of length {len(t1)}", f"{type(t2).__name__} of length {len(t2)}"
        yield path, n1, n2, "the lengths do not match"
        return
    (kids1, meta1), (kids2, meta2) = one1, one2
    keys1, keys2 = tuple(k for k, _ in kids1), tuple(k for k, _ in kids2)
    try:
        diff = " ".join(repr(k.key) for k in set(keys1).symmetric_difference(set(keys2)))
    except (AttributeError, TypeError):
        diff = ""
    if len(kids1) != len(kids2):
        yield (
            path,
            f"{type(t1)} with {len(kids1)} child{'ren' if len(kids1) > 1 else ''}",
            f"{type(t2)} with {len(kids2)} child{'ren' if len(kids2) > 1 else ''}",
            "the numbers of children do not match"
            + (diff and f", with the symmetric difference of key sets: {{{diff}}}"),
        )
        return
    if meta1 != meta2:
        yield (
            path,
            f"{type(t1)} with pytree metadata {meta1}",
            f"{type(t2)} with pytree metadata {meta2}",
            "the pytree node metadata does not match",
        )
        return
    for (k, c1), (_, c2) in zip(kids1, kids2):
        yield from equality_errors(c1, c2, (*path, k))


def _structure(tree_def):
    """A tree of ``tree_def``'s structure whose leaves print as ``pytree leaf``."""
    return tu.tree_unflatten(tree_def, [_Leaf() for _ in range(tree_def.num_leaves)])


def tree_differences(tree1, tree2) -> list[tuple[tuple, str, str, str]]:
    """JAX's ``equality_errors_pytreedef``: how two tree structures differ (leaves print as
    ``pytree leaf``)."""
    return list(equality_errors(_structure(tree1), _structure(tree2)))


def _carry_component(body_fun) -> Callable[[tuple], str]:
    try:
        carry_name = next(iter(inspect.signature(body_fun).parameters), None)
    except (TypeError, ValueError):
        carry_name = None
    if carry_name:
        return lambda p: (
            f"the input carry component {carry_name}{tu.keystr(p)}" if p else f"the input carry {carry_name}"
        )
    return lambda p: f"the input carry at path {tu.keystr(p)}" if p else "the input carry"


def carry_structure_error(name: str, body_fun, in_tree, in_avals, out_tree, out_avals) -> TypeError:
    """The error for a loop body returning its carry in another pytree structure (the carries'
    leaves are their types, as JAX prints them)."""
    component = _carry_component(body_fun)
    carry_in, carry_out = tu.tree_unflatten(in_tree, in_avals), tu.tree_unflatten(out_tree, out_avals)
    diffs = [
        f"{component(path)} is a {thing1} but the corresponding component of the carry output is a "
        f"{thing2}, so {explanation}"
        for path, thing1, thing2, explanation in equality_errors(carry_in, carry_out)
    ]
    if not diffs:
        differences = f"the input tree structure is:\n{in_tree}\nthe output tree structure is:\n{out_tree}\n"
    else:
        differences = _listed(diffs)
    return TypeError(
        f"{name} function carry input and carry output must have the same pytree structure, but they "
        f"differ:\n\n{differences}\nRevise the function so that the carry output has the same pytree "
        "structure as the carry input."
    )


def carry_type_error(name: str, body_fun, paths, in_avals, out_avals) -> TypeError:
    """The error for a loop body returning a carry of other types: ``paths`` are the carry leaves'
    key paths, ``in_avals``/``out_avals`` the mismatched leaves' types (only those)."""
    component = _carry_component(body_fun)
    diffs = [
        f"{component(p)} has type {_plain(a)} but the corresponding output carry component has type "
        f"{_plain(b)}{_mismatch_extra(a, b)}"
        for p, a, b in zip(paths, in_avals, out_avals)
    ]
    return TypeError(
        f"{name} function carry input and carry output must have equal types, but they differ:\n\n"
        f"{_listed(diffs)}\nRevise the function so that all output types match the corresponding input types."
    )


def branch_error(api_name, name1, name2, f1, f2, tree1, avals1, tree2, avals2) -> TypeError | None:
    """The error for two branches of ``cond``/``switch`` returning other structures or types
    (``None`` when they agree)."""
    paths = [p for p, _ in tu.tree_leaves_with_path(_structure(tree1))]

    def component(p):
        return f" at path {tu.keystr(p)}" if p else ""

    if tree1 != tree2:
        diffs = [
            f"{name1} output{component(p)} is a {thing1} but {name2} output{component(p)} is a {thing2}, "
            f"so {expl}"
            for p, thing1, thing2, expl in equality_errors(_structure(tree1), _structure(tree2))
        ]
        if not diffs:
            return None
        return TypeError(
            f"{api_name} branch outputs must have the same pytree structure, but they differ:\n\n"
            f"{name1} is {fun_sourceinfo(f1)}\n{name2} is {fun_sourceinfo(f2)}\n\n{_listed(diffs, False)}\n"
            f"Revise {name1} and/or {name2} so that they have the same pytree structure."
        )
    diffs = [
        f"the output of {name1}{component(p)} has type {_plain(a)} but the corresponding output of "
        f"{name2} has type {_plain(b)}{_mismatch_extra(a, b)}"
        for p, a, b in zip(paths, avals1, avals2)
        if a.shape != b.shape or a.dtype != b.dtype
    ]
    if not diffs:
        return None
    if len(diffs) == 1:
        differences = f"{_capitalize(diffs[0])}.\n"
    else:
        differences = "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
    return TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n"
        f"{name1} is {fun_sourceinfo(f1)}\n{name2} is {fun_sourceinfo(f2)}\n\n{differences}\n"
        f"Revise {name1} and/or {name2} so that all output types match."
    )
