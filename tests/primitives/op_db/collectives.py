"""op_db entries: the collectives over a named axis (primitives/collectives.py).

Each entry's ``named_axis`` is bound by the generic checks: every argument's leading dimension
holds the ``N`` instances of the axis, and the op (a per-instance function) runs under
``vmap(op, axis_name=...)`` -- the stacked values, derivatives and vmap-vs-loop checks are of
that vmapped function, and the transpose rules are dot-product tested on the per-instance jaxpr
(made with ``make_jaxpr(..., axis_env=...)``) evaluated under the same vmap. The references
compute on the stacked NumPy values.
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives import collectives as co

from op_db._base import ALL3, F64, FLOATS, I32, OpInfo, Sample, _arr, _distinct, _shapes

N = 3
AXIS = "i"


def _stacked(gen=_arr, extra=None):
    """One argument of per-instance shape ``shape`` (``extra(shape)`` reshapes it), stacked N times."""

    def sampler(shape, dtype, rng):
        inst = tuple(extra(shape)) if extra is not None else tuple(shape)
        return Sample((gen(rng, (N, *inst), dtype),), {})

    return sampler


def _each(y, shape):
    """``y`` (the same for every instance) as the stacked result."""
    return np.broadcast_to(y, (N, *shape)) if shape is not None else np.broadcast_to(y, (N, *np.shape(y)))


def _gather_ref(axis, tiled):
    def ref(x):
        y = np.moveaxis(x, 0, axis)
        if tiled:
            shape = y.shape
            y = y.reshape(*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2 :])
        return _each(y, None)

    return ref


def _scatter_ref(dim, tiled):
    def ref(x):
        total = x.sum(0)
        if tiled:
            shape = total.shape
            total = total.reshape(*shape[:dim], N, shape[dim] // N, *shape[dim + 1 :])
        return np.moveaxis(total, dim, 0)

    return ref


def _all_to_all_ref(split, concat, tiled):
    def ref(x):
        outs = []
        for i in range(N):
            chunks = []
            for j in range(N):
                xj = x[j]
                if tiled:
                    k = xj.shape[split] // N
                    chunks.append(np.take(xj, np.arange(i * k, (i + 1) * k), axis=split))
                else:
                    chunks.append(np.take(xj, i, axis=split))
            outs.append(np.concatenate(chunks, axis=concat) if tiled else np.stack(chunks, axis=concat))
        return np.stack(outs)

    return ref


PERM = ((0, 1), (1, 2))  # instance 0 receives nothing: zeros


def _ppermute_ref(x):
    out = np.zeros_like(x)
    for s, d in PERM:
        out[d] = x[s]
    return out


def _op(prim, **params):
    return lambda x: prim.bind(x, axis_name=(AXIS,), **params)


def _entry(name, prim, ref, sampler, **kw):
    return OpInfo(name, prim, _op(prim, **kw.pop("params", {})), ref, sampler, named_axis=AXIS, **kw)


_with = lambda size, at: lambda s: (*s[:at], size, *s[at:])  # noqa: E731
_last = lambda size: lambda s: (*s, size)  # noqa: E731

OPS = [
    _entry(
        "psum",
        co.psum_p,
        lambda x: _each(x.sum(0), x.shape[1:]),
        _stacked(),
        shapes=_shapes(max_dims=2),
        dtypes=ALL3,
        linear_argnums=((0,),),
    ),
    _entry(
        "pmax",
        co.pmax_p,
        lambda x: _each(x.max(0), x.shape[1:]),
        _stacked(_distinct),
        shapes=_shapes(max_dims=2, min_side=1),
        dtypes=(F64, I32),
        differentiable=False,
        derivative_error=NotImplementedError,  # (JAX defines no derivative of pmax/pmin)
    ),
    _entry(
        "pmin",
        co.pmin_p,
        lambda x: _each(x.min(0), x.shape[1:]),
        _stacked(_distinct),
        shapes=_shapes(max_dims=2, min_side=1),
        dtypes=FLOATS,
        differentiable=False,
        derivative_error=NotImplementedError,
    ),
    *[
        _entry(
            f"all_gather_axis{axis}{'_tiled' if tiled else ''}",
            co.all_gather_p,
            _gather_ref(axis, tiled),
            _stacked(),
            shapes=_shapes(min_dims=2, max_dims=2, min_side=1),
            sample_shapes=((3, 2), (2, 1)),
            params=dict(axis=axis, tiled=tiled),
            dtypes=(F64, I32),
            linear_argnums=((0,),),
        )
        for axis, tiled in ((0, False), (1, False), (0, True), (1, True))
    ],
    *[
        # (all_gather(to='invarying') and (to='reduced'): all_gather's values and rules, typed
        # invariant or reduced in a checked body)
        _entry(
            f"{prim.name}_axis{axis}{'_tiled' if tiled else ''}",
            prim,
            _gather_ref(axis, tiled),
            _stacked(),
            shapes=_shapes(min_dims=2, max_dims=2, min_side=1),
            sample_shapes=((3, 2), (2, 1)),
            params=dict(axis=axis, tiled=tiled),
            dtypes=(F64, I32),
            linear_argnums=((0,),),
        )
        for prim in (co.all_gather_invariant_p, co.all_gather_reduced_p)
        for axis, tiled in ((0, False), (1, True))
    ],
    *[
        # (pcast: the identity on each instance's value, a change of its type in a checked body)
        _entry(
            f"pcast_{to}",
            co.pcast_p,
            lambda x: x,
            _stacked(),
            shapes=_shapes(max_dims=2),
            params=dict(to=to),
            dtypes=ALL3,
            linear_argnums=((0,),),
        )
        for to in ("varying", "reduced", "unreduced")
    ],
    _entry(
        "psum_scatter",
        co.psum_scatter_p,
        _scatter_ref(0, False),
        _stacked(extra=_with(N, 0)),
        shapes=_shapes(max_dims=2),
        params=dict(scatter_dimension=0, tiled=False),
        linear_argnums=((0,),),
    ),
    _entry(
        "psum_scatter_tiled",
        co.psum_scatter_p,
        _scatter_ref(1, True),
        _stacked(extra=lambda s: (*s[:1], 2 * N) if s else (1, 2 * N)),
        shapes=_shapes(max_dims=1),
        sample_shapes=((2,), ()),
        params=dict(scatter_dimension=1, tiled=True),
        linear_argnums=((0,),),
    ),
    *[
        _entry(
            f"all_to_all_{split}{concat}{'_tiled' if tiled else ''}",
            co.all_to_all_p,
            _all_to_all_ref(split, concat, tiled),
            _stacked(extra=lambda s, split=split, tiled=tiled: _with(2 * N if tiled else N, split)((2,))),
            shapes=_shapes(max_dims=0),
            sample_shapes=((),),
            params=dict(split_axis=split, concat_axis=concat, tiled=tiled),
            linear_argnums=((0,),),
        )
        for split, concat, tiled in ((0, 0, False), (0, 1, False), (1, 0, False), (1, 0, True), (0, 1, True))
    ],
    _entry(
        "ppermute",
        co.ppermute_p,
        _ppermute_ref,
        _stacked(),
        shapes=_shapes(max_dims=2),
        params=dict(perm=PERM),
        dtypes=ALL3,
        linear_argnums=((0,),),
    ),
    OpInfo(
        "axis_index",
        co.axis_index_p,
        lambda x: co.axis_index_p.bind(axis_name=(AXIS,)),
        lambda x: np.arange(N, dtype=np.int32),
        _stacked(),
        shapes=_shapes(max_dims=1),
        differentiable=False,
        named_axis=AXIS,
    ),
]
