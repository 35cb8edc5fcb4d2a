"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules.

Layer: kernel (it declares three primitives and uses only the kernel's transformations; which
trace does what with a call is ``custom_dispatch.py``'s job, what a rule receives in place of a
zero, how a call's arguments are resolved and the user's rules on flat leaves are
``custom_rule_args.py``'s, a custom_vjp called with Refs ``custom_vjp_state.py``'s).

A call is evaluated as the current trace decides, as in JAX (NOTE: [custom calls follow the
trace]): without a transformation the Python function simply runs on the values given; under
forward mode (``jvp``, and the ``linearize`` behind ``grad``/``vjp``) the user's rule runs on the
primals and tangents (concrete primals under eager differentiation); under staging, ``vmap`` and
``jet`` the primal function is traced to a jaxpr and one of these primitives is bound:

- ``custom_jvp_call`` carries the primal function as a jaxpr and the user's JVP as a Python
  callable. Forward mode calls the rule; every other transformation works on the jaxpr (batching
  also batches the rule, so ``vmap(grad(f))`` and ``grad(vmap(f))`` both use it).
- ``custom_vjp_call`` carries the primal jaxpr and the user's ``fwd``/``bwd``. Its JVP runs ``fwd``
  now and emits ``custom_lin``, a linear primitive over the tangents whose transpose calls ``bwd``
  with the residuals (PyTorch's ``ctx.save_for_backward``). ``grad(grad(f))`` therefore
  differentiates ``bwd`` itself, as JAX does. Forward mode (``jvp``) of a custom_vjp function
  raises a clear error, since only a VJP is known.

When traced, values a custom function closes over that are being transformed (tracers) are passed
to the primitive as leading arguments ("consts"), so no transformation misses them. A rule that is
run directly differentiates only the explicit arguments, as JAX's (a closed-over value being
differentiated is an ``UnexpectedTracerError`` there too; ``closure_convert`` makes it explicit).

# NOTE: [symbolic zeros in custom rules]
# ``defjvp(rule, symbolic_zeros=True)`` and ``defvjp(fwd, bwd, symbolic_zeros=True)`` follow JAX:
# the JVP rule gets a ``SymbolicZero`` (its aval, no data) for each tangent that is known to be zero
# (an input not being differentiated), ``fwd`` gets each differentiable leaf as
# ``CustomVJPPrimal(value, perturbed)``, and ``bwd`` gets a ``SymbolicZero`` for each output whose
# cotangent is known to be zero. Rules may return ``SymbolicZero`` (or ``None`` from ``bwd``) for
# zero outputs. Without the flag, rules only ever see arrays. The kernel's own ``Zero`` never
# reaches user code: it is converted at the rule boundary both ways. A zero stays symbolic through
# ``vmap`` of the rule and through eager ``grad``'s recording, and a rule whose tangents are all
# zero is not run (the primal function is), as in JAX: libraries use rules as assertions
# (equinox's ``nondifferentiable`` raises in its rule) and as perturbation probes.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence

from funcgrad.kernel import ad, batching, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ad import Zero
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.custom_dispatch import process_custom_call
from funcgrad.kernel.custom_lanes import run_lanes
from funcgrad.kernel.custom_rule_args import (
    CustomVJPPrimal,  # noqa: F401 - re-exported (funcgrad.custom_derivatives)
    SymbolicZero,  # noqa: F401 - re-exported (funcgrad.custom_derivatives, lax.special)
    _defaults_signature,
    _merge,
    _nondiff_positions,
    _resolve_args,
    _split_nondiff,
    custom_vjp_primal_tree_values,  # noqa: F401 - re-exported (funcgrad.custom_derivatives)
    jvp_rule,
    vjp_rules,
)
from funcgrad.kernel.custom_vjp_state import with_state_args
from funcgrad.kernel.held_state import is_state
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.jaxpr_keys import params_key
from funcgrad.kernel.partial_eval import PartialEvalTrace, close_over_tracers, trace_to_jaxpr
from funcgrad.kernel.taylor import jet_flat
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary


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


