"""``sparsify``: run a function written for dense arrays on BCOO arguments (as
``jax.experimental.sparse.sparsify``).

Layer: surface. Imports the kernel (``core.eval_jaxpr``'s pieces, ``ir``), funcgrad.api
(``make_jaxpr``), funcgrad.tree_util and the BCOO functions.

# NOTE: [sparsify]
# ``sparsify(f)(*args)`` traces ``f`` with each BCOO argument stood in for by a dense value of its
# shape and dtype, then interprets the jaxpr equation by equation. An equation none of whose
# inputs is sparse binds its primitive as usual (so an outer jit/grad/vmap sees it); one with a
# sparse input goes through the rule of its primitive's ``traits.sparse`` kind (``_RULES`` below;
# NOTE: [primitive traits]), which keeps results sparse where the result's pattern is the input's:
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
#   gather from a sparse operand, convolutions                         -> bcoo_gather, bcoo_conv_...
#   cond/switch, while_loop, scan (no sparse xs), custom_jvp           -> their functions sparsified
#                                                                        (cond's branches must agree)
#
# A primitive with a sparse input and no rule raises JAX's NotImplementedError ("sparse rule for
# cos is not implemented because it would result in dense output" for the ``densifying`` kind,
# f(0) != 0; "sparse rule for P is not implemented." otherwise), as do sparse - dense, a division
# by a sparse array, x ** -n and sparse + dense broadcasting the dense operand, in JAX's words:
# sparsify never densifies silently (sparse + dense of the result's shape is dense, as JAX's).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

import funcgrad.numpy as jnp
from funcgrad._control_flow import scan, switch, while_loop
from funcgrad.api import eval_shape, make_jaxpr
from funcgrad.experimental.sparse._api import todense_p
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import (
    BCOO,
    add_bcoo,
    bcoo_dot_general,
    bcoo_multiply_dense,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_sum_duplicates,
    bcoo_transpose,
)
from funcgrad.experimental.sparse._bcsr import BCSR
from funcgrad.experimental.sparse._structural import (
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_conv_general_dilated,
    bcoo_dynamic_slice,
    bcoo_gather,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
)
from funcgrad.kernel import ir
from funcgrad.kernel.traits import SPARSE_KINDS
from funcgrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["SparseTracer", "sparsify"]

# The stand-ins of sparse arguments while ``sparsify`` traces its function, per thread (nested
# sparsify calls push and pop their own).
_standins = threading.local()


class _SparseTracerMeta(type):
    def __instancecheck__(cls, obj):
        return any(obj is t for frame in getattr(_standins, "stack", ()) for t in frame)


class SparseTracer(metaclass=_SparseTracerMeta):
    """The arguments of a function ``sparsify(f, use_tracer=True)`` traces (JAX's
    ``SparseTracer``: there every argument, sparse or dense, is one; with the default
    ``use_tracer=False`` -- JAX's jaxpr interpreter, and funcgrad's -- none is). funcgrad traces
    with dense stand-ins (NOTE: [sparsify]), so such an ``x`` is the staging tracer of its
    stand-in: ``shape``, ``dtype``, ``ndim`` and ``aval`` as the argument's.

    >>> import funcgrad.numpy as jnp
    >>> x = BCOO.fromdense(jnp.array([0.0, 2.0]))
    >>> sparsify(lambda a: isinstance(a, SparseTracer), use_tracer=True)(x)
    True
    >>> sparsify(lambda a: isinstance(a, SparseTracer))(x)
    False
    """


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _same_data(x, data):
    return BCOO(
        (data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted, unique_indices=x.unique_indices
    )


def _densify(values):
    return [v.todense() if isinstance(v, BCOO) else v for v in values]


def _elementwise(x, eqn, linear=False):
    # A zero-preserving primitive that commutes with addition (``zero_preserving_linear``, JAX's
    # ``_zero_preserving_linear_unary_primitives``) is applied to each stored value as it is; any
    # other (sin, sqrt, integer_pow, ...) sums duplicated indices first: sin(a) + sin(b) is not
    # sin(a + b).
    if not x.unique_indices and not linear:
        x = bcoo_sum_duplicates(x, nse=x.nse)  # (nse kept, as JAX's: the same shapes under jit)
    return _same_data(x, eqn.primitive.bind(x.data, **eqn.params))


def _product(a, b, eqn):
    if isinstance(a, BCOO):
        return bcoo_multiply_dense(a, b.todense() if isinstance(b, BCOO) else b)
    return bcoo_multiply_dense(b, a)


def _sum(a, b, eqn, negate=False):
    if not (isinstance(a, BCOO) and isinstance(b, BCOO)):
        if negate:
            raise NotImplementedError("Subtraction between sparse and dense array.")
        dense = b if isinstance(a, BCOO) else a
        out_shape = tuple(eqn.outvars[0].aval.shape)
        if tuple(np.shape(dense)) != out_shape:  # (JAX's rule: no silent densification of the sparse one)
            raise NotImplementedError(
                "Addition between a sparse array X and a dense array Y is not implemented when the output "
                "shape is larger than Y.shape. This is to prevent silent densification of a large sparse "
                "array. If this is your intent, you can explicitly cast the sparse array to a dense matrix."
            )
        return eqn.primitive.bind(*_densify([a, b]), **eqn.params)  # sparse + dense is dense
    if a.n_batch != b.n_batch or a.n_dense != b.n_dense:
        raise NotImplementedError("Addition between sparse matrices with different batch/dense dimensions.")
    if a.shape != b.shape:
        return None
    return add_bcoo(a, -b if negate else b)


def _densifying(*values, eqn):
    raise NotImplementedError(
        f"sparse rule for {eqn.primitive} is not implemented because it would result in dense output. "
        "If this is your intent, use sparse.todense() to convert your arguments to dense matrices."
    )


def _power(x, eqn):
    y = eqn.params["y"]
    if y <= 0:
        raise NotImplementedError(
            f"sparse rule for {eqn.primitive} with non-positive exponent {y} is not implemented because it "
            "would result in dense output. If this is your intent, use sparse.todense() to convert your "
            "argument to a dense array."
        )
    return _elementwise(x, eqn)


def _quotient(x, y, eqn):
    if isinstance(y, BCOO):
        raise NotImplementedError(
            "Division by a sparse array is not implemented because it would result in dense output. If "
            "this is your intent, use sparse.todense() to convert your arguments to a dense array."
        )
    # (JAX's: times 1 / y)
    return _same_data(x, x.data / y) if jnp.ndim(y) == 0 else bcoo_multiply_dense(x, 1.0 / y)


def _run(closed, leading=()):
    """``closed`` (a closed jaxpr) as a function of its remaining inputs, evaluated sparsely."""
    return lambda *args: _eval(closed.jaxpr, closed.consts, [*leading, *args])


def _cond(index, *operands, eqn):
    # Each branch sparsified over the operands; they must agree on which results are sparse (and
    # their nse), JAX's TypeError otherwise.
    branches = [_run(b) for b in eqn.params["branches"]]
    outs = [tree_flatten(eval_shape(b, *operands)) for b in branches]
    types = [(tree, [(s.shape, s.dtype) for s in leaves]) for leaves, tree in outs]
    for t in types[1:]:
        if t != types[0]:
            raise TypeError(
                "sparsified true_fun output must have same type structure as sparsified false_fun output: "
                f"{types[0][0]} and {t[0]}"
            )
    return switch(index, branches, *operands)


def _while(*values, eqn):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = values[:nc], values[nc : nc + nb], values[nc + nb :]
    cond, body = _run(p["cond_jaxpr"], cond_consts), _run(p["body_jaxpr"], body_consts)
    return while_loop(lambda carry: cond(*carry)[0], lambda carry: body(*carry), list(init))


def _scan(*values, eqn):
    p = eqn.params
    n_consts, n_carry = p["num_consts"], p["num_carry"]
    consts, carry, xs = values[:n_consts], values[n_consts : n_consts + n_carry], values[n_consts + n_carry :]
    if any(isinstance(x, BCOO) for x in xs):
        raise NotImplementedError("sparse rule for scan with x values.")  # (JAX's: rows of a BCOO)
    body = _run(p["jaxpr"], consts)

    def step(c, x):
        outs = body(*c, *x)
        return outs[:n_carry], outs[n_carry:]

    c, ys = scan(step, list(carry), list(xs), length=p["length"], reverse=p["reverse"], unroll=p["unroll"])
    return [*c, *ys]


_GATHER_PARAMS = (
    "dimension_numbers",
    "slice_sizes",
    "unique_indices",
    "indices_are_sorted",
    "mode",
    "fill_value",
)
_CONV_PARAMS = (
    "window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers", "feature_group_count",
    "batch_group_count", "precision", "preferred_element_type",
)  # fmt: skip


def _picked(eqn, names) -> dict:
    return {k: eqn.params[k] for k in names if k in eqn.params}


def _call(*values, eqn):
    inner = eqn.params[eqn.primitive.traits.call_jaxpr_param]
    jaxpr, consts = (inner.jaxpr, inner.consts) if isinstance(inner, ir.ClosedJaxpr) else (inner, [])
    return _eval(jaxpr, consts, list(values))


def _stack_sparse(xs, axis):
    """JAX's stack rule: each sparse operand given the new unit axis, then one concatenation."""
    if not all(isinstance(x, BCOO) for x in xs):
        return None
    shape = (*xs[0].shape[:axis], 1, *xs[0].shape[axis:])
    dims = tuple(d if d < axis else d + 1 for d in range(len(xs[0].shape)))
    return bcoo_concatenate(
        [bcoo_broadcast_in_dim(x, shape=shape, broadcast_dimensions=dims) for x in xs], dimension=axis
    )


