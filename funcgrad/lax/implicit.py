"""Implicit differentiation of solvers: ``custom_linear_solve`` and ``custom_root`` (``jax.lax``).

Layer: surface. Imports the kernel (core, ad, tree_util), the primitive catalog
(``primitives.implicit``) and ``funcgrad._control_flow_trace`` (the tracing of control flow's functions).

Each function traces the user's functions to jaxprs whose captured constants are explicit
operands (NOTE: [control-flow jaxprs have no tracer constants]) and binds one primitive
(NOTE: [implicit-differentiation rules]): the solver runs as written -- under ``jit`` it is inlined
--, while derivatives come from the equation it solves, so the solver itself need not be
differentiable (a ``while_loop``, an iterative method).
"""

from __future__ import annotations

from collections.abc import Callable

from funcgrad._control_flow_trace import trace as _trace
from funcgrad.kernel import ad, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.primitives.implicit import custom_linear_solve_p, custom_root_p

__all__ = ["custom_linear_solve", "custom_root"]


def _leaves(tree, what: str):
    flat, treedef = tu.tree_flatten(tree)
    for leaf in flat:
        if not core.is_array_like(leaf):
            raise TypeError(f"{what} must be a pytree of arrays, got a leaf of type {type(leaf).__name__}")
    return flat, treedef


def _check_same(func: str, expected: str, out_tree, out_avals, tree, avals, aux: bool):
    """``func`` (a user function: ``matvec``, ``solve``, ...) returned values shaped like
    ``expected`` (``b``, ``initial_guess``; plus aux when ``aux``), in JAX's words and types."""
    if aux:
        pair = tu.tree_unflatten(out_tree, range(out_tree.num_leaves))
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(
                f"{func}() produced a pytree with structure {out_tree}, but a pytree tuple with "
                "auxiliary output was expected because has_aux was set to True."
            )
        out_tree = tu.tree_structure(pair[0])
    if out_tree != tree:
        raise TypeError(f"{func}() output pytree structure must match {expected}, got {out_tree} and {tree}.")
    out_shapes, shapes = [o.shape for o in out_avals[: len(avals)]], [a.shape for a in avals]
    if out_shapes != shapes:
        raise ValueError(f"{func}() output shapes must match {expected}, got {out_shapes} and {shapes}")
    for i, (o, a) in enumerate(zip(out_avals, avals)):
        if o.dtype != a.dtype:
            raise TypeError(
                f"{func}(): output leaf {i} is {o.str_short()} but {expected}'s is {a.str_short()}; "
                "it must return values of the same shapes and dtypes"
            )


def _as_function(closed, consts, tree):
    """A Python function of a pytree shaped like ``tree`` evaluating ``closed`` on ``consts``."""

    def fn(x):
        flat = tu.tree_leaves(x)
        return tu.tree_unflatten(tree, core.eval_jaxpr(closed.jaxpr, closed.consts, *consts, *flat))

    return fn


