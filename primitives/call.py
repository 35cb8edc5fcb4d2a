"""The ``jit`` call primitive: a staged sub-program that runs as one compiled unit.

Layer: primitives. Imports the funcgrad kernel.

``jit_p`` is a ``CallPrimitive`` of the kernel's call-primitive kit (``funcgrad/kernel/callkit.py``):
its JVP, transpose, batching and partial-evaluation rules each build a new jaxpr and bind ``jit_p``
again, so ``grad(jit(f))``, ``vmap(jit(f))`` and ``jit(grad(f))`` keep the inner call one compiled
unit. Evaluated eagerly it runs the implementation ``xla_bridge`` registers with the kernel
(``hooks.jit_impl``: compile with XLA and run, NOTE: [kernel registration]); without the bridge it
interprets the jaxpr with the NumPy impls.

Parameters: ``jaxpr`` (the ClosedJaxpr), ``name``, ``donated_invars`` (one flag per argument) and,
only when the jitted function was placed (``jit(device=/backend=)``), ``device``: the device the
call runs on when evaluated eagerly; only when it has shardings (``jit(in_shardings=,
out_shardings=)``), ``in_shardings``/``out_shardings`` (one bridge sharding or ``None`` per
input/output). Derived calls keep the device; their shardings follow their values as JAX's pjit
rules place them (a tangent as its primal, a cotangent as its output, a transposed call's result
as its input, a batched value with an unsharded batch dimension, residuals free); nested in
another jitted program, the call's shardings constrain its values there.

``xla_metadata_call_p`` (``experimental.scheduling_groups.xla_metadata_call``) is a call whose
other parameters are XLA frontend attributes of the call operation (strings, as JAX's): it lowers
to a ``func.call`` carrying them, and its derived calls keep them.

``composite_p`` (``lax.composite``) calls its decomposition ``jaxpr`` (constants first among its
arguments) and lowers to a ``stablehlo.composite`` op named ``name`` with the ``attributes``
(``(key, leaves, treedef)`` triples, as JAX's) and ``version``. As JAX's it has no JVP, transpose
or batching rule: those refuse in JAX's words (``custom_jvp`` gives a composite a derivative).
"""

from __future__ import annotations

from funcgrad.kernel import core
from funcgrad.kernel.callkit import CallPrimitive
from funcgrad.kernel.hooks import hooks


def _derive_params(params, jaxpr, derivation, n_args, ins=None, outs=None):
    """A derived call is named after what it computes and donates nothing (a batched call
    keeps its name and donations: it is the same call over more data). Its shardings follow
    its values as JAX's pjit rules place them (``ins``/``outs``: what each derived input and
    output stands for, ``CallPrimitive``'s layout): a tangent is laid out as its primal, a
    cotangent as the output it is of, a transposed call's result as its input, a residual
    freely (None)."""
    if derivation == "batch":
        kept = {k: v for k, v in params.items() if k not in ("in_shardings", "out_shardings")}
        if params.get("in_shardings") is not None and ins is not None and outs is not None:
            # JAX's pjit batching rule: each sharding gains an unsharded batch dimension
            in_s = tuple(map(_batched_sharding, params["in_shardings"], ins, jaxpr.in_avals))
            out_s = tuple(map(_batched_sharding, params["out_shardings"], outs, jaxpr.out_avals))
            if any(s is not None for s in (*in_s, *out_s)):
                kept["in_shardings"], kept["out_shardings"] = in_s, out_s
        return {**kept, "jaxpr": jaxpr}
    name = params["name"] if derivation in ("known", "unknown") else f"{derivation}({params['name']})"
    derived = {"jaxpr": jaxpr, "name": name, "donated_invars": (False,) * n_args}
    if "device" in params:
        derived["device"] = params["device"]
    if params.get("in_shardings") is not None and ins is not None and outs is not None:
        given = {"in": params["in_shardings"], "out": params["out_shardings"]}

        def place(what):
            return tuple(None if w is None else given[w[0]][w[1]] for w in what)

        in_s, out_s = place(ins), place(outs)
        if derivation == "transpose":  # (the cotangents of outputs, and the results: cotangents)
            cts = [w is not None and w[0] == "out" for w in ins]
            in_s = tuple(_ct_sharding(s, a) if ct else s for s, ct, a in zip(in_s, cts, jaxpr.in_avals))
            out_s = tuple(_ct_sharding(s, a) for s, a in zip(out_s, jaxpr.out_avals))
        if any(s is not None for s in (*in_s, *out_s)):
            derived["in_shardings"], derived["out_shardings"] = in_s, out_s
    return derived


