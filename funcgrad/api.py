"""The public transformations: grad, value_and_grad, vjp, jvp, linearize, vmap, jacfwd, jacrev,
hessian, make_jaxpr, stop_gradient, linear_transpose (and, from sibling modules, jit,
ShapeDtypeStruct, custom_jvp, custom_vjp, checkpoint).

Layer: surface. Imports the kernel, the primitive catalog and funcgrad.numpy.

Every function here accepts and returns pytrees; the kernel works on flat lists, so each one
flattens its inputs, runs the flat transformation, and unflattens. Errors name the
transformation, the argument (by position and pytree path) and the fix.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import funcgrad.numpy as fnp  # also installs Array/Tracer operators (NOTE: [array methods])
from funcgrad.jitting import ShapeDtypeStruct, jit  # noqa: F401 - re-exported
from funcgrad.kernel import ad, batching, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401 - re-exported
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.remat import checkpoint, remat  # noqa: F401 - re-exported
from primitives import elementwise as _ew

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "linearize",
    "linear_transpose",
    "vmap",
    "jacfwd",
    "jacrev",
    "jacobian",
    "hessian",
    "make_jaxpr",
    "stop_gradient",
    "jit",
    "custom_jvp",
    "custom_vjp",
    "checkpoint",
    "remat",
    "eval_shape",
    "ShapeDtypeStruct",
    "device_put",
    "device_get",
    "block_until_ready",
]

# ----------------------------------------------------------------------------------------------
# Helpers


def _to_public(x):
    """Concrete results become ``Array``s; tracers and Arrays pass through."""
    if isinstance(x, Array | core.Tracer):
        return x
    if isinstance(x, np.ndarray | np.generic):
        return Array._from_owned(np.asarray(x))
    if type(x) in (bool, int, float, complex):
        return Array._from_owned(np.asarray(x), weak_type=True)
    return x


def _canonicalize(leaves) -> list:
    """Python scalars become weakly typed 0-d Arrays (NOTE: [weak types]), as at JAX's API
    boundary, so rules never see bare Python numbers as primals."""
    return [
        Array._from_owned(np.asarray(x), weak_type=True) if type(x) in (bool, int, float, complex) else x
        for x in leaves
    ]


def _check_array_leaves(name: str, leaves, paths, what="argument"):
    """``paths``: the leaves' names, or a function computing them (only called on an error, since
    naming leaves costs more than checking them on the eager hot path)."""
    for i, leaf in enumerate(leaves):
        if not core.is_array_like(leaf):
            path = (paths() if callable(paths) else paths)[i]
            raise TypeError(
                f"{name}: {what} {path} is a {type(leaf).__name__} ({leaf!r:.60}), which is not an "
                "array. Transformed functions take arrays (or pytrees of arrays); pass other "
                "values through a closure, functools.partial, or jit's static_argnums."
            )


def _arg_paths(args: tuple, argnums: Sequence[int] | None = None) -> list[str]:
    """Readable names of the leaves of ``args``: ``args[0]['w']``."""
    pairs = tu.tree_leaves_with_path(tuple(args))
    out = []
    for path, _ in pairs:
        first, rest = path[0], path[1:]
        index = first.idx if argnums is None else argnums[first.idx]
        out.append(f"args[{index}]{tu.keystr(rest)}")
    return out


def _named_arg_paths(fun: Callable, args: tuple, argnums: Sequence[int]) -> list[str]:
    """Like ``_arg_paths`` but with the function's parameter names (``x['w']`` rather than
    ``args[0]['w']``), for error messages about traced values."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return _arg_paths(args, argnums)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out = []
    for path, _ in tu.tree_leaves_with_path(tuple(args)):
        index = argnums[path[0].idx]
        name = positional[index] if index < len(positional) else f"args[{index}]"
        out.append(f"{name}{tu.keystr(path[1:])}")
    return out


