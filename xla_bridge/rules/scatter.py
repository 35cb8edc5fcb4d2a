"""Lowering rules of the scatter family (primitives/scatter.py): ``scatter`` (replace),
``scatter-mul``, ``scatter-min`` and ``scatter-max``, each the shared scatter lowering of
rules/gather.py with its combining op.

Layer: xla_bridge (compiler half). Imports the primitive catalog, ``xla_bridge.emitter`` and
``xla_bridge.rules.gather``.
"""

from __future__ import annotations

from funcgrad.primitives.scatter import scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p
from funcgrad.xla_bridge.emitter import register
from funcgrad.xla_bridge.rules.gather import scatter_rule

register(scatter_p)(scatter_rule(None))
register(scatter_mul_p)(scatter_rule("stablehlo.multiply"))
register(scatter_min_p)(scatter_rule("stablehlo.minimum"))
register(scatter_max_p)(scatter_rule("stablehlo.maximum"))