def _dense_if_scalar(x):
    # (JAX's rule: a sum over every dimension is a dense scalar, not a 0-d BCOO)
    return x.todense() if x.shape == () else x


# One rule per kind of ``PrimitiveTraits.sparse`` (``SPARSE_KINDS``, stated on each primitive in its
# family file): ``rule(*values, eqn) -> BCOO``, or None to densify. A kind's preconditions on the
# operands (a sparse first operand, a scalar divisor, no dense dimensions) are checked here.
_RULES = {
    "zero_preserving": lambda x, eqn: _elementwise(x, eqn) if isinstance(x, BCOO) else None,
    "zero_preserving_linear": lambda x, eqn: (
        _elementwise(x, eqn, linear=True) if isinstance(x, BCOO) else None
    ),
    "positive_power": _power,
    "product": _product,
    "quotient": _quotient,
    "sum": _sum,
    "difference": lambda a, b, eqn: _sum(a, b, eqn, negate=True),
    "reshape": lambda x, eqn: (
        bcoo_reshape(x, new_sizes=eqn.params["new_sizes"])
        if x.n_dense == 0 and eqn.params.get("dimensions") is None
        else None
    ),
    "transpose": lambda x, eqn: bcoo_transpose(x, permutation=eqn.params["permutation"]),
    "slice": lambda x, eqn: (
        bcoo_slice(
            x,
            start_indices=eqn.params["start_indices"],
            limit_indices=eqn.params["limit_indices"],
            strides=eqn.params.get("strides"),
        )
        if isinstance(x, BCOO)
        else None
    ),
    "dynamic_slice": lambda x, *starts, eqn: (
        bcoo_dynamic_slice(x, starts, eqn.params["slice_sizes"])
        if isinstance(x, BCOO) and not any(isinstance(i, BCOO) for i in starts)
        else None
    ),
    "rev": lambda x, eqn: bcoo_rev(x, eqn.params["dimensions"]),
    "squeeze": lambda x, eqn: bcoo_squeeze(x, dimensions=eqn.params["dimensions"]),
    "broadcast_in_dim": lambda x, eqn: bcoo_broadcast_in_dim(
        x, shape=eqn.params["shape"], broadcast_dimensions=eqn.params["broadcast_dimensions"]
    ),
    "concatenate": lambda *xs, eqn: (
        bcoo_concatenate(xs, dimension=eqn.params["dimension"])
        if all(isinstance(x, BCOO) for x in xs)
        else None
    ),
    "stack": lambda *xs, eqn: _stack_sparse(xs, eqn.params["axis"]),
    "reduce_sum": lambda x, eqn: _dense_if_scalar(bcoo_reduce_sum(x, axes=eqn.params["axes"])),
    "dot_general": lambda a, b, eqn: bcoo_dot_general(
        a,
        b,
        dimension_numbers=eqn.params["dimension_numbers"],
        preferred_element_type=eqn.params.get("preferred_element_type"),
    ),
    "call": _call,
    "cond": _cond,
    "while": _while,
    "scan": _scan,
    "gather": lambda x, idx, eqn: (
        bcoo_gather(x, idx, **_picked(eqn, _GATHER_PARAMS)) if not isinstance(idx, BCOO) else None
    ),
    "conv_general_dilated": lambda lhs, rhs, eqn: bcoo_conv_general_dilated(
        lhs, rhs, **_picked(eqn, _CONV_PARAMS)
    ),
    "densifying": _densifying,
}
assert _RULES.keys() == SPARSE_KINDS.keys(), "one sparsify rule per kind of PrimitiveTraits.sparse"


