"""``funcgrad.experimental.roofline`` (``jax.experimental.roofline``): a roofline estimate of a
function -- its FLOPs, the bytes it moves through memory and over the chip interconnect, and its
peak memory -- read from its jaxpr, equation by equation, with one rule per primitive.

Layer: surface. ``roofline.py`` is the interpreter and the rule registry, ``rooflines.py`` the
rules of funcgrad's primitives (JAX's); importing this package registers them.

>>> import funcgrad.numpy as fnp
>>> out, result = roofline(lambda a, b: a @ b)(fnp.zeros((3, 7)), fnp.ones((7, 5)))
>>> out.shape, result.flops
((3, 5), 210)
"""

from funcgrad.experimental.roofline import rooflines as _rooflines  # noqa: F401 - the rules
from funcgrad.experimental.roofline.roofline import (
    RooflineResult,
    RooflineRuleContext,
    RooflineShape,
    register_roofline,
    register_standard_roofline,
    roofline,
    roofline_and_grad,
)

__all__ = [
    "RooflineResult",
    "RooflineRuleContext",
    "RooflineShape",
    "register_roofline",
    "register_standard_roofline",
    "roofline",
    "roofline_and_grad",
]
