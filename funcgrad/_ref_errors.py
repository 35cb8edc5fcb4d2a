"""The errors of Refs (``funcgrad.ref``) in JAX's words: one Ref passed at two places of a traced
function, a Ref returned from one, a write into a Ref of a value traced inside it.

Layer: surface. Imports the kernel (pytrees, held state operands) and ``funcgrad._api_util`` (the
names of a function and its parameters); below ``funcgrad.ref`` and
``funcgrad._control_flow_state``, which raise these. ``aliased_error`` is registered with the
kernel (its ``custom_vjp`` raises it: NOTE: [held state operands]).
"""

from __future__ import annotations

from funcgrad import kernel
from funcgrad._api_util import fun_sourceinfo, signature_arg_names
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.held_state import Held, is_state

__all__ = ["aliased_error", "inner_write_message", "refuse_aliased_refs", "refuse_returned_refs"]


def refuse_aliased_refs(fun, args: tuple, traced_for: str, kwargs=None, among=None) -> Held:
    """JAX's error for one Ref among the leaves of ``(args, kwargs)`` twice (its check
    ``jax_mutable_array_checks``, on by default), naming them as ``fun``'s parameters; ``among``:
    the leaf positions to check (default: all). Returns the Refs held out of those leaves."""
    held = Held(tu.tree_leaves((args, kwargs or {})), among)
    return held.refuse_aliased(lambda: signature_arg_names(fun, args, kwargs or {}), fun, traced_for)


def aliased_error(fun, traced_for: str, ref, first: str, second: str) -> ValueError:
    """JAX's error for one Ref passed as two arguments (``first`` and ``second``, their names);
    ``custom_vjp``'s has words of its own in JAX (registered with the kernel, which raises it
    there: NOTE: [held state operands])."""
    start = "only one reference to a mutable array may be passed as an argument to a function, but "
    if traced_for == "custom_vjp":
        return ValueError(
            f"{start}custom_vjp function {fun!r} got the same mutable array reference of type "
            f"{ref._aval} at {first} and {second}."
        )
    return ValueError(
        f"{start}when tracing {fun_sourceinfo(fun)} for {traced_for} the mutable array reference of "
        f"type {ref._aval} appeared at both {first} and {second}."
    )


def refuse_returned_refs(out, description: str, fun=None, traced_for=None, arguments=None) -> None:
    """JAX's error for a traced function that returns a Ref (its value belongs to the trace):
    naming ``fun`` traced for ``traced_for`` (``jit``, ``scan``, ...) and where the Ref came from
    (``arguments``: id of each Ref the function was given -> its argument's name)."""
    leaves = tu.tree_leaves_with_path(out)
    for path, leaf in leaves:
        if is_state(leaf):
            if fun is None:
                raise ValueError(
                    f"{description} returned a mutable array reference of type {leaf._aval}, but "
                    "mutable array references cannot be returned (return ref[...] instead)."
                )
            loc = f" at output tree path result{tu.keystr(path)}" if len(leaves) > 1 or path else ""
            origin = ""
            if arguments and arguments.get(id(leaf)):
                origin = (
                    f"\n\nThe returned mutable array was passed in as the argument {arguments[id(leaf)]}."
                )
            elif leaf._made_at is not None:
                origin = f"\n\nThe returned mutable array was created on line {leaf._made_at.where()}."
            raise ValueError(
                f"function {fun_sourceinfo(fun)} traced for {traced_for} returned a mutable array "
                f"reference of type {leaf._aval}{loc}, but mutable array references cannot be "
                f"returned.{origin}"
            )


def inner_write_message(owner, ref) -> str:
    """JAX's words for a write into ``ref`` of a value traced by ``owner``, a trace inside the
    Ref's own (or a staged function that is no ref scope)."""
    kind = type(owner).__name__.lower()
    if "batch" in kind:
        what, where = "vmapped value on an unbatched", "an argument to the vmapped function"
    elif "jvp" in kind or "linear" in kind or "record" in kind or "grad" in kind:
        what, where = (
            "differentiated value on a non-differentiated",
            "an argument of the differentiated function",
        )
    elif "staging" in kind:
        return (
            f"A Ref of type {ref._aval} from outside was written inside a staged function that is not "
            "jit's -- a custom_jvp/vjp function's, say: funcgrad functionalises Refs under jit, "
            "make_jaxpr, eval_shape, checkpoint, in control flow (loops, cond) and in backward passes "
            "only. Return the value and write the Ref outside, or jit the function."
        )
    else:
        what, where = (
            f"value traced by an inner transformation ({type(owner).__name__}) on an outer",
            "an argument of that function, or pass the value out as a result",
        )
    return (
        f"performing a set/swap operation with {what} array reference of type {ref._aval}. "
        f"Move the array reference to be {where}?"
    )


kernel.register(aliased_ref_error=aliased_error)
