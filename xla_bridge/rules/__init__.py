"""Lowering rules, one module per primitive family; importing this package registers them all
in ``xla_bridge.emitter.lowering_rules``.

Layer: xla_bridge (compiler half). The rule modules import the primitive catalog, the kernel and
``xla_bridge.emitter``; ``xla_bridge.lowering`` imports this package, never the other way round.

``rules/<family>.py`` lowers exactly the primitives declared in ``primitives/<family>.py``, and
``rules/custom_derivatives.py`` those declared in ``funcgrad/kernel/custom_derivatives.py``
(tests/bridge/test_lowering.py checks both directions through ``emitter.rule_modules``). The list of
rule modules is this package's contents, not a hand-kept list; a module whose name starts with
``_`` would hold shared helpers. An ``ImportError`` raised by a rule module propagates: a
missing family of lowerings is a bug, not something to skip.
"""

from __future__ import annotations

import importlib
import pkgutil

FAMILIES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))

for _name in FAMILIES:
    importlib.import_module(f"{__name__}.{_name}")
