"""``PartitionSpec`` (``P``): per array dimension, the mesh axes that split it, plus the axes over
which a value is unreduced (a partial sum) or reduced. A spec is a plain value: it names axes,
and only a ``NamedSharding`` (``funcgrad._shardings``) ties it to a mesh.

Layer: surface, the ground floor of the sharding modules. Imports nothing of funcgrad.
"""

from __future__ import annotations


class _Unconstrained:
    def __repr__(self):
        return "UNCONSTRAINED"


class PartitionSpec(tuple):
    """Per array dimension, the mesh axes that split it: a name, a tuple of names (split over
    several axes, major first) or ``None`` (not split). Missing trailing entries are ``None``.

    >>> P("x", None), P(("x", "y")), P()
    (P('x', None), P(('x', 'y'),), P())
    """

    UNCONSTRAINED = _Unconstrained()

    def __init_subclass__(cls, *args, **kwargs):
        raise TypeError("Subclassing `jax.P` is prohibited.")  # (JAX's words)

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        norm = []
        for p in partitions:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple) and len(p) == 0:
                p = None
            if isinstance(p, tuple):
                for q in p:
                    if isinstance(q, tuple | list):  # (JAX's words)
                        raise ValueError(
                            "A tuple inside PartitionSpec cannot contain a nested tuple. Got "
                            f"partition: {p} and the nested tuple: {q}"
                        )
                if len(p) == 1:  # (as JAX's canonical form: ('x',) is 'x')
                    p = p[0]
            norm.append(p)
        self = super().__new__(cls, norm)
        self._unreduced = _axis_set(unreduced, "unreduced")
        self._reduced = _axis_set(reduced, "reduced")
        both = self._unreduced & self._reduced
        if both:
            raise ValueError(f"PartitionSpec: the mesh axes {sorted(both)} are both unreduced and reduced")
        used = set(self._names())
        for name, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if axes & used:  # (JAX's words)
                raise ValueError(
                    f"partitions cannot overlap with {name} axes passed to PartitionSpec. Got "
                    f"partitions: {tuple(self)} and {name} axes: {axes}"
                )
        return self

    def __add__(self, other):
        # As JAX's: specs concatenate (their unreduced/reduced axes too); a plain tuple only onto a
        # spec without them.
        if isinstance(other, PartitionSpec):
            return PartitionSpec(
                *self,
                *other,
                unreduced=self._unreduced | other._unreduced,
                reduced=self._reduced | other._reduced,
            )
        if isinstance(other, tuple | list):
            self._refuse_tuple(other, "__add__")
            return PartitionSpec(*self, *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple | list):
            self._refuse_tuple(other, "__radd__")
            return PartitionSpec(*other, *self)
        return NotImplemented

    def _refuse_tuple(self, other, method: str) -> None:
        for name, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if axes:  # (JAX's words)
                raise TypeError(
                    f"other {other} cannot be of instance `tuple` when self {self} has {name} in "
                    f"`{method}` of PartitionSpec."
                )

    # Axes over which the value is a partial sum still to be added (``unreduced``) or a copy
    # that is already complete (``reduced``): JAX 0.10's spec fields, kept in the spec and its type.
    unreduced = property(lambda self: self._unreduced)
    reduced = property(lambda self: self._reduced)

    @property
    def partitions(self) -> tuple:
        """The per-dimension entries alone (JAX's ``spec.partitions``).

        >>> P("x", None, unreduced={"y"}).partitions
        ('x', None)
        """
        return tuple(self)

    def update(self, partitions=None, unreduced=None, reduced=None) -> PartitionSpec:
        """This spec with the given fields replaced (JAX's ``P.update``).

        >>> P("x").update(unreduced={"y"})
        P('x', unreduced={'y'})
        """
        return PartitionSpec(
            *(self if partitions is None else partitions),
            unreduced=self._unreduced if unreduced is None else unreduced,
            reduced=self._reduced if reduced is None else reduced,
        )

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return (
                tuple.__eq__(self, other)
                and self._unreduced == other._unreduced
                and self._reduced == other._reduced
            )
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((tuple(self), self._unreduced, self._reduced))

    def __repr__(self):
        inner = ", ".join(map(repr, self))
        for name, axes in (("unreduced", self._unreduced), ("reduced", self._reduced)):
            if axes:
                inner += (", " if inner else "") + f"{name}={{{', '.join(map(repr, sorted(axes)))}}}"
        if len(self) == 1 and not (self._unreduced or self._reduced):
            inner += ","
        return f"P({inner})"

    __str__ = __repr__

    def __reduce__(self):
        return (_make_spec, (tuple(self), self._unreduced, self._reduced))

    def _normalized(self, ndim: int, where: str = "PartitionSpec") -> tuple:
        """One tuple of axis names per dimension of a rank-``ndim`` array."""
        if len(self) > ndim:
            raise ValueError(
                f"{where}: {self!r} has {len(self)} entries but the array has rank {ndim}; give at most "
                "one entry per dimension"
            )
        out = []
        for p in (*self, *([None] * (ndim - len(self)))):
            if p is None or p is PartitionSpec.UNCONSTRAINED:
                out.append(())
            elif isinstance(p, tuple):
                out.append(tuple(p))
            else:
                out.append((p,))
        return tuple(out)

    def _names(self) -> list:
        names = []
        for p in self:
            if p is None or p is PartitionSpec.UNCONSTRAINED:
                continue
            names.extend(p if isinstance(p, tuple) else (p,))
        return names


P = PartitionSpec


def _axis_set(axes, what) -> frozenset:
    if isinstance(axes, str):
        axes = (axes,)
    try:
        out = frozenset(axes)
    except TypeError:
        raise TypeError(f"PartitionSpec: {what}= must be a set of mesh axis names, got {axes!r}") from None
    if None in out:  # (JAX's words)
        raise ValueError(f"{what} cannot contain None. All elements in {what} should refer to the mesh axes.")
    if not all(isinstance(a, str) for a in out):
        raise TypeError(f"PartitionSpec: {what}= must be a set of mesh axis names, got {axes!r}")
    return out


def _make_spec(parts, unreduced, reduced):
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)
