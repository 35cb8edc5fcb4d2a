"""State objects (Refs) among a traced function's operands: taken out, and put back in its call.

Layer: kernel. Imports ``kernel.hooks`` only (the surface's wording of the aliasing error).

# NOTE: [held state operands]
# A Ref (funcgrad.ref; any class whose ``_fg_state`` is true: the kernel does not import the
# surface) is state, not an array, so it is no operand of a primitive. ``cond``, ``scan``,
# ``checkpoint`` and ``custom_vjp`` called with Refs among their operands take them out
# (``Held.kept``), bind their primitive on the other operands, and call the user's function with
# the Refs put back in their places (``Held.full``): the function closes over them. Their values
# are then carried as state (NOTE: [state in loop bodies] in funcgrad/_control_flow_state.py) or,
# for ``custom_vjp``, reach ``bwd`` as Python objects (NOTE: [Refs through custom_vjp]). One Ref
# at two places is refused with JAX's error (its ``jax_mutable_array_checks``), in the words the
# surface registers (``kernel.register(aliased_ref_error=...)``).

# NOTE: [state written by a backward pass]
# A backward pass may write Refs from outside: a custom_vjp ``bwd`` that stores the cotangent it
# gets (JAX's "gradient statistics plumbing"). Where the backward pass of a staged body is itself
# traced -- a jitted call's, a checkpoint's or a scan body's transposition -- that trace discovers
# the Refs touched (``hooks.state_discovery``, the surface's discovery scope, as a loop body's
# forward trace does: NOTE: [state in loop bodies]), and ``ad.transpose_jaxpr_with_state`` gives
# the backward jaxpr with their values as extra inputs and their final values as extra outputs.
# The transpose rule reads them where it runs (``WrittenState``, one helper for the call-primitive
# kit, checkpoint and scan), passes them to the transposed call (a scan carries them), and writes the
# results back (``WrittenState.write``), so the write happens when
# the backward program runs, once per iteration in a loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from funcgrad.kernel.hooks import hooks

__all__ = ["Held", "WrittenState", "is_state"]


def is_state(x) -> bool:
    """Whether ``x`` is state (a Ref), not an array."""
    return getattr(type(x), "_fg_state", False)


class Held:
    """The state objects among ``leaves`` by position (``at``; ``among``: the positions to look
    at, default all), the other leaves being the operands (NOTE: [held state operands]).

    >>> class Box:
    ...     _fg_state = True
    >>> b = Box()
    >>> held = Held([1.0, b, 2.0])
    >>> held.kept([1.0, b, 2.0])
    [1.0, 2.0]
    >>> held.full([3.0, 4.0]) == [3.0, b, 4.0]
    True
    """

    __slots__ = ("at", "n")

    def __init__(self, leaves: Sequence, among=None):
        self.n = len(leaves)
        self.at = {i: x for i, x in enumerate(leaves) if is_state(x) and (among is None or i in among)}

    def __bool__(self) -> bool:
        return bool(self.at)

    def kept(self, leaves: Sequence) -> list:
        """``leaves`` without the held positions."""
        return [x for i, x in enumerate(leaves) if i not in self.at]

    def full(self, kept) -> list:
        """The kept leaves with the state objects put back in their places."""
        it = iter(kept)
        return [self.at[i] if i in self.at else next(it) for i in range(self.n)]

    def refuse_aliased(self, names: Callable[[], Sequence[str]], fun, traced_for: str) -> Held:
        """JAX's error where one state object is at two positions; ``names()`` gives each position's
        name (computed only then), ``fun`` and ``traced_for`` say what was traced for what."""
        first: dict = {}
        for i, x in self.at.items():
            j = first.setdefault(id(x), i)
            if j != i:
                at = names()
                raise hooks.aliased_ref_error(fun, traced_for, x, at[j], at[i])
        return self


class WrittenState:
    """The state objects ``items`` a traced backward pass writes, as its transpose rule threads
    them (NOTE: [state written by a backward pass]): their leaves read where the rule runs
    (``leaves``, the transposed call's extra inputs after its others) and written back from the
    call's extra outputs (``write``).

    >>> class Box:
    ...     _fg_state = True
    ...     def __init__(self, v):
    ...         self.v = v
    ...     def _state_read(self):
    ...         return [self.v]
    ...     def _state_write(self, vals):
    ...         (self.v,) = vals
    >>> box = Box(1.0)
    >>> written = WrittenState([box])
    >>> written.leaves
    [1.0]
    >>> written.write([2.0])
    >>> box.v
    2.0
    """

    __slots__ = ("items", "counts", "leaves")

    def __init__(self, items: Sequence):
        self.items = list(items)
        # (a Ref, or a mutable box as the surface lifts it, read at the current trace)
        state = [item._state_read() for item in self.items]
        self.counts = [len(vals) for vals in state]
        self.leaves = [x for vals in state for x in vals]

    def write(self, flat: Sequence) -> None:
        """Write the leaves ``flat`` (as many as ``leaves``) back into the state objects."""
        rest = iter(flat)
        for item, n in zip(self.items, self.counts):
            item._state_write([next(rest) for _ in range(n)])
