"""Sparse-aware differentiation: ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` and
``jacobian`` with respect to sparse arguments (as ``jax.experimental.sparse``).

Layer: surface. Imports funcgrad.api, funcgrad.tree_util and the sparse formats.

# NOTE: [sparse gradients]
# A sparse argument is differentiated in the subspace of its sparsity pattern: only its ``data``
# is an input of the differentiated function (the indices stay fixed, closed over), and the
# derivative comes back as a sparse array with the argument's indices and the derivative of
# ``data`` as its values -- jax's semantics. A Jacobian has the output's dimensions in front of
# ``data``; for a BCOO they become leading batch dimensions (the indices are broadcast), so
# ``jacfwd(f)(x).todense()`` is the dense Jacobian restricted to the pattern. COO/CSR/CSC cannot
# hold extra dimensions: their Jacobian is refused with that reason (grad works).
"""

from __future__ import annotations

import functools

import funcgrad.numpy as jnp
from funcgrad import api
from funcgrad.experimental.sparse._base import JAXSparse
from funcgrad.experimental.sparse._bcoo import BCOO
from funcgrad.tree_util import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["grad", "jacfwd", "jacobian", "jacrev", "value_and_grad"]


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _with_data(template, data):
    """``template`` (a sparse array) with ``data`` in place of its values; leading extra dimensions
    of ``data`` become batch dimensions (BCOO only)."""
    leaves, tree = tree_flatten(template)
    extra = data.ndim - leaves[0].ndim
    if extra == 0:
        return tree_unflatten(tree, [data, *leaves[1:]])
    if not isinstance(template, BCOO):
        raise TypeError(
            f"sparse Jacobian: a {type(template).__name__} argument cannot hold the output's "
            f"{extra} extra dimension(s); convert it to BCOO (BCOO.fromdense(x.todense())) or use grad"
        )
    lead = tuple(data.shape[:extra])
    indices = jnp.broadcast_to(template.indices, lead + tuple(template.indices.shape))
    return BCOO((data, indices), shape=lead + template.shape)


def _sparse_transform(transform, name, fun, argnums, has_aux, kwargs):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args, **call_kwargs):
        for i in nums:
            if not -len(args) <= i < len(args):
                raise ValueError(
                    f"sparse.{name}: argnums {argnums} is out of range for {len(args)} arguments"
                )
        norm = tuple(i % len(args) for i in nums)
        parts = {}  # argument -> (its leaves with sparse arrays kept whole, their structure)
        dyn = list(args)
        for i in norm:
            leaves, tree = tree_flatten(args[i], is_leaf=_is_sparse)
            parts[i] = (leaves, tree)
            dyn[i] = tree_unflatten(tree, [x.data if _is_sparse(x) else x for x in leaves])

        def dense_fun(*a, **kw):
            a = list(a)
            for i, (leaves, tree) in parts.items():
                values = tree_leaves(a[i])
                a[i] = tree_unflatten(
                    tree, [_with_data(x, v) if _is_sparse(x) else v for x, v in zip(leaves, values)]
                )
            return fun(*a, **kw)

        result = transform(dense_fun, argnums=norm[0] if single else norm, has_aux=has_aux, **kwargs)(
            *dyn, **call_kwargs
        )
        # The derivative part is the output structure with the arguments' structure inside: walk
        # its leaves in chunks of the arguments' leaves and rebuild the sparse ones.
        templates = [x for i in norm for x in parts[i][0]]

        def rebuild(derivative):
            flat, tree = tree_flatten(derivative)
            out = [
                _with_data(templates[k % len(templates)], g)
                if _is_sparse(templates[k % len(templates)])
                else g
                for k, g in enumerate(flat)
            ]
            return tree_unflatten(tree, out)

        return rebuild, result

    return wrapped


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
    """``funcgrad.value_and_grad`` that differentiates sparse arguments within their sparsity
    pattern (NOTE: [sparse gradients]).

    >>> import funcgrad.numpy as jnp
    >>> X = BCOO.fromdense(jnp.arange(4.0))
    >>> value, g = value_and_grad(lambda X, y: X @ y)(X, jnp.ones(4))
    >>> float(value), g
    (6.0, BCOO(float64[4], nse=3))
    """
    inner = _sparse_transform(api.value_and_grad, "value_and_grad", fun, argnums, has_aux, kwargs)

    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kw):
        rebuild, (value, g) = inner(*args, **kw)
        return value, rebuild(g)

    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False, **kwargs):
    """``funcgrad.grad`` that differentiates sparse arguments within their sparsity pattern: the
    gradient of a BCOO argument is a BCOO with its indices (NOTE: [sparse gradients]).

    >>> import funcgrad.numpy as jnp
    >>> X = BCOO.fromdense(jnp.array([1.0, 0.0, 2.0]))
    >>> g = grad(lambda X: (X.data ** 2).sum())(X)
    >>> g.data.tolist(), g.indices.ravel().tolist()
    ([2.0, 4.0], [0, 2])
    """
    return _derivative(api.grad, "grad", fun, argnums, has_aux, kwargs)


def _derivative(transform, name, fun, argnums, has_aux, kwargs):
    inner = _sparse_transform(transform, name, fun, argnums, has_aux, kwargs)

    @functools.wraps(fun)
    def derivative_fun(*args, **kw):
        rebuild, out = inner(*args, **kw)
        if has_aux:
            return rebuild(out[0]), out[1]
        return rebuild(out)

    return derivative_fun


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
    """``funcgrad.jacfwd`` with sparse arguments differentiated within their pattern; a BCOO
    argument's Jacobian is a BCOO with the output's dimensions as leading batch dimensions.

    >>> import funcgrad.numpy as jnp
    >>> X = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> J = jacfwd(lambda X: X @ jnp.array([3.0, 4.0]))(X)
    >>> J, J.todense()[1].tolist()
    (BCOO(float64[2, 2, 2], nse=2, n_batch=1), [[0.0, 0.0], [0.0, 4.0]])
    """
    return _derivative(api.jacfwd, "jacfwd", fun, argnums, has_aux, kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
    """``funcgrad.jacrev`` with sparse arguments differentiated within their pattern (as
    ``jacfwd``).

    >>> import funcgrad.numpy as jnp
    >>> X = BCOO.fromdense(jnp.array([1.0, 0.0, 2.0]))
    >>> jacrev(lambda X: X.data * 3.0)(X).todense().tolist()
    [[3.0, 0.0, 0.0], [0.0, 0.0, 3.0]]
    """
    return _derivative(api.jacrev, "jacrev", fun, argnums, has_aux, kwargs)


jacobian = jacrev