def _sparse_rule(eqn, values):
    """The result of ``eqn`` on ``values`` (some of them BCOO): its kind's rule, or JAX's
    NotImplementedError where there is none (or none for these operands)."""
    if eqn.primitive is todense_p:  # (the sparse package's own primitive, outside the catalog)
        return values[0].todense()
    kind = eqn.primitive.traits.sparse
    out = None if kind is None else _RULES[kind](*values, eqn=eqn)
    if out is None:
        raise NotImplementedError(f"sparse rule for {eqn.primitive} is not implemented.")
    return out


def _eval(jaxpr, consts, args):
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(a):
        return a.val if type(a) is ir.Literal else env[a]

    for eqn in jaxpr.eqns:
        values = [read(a) for a in eqn.invars]
        if any(isinstance(v, BCOO) for v in values):
            out = _sparse_rule(eqn, values)
        else:
            out = eqn.primitive.bind(*values, **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, out))
        else:
            env[eqn.outvars[0]] = out
    return [read(v) for v in jaxpr.outvars]


def _as_bcsr(x, layouts):
    """A BCOO result as BCSR: over the indices of a BCSR argument (an elementwise result) with that
    argument's indices and row pointers, in its order (as JAX's rules on BCSR); otherwise sorted
    into rows (``BCSR.from_bcoo``)."""
    given = layouts.get(id(x.indices))
    if given is None:
        return BCSR.from_bcoo(x)
    return BCSR(
        (x.data, given.indices, given.indptr),
        shape=x.shape,
        indices_sorted=given.indices_sorted,
        unique_indices=given.unique_indices,
    )


