"""Small checks shared by the tests: ``assert_close`` over pytrees and jaxpr type checks.

Derivatives are checked with the public ``funcgrad.testing.check_grads`` (central finite
differences in float64), so the tests exercise the same checker users get; this module only adds
what the tests need beyond it.
"""

from __future__ import annotations

from funcgrad.kernel import ir
from funcgrad.testing import check_close


def assert_close(actual, expected, rtol=1e-6, atol=1e-6, err_msg=""):
    """``funcgrad.testing.check_close`` with the tight tolerances of exact reference values."""
    check_close(actual, expected, atol=atol, rtol=rtol, err_msg=err_msg)


def typecheck(closed) -> None:
    """Every jaxpr produced by a transformation must pass the type checker."""
    ir.typecheck_jaxpr(closed.jaxpr if isinstance(closed, ir.ClosedJaxpr) else closed)