def _is_library_code(f) -> bool:
    code = getattr(f, "__code__", None)
    return code is not None and code.co_filename.startswith(core.library_dir())


class _CustomFunction:
    """What ``custom_jvp`` and ``custom_vjp`` share: the wrapped function (its name, docstring
    and, through ``__getattr__``, its other attributes), the positions of its non-differentiable
    arguments, the signature its calls are bound to, and method binding."""

    def __init__(
        self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()
    ):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self._signature = _defaults_signature(fun)
        self.symbolic_zeros = False

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __getattr__(self, name):
        """Other attributes come from the wrapped function, so a custom function wrapping another
        exposes its methods (``custom_vjp(custom_vmap(f)).def_vmap``, as in JAX)."""
        if name.startswith("__") or name == "fun":
            raise AttributeError(name)
        return getattr(self.fun, name)


# ----------------------------------------------------------------------------------------------
# A call of a custom function, as the traces see it (NOTE: [custom calls follow the trace])


class _CustomCall:
    """A custom_jvp/custom_vjp function applied to its (keyword-resolved) arguments: the protocol of
    ``custom_dispatch.CustomCall``."""

    __slots__ = ("custom", "args", "name", "nondiff", "dyn", "flat", "in_tree")

    def __init__(self, custom, args, name: str):
        self.custom, self.args, self.name = custom, args, name
        self.nondiff, self.dyn = _split_nondiff(args, custom.nondiff_argnums)
        self.flat, self.in_tree = tu.tree_flatten(self.dyn)

    def with_flat(self, flat):
        dyn = tu.tree_unflatten(self.in_tree, list(flat))
        return type(self)(self.custom, tuple(_merge(self.nondiff, dyn, len(self.args))), self.name)

    def run(self):
        return self.custom.fun(*self.args)

    def staged(self, home=None):
        return self.custom._bind_staged(self.args, self.name, home)

    def bind_linearized(self, out_tree, out_primals, lin, out_zeros, own):
        """Bind, on the current trace (a recording), one ``custom_jvp_call`` whose value is
        ``out_primals`` and whose JVP applies the linear jaxpr ``lin`` to the tangents of the
        arguments marked ``own``: the call linearized at its concrete arguments, replayed when the
        recording is differentiated (NOTE: [custom calls follow the trace])."""
        out_avals = [core.get_aval(p) for p in out_primals]
        out_vars = [ir.Var(a) for a in out_avals]
        in_vars = [ir.Var(core.get_aval(x)) for x in self.flat]
        value = ir.ClosedJaxpr(ir.Jaxpr(out_vars, in_vars, [], out_vars), list(out_primals))

        def linearized(primals, tangents):
            ts = [ad.instantiate(t) for t, o in zip(tangents, own) if o]
            outs = iter(core.eval_jaxpr(lin.jaxpr, lin.consts, *ts))
            t_out = [Zero(ad.tangent_aval(a)) if z else next(outs) for a, z in zip(out_avals, out_zeros)]
            return list(out_primals), t_out

        linearized.__name__ = f"linearized({self.name})"
        outs = custom_jvp_call_p.bind(
            *self.flat, call_jaxpr=value, jvp=linearized, num_consts=0, name=self.name
        )
        # An output whose tangent is zero carries no derivative: it continues as its concrete
        # value, as the recording's non-differentiable values do, so a later custom rule sees a
        # zero tangent for it (JAX's symbolic zero; equinox's ``nondifferentiable``).
        outs = [p if z else o for o, p, z in zip(outs, out_primals, out_zeros)]
        return tu.tree_unflatten(out_tree, outs)


class _CustomJVPCall(_CustomCall):
    __slots__ = ()

    def jvp_now(self, primals, tangents):
        box: list = []
        p_out, t_out = jvp_rule(self.custom, self.nondiff, self.in_tree, self.name, box)(primals, tangents)
        return box[0], p_out, t_out