def sparsify(f, use_tracer: bool = False):
    """``f`` made to accept BCOO arguments (NOTE: [sparsify]): sparse in, sparse out where the
    rules keep the pattern, dense otherwise. ``use_tracer`` (JAX's choice between its tracer and
    its interpreter) computes the same; with it the arguments are ``SparseTracer`` instances
    while ``f`` runs, as in JAX.

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
        # BCSR arguments go through as their BCOO; with only BCSR sparse arguments, sparse results
        # with two sparse dimensions come back as BCSR (JAX's sparsify keeps a BCSR a BCSR)
        csr = any(isinstance(x, BCSR) for x in leaves) and not any(isinstance(x, BCOO) for x in leaves)
        layouts = {}  # (a result over an argument's very indices keeps its BCSR layout as it is)
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, BCSR):
                leaves[i] = leaf.to_bcoo()
                layouts[id(leaves[i].indices)] = leaf
            elif _is_sparse(leaf) and not isinstance(leaf, BCOO):
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
            frame = list(flat) if use_tracer else []
            stack = _standins.__dict__.setdefault("stack", [])
            stack.append(frame)
            try:
                out = f(*tree_unflatten(tree, list(flat)), **kwargs)
            finally:
                stack.pop()
            out_leaves, treedef = tree_flatten(out)
            out_tree.append(treedef)
            return out_leaves

        closed = make_jaxpr(flat_f)(*specs)
        outs = _eval(closed.jaxpr, closed.consts, leaves)
        if csr:
            outs = [_as_bcsr(o, layouts) if isinstance(o, BCOO) and o.n_sparse == 2 else o for o in outs]
        return tree_unflatten(out_tree[0], outs)

    return sparsified


def _bcoo_pow(self, other):
    if isinstance(other, int | float):  # (a static exponent: x ** 2 is integer_pow, sparse)
        return sparsify(lambda x: x**other)(self)
    return sparsify(lambda x, y: x**y)(self, other)


# BCOO ** y is power through sparsify, as JAX's (its transform.py installs BCOO's operators so):
# _bcoo sits below this module, so the method is set here, when the package imports it.
BCOO.__pow__ = _bcoo_pow
