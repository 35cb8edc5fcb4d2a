"""autograd.misc.tracers.const_graph: trace a function once and replay the recorded program on
later calls. funcgrad's ``jit`` is exactly that (one trace per input signature), so
``const_graph(fun, *fixed_args, **fixed_kwargs)`` is ``jit`` of ``fun`` with those bound."""

import functools

import funcgrad


def const_graph(fun, *args, **kwargs):
    return funcgrad.jit(functools.partial(fun, *args, **kwargs))
