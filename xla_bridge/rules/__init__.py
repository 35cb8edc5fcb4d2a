"""Lowering rules, one module per primitive family; importing this package registers them all
in ``xla_bridge.lowering.lowering_rules``.

Layer: xla_bridge (compiler half). Families whose primitive module does not exist yet (the
catalog grows) are skipped, so the bridge imports against any catalog version.
"""

from __future__ import annotations

import importlib

_FAMILIES = (
    "elementwise",
    "structure",
    "reductions",
    "dot",
    "call",
    "indexing",
    "sorting",
    "control_flow",
    "remat",
)
# rules/<family>.py lowers primitives/<family>.py; rules/indexing.py also lowers gather.py,
# scatter.py, bitcast.py and the structural ops of structure.py that indexing builds on.

for _name in _FAMILIES:
    try:
        importlib.import_module(f"primitives.{_name}")
    except ImportError:
        continue  # the catalog has no such family (yet)
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{_name}":
            raise