def _normalize_argnums(name: str, argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int | np.integer):
            raise TypeError(f"{name}: argnums must be ints, got {argnums!r}")
        if not -nargs <= a < nargs:
            raise ValueError(
                f"{name}: argnums={argnums!r} is out of range for a function called with {nargs} "
                f"positional argument{'s' if nargs != 1 else ''}"
            )
    return tuple(int(a) % nargs for a in nums)


def _partial_over(fun: Callable, args: tuple, kwargs: dict, argnums: tuple[int, ...]):
    """``fun`` as a function of ``args[argnums]`` only (the others fixed)."""

    def f(*dyn):
        full = list(args)
        for i, a in zip(argnums, dyn):
            full[i] = a
        return fun(*full, **kwargs)

    return f


def _flat_fun(fun: Callable, in_tree, has_aux: bool = False):
    """Wrap a pytree function as a flat one; the output trees are recorded in ``store``."""
    store: dict[str, Any] = {}

    def flat(*leaves):
        args = tu.tree_unflatten(in_tree, leaves)
        out = fun(*args)
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError(
                    "has_aux=True requires the function to return a pair (output, aux), got "
                    f"{type(out).__name__}"
                )
            out, aux = out
            aux_leaves, store["aux_tree"] = tu.tree_flatten(aux)
        else:
            aux_leaves = []
        out_leaves, store["out_tree"] = tu.tree_flatten(out)
        store["n_out"] = len(out_leaves)
        return [*out_leaves, *aux_leaves]

    return flat, store


def _split_aux(leaves, store, has_aux: bool):
    out = tu.tree_unflatten(store["out_tree"], [_to_public(x) for x in leaves[: store["n_out"]]])
    if not has_aux:
        return out, None
    aux = tu.tree_unflatten(store["aux_tree"], [_to_public(x) for x in leaves[store["n_out"] :]])
    return out, aux


def _zeros_for(aval: ir.ShapedArray):
    if aval.dtype == _dt.float0:
        return np.zeros(aval.shape, _dt.float0)
    return _to_public(ad.instantiate(ad.Zero(aval)))


def _instantiate_public(ct, aval):
    return _zeros_for(aval) if type(ct) is ad.Zero or ct is None else _to_public(ct)


