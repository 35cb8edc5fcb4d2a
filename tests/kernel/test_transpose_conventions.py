"""NOTE: [transpose conventions]: a context changes what ``vjp`` transposes through one kernel hook
(shard_map's body uses it), never through a special case inside ``vjp``."""

from __future__ import annotations

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import ad


class _Doubled(ad.LinearFunction):
    """A convention for the test: every input cotangent doubled."""

    __slots__ = ()

    def transpose(self, cotangents):
        return [2.0 * ct for ct in super().transpose(cotangents)]


def _doubling(lin, primals, outputs):
    return _Doubled(lin.closed, lin.in_avals, lin.out_avals, lin.out_zeros)


def test_vjp_transposes_under_the_innermost_convention():
    f = lambda x: fnp.sin(x) * 3.0  # noqa: E731
    plain = funcgrad.vjp(f, 0.5)[1](1.0)[0]
    with ad.transpose_convention(_doubling):
        doubled = funcgrad.vjp(f, 0.5)[1](1.0)[0]
        with ad.transpose_convention(None):  # an inner context without one shadows the outer
            shadowed = funcgrad.vjp(f, 0.5)[1](1.0)[0]
    after = funcgrad.vjp(f, 0.5)[1](1.0)[0]
    np.testing.assert_allclose(plain, 3.0 * np.cos(0.5))
    np.testing.assert_allclose(doubled, 2 * plain)
    assert float(shadowed) == float(plain) == float(after)


def test_in_context_is_the_identity_outside_any_convention():
    _, lin = ad.linearize_flat(lambda x: [x * 2.0], [1.0])
    assert ad.in_context(lin, [1.0], [2.0]) is lin
