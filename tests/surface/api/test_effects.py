"""JAX's effect types against jax 0.10.2: ``debug.DebugEffect`` and ``debug.OrderedDebugEffect``
(printed names, their base ``extend.core.Effect``, neither a kind of the other)."""

from __future__ import annotations

import pytest

import funcgrad
import funcgrad.extend.core

jax = pytest.importorskip("jax")


def _facts(debug, effect_base):
    d, o = debug.DebugEffect(), debug.OrderedDebugEffect()
    return [
        str(d),
        str(o),
        isinstance(d, effect_base),
        isinstance(o, effect_base),
        isinstance(o, debug.DebugEffect),
    ]


def test_debug_effect_types_as_jax():
    from jax._src.effects import Effect

    assert _facts(funcgrad.debug, funcgrad.extend.core.Effect) == _facts(jax.debug, Effect)
