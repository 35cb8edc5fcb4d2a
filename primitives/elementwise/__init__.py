"""Elementwise primitives: arithmetic, transcendental functions, comparisons, bitwise ops, select.

Layer: primitives. One family (``rules/elementwise.py`` lowers it, ``op_db/elementwise.py`` tests
it) split by subject into four modules: ``conversion`` (dtype conversion, stop_gradient, copy),
``arithmetic`` (what the others need: +, -, *, /, comparisons, select, integer powers),
``series`` (the series arithmetic of Taylor rules, and the Taylor rules of arithmetic's
primitives that are recurrences on it) and ``transcendental`` (exp, log, pow, the trigonometric,
hyperbolic and special functions). The family's namespace is
their public names.
"""

from funcgrad.primitives.elementwise import complex_specials as _complex_specials  # noqa: F401 - wraps impls
from funcgrad.primitives.elementwise.arithmetic import *  # noqa: F403 - the family's public names
from funcgrad.primitives.elementwise.conversion import *  # noqa: F403
from funcgrad.primitives.elementwise.series import *  # noqa: F403
from funcgrad.primitives.elementwise.transcendental import *  # noqa: F403
