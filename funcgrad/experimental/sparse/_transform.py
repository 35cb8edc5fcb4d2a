"""``sparsify``: run a function written for dense arrays on BCOO arguments (as
``jax.experimental.sparse.sparsify``).

Layer: surface. Imports the kernel (``core.eval_jaxpr``'s pieces, ``ir``), funcgrad.api
(``make_jaxpr``), funcgrad.tree_util and the BCOO functions.

# NOTE: [sparsify]
# ``sparsify(f)(*args)`` traces ``f`` with each BCOO argument stood in for by a dense value of its
# shape and dtype, then interprets the jaxpr equation by equation. An equation none of whose
# inputs is sparse binds its primitive as usual (so an outer jit/grad/vmap sees it); one with a
# sparse input goes through the rule table below, which keeps results sparse where the result's
# pattern is the input's:
#
#   neg, and zero-preserving unary functions (sin, tan, tanh, sqrt, abs, sign, expm1, log1p, ...,
#     integer_pow with y > 0, convert_element_type, square, ...)      -> BCOO, same indices
#   mul sparse*dense / dense*sparse / sparse*sparse                    -> BCOO on the sparse
#     operand's pattern (bcoo_multiply_dense; sparse*sparse densifies the second factor)
#   div sparse/dense-scalar                                            -> BCOO
#   add/sub of two BCOO of one layout                                  -> BCOO, slots concatenated
#   dot_general with one or two sparse operands                        -> bcoo_dot_general
#   reduce_sum                                                         -> bcoo_reduce_sum
#   transpose                                                          -> bcoo_transpose
#   reshape (no dense dimensions)                                      -> bcoo_reshape
#   jit (a nested jitted call)                                         -> its jaxpr, sparsified
#
# Every other primitive with a sparse input (and sparse+dense addition, which jax refuses) takes
# the dense form of its sparse inputs and binds the primitive: the result is dense and correct,
# only not sparse. jax raises NotImplementedError there instead; the densifying fallback is a
# deliberate difference (the result equals ``f`` on dense inputs).
"""

from __future__ import annotations

import functools

import numpy as np

import funcgrad.numpy as jnp
from funcgrad.api import make_jaxpr
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import (
    BCOO,
    add_bcoo,
    bcoo_dot_general,
    bcoo_multiply_dense,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_transpose,
)
from funcgrad.kernel import ir
from funcgrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["sparsify"]

# f(0) == 0: applied to the stored values only, the pattern stays the same.
_ZERO_PRESERVING = {
    "neg", "sin", "tan", "tanh", "sinh", "asin", "asinh", "atan", "atanh", "sqrt", "cbrt", "abs",
    "sign", "expm1", "log1p", "floor", "ceil", "round", "square", "erf", "erf_inv", "stop_gradient",
    "real", "imag", "conj",
}  # fmt: skip


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _same_data(x, data):
    return BCOO(
        (data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted, unique_indices=x.unique_indices
    )


def _densify(values):
    return [v.todense() if isinstance(v, BCOO) else v for v in values]


def _sparse_rule(eqn, values):
    """The result of ``eqn`` on ``values`` (some of them BCOO), or None to densify."""
    name, params = eqn.primitive.name, eqn.params
    x = values[0]
    if name in _ZERO_PRESERVING and len(values) == 1:
        return _same_data(x, eqn.primitive.bind(x.data, **params))
    if name == "integer_pow" and params["y"] > 0:
        return _same_data(x, eqn.primitive.bind(x.data, **params))
    if name == "convert_element_type":
        return _same_data(x, eqn.primitive.bind(x.data, **params))
    if name == "mul":
        a, b = values
        if isinstance(a, BCOO):
            return bcoo_multiply_dense(a, b.todense() if isinstance(b, BCOO) else b)
        return bcoo_multiply_dense(b, a)
    if name == "div" and isinstance(x, BCOO) and not isinstance(values[1], BCOO) and jnp.ndim(values[1]) == 0:
        return _same_data(x, x.data / values[1])
    if name in ("add", "add_any", "sub"):
        a, b = values
        if not (isinstance(a, BCOO) and isinstance(b, BCOO)):
            return None  # sparse + dense is dense (as jax)
        if a.shape != b.shape or a.n_batch != b.n_batch or a.n_dense != b.n_dense:
            return None
        return add_bcoo(a, -b if name == "sub" else b)
    if name == "reshape" and x.n_dense == 0 and params.get("dimensions") is None:
        return bcoo_reshape(x, new_sizes=params["new_sizes"])
    if name == "dot_general":
        return bcoo_dot_general(
            values[0],
            values[1],
            dimension_numbers=params["dimension_numbers"],
            preferred_element_type=params.get("preferred_element_type"),
        )
    if name == "reduce_sum":
        return bcoo_reduce_sum(x, axes=params["axes"])
    if name == "transpose":
        return bcoo_transpose(x, permutation=params["permutation"])
    if name == "jit":
        inner = params["jaxpr"]
        jaxpr, consts = (inner.jaxpr, inner.consts) if isinstance(inner, ir.ClosedJaxpr) else (inner, [])
        return _eval(jaxpr, consts, values)
    return None


def _eval(jaxpr, consts, args):
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(a):
        return a.val if type(a) is ir.Literal else env[a]

    for eqn in jaxpr.eqns:
        values = [read(a) for a in eqn.invars]
        if any(isinstance(v, BCOO) for v in values):
            out = _sparse_rule(eqn, values)
            if out is None:  # no sparse rule: the dense form (NOTE: [sparsify])
                out = eqn.primitive.bind(*_densify(values), **eqn.params)
        else:
            out = eqn.primitive.bind(*values, **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, out))
        else:
            env[eqn.outvars[0]] = out
    return [read(v) for v in jaxpr.outvars]


def sparsify(f):
    """``f`` made to accept BCOO arguments (NOTE: [sparsify]): sparse in, sparse out where the
    rules keep the pattern, dense otherwise.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> y = sparsify(lambda m, v: jnp.sin(m * 3.0) @ v)(x, jnp.ones(2))
    >>> [round(float(t), 4) for t in y]
    [0.1411, -0.2794]
    >>> sparsify(lambda m: (m.T * 2.0).sum(0))(x)
    BCOO(float64[2], nse=2)
    """

    @functools.wraps(f)
    def sparsified(*args, **kwargs):
        leaves, tree = tree_flatten(args, is_leaf=_is_sparse)
        for leaf in leaves:
            if _is_sparse(leaf) and not isinstance(leaf, BCOO):
                raise TypeError(
                    f"sparsify: {type(leaf).__name__} arguments are not supported; convert to BCOO "
                    "(BCOO.fromdense(x.todense()))"
                )
        # a stand-in of the sparse argument's shape and dtype, without memory (a broadcast view)
        specs = [
            np.broadcast_to(np.zeros((), x.dtype), x.shape) if isinstance(x, BCOO) else x for x in leaves
        ]
        out_tree = []

        def flat_f(*flat):
            out = f(*tree_unflatten(tree, list(flat)), **kwargs)
            out_leaves, treedef = tree_flatten(out)
            out_tree.append(treedef)
            return out_leaves

        closed = make_jaxpr(flat_f)(*specs)
        outs = _eval(closed.jaxpr, closed.consts, leaves)
        return tree_unflatten(out_tree[0], outs)

    return sparsified
