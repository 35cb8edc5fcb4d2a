"""The fuzzer's ``Op`` (an operation's source template) and the parameter rules its tables use.

>>> Op("np.clip", "np.clip({0}, {lo}, 1.0)").render(["v0"], {"lo": -0.5})
'np.clip(v0, -0.5, 1.0)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hypothesis import strategies as st


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    expr: str
    arity: int = 1
    params: Callable | None = None  # shape -> strategy of a dict of static parameters
    kinds: str = "bif"  # the operands' dtype kinds: b(ool), i(nt), f(loat), c(omplex)
    specials: bool = True  # defined at NaN/inf
    source: str = "surface"
    mixes_dtypes: bool = False  # the op meets values of other dtypes itself (casts in its expression)

    def render(self, operands, params) -> str:
        """The op applied to the operand names, its parameters written as Python literals.

        >>> Op("np.clip", "np.clip({0}, {lo}, 1.0)").render(["v0"], {"lo": -0.5})
        'np.clip(v0, -0.5, 1.0)'
        """
        return self.expr.format(*operands, **{k: repr(v) for k, v in params.items()})


# ----------------------------------------------------------------------------------------------
# Parameter rules (each: the first operand's shape -> a strategy of a dict)


def _axes(shape, none=True):
    choices = list(range(-len(shape), len(shape))) + ([None] if none or not shape else [])
    return st.sampled_from(choices)


def axis(none=True):
    return lambda shape: st.fixed_dictionaries({"axis": _axes(shape, none)})


def keyed(**strategies):
    return lambda shape: st.fixed_dictionaries(strategies)


def _index(shape):
    n = shape[0] if shape else 1
    return st.integers(-n - 1, n)


def _perm(shape):
    return st.permutations(list(range(len(shape)))).map(tuple)


U, B, S = "{0}", "{1}", "{2}"


class _Raw(str):
    """A parameter written into the source as it is (an expression), not as a literal."""

    def __repr__(self):
        return str(self)
