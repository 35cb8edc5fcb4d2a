"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules.

Layer: kernel (it declares three primitives and uses only the kernel's transformations).

- ``custom_jvp_call`` carries the primal function as a jaxpr and the user's JVP as a Python
  callable. Forward mode calls the rule; every other transformation works on the jaxpr (batching
  also batches the rule, so ``vmap(grad(f))`` and ``grad(vmap(f))`` both use it).
- ``custom_vjp_call`` carries the primal jaxpr and the user's ``fwd``/``bwd``. Its JVP runs ``fwd``
  now and emits ``custom_lin``, a linear primitive over the tangents whose transpose calls ``bwd``
  with the residuals (PyTorch's ``ctx.save_for_backward``). ``grad(grad(f))`` therefore
  differentiates ``bwd`` itself, as JAX does. Forward mode (``jvp``) of a custom_vjp function
  raises a clear error, since only a VJP is known.

Values a custom function closes over that are being transformed (tracers) are passed to the
primitive as leading arguments ("consts"), so no transformation misses them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

from funcgrad.kernel import ad, batching, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ad import Zero
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr


def _resolve_args(fun, args, kwargs):
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{getattr(fun, '__name__', 'custom function')}: {e}") from e
    bound.apply_defaults()
    return bound.args


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    dyn = tuple(a for i, a in enumerate(args) if i not in nondiff)
    return nondiff, dyn


def _merge(nondiff: dict, dyn: Sequence, n: int):
    it = iter(dyn)
    return [nondiff[i] if i in nondiff else next(it) for i in range(n)]


def _trace_primal(fun, nondiff, dyn, n_args, name):
    flat, in_tree = tu.tree_flatten(dyn)
    out_tree_box = []

    def flat_fun(*leaves):
        out = fun(*_merge(nondiff, tu.tree_unflatten(in_tree, leaves), n_args))
        out_leaves, out_tree = tu.tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat], description=name)
    closed, consts = close_over_tracers(closed)
    return flat, in_tree, closed, consts, out_tree_box[0]


# ----------------------------------------------------------------------------------------------
# custom_jvp


