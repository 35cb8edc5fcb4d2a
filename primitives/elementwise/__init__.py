"""Elementwise primitives: arithmetic, transcendental functions, comparisons, bitwise ops, select.

Layer: primitives. One family (``rules/elementwise.py`` lowers it, ``op_db/elementwise.py`` tests
it) split by subject into two modules, each primitive's rules together in one of them:
``arithmetic`` (what the other needs: +, -, *, /, comparisons, select, conversion, integer
powers, and the series arithmetic of Taylor rules) and ``transcendental`` (exp, log, pow, the
trigonometric, hyperbolic and special functions). The family's namespace is their public names.
"""

from funcgrad.primitives.elementwise.arithmetic import *  # noqa: F403 - the family's public names
from funcgrad.primitives.elementwise.transcendental import *  # noqa: F403