def _ct_sharding(s, aval):
    """The sharding of a cotangent of a value laid out as ``s``: its unreduced and reduced axes
    swapped, as JAX's ``to_ct_aval`` (NOTE: [unreduced values] in funcgrad/_sharding_unreduced.py)."""
    user = getattr(s, "_fg_user", None)
    spec = getattr(user, "spec", None)
    if spec is None or not (getattr(spec, "unreduced", None) or getattr(spec, "reduced", None)):
        return s
    return user.update(spec=spec.update(unreduced=spec.reduced, reduced=spec.unreduced))._bridge(aval.ndim)


def _batched_sharding(s, dim, batched_aval):
    """``s`` (a bridge sharding of an unbatched value) with an unsharded dimension at ``dim``
    (JAX's batch_spec without spmd_axis_name), built from the surface sharding it was made from;
    None (free) where there is none, or the value is unbatched but the sharding cannot be kept."""
    if s is None:
        return None
    if dim is None:
        return s
    user = getattr(s, "_fg_user", None)
    spec = getattr(user, "spec", None)
    if spec is None or getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        return None
    ndim = batched_aval.ndim - 1
    entries = [*spec, *[None] * (ndim - len(spec))]
    entries.insert(dim, None)
    return user.update(spec=type(spec)(*entries))._bridge(ndim + 1)


jit_p = CallPrimitive("jit", _derive_params)
jit_p.def_traits(sparse="call")
jit_p.impl_takes_arrays = True
# A jit call of NumPy values computes as one of Arrays unless it donates, or places its operands
# (NOTE: [compiled calls in cached programs] in funcgrad/kernel/numpy_plan.py).
jit_p.host_values_ok = lambda params: (
    params.get("device") is None and params.get("in_shardings") is None and not any(params["donated_invars"])
)


def _jit_impl(*args, jaxpr, name, donated_invars, device=None, in_shardings=None, out_shardings=None):
    run = hooks.jit_impl
    if run is not None:
        shardings = (
            {} if in_shardings is None else dict(in_shardings=in_shardings, out_shardings=out_shardings)
        )
        return run(*args, jaxpr=jaxpr, name=name, donated_invars=donated_invars, device=device, **shardings)
    with core.set_current_trace(core.EvalTrace(None)):
        return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


jit_p.def_impl(_jit_impl)


xla_metadata_call_p = CallPrimitive("xla_metadata_call")  # (derived calls keep the attributes)


composite_p = CallPrimitive("composite")


def _composite_jvp(*args, **params):
    raise ValueError(  # (JAX's words)
        "JVP rule for composite not implemented. You can use `jax.custom_jvp` to add support. See "
        "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html"
    )


def _composite_transpose(*args, **params):
    raise ValueError(  # (JAX's words)
        "Transpose rule for composite not implemented. You can use`jax.custom_jvp` or "
        "`jax.custom_vjp` to add support. See https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html"
    )


def _composite_batch(*args, **params):
    raise NotImplementedError("Batching rule for 'composite' not implemented")  # (JAX's words)


composite_p.def_jvp(_composite_jvp)
composite_p.def_transpose(_composite_transpose)
composite_p.def_batch(_composite_batch)