class _CustomVJPCall(_CustomCall):
    __slots__ = ()

    def jvp_now(self, primals, tangents):
        box: list = []
        fwd, bwd = vjp_rules(self.custom, self.nondiff, self.dyn, self.in_tree, self.name, box)
        y, t_out = _fwd_and_lin(fwd, bwd, primals, tangents, None, self.name)
        return box[0], y, t_out


# ----------------------------------------------------------------------------------------------
# custom_jvp


class custom_jvp(_CustomFunction):
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

    def __init__(
        self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()
    ):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self._library = False  # primal and rules are funcgrad's own code (NOTE: [library custom_jvp])
        self._traces: dict = {}

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns it, so it
        works as a decorator. With ``symbolic_zeros=True`` the tangent of an input that is not
        being differentiated arrives as a ``SymbolicZero`` (NOTE: [symbolic zeros in custom rules]).

        >>> import funcgrad, funcgrad.numpy as fnp
        >>> f = custom_jvp(lambda x, y: x * y)
        >>> @f.defjvp
        ... def f_jvp(primals, tangents):
        ...     (x, y), (tx, ty) = primals, tangents
        ...     return x * y, tx * y + x * ty
        >>> float(funcgrad.grad(f)(2.0, 3.0))
        3.0
        """
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        self._library = _is_library_code(self.fun) and _is_library_code(jvp)
        self._traces.clear()
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

        self.defjvp(jvp)  # (``jvp`` is this module's code: what it runs are the tangent rules)
        self._library = _is_library_code(self.fun) and all(
            _is_library_code(r) for r in tangent_rules if r is not None
        )

    def _memo_key(self, nondiff: dict, flat, in_tree):
        """The key of a reusable trace, for a function whose primal and rules are funcgrad's
        own code; ``None`` otherwise.

        # NOTE: [library custom_jvp]
        # funcgrad's own custom_jvp functions (``nn.relu``, ``nn.log_softmax``, ...) are pure: no
        # Python side effects, no dependence on anything but their arguments' types. Their traced
        # primal and rule are reused per (argument structure, avals, static arguments), which
        # makes the call equation the same object each time, and their rule is marked
        # ``library_rule``, so eager grad caches programs that call them (NOTE: [eager grad
        # program cache]). A user's custom_jvp is traced, and its rules run, on every call.
        """
        if not self._library:
            return None
        try:
            return (in_tree, *[core.get_aval(x) for x in flat], params_key(nondiff))
        except TypeError:
            return None

    @_api_boundary  # NOTE: [traceback boundaries]
    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_jvp")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_args(self, args, kwargs)
        if self._library:  # pure: traced once per signature, under every trace (NOTE: [library custom_jvp])
            return self._bind_staged(args, name)
        return process_custom_call(_CustomJVPCall(self, args, name))

    def _bind_staged(self, args, name, home=None):
        """Trace the primal function to a jaxpr and bind ``custom_jvp_call`` with it on the current
        trace (NOTE: [custom calls follow the trace]); ``home``: see ``custom_lanes.run_lanes``."""
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        flat, in_tree = tu.tree_flatten(dyn)
        memo_key = self._memo_key(nondiff, flat, in_tree)
        hit = self._traces.get(memo_key) if memo_key is not None else None
        if hit is not None:
            closed, out_tree, jvp_flat = hit
            outs = custom_jvp_call_p.bind(*flat, call_jaxpr=closed, jvp=jvp_flat, num_consts=0, name=name)
            return tu.tree_unflatten(out_tree, outs)
        flat, in_tree, closed, consts, out_tree = _trace_primal(self.fun, nondiff, dyn, len(args), name)
        jvp_flat = jvp_rule(self, nondiff, in_tree, name, [out_tree], closed.out_avals)
        jvp_flat.refuses = getattr(self, "refuses_jvp", False)  # (kept when dead: see the trait)
        if home is not None:
            jvp_flat.home = weakref.ref(home)
        if memo_key is not None and not consts and len(self._traces) < 64:
            jvp_flat.library_rule = True
            self._traces[memo_key] = (closed, out_tree, jvp_flat)
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
    # ``jvp`` gets the kernel's Zero tangents and turns them into what the user's rule expects
    # (NOTE: [symbolic zeros in custom rules]); it may return Zero tangents too.
    return jvp(list(primals[num_consts:]), list(tangents[num_consts:]))


def _custom_jvp_call_batch(axis_size, vals, dims, *, call_jaxpr, jvp, num_consts, name):
    # Under a named vmap, an output the function leaves unbatched (a collective over the axis of
    # unbatched values) stays unbatched, as JAX's, and so does its tangent from the rule's lanes.
    # Otherwise every output is batched: JAX batches an output whose rule's tangent is batched
    # even where the function's value is not (a constant function), which is known only once the
    # rule runs (JAX decides after tracing it; here the dims are declared first).
    axis = batching._axes.batching  # (the rule may run after this vmap: its collectives need it)
    batched, out_dims = batching.batch_jaxpr(call_jaxpr, axis_size, dims, instantiate=axis is None)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)

    def batched_jvp(primals, tangents):
        # Tangents have their primals' shapes, so they share the primals' batch dims. A symbolic
        # zero stays one through the vmap, both ways, as JAX's ``batch_custom_jvp_subtrace``
        # keeps it: each lane's rule gets a ``Zero`` of one example's type, and a tangent the
        # rule returns as a zero is a zero of the batched output (NOTE: [symbolic zeros in
        # custom rules]; equinox's perturbation analysis and ``nondifferentiable`` read them).
        k = len(primals)
        zero_in = [type(t) is Zero for t in tangents]
        lane_zeros = [
            Zero(t.aval if d is None else t.aval.update(shape=t.aval.shape[:d] + t.aval.shape[d + 1 :]))
            if z
            else None
            for t, d, z in zip(tangents, arg_dims, zero_in)
        ]
        zero_out: list = []

        def lane(*xs):
            nz = iter(xs[k:])
            ts = [lz if z else next(nz) for lz, z in zip(lane_zeros, zero_in)]
            p_out, t_out = jvp(list(xs[:k]), ts)
            zero_out[:] = [type(t) is Zero for t in t_out]
            return [*p_out, *[t for t in t_out if type(t) is not Zero]]

        nz_dims = [d for d, z in zip(arg_dims, zero_in) if not z]
        nz_tangents = [t for t, z in zip(tangents, zero_in) if not z]
        outs = run_lanes(
            jvp, lane, axis_size, [*arg_dims, *nz_dims],
            lambda: [*out_dims, *(d for d, z in zip(out_dims, zero_out) if not z)], [*primals, *nz_tangents],
            axis,
        )  # fmt: skip
        p_out, nz_out = outs[:n_out], iter(outs[n_out:])
        return p_out, [Zero.from_primal_value(p) if z else next(nz_out) for p, z in zip(p_out, zero_out)]

    batched_jvp.__name__ = f"vmap({getattr(jvp, '__name__', 'jvp')})"
    batched_jvp.refuses = getattr(jvp, "refuses", False)
    outs = custom_jvp_call_p.bind(
        *vals, call_jaxpr=batched, jvp=batched_jvp, num_consts=num_consts, name=name
    )
    return outs, list(out_dims)


class _Subfun:
    """A function called as JAX's ``lu.WrappedFun`` is (``call_wrapped``): the ``subfuns`` of a
    ``custom_jvp_call``'s bind parameters, for interpreters written for JAX."""

    __slots__ = ("_f", "__name__")

    def __init__(self, f, name):
        self._f = f
        self.__name__ = name

    def call_wrapped(self, *args):
        return self._f(*args)

    __call__ = call_wrapped


