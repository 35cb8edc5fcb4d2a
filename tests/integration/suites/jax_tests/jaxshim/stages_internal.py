"""Stand-ins for the internals of JAX's stages that aot_test reads: ``Lowered._lowering.const_args``
and ``Compiled._params.const_args`` (the closed-over constants passed to the program as arguments;
funcgrad hoists only constants of more than ``xla_bridge.lowering.HOIST_CONST_ELEMENTS`` elements,
which JAX's default, ``jax_use_simplified_jaxpr_constants=False``, embeds), and
``Compiled._executable.in_avals`` (the program's parameters, hoisted constants first)."""

from __future__ import annotations

import types

from funcgrad.xla_bridge.lowering import lower_jaxpr

from funcgrad._aot import CompiledCall, Lowered


def _lowering(lowered):
    spmd = lowered._spmd
    if spmd is not None:
        return types.SimpleNamespace(const_args=list(getattr(spmd, "const_args", ())))
    staged = lowered._staged
    lowering = lower_jaxpr(staged.closed, lowered._fun._name, lowered._donated)
    return types.SimpleNamespace(const_args=list(lowering.const_args))


def _params(compiled):
    return types.SimpleNamespace(const_args=list(getattr(compiled._compiled, "const_buffers", ())))


def install() -> None:
    Lowered._lowering = property(_lowering)
    CompiledCall._params = property(_params)
    CompiledCall._executable = property(lambda self: self._compiled.executable)