# ----------------------------------------------------------------------------------------------
# Forward mode


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: ``(fun(*primals), d fun(primals) · tangents)``.

    >>> import funcgrad.numpy as fnp
    >>> y, t = jvp(fnp.sin, (0.0,), (2.0,))
    >>> float(y), float(t)
    (0.0, 2.0)
    """
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(
            "jvp: primals and tangents must be tuples or lists of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}; write jvp(f, (x,), (t,))"
        )
    flat_p, tree_p = tu.tree_flatten(tuple(primals))
    flat_t, tree_t = tu.tree_flatten(tuple(tangents))
    if tree_p != tree_t:
        raise TypeError(
            f"jvp: primal and tangent arguments must have the same tree structure, got {tree_p} and {tree_t}"
        )
    paths = _arg_paths(tuple(primals))
    _check_array_leaves("jvp", flat_p, paths, "primal")  # (jvp names its tangents below too)
    flat_p = _canonicalize(flat_p)
    tangents_in = []
    for p, t, path in zip(flat_p, flat_t, paths):
        pa, ta = core.get_aval(p), core.get_aval(t)
        expected = _dt.tangent_dtype(pa.dtype)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp: tangent {path} has shape {ta.shape} but its primal has shape {pa.shape}")
        if ta.dtype != expected and not (expected != _dt.float0 and ta.weak_type):
            raise TypeError(
                f"jvp: tangent {path} has dtype {ta.dtype.name} but its primal has dtype "
                f"{pa.dtype.name}, whose tangents have dtype {expected.name}"
            )
        tangents_in.append(ad.Zero(ad.tangent_aval(pa)) if expected == _dt.float0 else t)
    flat, store = _flat_fun(fun, tree_p, has_aux)
    out_p, out_t = ad.jvp_flat(flat, flat_p, tangents_in)
    n = store["n_out"]
    out_avals = [ad.tangent_aval(core.get_aval(p)) for p in out_p]
    primals_out, aux = _split_aux(out_p, store, has_aux)
    tangents_out = tu.tree_unflatten(
        store["out_tree"], [_instantiate_public(t, a) for t, a in zip(out_t[:n], out_avals[:n])]
    )
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the linearized function
    (a staged linear jaxpr; the primal work is not redone).

    >>> import funcgrad.numpy as fnp
    >>> y, f_jvp = linearize(fnp.exp, 0.0)
    >>> float(f_jvp(3.0))
    3.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    _check_array_leaves("linearize", flat_p, lambda: _arg_paths(primals))
    flat_p = _canonicalize(flat_p)
    flat, store = _flat_fun(fun, in_tree, has_aux)
    out_p, lin = ad.linearize_flat(flat, flat_p)
    n = store["n_out"]
    out, aux = _split_aux(out_p, store, has_aux)

    def f_jvp(*tangents):
        flat_t, t_tree = tu.tree_flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"linearize: tangents must have the primals' structure {in_tree}, got {t_tree}")
        outs = lin(*flat_t)
        return tu.tree_unflatten(
            store["out_tree"], [_instantiate_public(o, a) for o, a in zip(outs[:n], lin.out_avals[:n])]
        )

    f_jvp.jaxpr = lin.closed
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# ----------------------------------------------------------------------------------------------
# Reverse mode


class VJPFunction:
    """The backward function returned by ``vjp``: call it with output cotangents, any number of
    times (PyTorch's ``retain_graph=True``). ``.jaxpr`` is the linear program it transposes and
    ``.residuals`` the values it keeps (``ctx.save_for_backward``)."""

    def __init__(self, lin: ad.LinearFunction, in_tree, out_tree, n_out: int):
        self._lin = lin
        self._in_tree = in_tree
        self._out_tree = out_tree
        self._n_out = n_out

    @property
    def jaxpr(self) -> ir.ClosedJaxpr:
        return self._lin.closed

    @property
    def residuals(self) -> list:
        return self._lin.residuals

    def __call__(self, cotangents):
        flat_ct, ct_tree = tu.tree_flatten(cotangents)
        if ct_tree != self._out_tree:
            raise TypeError(
                f"vjp function: the cotangent must have the output's tree structure "
                f"{self._out_tree}, got {ct_tree}"
            )
        avals = self._lin.out_avals[: self._n_out]
        for i, (ct, aval) in enumerate(zip(flat_ct, avals)):
            ca = core.get_aval(ct)
            if ca.shape != aval.shape:
                raise ValueError(
                    f"vjp function: cotangent {i} has shape {ca.shape} but the output has shape {aval.shape}"
                )
        aux_zeros = [ad.Zero(a) for a in self._lin.out_avals[self._n_out :]]
        cts_in = self._lin.transpose([*flat_ct, *aux_zeros])
        out = [_instantiate_public(ct, a) for ct, a in zip(cts_in, self._lin.in_avals)]
        return tu.tree_unflatten(self._in_tree, out)


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Reverse mode: ``(fun(*primals), vjp_fn)``; ``vjp_fn(ct)`` returns a tuple of cotangents,
    one per primal. Implemented as linearize + transpose.

    >>> import funcgrad.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> float(f_vjp(1.0)[0])
    1.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    _check_array_leaves("vjp", flat_p, lambda: _arg_paths(primals))
    flat_p = _canonicalize(flat_p)
    flat, store = _flat_fun(fun, in_tree, has_aux)
    out_p, lin = ad.linearize_flat(flat, flat_p)
    out, aux = _split_aux(out_p, store, has_aux)
    fn = VJPFunction(lin, in_tree, store["out_tree"], store["n_out"])
    return (out, fn, aux) if has_aux else (out, fn)


def _check_grad_inputs(name, dyn_args, argnums, allow_int):
    leaves = tu.tree_leaves(tuple(dyn_args))
    paths = lambda: _arg_paths(tuple(dyn_args), argnums)  # noqa: E731 - named only on an error
    _check_array_leaves(name, leaves, paths)
    for i, leaf in enumerate(leaves):
        dtype = core.get_aval(leaf).dtype
        if not _dt.is_inexact(dtype) and not allow_int:
            path = paths()[i]
            raise TypeError(
                f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
                f"of np.inexact), but got {dtype.name} for {path}. If you want to use "
                "integer-valued inputs, use vjp or set allow_int to True; to differentiate with "
                f"respect to this argument, pass a float (e.g. {path}.astype(float))."
            )


def _check_scalar_output(name, out):
    leaves = tu.tree_leaves(out)
    if len(leaves) != 1:
        raise TypeError(
            f"{name} requires a function that returns one scalar, but it returned a pytree with "
            f"{len(leaves)} leaves. Use vjp or jacrev for non-scalar outputs."
        )
    aval = core.get_aval(leaves[0])
    if aval.shape != ():
        raise TypeError(
            f"{name} requires scalar output, but the function returned an array of shape "
            f"{aval.shape} ({aval.str_short()}). Reduce it (e.g. .sum() or .mean()), or use "
            "jacrev / vmap(grad) / vjp for non-scalar outputs."
        )
    if not _dt.is_inexact(aval.dtype):
        raise TypeError(
            f"{name} requires a real- or complex-valued output, but the function returned "
            f"{aval.dtype.name}. Make the output a float, e.g. by computing it from float inputs."
        )


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """``(fun(*args), grad(fun)(*args))`` in one pass.

    >>> import funcgrad.numpy as fnp
    >>> v, g = value_and_grad(lambda x: (x ** 2).sum())(fnp.array([1.0, 2.0]))
    >>> float(v), g.tolist()
    (5.0, [2.0, 4.0])
    """

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _normalize_argnums("grad", argnums, len(args))
        dyn = [args[i] for i in nums]
        _check_grad_inputs("grad", dyn, nums, allow_int)
        f = _partial_over(fun, args, kwargs, nums)
        if has_aux:
            out, f_vjp, aux = vjp(f, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f, *dyn)
        _check_scalar_output("grad", out)
        leaf = tu.tree_leaves(out)[0]
        ct = tu.tree_unflatten(tu.tree_structure(out), [np.ones((), core.get_aval(leaf).dtype)])
        grads = f_vjp(ct)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """The gradient of a scalar function with respect to ``args[argnums]`` (pytrees allowed).

    ``grad(grad(f))`` differentiates the backward program itself (PyTorch's
    ``create_graph=True``).

    >>> import funcgrad.numpy as fnp
    >>> float(grad(fnp.tanh)(0.0)), float(grad(grad(lambda x: x ** 3))(2.0))
    (1.0, 12.0)
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


def stop_gradient(x):
    """The identity whose derivative is zero (PyTorch's ``detach``/``no_grad``); maps over pytrees.

    >>> float(grad(lambda x: x * stop_gradient(x))(3.0))
    3.0
    """

    def stop(leaf):
        if core.is_array_like(leaf) and _dt.is_inexact(core.get_aval(leaf).dtype):
            return _ew.stop_gradient_p.bind(leaf)
        return leaf

    return tu.tree_map(stop, x)


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear function ``fun`` at the avals of ``primals``.

    >>> import funcgrad.numpy as fnp
    >>> t = linear_transpose(lambda x: 3.0 * x, 1.0)
    >>> float(t(1.0)[0])
    3.0
    """
    flat_p, in_tree = tu.tree_flatten(primals)
    in_avals = [core.get_aval(p) for p in flat_p]
    flat, store = _flat_fun(fun, in_tree)
    closed = trace_to_jaxpr(flat, [a.strip_weak_type() for a in in_avals])
    out_avals = closed.out_avals

    def transposed(*cotangents):
        flat_ct, ct_tree = tu.tree_flatten(cotangents[0] if len(cotangents) == 1 else cotangents)
        if len(flat_ct) != len(out_avals):
            raise TypeError(
                f"linear_transpose: expected {len(out_avals)} cotangent leaves, got {len(flat_ct)}"
            )
        undefined = [ad.UndefinedPrimal(a) for a in in_avals]
        cts = ad.backward_pass(closed.jaxpr, closed.consts, undefined, flat_ct)
        return tuple(tu.tree_unflatten(in_tree, [_instantiate_public(c, a) for c, a in zip(cts, in_avals)]))

    return transposed


# ----------------------------------------------------------------------------------------------
# vmap


def _mapped_size(leaf, axis):
    return core.get_aval(leaf).shape[axis]


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None, axis_name=None):
    """Vectorise ``fun`` over the ``in_axes`` of its arguments (a pytree prefix; ``None`` means
    broadcast); outputs get their mapped axis at ``out_axes``.

    >>> import funcgrad.numpy as fnp
    >>> vmap(lambda x, y: x @ y, in_axes=(0, None))(fnp.ones((5, 3)), fnp.ones(3)).shape
    (5,)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, int | tuple | dict)):
        raise TypeError(
            f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments, got {in_axes!r}"
        )

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must have one entry per positional argument: got in_axes of length "
                f"{len(in_axes)} for {len(args)} argument{'s' if len(args) != 1 else ''}"
            )
        all_args = (args, kwargs)
        flat_args, in_tree = tu.tree_flatten(all_args)
        try:
            in_dims = tu.broadcast_prefix((in_axes, 0), all_args)
        except ValueError as e:
            raise ValueError(
                f"vmap in_axes specification must be a tree prefix of the arguments: in_axes "
                f"{in_axes!r} does not match the arguments' structure {tu.tree_structure(args)}"
            ) from e
        paths = _arg_paths((*args, kwargs))
        _check_array_leaves("vmap", flat_args, paths)
        flat_args = _canonicalize(flat_args)
        sizes: dict[int, list[str]] = {}
        dims = []
        for leaf, d, path in zip(flat_args, in_dims, paths):
            if d is None:
                dims.append(None)
                continue
            if not isinstance(d, int | np.integer):
                raise TypeError(f"vmap in_axes leaves must be ints or None, got {d!r} for {path}")
            ndim = core.get_aval(leaf).ndim
            if not -ndim <= d < ndim:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {d}, which implies that "
                    f"its rank should be at least {max(d + 1, -d)}, but is only {ndim} (its shape "
                    f"is {core.get_aval(leaf).shape}) for {path}"
                )
            d = int(d) % ndim
            dims.append(d)
            sizes.setdefault(_mapped_size(leaf, d), []).append(path)
        if len(sizes) > 1:
            detail = "; ".join(f"{', '.join(p)} have size {s}" for s, p in sizes.items())
            raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {detail}")
        if sizes:
            (size,) = sizes
            if axis_size is not None and axis_size != size:
                raise ValueError(f"vmap: axis_size={axis_size} but the mapped inputs have size {size}")
        elif axis_size is not None:
            size = axis_size
        else:
            raise ValueError("vmap must have at least one non-None value in in_axes (or be given axis_size)")
        flat, store = _flat_fun(lambda a, k: fun(*a, **k), in_tree)

        def out_dims():
            dummy = tu.tree_unflatten(store["out_tree"], [0] * store["n_out"])
            try:
                return tu.broadcast_prefix(out_axes, dummy)
            except ValueError as e:
                raise ValueError(
                    f"vmap out_axes specification {out_axes!r} must be a tree prefix of the "
                    f"outputs' structure {store['out_tree']}"
                ) from e

        outs = batching.vmap_flat(flat, size, dims, out_dims, flat_args, axis_name)
        return tu.tree_unflatten(store["out_tree"], [_to_public(o) for o in outs])

    return vmapped