class _CustomJVPCallPrimitive(Primitive):
    """``custom_jvp_call``. Its equations hold the primal jaxpr and the rule (``call_jaxpr``,
    ``jvp``); ``get_bind_params`` adds JAX's ``subfuns`` -- the primal function and the JVP in
    JAX's flat convention (``jvp(*primals, *tangents) -> [*primals_out, *tangents_out]``), both
    with ``call_wrapped`` -- for interpreters written for JAX (equinox's finalisation calls
    ``subfuns[0].call_wrapped(*args)``); ``bind`` ignores ``subfuns``, as the jaxpr and rule are
    still among the parameters."""

    def get_bind_params(self, params: dict) -> dict:
        out = dict(params)
        closed, jvp, nc = params["call_jaxpr"], params["jvp"], params["num_consts"]

        def fun(*args):
            return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)

        def flat_jvp(*xs):
            n = len(xs) // 2
            p_out, t_out = jvp(list(xs[nc:n]), list(xs[n + nc :]))
            return [*p_out, *[ad.instantiate(t) for t in t_out]]

        out["subfuns"] = (_Subfun(fun, params["name"]), _Subfun(flat_jvp, f"jvp({params['name']})"))
        return out

    def bind(self, *args, **params):
        params.pop("subfuns", None)
        return super().bind(*args, **params)

    def bind_with_trace(self, trace, args, params: dict):
        params = {k: v for k, v in params.items() if k != "subfuns"}
        return super().bind_with_trace(trace, args, params)


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_traits(
    call_jaxpr_param="call_jaxpr",
    jaxpr_params=("call_jaxpr",),
    taylor_from_jvp="its series follow the user's custom JVP rule, by design",
)
# (sparsify: a call, its function sparsified in turn; a derivative of the sparsified function
# follows the function, not the custom rule)
custom_jvp_call_p.def_traits(runs_user_rules=True, sparse="call")
# (a call whose rule refuses every derivative, as JAX's primitive without a JVP rule that it stands
# for: kept in a traced program when dead, so a jvp of the jit or checkpoint refuses as JAX's)
custom_jvp_call_p.def_traits(kept_when_dead=lambda params: getattr(params["jvp"], "refuses", False))
custom_jvp_call_p.def_impl(
    lambda *args, call_jaxpr, **_: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
)
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
# Eagerly the function's jaxpr runs on the Arrays as given, as JAX runs the function itself: an
# output that is an input is that same object (optimistix's inexact_asarray under vmap), and each
# equation inside dispatches as it would outside.
custom_jvp_call_p.impl_takes_arrays = True
custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)
custom_jvp_call_p.def_batch(_custom_jvp_call_batch)


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, **_):
    # A custom_jvp function applied to tangents (its own JVP rule may call it so: lineax's
    # inexact_asarray) sits in the linear program: it is transposed through its function, the
    # custom rule being of no use past linearization (JAX's partial evaluation inlines it).
    cts_in = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, args, cts)
    return [ct if ad.is_undefined_primal(a) else None for a, ct in zip(args, cts_in)]


