"""The rule tables of ``jax.interpreters`` as views of funcgrad's primitives.

Layer: surface. Imports the kernel (``Primitive``) and ``funcgrad.primitives`` (the catalog, to
list its primitives).

# NOTE: [rule tables are views]
# JAX keeps one dict per kind of rule (``ad.primitive_jvps``, ``batching.primitive_batchers``, ...);
# funcgrad keeps every rule on its ``Primitive`` (design.md: a primitive, declared once). Each JAX
# table here is a mapping whose writes go to the primitive's rule slot, through an adapter from
# JAX's rule signature to funcgrad's (``to_slot``), so a rule registered the JAX way is the rule
# every funcgrad transformation runs and no second registry exists. A read returns the rule as it
# was written; for a primitive whose slot was filled the funcgrad way (the catalog), it returns
# the slot adapted to JAX's signature (``from_slot``), so a library can call a built-in rule. The
# rule as written is remembered on the primitive (``_jax_rules``), never in a table of its own.
# Replacing a rule that was already set empties every cache of traced and compiled programs
# (``before_replacing``): an eager grad's derivative program or a jitted program made with the old
# rule must not be replayed. A first registration (a library's import) clears nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping

from funcgrad import primitives as _primitives
from funcgrad.kernel import caches as _caches
from funcgrad.kernel.core import Primitive


def _catalog() -> list[Primitive]:
    return _primitives.all_primitives()


def before_replacing(p: Primitive, *slots: str) -> None:
    """Empty the program caches if one of ``p``'s ``slots`` already holds a rule (NOTE: [rule
    tables are views]).

    >>> p = Primitive("fresh"); before_replacing(p, "jvp")  # nothing set: nothing cleared
    """
    if any(getattr(p, slot, None) is not None for slot in slots):
        _caches.clear_all()


class RuleTable(MutableMapping):
    """A mapping ``primitive -> rule`` stored in the primitive's ``slot`` (NOTE: [rule tables are
    views]).

    ``to_slot(primitive, rule)`` adapts a rule in JAX's signature to the slot's; ``from_slot(
    primitive, slot_rule)`` the other way (``None``: the slot is not readable as this table's
    kind). ``on_set(primitive)`` runs after a write (a trait the rule implies).

    >>> import numpy as np
    >>> t = RuleTable("demo", "jvp", lambda p, r: r)
    >>> p = Primitive("demo_op")
    >>> t[p] = rule = lambda primals, tangents: (primals[0], tangents[0])
    >>> t[p] is rule, p.jvp is rule, p in t
    (True, True, True)
    >>> del t[p]; p.jvp is None
    True
    """

    def __init__(
        self,
        name: str,
        slot: str,
        to_slot: Callable,
        from_slot: Callable | None = None,
        on_set: Callable | None = None,
    ):
        self.name = name
        self.slot = slot
        self.to_slot = to_slot
        self.from_slot = from_slot
        self.on_set = on_set

    def _check(self, p) -> Primitive:
        if not isinstance(p, Primitive):
            raise TypeError(
                f"{self.name}: keys are primitives (funcgrad.extend.core.Primitive), got "
                f"{type(p).__name__} {p!r}"
            )
        return p

    def __setitem__(self, p, rule):
        self._check(p)
        if not callable(rule):
            raise TypeError(f"{self.name}[{p.name}]: a rule must be callable, got {type(rule).__name__}")
        before_replacing(p, self.slot)
        setattr(p, self.slot, self.to_slot(p, rule))
        rules = p.__dict__.setdefault("_jax_rules", {})
        rules[self.name] = (rule, getattr(p, self.slot))
        if self.on_set is not None:
            self.on_set(p)

    def _written(self, p):
        """The rule written through this table, if the slot still holds its adapter."""
        entry = p.__dict__.get("_jax_rules", {}).get(self.name)
        if entry is not None and getattr(p, self.slot) is entry[1]:
            return entry[0]
        return None

    def __getitem__(self, p):
        self._check(p)
        rule = self._written(p)
        if rule is not None:
            return rule
        slot_rule = getattr(p, self.slot, None)
        if slot_rule is not None and self.from_slot is not None:
            adapted = self.from_slot(p, slot_rule)
            if adapted is not None:
                return adapted
        raise KeyError(p)

    def __contains__(self, p):
        if not isinstance(p, Primitive):
            return False
        try:
            self[p]
        except KeyError:
            return False
        return True

    def __delitem__(self, p):
        self._check(p)
        if p not in self:
            raise KeyError(p)
        before_replacing(p, self.slot)
        setattr(p, self.slot, None)
        p.__dict__.get("_jax_rules", {}).pop(self.name, None)

    def __iter__(self) -> Iterator[Primitive]:
        # The catalog's primitives with a readable rule (user primitives are found by lookup:
        # nothing keeps a list of them, NOTE: [rule tables are views]).
        return iter([p for p in _catalog() if p in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self):
        return f"<funcgrad rule table {self.name}: a view of Primitive.{self.slot}>"


class WriteOnlyTable:
    """A table JAX itself only writes to (a backwards-compatibility shim such as
    ``batching.axis_primitive_batchers``): ``table[p] = rule`` adapts and stores, ``del`` clears.

    >>> t = WriteOnlyTable("demo", "batch", lambda p, r: r)
    >>> p = Primitive("demo_op2"); t[p] = len; p.batch is len
    True
    """

    def __init__(self, name: str, slot: str, to_slot: Callable):
        self.name = name
        self.slot = slot
        self.to_slot = to_slot

    def __setitem__(self, p, rule):
        if not isinstance(p, Primitive):
            raise TypeError(f"{self.name}: keys are primitives, got {type(p).__name__}")
        before_replacing(p, self.slot)
        setattr(p, self.slot, self.to_slot(p, rule))

    def __delitem__(self, p):
        before_replacing(p, self.slot)
        setattr(p, self.slot, None)

    def __repr__(self):
        return f"<funcgrad write-only rule table {self.name}: sets Primitive.{self.slot}>"