# ----------------------------------------------------------------------------------------------
# Jacobians and Hessians


def _std_basis(leaves):
    """The identity matrix split per leaf: leaf i gets shape (N, *leaf_shape)."""
    avals = [core.get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    total = int(sum(sizes))
    dtype = _dt.result_type(*[(a.dtype, False) for a in avals])[0] if avals else _dt.float64
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for a, s in zip(avals, sizes):
        out.append(eye[:, start : start + s].reshape((total, *a.shape)).astype(a.dtype))
        start += s
    return out


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian by forward mode (vmap of jvp over the input basis); result blocks have shape
    ``out.shape + in.shape``.

    >>> import funcgrad.numpy as fnp
    >>> jacfwd(lambda x: x ** 2)(fnp.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _normalize_argnums("jacfwd", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacfwd", dyn, nums, allow_int=False)
        f = _partial_over(fun, args, kwargs, nums)
        flat_in, in_tree = tu.tree_flatten(dyn)
        in_avals = [core.get_aval(x) for x in flat_in]
        basis = _std_basis(flat_in)

        def push(*tangent_leaves):
            tangents = tu.tree_unflatten(in_tree, tangent_leaves)
            if has_aux:
                y, t, aux = jvp(f, dyn, tangents, has_aux=True)
                return y, t, aux
            y, t = jvp(f, dyn, tangents)
            return y, t

        axes = (None, -1, None) if has_aux else (None, -1)
        res = vmap(push, in_axes=0, out_axes=axes)(*basis)
        y, jac = res[0], res[1]
        y_leaves, out_tree = tu.tree_flatten(y)
        jac_leaves = tu.tree_leaves(jac)
        result = _assemble_jacobian(
            jac_leaves,
            [core.get_aval(o) for o in y_leaves],
            in_avals,
            in_tree,
            out_tree,
            isinstance(argnums, int),
        )
        return (result, res[2]) if has_aux else result

    return jacfun


def _assemble_jacobian(jac_leaves, out_avals, in_avals, in_tree, out_tree, single_arg):
    """Split per-output Jacobians, stacked along a last flattened-input axis, into
    ``out.shape + in.shape`` blocks per input leaf."""
    sizes = [a.size for a in in_avals]
    offsets = np.cumsum([0, *sizes])
    per_out = []
    for jac, oa in zip(jac_leaves, out_avals):
        blocks = []
        for ia, start, stop in zip(in_avals, offsets[:-1], offsets[1:]):
            piece = fnp.reshape(jac[..., int(start) : int(stop)], (*oa.shape, *ia.shape))
            blocks.append(_to_public(piece))
        tree = tu.tree_unflatten(in_tree, blocks)
        per_out.append(tree[0] if single_arg else tree)
    return tu.tree_unflatten(out_tree, per_out)


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
):
    """The Jacobian by reverse mode (vmap of the vjp function over the output basis).

    >>> import funcgrad.numpy as fnp
    >>> jacrev(lambda x: x ** 2)(fnp.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _normalize_argnums("jacrev", argnums, len(args))
        dyn = tuple(args[i] for i in nums)
        _check_grad_inputs("jacrev", dyn, nums, allow_int)
        f = _partial_over(fun, args, kwargs, nums)
        if has_aux:
            y, f_vjp, aux = vjp(f, *dyn, has_aux=True)
        else:
            y, f_vjp = vjp(f, *dyn)
        y_leaves, out_tree = tu.tree_flatten(y)
        flat_in, in_tree = tu.tree_flatten(dyn)
        in_avals = [core.get_aval(x) for x in flat_in]
        out_avals = [core.get_aval(o) for o in y_leaves]
        basis = _std_basis(y_leaves)

        def pull(*ct_leaves):
            return tu.tree_leaves(f_vjp(tu.tree_unflatten(out_tree, ct_leaves)))

        cts = vmap(pull)(*basis)  # per input leaf: (M, *in_shape)
        # Rearrange to per-output blocks: out.shape + in.shape.
        m_sizes = [a.size for a in out_avals]
        m_off = np.cumsum([0, *m_sizes])
        per_out = []
        for oa, start, stop in zip(out_avals, m_off[:-1], m_off[1:]):
            blocks = [
                _to_public(fnp.reshape(ct[int(start) : int(stop)], (*oa.shape, *ia.shape)))
                for ct, ia in zip(cts, in_avals)
            ]
            tree = tu.tree_unflatten(in_tree, blocks)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
        result = tu.tree_unflatten(out_tree, per_out)
        return (result, aux) if has_aux else result

    return jacfun


jacobian = jacrev


def hessian(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
):
    """The Hessian, as ``jacfwd(jacrev(fun))`` (forward-over-reverse).

    >>> import funcgrad.numpy as fnp
    >>> hessian(lambda x: (x ** 3).sum())(fnp.array([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


# ----------------------------------------------------------------------------------------------
# Staging


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), return_shape: bool = False):
    """``make_jaxpr(f)(*args)`` is the jaxpr of ``f`` at the shapes/dtypes of ``args``; its
    ``str()`` reads like JAX's. Works on transformed functions: ``make_jaxpr(grad(f))`` shows the
    backward program.

    >>> import funcgrad.numpy as fnp
    >>> print(make_jaxpr(fnp.sin)(1.0))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        nums = tuple(i for i in range(len(args)) if i not in statics)
        dyn = tuple(args[i] for i in nums)
        f = _partial_over(fun, args, kwargs, nums)
        flat_in, in_tree = tu.tree_flatten(dyn)
        names = _named_arg_paths(fun, dyn, nums)
        _check_array_leaves("make_jaxpr", flat_in, names)
        flat, store = _flat_fun(f, in_tree)
        avals = [core.get_aval(x) for x in flat_in]
        closed = trace_to_jaxpr(flat, avals, names, f"make_jaxpr({getattr(fun, '__name__', 'fun')})")
        if return_shape:
            shapes = tu.tree_unflatten(
                store["out_tree"], [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
            )
            return closed, shapes
        return closed

    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes and dtypes of ``fun(*args)`` without computing anything.

    >>> import funcgrad.numpy as fnp
    >>> eval_shape(lambda x: x @ x.T, ShapeDtypeStruct((3, 4), "float32"))
    ShapeDtypeStruct(shape=(3, 3), dtype=float32)
    """
    flat_in, in_tree = tu.tree_flatten((args, kwargs), lambda x: isinstance(x, ShapeDtypeStruct))
    avals = [
        ir.ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))
        if isinstance(x, ShapeDtypeStruct)
        else core.get_aval(x)
        for x in flat_in
    ]
    flat, store = _flat_fun(lambda a, k: fun(*a, **k), in_tree)
    closed = trace_to_jaxpr(flat, avals)
    return tu.tree_unflatten(
        store["out_tree"], [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
    )


# ----------------------------------------------------------------------------------------------
# Values


def device_put(x, device=None):
    """Make every leaf of ``x`` an ``Array`` (on ``device`` when given)."""
    return tu.tree_map(lambda v: fnp.asarray(v) if core.is_array_like(v) else v, x)


def device_get(x):
    """Every ``Array`` leaf of ``x`` as a NumPy array."""
    return tu.tree_map(lambda v: np.asarray(v) if isinstance(v, Array) else v, x)


def block_until_ready(x):
    """Wait until every Array leaf of ``x`` is computed; returns ``x``."""
    for leaf in tu.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
