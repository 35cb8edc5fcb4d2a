"""``funcgrad.ad``: JAX 0.10's ``jax.ad``, a namespace (as JAX's, not a module) of the markers a
vjp function's ``with_refs`` reads.

Layer: surface. Imports ``funcgrad._autodiff`` (where ``VJPFunction.with_refs`` reads them).

``f_vjp.with_refs(*where)`` takes, per primal leaf, ``GradValue()`` (return its cotangent), a
``Ref`` (add the cotangent into it; the result holds ``GradRef()`` there) or ``DontWant()`` (drop
it; the result holds ``DidntWant()``).

>>> import funcgrad, funcgrad.numpy as fnp
>>> _, f_vjp = funcgrad.vjp(lambda x, y: fnp.sin(x) * y, 0.0, 2.0)
>>> f_vjp.with_refs(funcgrad.ad.GradValue(), funcgrad.ad.DontWant())(1.0)
(Array(2., dtype=float64, weak_type=True), DidntWant())
"""

from __future__ import annotations

from types import SimpleNamespace

from funcgrad._autodiff import DidntWant, DontWant, GradRef, GradValue

__all__ = ["ad"]
_REEXPORTED = ("ad",)

ad = SimpleNamespace(DontWant=DontWant, DidntWant=DidntWant, GradRef=GradRef, GradValue=GradValue)