custom_jvp_call_p.def_transpose(_custom_jvp_call_transpose)


# ----------------------------------------------------------------------------------------------
# custom_vjp


class custom_vjp(_CustomFunction):
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

    def __init__(
        self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()
    ):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None

    def defvjp(
        self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False, optimize_remat: bool = False
    ) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple``
        with one cotangent per differentiable argument (``None`` for zero). With
        ``symbolic_zeros=True``, ``fwd`` gets each differentiable leaf as
        ``CustomVJPPrimal(value, perturbed)`` and ``bwd`` a ``SymbolicZero`` for each output
        cotangent known to be zero (NOTE: [symbolic zeros in custom rules]). ``optimize_remat``
        is accepted for JAX's signature and has no effect here (in JAX it is an optimisation of
        how ``fwd`` is recomputed under ``remat``; the derivatives are the same).

        >>> import funcgrad
        >>> f = custom_vjp(lambda x, y: x * y)
        >>> def f_fwd(x, y):  # x, y: CustomVJPPrimal(value, perturbed)
        ...     print("perturbed:", x.perturbed, y.perturbed)
        ...     return x.value * y.value, (x.value, y.value)
        >>> f.defvjp(f_fwd, lambda res, g: (g * res[1], g * res[0]), symbolic_zeros=True)
        >>> float(funcgrad.grad(f)(2.0, 3.0))
        perturbed: True False
        3.0
        """
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    @_api_boundary  # NOTE: [traceback boundaries]
    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vjp")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_args(self, args, kwargs)
        for i in self.nondiff_argnums:
            _refuse_nondiff_tracers(args[i])
        if any(is_state(a) for a in args):
            return with_state_args(self, args, name)
        return process_custom_call(_CustomVJPCall(self, args, name))

    def _bind_staged(self, args, name, home=None):
        """Trace the primal function to a jaxpr and bind ``custom_vjp_call`` with it on the current
        trace (NOTE: [custom calls follow the trace]); ``home``: see ``custom_lanes.run_lanes``."""
        nondiff, dyn = _split_nondiff(args, self.nondiff_argnums)
        flat, in_tree, closed, consts, out_tree = _trace_primal(self.fun, nondiff, dyn, len(args), name)
        fwd_flat, bwd_flat = vjp_rules(self, nondiff, dyn, in_tree, name, [out_tree], closed.out_avals)
        if home is not None:
            fwd_flat.home = weakref.ref(home)
        outs = custom_vjp_call_p.bind(
            *consts, *flat, call_jaxpr=closed, fwd=fwd_flat, bwd=bwd_flat, num_consts=len(consts), name=name
        )
        return tu.tree_unflatten(out_tree, outs)


def _refuse_nondiff_tracers(arg) -> None:
    """A traced value among a custom_vjp's ``nondiff_argnums`` is JAX's UnexpectedTracerError (under
    ``jit`` too): ``bwd`` gets those arguments as they were, outside the trace that made them."""
    for leaf in tu.tree_leaves(arg):
        if isinstance(leaf, core.Tracer):
            raise core.UnexpectedTracerError(  # (JAX's words)
                "Found a JAX Tracer object passed as an argument to a custom_vjp function in a "
                "position indicated by nondiff_argnums as non-differentiable. Tracers cannot be "
                "passed as non-differentiable arguments to custom_vjp functions; instead, "
                "nondiff_argnums should only be used for arguments that can't be or contain JAX "
                "tracers, e.g. function-valued arguments. In particular, array-valued arguments "
                "should typically not be indicated as nondiff_argnums."
            )


class CustomVJPException(TypeError):
    """A custom_vjp function differentiated with respect to a value it closes over (JAX's
    ``jax.interpreters.ad.CustomVJPException``; a ``TypeError`` too, as funcgrad raised before)."""


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise CustomVJPException(
            f"custom_vjp function {name} closes over a value that is being differentiated; its "
            "bwd rule cannot return a cotangent for it. Pass that value as an explicit argument."
        )
    return _fwd_and_lin(
        fwd, bwd, primals[num_consts:], tangents[num_consts:], len(call_jaxpr.out_avals), name
    )


def _fwd_and_lin(fwd, bwd, args, tangents, n_out: int | None, name: str):
    """A custom_vjp call's JVP: run ``fwd`` now and emit ``custom_lin`` over the tangents, whose
    transpose is ``bwd``. ``n_out=None``: ``fwd`` states the number of outputs (through the
    structure it records, read by ``count_out``)."""
    # An integer (or bool) argument is never perturbed: its tangent is float0 zeros, which JAX
    # keeps symbolic (equinox's filter_custom_vjp asserts its non-float arguments unperturbed).
    perturbed = tuple(type(t) is not Zero and core.get_aval(t).dtype != _dt.float0 for t in tangents)
    # fwd computes primals only: it runs on the trace that holds them, as JAX's runs on the JVP's
    # parent. Under eager grad's linearization that is the partial evaluator's parent, since the
    # evaluator stages only tangents (flax's nnx Variables made in fwd belong to that trace).
    cur = core.current_trace()
    if isinstance(cur, PartialEvalTrace) and not any(map(cur.is_unknown, args)):
        with core.set_current_trace(cur.parent):
            outs = fwd(perturbed, *args)
    else:
        outs = fwd(perturbed, *args)
    if n_out is None:
        n_out = fwd.count_out()
    y, res = outs[:n_out], outs[n_out:]
    t_args = [ad.instantiate(t) for t in tangents]
    out_avals = tuple(ad.tangent_aval(core.get_aval(v)) for v in y)
    t_out = custom_lin_p.bind(*res, *t_args, num_res=len(res), bwd=bwd, out_avals=out_avals, name=name)
    return list(y), t_out


def _python_number(x) -> bool:
    return type(x) in _dt.python_scalar_types


def _custom_vjp_call_batch(axis_size, vals, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
    # (an output the function leaves unbatched stays so, with its cotangent: as custom_jvp's)
    batched, out_dims = batching.batch_jaxpr(call_jaxpr, axis_size, dims, instantiate=False)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)
    axis = batching._axes.batching  # (the rule may run after this vmap: its collectives need it)
    res_dims_box: list[list] = []

    def batched_fwd(perturbed, *args):
        def lane(*xs):
            outs = fwd(perturbed, *xs)
            # A residual that is a Python number stays one, unbatched: JAX's vmap hands a value of
            # no trace through as it is, to bwd too (equinox's filter_custom_vjp keeps its
            # ``perturbed`` flags among the residuals and branches on them in bwd).
            res_dims_box.append([None if _python_number(r) else 0 for r in outs[n_out:]])
            return outs

        dims_out = lambda: [*out_dims, *res_dims_box[-1]]  # noqa: E731
        return run_lanes(fwd, lane, axis_size, arg_dims, dims_out, list(args), axis)

    arg_avals = [core.get_aval(v) for v in vals[num_consts:]]

    def batched_bwd(res, cts):
        # Residuals (Python numbers aside) and output cotangents are batched at axis 0
        # (``batched_fwd``'s outputs). A Zero cotangent stays symbolic through the vmap, both ways, as JAX's
        # ``batch_custom_vjp_bwd`` keeps it: a ``symbolic_zeros`` bwd gets a SymbolicZero for it,
        # and a None/SymbolicZero it returns is a Zero of the batched argument.
        n_res = len(res)
        zero_in = [type(c) is Zero for c in cts]
        lane_zeros = [
            (Zero(c.aval.update(shape=c.aval.shape[1:])) if d is not None else c) if z else None
            for c, z, d in zip(cts, zero_in, out_dims)
        ]
        zero_out: list = []

        def lane(*xs):
            nz = iter(xs[n_res:])
            outs = bwd(list(xs[:n_res]), [lz if z else next(nz) for lz, z in zip(lane_zeros, zero_in)])
            zero_out[:] = [type(o) is Zero for o in outs]
            return [o for o in outs if type(o) is not Zero]

        nz_cts = [c for c, z in zip(cts, zero_in) if not z]
        ct_dims = [d for d, z in zip(out_dims, zero_in) if not z]
        res_dims = [None if _python_number(r) else 0 for r in res]
        vals, vdims = batching.vmap_with_dims(lane, axis_size, res_dims + ct_dims, [*res, *nz_cts], axis)
        outs = iter(zip(vals, vdims))
        cts_in = []
        for z, d, aval in zip(zero_out, arg_dims, arg_avals):
            if z:
                cts_in.append(Zero(ad.tangent_aval(aval)))
                continue
            v, vd = next(outs)
            if d is None and vd is not None:  # an unbatched input: its cotangent summed over the batch
                cts_in.append(hooks.reduce_sum(v, (vd,)))
            else:  # (one bwd left unbatched stays so, as JAX's ``matchaxis``)
                cts_in.append(v if d is None else batching.move_batch_dim(v, axis_size, vd, d))
        return cts_in

    batched_fwd.__name__ = f"vmap({getattr(fwd, '__name__', 'fwd')})"
    batched_bwd.__name__ = f"vmap({getattr(bwd, '__name__', 'bwd')})"
    outs = custom_vjp_call_p.bind(
        *vals, call_jaxpr=batched, fwd=batched_fwd, bwd=batched_bwd, num_consts=num_consts, name=name
    )
    return outs, list(out_dims)


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_traits(call_jaxpr_param="call_jaxpr", jaxpr_params=("call_jaxpr",))
custom_vjp_call_p.def_traits(runs_user_rules=True)
custom_vjp_call_p.def_impl(
    lambda *args, call_jaxpr, **_: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
)
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_vjp_call_p.impl_takes_arrays = True  # (as custom_jvp_call's)
custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)
custom_vjp_call_p.def_batch(_custom_vjp_call_batch)

# Whether a program calls a custom_vjp, per jaxpr (NOTE: [jitted calls with Refs under a
# transformation] in funcgrad/jitting.py).
_custom_vjp_held: weakref.WeakKeyDictionary = register_cache(
    "custom_derivatives.custom_vjp_held", weakref.WeakKeyDictionary()
)


def custom_vjp_in(jaxpr) -> bool:
    """Whether ``jaxpr`` (or a jaxpr inside it) calls a custom_vjp (memoised per jaxpr)."""
    found = _custom_vjp_held.get(jaxpr)
    if found is None:
        found = any(
            e.primitive is custom_vjp_call_p or any(custom_vjp_in(j) for j in ir.jaxprs_in_params(e.params))
            for e in jaxpr.eqns
        )
        _custom_vjp_held[jaxpr] = found
    return found


# custom_lin: the tangent of a custom_vjp call, linear in the tangents; its transpose is bwd.


def _custom_lin_impl(*args, num_res, bwd, out_avals, name):
    # JAX's words (code written for JAX prints them); funcgrad's hint follows as a note.
    err = TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
    err.add_note(
        f"{name} defines only a reverse-mode rule: use grad/vjp/jacrev, or define it with custom_jvp instead."
    )
    raise err


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    res = args[:num_res]
    cts_in = bwd(list(res), list(cts))  # Zero cotangents: bwd converts them for the user's rule
    return [None] * num_res + list(cts_in)


custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_traits(jaxpr_params=("bwd",))  # carries the backward function of a custom_vjp
custom_lin_p.def_traits(runs_user_rules=True, transposes_zero_cotangents=True)
custom_lin_p.def_impl(_custom_lin_impl)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))
custom_lin_p.def_transpose(_custom_lin_transpose)
custom_lin_p.def_traits(
    linear=True, taylor_from_jvp="the tangent of a custom_vjp call: its JVP rule raises the custom_vjp error"
)
custom_lin_p.def_jvp(lambda primals, tangents, **params: _custom_lin_impl(**params))


def _custom_lin_batch(axis_size, vals, dims, *, num_res, bwd, out_avals, name):
    # (vmap of a custom_vjp function's tangent: jacfwd, vmap of jvp. JAX raises its forward-mode
    # error there too; vmap(grad(f)), jacrev and vmap of a vjp's pullback never batch it.)
    _custom_lin_impl(num_res=num_res, bwd=bwd, out_avals=out_avals, name=name)


custom_lin_p.def_batch(_custom_lin_batch)


# Forward-mode derivatives of a custom_vjp function are those of its primal function (as JAX's jet
# does), since only its reverse-mode rule is given.
def _custom_vjp_call_taylor(primals, series, *, call_jaxpr, num_consts, **_):
    run = lambda *xs: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs)  # noqa: E731
    return jet_flat(run, primals, series, len(series[0]))


custom_vjp_call_p.def_taylor(_custom_vjp_call_taylor)
