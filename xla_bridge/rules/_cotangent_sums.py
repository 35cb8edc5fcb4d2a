"""Cotangent sums whose last term is a broadcast, lowered with a full-size last addition
(NOTE: [a broadcast last in a cotangent sum]).

Layer: xla_bridge (compiler half). Uses only ``xla_bridge.emitter``'s builder API (its
``broadcast_names`` and ``cotangent_sums`` tables); used by the lowering rule of ``add_any``
(xla_bridge/rules/elementwise.py).
"""

from __future__ import annotations

# NOTE: [a broadcast last in a cotangent sum]
# The cotangent of a value the function reads several times is the ``add_any`` of each use's
# contribution, in the order the backward pass produces them (JAX's order). Where the value also
# feeds a mean or a sum -- every layer norm, softmax and centring -- the last contribution is that
# reduction's transpose, a broadcast: ``ct = (ct_prev + t_direct) + broadcast(m)``. XLA's fusion
# pass (InstructionFusion::ComputeGloballyUnfusible, jaxlib 0.10.2) counts a broadcast operand as
# free, so it takes that last addition for "effectively unary" and duplicates it into every
# consumer with the whole single-use chain of additions above it: in the residual stream of a
# transformer the cotangent of layer i is recomputed from the top layer down in each of its
# consumers (the input-gradient GEMM's operand, the weight-gradient dot's, the next layer's sum),
# 40 loop fusions of 30-70 operands in the per-example program of bench/bench_transformer.py
# (about 7 ms of its ~150 ms; the step alike). Lowered as ``ct_prev + (t_direct + broadcast(m))``
# the last addition has two full-size operands, and XLA's own rule then materialises it once
# where a consumer cannot fuse it (a dot, a reduction its YNNPACK fusions run) and keeps the
# chain from growing: no loop fusion of more than 10 operands is left there. Only ``add_any``
# (the backward pass's accumulation, whose order is the AD's, not the user's) is reassociated;
# a user's ``(a + b) + c`` keeps its order. Not bit-exact: a floating-point sum in another order
# differs from jax's program in the last bits (float32: about one ulp of the cotangent).


def add_any(fb, a: str, b: str, aval) -> str:
    """``a + b`` for ``add_any``: where one operand is a broadcast this body emitted and the other
    a recorded sum ``c + d`` of two full-size values, emitted as ``c + (d + broadcast)``."""
    table = fb.cotangent_sums
    names = fb.broadcast_names
    for x, y in ((a, b), (b, a)):
        if y in names and x in table:
            c, d = table[x]
            inner = fb.binary("stablehlo.add", d, y, aval)
            out = fb.binary("stablehlo.add", c, inner, aval)
            table[out] = (c, inner)
            return out
    out = fb.binary("stablehlo.add", a, b, aval)
    if a not in names and b not in names:
        table[out] = (a, b)
    return out