@_api_boundary  # NOTE: [traceback boundaries]
def custom_linear_solve(
    matvec: Callable,
    b,
    solve: Callable,
    transpose_solve: Callable | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
):
    """``solve(matvec, b)`` -- a solution of ``matvec(x) = b`` -- differentiated implicitly: the
    derivatives are those of the linear equation at the solution (``dx = solve(db - dA x)``),
    never of the solver's steps. ``transpose_solve(vecmat, b)`` (with ``vecmat`` the transpose of
    ``matvec``, derived automatically) is needed for reverse mode unless ``symmetric=True``.
    ``has_aux``: the solvers return ``(x, aux)``; aux gets no derivative.

    >>> import numpy as np, funcgrad, funcgrad.numpy as fnp
    >>> a = fnp.array([[2.0, 1.0], [1.0, 3.0]])
    >>> def f(a, b):  # the solver is opaque; the gradient comes from a @ x = b
    ...     return custom_linear_solve(lambda x: a @ x, b, lambda mv, r: fnp.linalg.solve(a, r),
    ...                                symmetric=True)
    >>> x = f(a, fnp.array([1.0, 2.0]))
    >>> np.round(np.asarray(x), 6).tolist()
    [0.2, 0.6]
    >>> g = funcgrad.grad(lambda b: f(a, b).sum())(fnp.array([1.0, 2.0]))
    >>> np.round(np.asarray(g), 6).tolist()  # (a^-T) @ ones
    [0.4, 0.2]
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_flat, tree = _leaves(b, "custom_linear_solve: b")
    # (b's weak types kept, as JAX traces: a solver of a Python-scalar b computes weakly typed)
    avals = [core.get_aval(x) for x in b_flat]
    in_tree = tu.tree_structure((b,))
    matvec_j, matvec_c, out_tree = _trace(matvec, in_tree, avals, "custom_linear_solve matvec")
    _check_same("matvec", "b", out_tree, matvec_j.out_avals, tree, avals, False)
    solve_j, solve_c, out_tree = _trace(
        lambda x: solve(matvec, x), in_tree, avals, "custom_linear_solve solve"
    )
    _check_same("solve", "b", out_tree, solve_j.out_avals, tree, avals, has_aux)
    vecmat_j = tr_j = None
    vecmat_c = tr_c = []
    if transpose_solve is not None:
        if symmetric:
            vecmat_j, vecmat_c = matvec_j, matvec_c
        else:
            # vecmat is matvec transposed in x (its constants stay operands).
            linear = [False] * len(matvec_c) + [True] * len(avals)
            vecmat_j, vecmat_c = ad.transpose_jaxpr(matvec_j, linear), list(matvec_c)
        vecmat = _as_function(vecmat_j, vecmat_c, tree)
        tr_j, tr_c, out_tree = _trace(
            lambda x: transpose_solve(vecmat, x), in_tree, avals, "custom_linear_solve transpose_solve"
        )
        _check_same("transpose_solve", "b", out_tree, tr_j.out_avals, tree, avals, has_aux)
    lengths = (len(matvec_c), len(vecmat_c), len(solve_c), len(tr_c))
    outs = custom_linear_solve_p.bind(
        *matvec_c, *vecmat_c, *solve_c, *tr_c, *b_flat, const_lengths=lengths,
        jaxprs=(matvec_j, vecmat_j, solve_j, tr_j),
    )  # fmt: skip
    return tu.tree_unflatten(out_tree, outs)


@_api_boundary  # NOTE: [traceback boundaries]
def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """``solve(f, initial_guess)`` -- a root of ``f`` -- with derivatives with respect to the
    values ``f`` closes over from the implicit function theorem, never through the solver:
    ``dx = -tangent_solve(g, df)`` where ``g`` is ``f`` linearised at the root and
    ``tangent_solve(g, y)`` solves ``g(x) = y`` (``lambda g, y: y / g(1.0)`` for scalars).

    >>> import funcgrad
    >>> def sqrt(a):  # Newton's iterations, differentiated implicitly
    ...     def newton(f, x):
    ...         for _ in range(20):
    ...             x = x - f(x) / (2 * x)
    ...         return x
    ...     return custom_root(lambda x: x * x - a, 1.0, newton, lambda g, y: y / g(1.0))
    >>> round(float(sqrt(2.0)), 6), round(float(funcgrad.grad(sqrt)(2.0)), 6)
    (1.414214, 0.353553)
    """
    guess_flat, tree = _leaves(initial_guess, "custom_root: initial_guess")
    avals = [core.get_aval(x).strip_weak_type() for x in guess_flat]
    in_tree = tu.tree_structure((initial_guess,))
    f_j, f_c, out_tree = _trace(f, in_tree, avals, "custom_root f")
    _check_same("f", "initial_guess", out_tree, f_j.out_avals, tree, avals, False)
    solve_j, solve_c, sol_tree = _trace(lambda x: solve(f, x), in_tree, avals, "custom_root solve")
    _check_same("solve", "initial_guess", sol_tree, solve_j.out_avals, tree, avals, has_aux)
    n = len(avals)

    def linearize_and_solve(*args):
        x, rhs = tu.tree_unflatten(tree, args[:n]), tu.tree_unflatten(tree, args[n:])
        _, lin = ad.linearize_flat(
            lambda *xs: tu.tree_leaves(f(tu.tree_unflatten(tree, xs))), tu.tree_leaves(x)
        )

        def g(t):
            outs = lin(*tu.tree_leaves(t))
            return tu.tree_unflatten(tree, [ad.instantiate(o) for o in outs])

        return tangent_solve(g, rhs)

    ls_j, ls_c, ls_tree = _trace(
        lambda pair: linearize_and_solve(*tu.tree_leaves(pair[0]), *tu.tree_leaves(pair[1])),
        tu.tree_structure(((initial_guess, initial_guess),)),
        [*avals, *avals],
        "custom_root tangent_solve",
    )
    _check_same("tangent_solve", "x", ls_tree, ls_j.out_avals, tree, avals, False)
    outs = custom_root_p.bind(
        *f_c, *solve_c, *ls_c, *guess_flat, const_lengths=(len(f_c), len(solve_c), len(ls_c)),
        jaxprs=(f_j, solve_j, ls_j),
    )  # fmt: skip
    return tu.tree_unflatten(sol_tree, outs)
