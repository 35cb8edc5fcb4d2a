"""SciPy functions that funcgrad (like JAX) does not provide, as autograd primitives: the value is
SciPy's, computed on the host through ``funcgrad.pure_callback`` (so it works under every
transformation), and the derivative is autograd's rule, written with these same primitives (so it
can be differentiated again)."""

from __future__ import annotations

import numpy as onp

import funcgrad
import funcgrad.numpy as fnp

from ..tracer import primitive


def host_ufunc(sp_fun, name=None, dtype=float):
    """A SciPy ufunc as a primitive (results of the broadcast shape, float64 or complex128)."""
    out_dtype = onp.dtype(onp.complex128 if dtype is complex else onp.float64)

    def call(*args):
        args = [fnp.asarray(a, dtype=dtype) if not isinstance(a, int) else a for a in args]
        shape = onp.broadcast_shapes(*(fnp.shape(a) for a in args))
        out = funcgrad.ShapeDtypeStruct(shape, out_dtype)

        def host(*vals):
            return onp.asarray(sp_fun(*vals), dtype=out_dtype).reshape(shape)

        return funcgrad.pure_callback(host, out, *args, vmap_method="broadcast_all")

    call.__name__ = name or sp_fun.__name__
    return primitive(call)


def unbroadcast(g, like):
    """Sum ``g`` down to the shape of ``like`` (an argument that was broadcast)."""
    shape = fnp.shape(like)
    g = fnp.asarray(g)
    while g.ndim > len(shape):
        g = fnp.sum(g, axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = fnp.sum(g, axis=i, keepdims=True)
    return g
