"""``funcgrad.ad_checkpoint``: JAX's ``jax.ad_checkpoint`` -- ``checkpoint`` (alias ``remat``),
``checkpoint_name``, ``checkpoint_policies`` and ``print_saved_residuals``.

Layer: surface. Imports the primitive catalog's rematerialisation family (``primitives.remat``:
the ``checkpoint`` and ``name`` primitives and the policies, and the ``jit`` and
``reduce_precision`` primitives it names residuals by), the kernel's pytrees, the surface's
``checkpoint`` (``funcgrad._remat``) and the staged vjp programs of ``funcgrad.introspect``.

What a policy saves is decided when ``checkpoint``'s partial evaluation splits the program, so it
is the same eagerly, under ``jit`` (the compiled backward program recomputes what was not saved:
NOTE: [remat on XLA]) and in ``print_saved_residuals``. The offload policies move their residuals
to the destination's memory space and back, as JAX's (NOTE: [offloaded residuals] in
primitives/remat.py).

``print_saved_residuals`` prints JAX's lines (``f64[5,4] from the argument W1``, ``f64[5] output of
sin from file.py:3 (g)``, ``f64[5] named 'a' from ...``), the source without JAX's column;
``funcgrad.print_saved_residuals`` (``funcgrad.introspect``) is the table with bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from funcgrad._api_util import signature_arg_names as _arg_names
from funcgrad._remat import checkpoint, remat
from funcgrad.introspect import trace_vjp
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.ir import Literal
from funcgrad.primitives.bitcast import reduce_precision_p
from funcgrad.primitives.call import jit_p
from funcgrad.primitives.remat import (
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_policies,
    device_put_p,
    name_p,
)

__all__ = [
    "checkpoint",
    "remat",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "saved_residuals",
    "Offloadable",
    "Recompute",
    "Saveable",
]


def checkpoint_name(x, name: str):
    """``x`` unchanged (a pytree of arrays), each leaf named ``name`` for the saving policies
    (``checkpoint_policies.save_only_these_names(name)`` and the other name policies).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> def f(x):
    ...     y = checkpoint_name(fnp.sin(x), "y")
    ...     return fnp.cos(y)
    >>> g = funcgrad.checkpoint(f, policy=checkpoint_policies.save_only_these_names("y"))
    >>> round(float(funcgrad.grad(g)(1.0)), 6)
    -0.402862
    """
    return tu.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


def _summarize(info) -> str:
    return "" if info is None else str(info._replace(name_stack=""))


def _forwarded_inputs(jaxpr) -> dict:
    """Outputs of call equations (``jit``) that are one of the call's inputs passed through (a
    residual jit's partial evaluation returns), mapped to that input: JAX forwards them, so its
    listing names the argument."""
    out: dict = {}
    for eqn in jaxpr.eqns:
        param = eqn.primitive.traits.call_jaxpr_param
        inner = eqn.params.get(param) if param else None
        if inner is None or len(inner.jaxpr.invars) != len(eqn.invars):
            continue
        position = {v: i for i, v in enumerate(inner.jaxpr.invars)}
        for v, o in zip(eqn.outvars, inner.jaxpr.outvars):
            if type(o) is not Literal and o in position:
                a = eqn.invars[position[o]]
                out[v] = out.get(a, a)
    return out


def _user_name(name) -> str:
    """``'g'`` from a transformed call's name (``'jvp(g)'``), as JAX names the jitted function."""
    while isinstance(name, str) and (m := re.fullmatch(r"\w+\((.*)\)", name)):
        name = m.group(1)
    return str(name)


def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple]:
    """``(aval, description)`` of each value ``vjp(f, *args, **kwargs)`` saves for the backward pass:
    literals, then constants, then arguments, then computed values in program order (JAX's order).
    Nothing is computed: the forward pass is traced abstractly.

    >>> import funcgrad.numpy as fnp
    >>> [(a.str_short(), d) for a, d in saved_residuals(lambda x: fnp.sin(x) * x, fnp.ones(2))][0]
    ('f64[2]', 'from the argument x')
    """
    leaves, in_tree = tu.tree_flatten((args, kwargs))
    names = _arg_names(f, args, kwargs)

    def flat_f(*xs):
        a, k = tu.tree_unflatten(in_tree, xs)
        return f(*a, **k)

    programs = trace_vjp(flat_f, *leaves)
    jaxpr = programs.forward.jaxpr
    forwarded = _forwarded_inputs(jaxpr)
    res = [forwarded.get(v, v) if type(v) is not Literal else v for v in jaxpr.outvars[programs.n_out :]]
    # (the checkpoint's rounding of a saved value is not its producer: JAX looks through it too)
    rounded = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns if e.primitive is reduce_precision_p}
    res_vars = {rounded.get(v, v) for v in res if type(v) is not Literal}
    out = [(v.aval, "from a literal") for v in res if type(v) is Literal]
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res_vars]
    for i, v in enumerate(jaxpr.invars):
        if v in res_vars:
            name = names[i] if i < len(names) else None
            out.append(
                (v.aval, f"from the argument {name}" if name else f"from the argument at flattened index {i}")
            )
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if v not in res_vars:
                continue
            src = _summarize(eqn.source_info)
            if eqn.primitive is device_put_p:
                src = ""  # (an offloaded residual's move is the checkpoint's, with no user line: as JAX's)
            if eqn.primitive is name_p:
                out.append((v.aval, f"named '{eqn.params['name']}' from {src}"))
            elif eqn.primitive is jit_p:
                out.append(
                    (v.aval, f"output of jitted function '{_user_name(eqn.params.get('name'))}' from {src}")
                )
            else:
                out.append((v.aval, f"output of {eqn.primitive.name} from {src}"))
    return out


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print one line per value ``vjp(f, *args, **kwargs)`` saves for the backward pass, as JAX's
    ``jax.ad_checkpoint.print_saved_residuals`` does (``saved_residuals``).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> def g(W, x):
    ...     return fnp.sin(fnp.dot(W, x))
    >>> print_saved_residuals(funcgrad.checkpoint(g), fnp.ones((5, 4)), fnp.ones(4))
    f64[5,4] from the argument W
    f64[4] from the argument x
    """
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")


def __dir__():  # the public names only (as jax.ad_checkpoint's), not the helpers
    return sorted(__all__)