class custom_jvp:
    """A function with a custom JVP rule, usable as a decorator.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @custom_jvp
    ... def f(x):
    ...     return fnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> float(funcgrad.grad(f)(0.0))
    2.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *tangent_rules: Callable | None) -> None:
        """One rule per argument: ``rule(t, ans, *primals)``; ``None`` for no dependence."""

        def jvp(primals, tangents):
            ans = self(*primals)
            total = None
            for rule, t in zip(tangent_rules, tangents):
                if rule is None:
                    continue
                term = rule(t, ans, *primals)
                total = term if total is None else tu.tree_map(lambda a, b: a + b, total, term)
            if total is None:
                total = tu.tree_map(lambda a: a * 0, ans)
            return ans, total

        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_jvp")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_args(self.fun, args, kwargs)
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        flat, in_tree, closed, consts, out_tree = _trace_primal(self.fun, nondiff, dyn, len(args), name)
        user_jvp = self.jvp
        out_avals = closed.out_avals

        def jvp_flat(primals, tangents):
            p = tu.tree_unflatten(in_tree, primals)
            t = tu.tree_unflatten(in_tree, tangents)
            nondiff_vals = [nondiff[i] for i in sorted(nondiff)]
            out = user_jvp(*nondiff_vals, tuple(p), tuple(t))
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError(f"custom_jvp rule of {name} must return a pair (primal_out, tangent_out)")
            p_out, t_out = out
            p_leaves, p_tree = tu.tree_flatten(p_out)
            t_leaves, t_tree = tu.tree_flatten(t_out)
            if p_tree != out_tree or t_tree != out_tree:
                raise TypeError(
                    f"custom_jvp rule of {name} must return primal and tangent outputs with the "
                    f"function's output structure {out_tree}; got {p_tree} and {t_tree}"
                )
            for i, (tl, aval) in enumerate(zip(t_leaves, out_avals)):
                ta = core.get_aval(tl)
                if ta.shape != aval.shape:
                    raise TypeError(
                        f"custom_jvp rule of {name}: tangent output {i} has shape {ta.shape}, "
                        f"expected {aval.shape} (the primal output's shape)"
                    )
            return p_leaves, t_leaves

        jvp_flat.__name__ = getattr(user_jvp, "__name__", "jvp")
        outs = custom_jvp_call_p.bind(
            *consts, *flat, call_jaxpr=closed, jvp=jvp_flat, num_consts=len(consts), name=name
        )
        return tu.tree_unflatten(out_tree, outs)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
    const_tangents = tangents[:num_consts]
    if any(type(t) is not Zero for t in const_tangents):
        # The function closes over a value being differentiated: the user's rule does not know
        # about it, so differentiate the primal function itself (correct, without the rule).
        closed_jvp, out_nz = ad.jvp_jaxpr(call_jaxpr, [type(t) is not Zero for t in tangents], False)
        nz = [t for t in tangents if type(t) is not Zero]
        outs = core.eval_jaxpr(closed_jvp.jaxpr, closed_jvp.consts, *primals, *nz)
        n = len(call_jaxpr.out_avals)
        it = iter(outs[n:])
        return outs[:n], [next(it) if z else Zero.from_primal_value(p) for p, z in zip(outs[:n], out_nz)]
    p = primals[num_consts:]
    t = [ad.instantiate(x) for x in tangents[num_consts:]]
    return jvp(list(p), t)


def _custom_jvp_call_batch(axis_size, vals, dims, *, call_jaxpr, jvp, num_consts, name):
    batched, _ = batching.batch_jaxpr(call_jaxpr, axis_size, dims, instantiate=True)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)

    def batched_jvp(primals, tangents):
        # Tangents have their primals' shapes, so they share the primals' batch dims.
        k = len(primals)

        def lane(*xs):
            p_out, t_out = jvp(list(xs[:k]), list(xs[k:]))
            return [*p_out, *t_out]

        outs = batching.vmap_flat(
            lane, axis_size, [*arg_dims, *arg_dims], [0] * (2 * n_out), [*primals, *tangents]
        )
        return outs[:n_out], outs[n_out:]

    batched_jvp.__name__ = f"vmap({getattr(jvp, '__name__', 'jvp')})"
    outs = custom_jvp_call_p.bind(
        *vals, call_jaxpr=batched, jvp=batched_jvp, num_consts=num_consts, name=name
    )
    return outs, [0] * len(outs)


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.call_jaxpr_param = "call_jaxpr"
custom_jvp_call_p.jaxpr_params = ("call_jaxpr",)
custom_jvp_call_p.def_impl(
    lambda *args, call_jaxpr, **_: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
)
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)
custom_jvp_call_p.def_batch(_custom_jvp_call_batch)


# ----------------------------------------------------------------------------------------------
# custom_vjp


class custom_vjp:
    """A function with a custom VJP (``fwd`` saves residuals, ``bwd`` uses them).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @custom_vjp
    ... def square(x):
    ...     return x * x
    >>> def square_fwd(x):
    ...     return x * x, x          # residual: x (ctx.save_for_backward)
    >>> def square_bwd(x, g):
    ...     return (2.0 * x * g,)
    >>> square.defvjp(square_fwd, square_bwd)
    >>> float(funcgrad.grad(square)(3.0))
    6.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple``
        with one cotangent per differentiable argument (``None`` for zero)."""
        self.fwd = fwd
        self.bwd = bwd

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vjp")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_args(self.fun, args, kwargs)
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        flat, in_tree, closed, consts, out_tree = _trace_primal(self.fun, nondiff, dyn, len(args), name)
        user_fwd, user_bwd, n_args = self.fwd, self.bwd, len(args)
        in_avals = [core.get_aval(x) for x in flat]
        nondiff_vals = [nondiff[i] for i in sorted(nondiff)]
        res_tree_box: list = []

        def fwd_flat(*primals):
            out = user_fwd(*_merge(nondiff, tu.tree_unflatten(in_tree, primals), n_args))
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError(f"custom_vjp fwd of {name} must return a pair (output, residuals)")
            y, res = out
            y_leaves, y_tree = tu.tree_flatten(y)
            if y_tree != out_tree:
                raise TypeError(
                    f"custom_vjp fwd of {name} must return an output with the function's structure "
                    f"{out_tree}, got {y_tree}"
                )
            res_leaves, res_tree = tu.tree_flatten(res)
            res_tree_box.append(res_tree)
            return [*y_leaves, *res_leaves]

        def bwd_flat(res_leaves, ct_leaves):
            res = tu.tree_unflatten(res_tree_box[-1], res_leaves)
            ct = tu.tree_unflatten(out_tree, ct_leaves)
            cts = user_bwd(*nondiff_vals, res, ct)
            if not isinstance(cts, tuple | list):
                raise TypeError(
                    f"custom_vjp bwd of {name} must return a tuple with one cotangent per "
                    f"differentiable argument ({len(dyn)}), got {type(cts).__name__}"
                )
            if len(cts) != len(dyn):
                raise TypeError(
                    f"custom_vjp bwd of {name} returned {len(cts)} cotangents, but the function has "
                    f"{len(dyn)} differentiable argument{'s' if len(dyn) != 1 else ''}"
                )
            leaves = []
            for i, (c, d) in enumerate(zip(cts, dyn)):
                d_leaves, d_tree = tu.tree_flatten(d)
                if c is None:
                    leaves.extend([None] * len(d_leaves))
                    continue
                c_leaves, c_tree = tu.tree_flatten(c, lambda x: x is None)
                if c_tree != d_tree:
                    raise TypeError(
                        f"custom_vjp bwd of {name}: cotangent {i} has structure {c_tree} but "
                        f"argument {i} has structure {d_tree}"
                    )
                leaves.extend(c_leaves)
            out = []
            for j, (c, aval) in enumerate(zip(leaves, in_avals)):
                if c is None:
                    out.append(Zero(ad.tangent_aval(aval)))
                    continue
                ca = core.get_aval(c)
                if ca.shape != aval.shape:
                    raise ValueError(
                        f"custom_vjp bwd of {name} returned a cotangent of shape {ca.shape} for "
                        f"an input of shape {aval.shape} (input leaf {j})"
                    )
                out.append(c)
            return out

        fwd_flat.__name__ = getattr(user_fwd, "__name__", "fwd")
        bwd_flat.__name__ = getattr(user_bwd, "__name__", "bwd")
        outs = custom_vjp_call_p.bind(
            *consts, *flat, call_jaxpr=closed, fwd=fwd_flat, bwd=bwd_flat, num_consts=len(consts), name=name
        )
        return tu.tree_unflatten(out_tree, outs)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(
            f"custom_vjp function {name} closes over a value that is being differentiated; its "
            "bwd rule cannot return a cotangent for it. Pass that value as an explicit argument."
        )
    args = primals[num_consts:]
    n_out = len(call_jaxpr.out_avals)
    outs = fwd(*args)
    y, res = outs[:n_out], outs[n_out:]
    t_args = [ad.instantiate(t) for t in tangents[num_consts:]]
    out_avals = [ad.tangent_aval(a) for a in call_jaxpr.out_avals]
    t_out = custom_lin_p.bind(*res, *t_args, num_res=len(res), bwd=bwd, out_avals=tuple(out_avals), name=name)
    return list(y), t_out


def _custom_vjp_call_batch(axis_size, vals, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
    batched, _ = batching.batch_jaxpr(call_jaxpr, axis_size, dims, instantiate=True)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)
    n_res_box: list[int] = []

    def batched_fwd(*args):
        def lane(*xs):
            outs = fwd(*xs)
            n_res_box.append(len(outs) - n_out)
            return outs

        return batching.vmap_flat(
            lane, axis_size, arg_dims, lambda: [0] * (n_out + n_res_box[-1]), list(args)
        )

    def batched_bwd(res, cts):
        n_res = len(res)

        def lane(*xs):
            return [ad.instantiate(o) for o in bwd(list(xs[:n_res]), list(xs[n_res:]))]

        cts = [ad.instantiate(c) for c in cts]
        outs = batching.vmap_flat(
            lane, axis_size, [0] * (n_res + len(cts)), [0] * len(arg_dims), [*res, *cts]
        )
        # An input that was not batched gets its cotangent summed over the batch.
        return [
            hooks.reduce_sum(o, (0,)) if d is None else batching.move_batch_dim(o, axis_size, 0, d)
            for o, d in zip(outs, arg_dims)
        ]

    batched_fwd.__name__ = f"vmap({getattr(fwd, '__name__', 'fwd')})"
    batched_bwd.__name__ = f"vmap({getattr(bwd, '__name__', 'bwd')})"
    outs = custom_vjp_call_p.bind(
        *vals, call_jaxpr=batched, fwd=batched_fwd, bwd=batched_bwd, num_consts=num_consts, name=name
    )
    return outs, [0] * n_out


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.call_jaxpr_param = "call_jaxpr"
custom_vjp_call_p.jaxpr_params = ("call_jaxpr",)
custom_vjp_call_p.def_impl(
    lambda *args, call_jaxpr, **_: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
)
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)
custom_vjp_call_p.def_batch(_custom_vjp_call_batch)


# custom_lin: the tangent of a custom_vjp call, linear in the tangents; its transpose is bwd.


def _custom_lin_impl(*args, num_res, bwd, out_avals, name):
    raise TypeError(
        f"can't apply forward-mode autodiff (jvp) to a custom_vjp function ({name}): only its "
        "reverse-mode rule is defined. Use grad/vjp/jacrev, or define it with custom_jvp instead."
    )


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    res = args[:num_res]
    cts = [ad.instantiate(c) for c in cts]
    cts_in = bwd(list(res), cts)
    return [None] * num_res + list(cts_in)


custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.jaxpr_params = ("bwd",)  # carries the backward function of a custom_vjp
custom_lin_p.def_impl(_custom_lin_impl)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))
custom_lin_p.def_transpose(_custom_lin_transpose)
custom_lin_p.is_linear = True
custom_lin_p.def_jvp(lambda primals, tangents, **params: _custom_lin_impl(**params))


def _custom_lin_batch(axis_size, vals, dims, *, num_res, bwd, out_avals, name):
    raise NotImplementedError(
        f"vmap of the linearized custom_vjp function {name} is not supported; vmap the function "
        "before differentiating (vmap(grad(f)) works)."
    )


custom_lin_p.def_batch(_custom_lin_batch)
