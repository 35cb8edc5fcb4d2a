"""The argument handling that every transformation of ``funcgrad.api`` shares: pytree flattening
of functions and arguments, readable names for leaves (``args[0]['w']``), argument checks, and the
dtype rules of differentiation (which inputs and outputs ``grad``, ``jacfwd`` and ``jacrev`` accept,
with and without ``holomorphic=True``).

Layer: surface. Imports the kernel (core, ad, ir, dtypes, tree_util, array) and numpy; nothing of
the surface, so ``api``, ``introspect`` and ``debug`` can all use it.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad.kernel import ad, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import hooks as kernel_hooks
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.primitives import sharding as shp


def to_public(x):
    """Concrete results become ``Array``s; tracers and Arrays pass through."""
    if isinstance(x, Array | core.Tracer):
        return x
    if isinstance(x, np.ndarray | np.generic):
        return Array._from_owned(_dt.canonical_value(np.asarray(x)))
    if type(x) in _dt.typed_scalar_types:
        return x  # (a scalar a primitive forwarded, typed by its bind: JAX returns it as it is)
    if type(x) in python_scalar_types:
        return Array._from_owned(np.asarray(x, _dt.python_scalar_dtype(x)), weak_type=type(x) is not bool)
    return x


def canonicalize(leaves) -> list:
    """Python scalars become weakly typed 0-d Arrays (NOTE: [weak types]), as at JAX's API
    boundary, so rules never see bare Python numbers as primals."""
    return [
        Array._from_owned(np.asarray(x, _dt.python_scalar_dtype(x)), weak_type=type(x) is not bool)
        if type(x) in python_scalar_types
        else x
        for x in leaves
    ]  # (the default dtypes of the x64 mode, NOTE: [x64 mode])


def canonical_numpy(leaves) -> list:
    """``leaves`` with each 64-bit NumPy value converted to 32 bits when x64 is off (NOTE: [x64
    mode]); anything else as it is. JAX's ``vjp`` and ``grad`` hand such values on canonical (a
    custom rule's primal, an output that is an input, are float32), its ``jvp`` and ``linearize``
    as the caller gave them.

    >>> canonical_numpy([np.float32(1.0), 2.0])
    [np.float32(1.0), 2.0]
    """
    return [_dt.canonical_value(x) for x in leaves]


def wraps(fun: Callable, docstr: str | None = None, **fmt):
    """``functools.wraps`` that copies what it can: a callable object whose ``__name__`` or
    ``__doc__`` is not a string (an equinox Module instance) is still wrapped, as JAX's
    transformations accept it.

    >>> class Odd:
    ...     __name__ = 3
    ...     def __call__(self, x):
    ...         return x
    >>> wraps(Odd())(lambda x: x).__wrapped__.__class__.__name__
    'Odd'
    """

    def decorate(wrapper):
        for attr in functools.WRAPPER_ASSIGNMENTS:
            try:
                setattr(wrapper, attr, getattr(fun, attr))
            except (AttributeError, TypeError):
                pass
        try:
            wrapper.__dict__.update(getattr(fun, "__dict__", {}))
        except (AttributeError, TypeError):
            pass
        wrapper.__wrapped__ = fun
        if docstr is not None:  # (JAX's docstring of the transformed function)
            try:
                name = getattr(fun, "__name__", None)
                if name is None and isinstance(fun, functools.partial):
                    name = getattr(fun.func, "__name__", None)
                doc = getattr(fun, "__doc__", "") or ""
                wrapper.__doc__ = docstr.format(fun=name or "<unnamed function>", doc=doc, **fmt)
            except Exception:  # noqa: BLE001 - as JAX's wraps: a docstring that does not format is left
                pass
        return wrapper

    return decorate


# JAX's docstrings of transformed functions (jax._src.api), formatted by ``wraps``.
GRAD_DOC = (
    "Gradient of {fun} with respect to positional argument(s) {argnums}. Takes the same arguments as "
    "{fun} but returns the gradient, which has the same shape as the arguments at positions {argnums}."
)
VALUE_AND_GRAD_DOC = (
    "Value and gradient of {fun} with respect to positional argument(s) {argnums}. Takes the same "
    "arguments as {fun} but returns a two-element tuple where the first element is the value of {fun} "
    "and the second element is the gradient, which has the same shape as the arguments at positions "
    "{argnums}."
)
JACOBIAN_DOC = (
    "Jacobian of {fun} with respect to positional argument(s) {argnums}. Takes the same arguments as "
    "{fun} but returns the jacobian of the output with respect to the arguments at positions {argnums}."
)


def abstractify(x) -> ir.ShapedArray:
    """The abstract value a leaf stands for at an abstract entry point (``make_jaxpr``,
    ``eval_shape``, ``linear_transpose``): as in JAX, a ``ShapedArray`` stands for itself and a
    ``ShapeDtypeStruct`` (anything with an ``aval``, or with ``shape`` and ``dtype``) for its
    abstract value; a value for its own.

    >>> abstractify(ir.ShapedArray((2,), np.float32)), abstractify(1.0)
    (ShapedArray(float32[2]), ShapedArray(float64[], weak_type=True))
    """
    if isinstance(x, ir.ShapedArray) or x is ir.abstract_token:
        return x  # (an aval stands for itself, 64-bit ones too, as in JAX)
    if core.is_array_like(x) or isinstance(x, core.Tracer):
        return core.get_aval(x)
    aval = getattr(x, "aval", None)  # funcgrad's ShapeDtypeStruct (its sharding is part of it)
    if isinstance(aval, ir.ShapedArray):
        return _canonical_aval(aval)
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:  # another library's shape-and-dtype struct
        return ir.ShapedArray(shape, _dt.canonical(np.dtype(dtype)), bool(getattr(x, "weak_type", False)))
    return core.get_aval(x)  # (its error names the type)


def _canonical_aval(aval: ir.ShapedArray) -> ir.ShapedArray:
    # A ShapeDtypeStruct of float64 stands for a float32 argument in 32-bit mode, as JAX's
    # (NOTE: [x64 mode]).
    if _dt.x64_enabled or not isinstance(aval.dtype, np.dtype) or aval.dtype not in _dt.TO_32:
        return aval
    return aval.update(dtype=_dt.TO_32[aval.dtype])


def is_abstract(x) -> bool:
    """Whether ``x`` is an abstract stand-in (``ShapedArray``, ``ShapeDtypeStruct``) rather than a
    value: ``abstractify`` takes it, the array checks do not.

    >>> is_abstract(ir.ShapedArray((), np.float32)), is_abstract(np.ones(2))
    (True, False)
    """
    if isinstance(x, ir.ShapedArray):
        return True
    if core.is_array_like(x) or isinstance(x, core.Tracer):
        return False
    return isinstance(getattr(x, "aval", None), ir.ShapedArray) or (
        isinstance(getattr(x, "shape", None), tuple) and isinstance(getattr(x, "dtype", None), np.dtype)
    )


def no_jax_array(leaf) -> None:
    """JAX's ValueError for an argument of a transformation (``jit``, ``grad``, ...) that is an
    object with ``__jax_array__`` and no pytree: JAX 0.10 no longer converts it when it traces
    (``jnp`` functions still take it; ``jnp.asarray(x)`` or registering it as a pytree is the fix)."""
    if getattr(leaf, "__jax_array__", None) is not None:
        raise ValueError(
            "Triggering __jax_array__() during abstractification is no longer supported. To avoid this "
            "error, either explicitly convert your object using jax.numpy.array(), or register your "
            "object as a pytree."
        )


def check_array_leaves(name: str, leaves, paths, what="argument"):
    """``paths``: the leaves' names, or a function computing them (only called on an error, since
    naming leaves costs more than checking them on the eager hot path)."""
    for i, leaf in enumerate(leaves):
        if not core.is_array_like(leaf) or (type(leaf) is np.ndarray and leaf.dtype == object):
            if type(leaf) is core.Token:
                continue  # tokens pass through transformations (NOTE: [tokens])
            no_jax_array(leaf)
            path = _path(paths, i)
            # JAX's words first (code written for JAX matches them), then funcgrad's.
            if name.startswith("jit") and what == "argument":
                head = (
                    f"Error interpreting argument to {name[4:-1] or 'the function'} as an abstract "
                    f"array. The problematic value is of type {type(leaf)} and was passed to the "
                    f"function at path {path}."
                )
            else:
                head = f"Argument '{leaf!s:.60}' of type {type(leaf)} is not a valid JAX type."
            raise TypeError(
                f"{head}\n{name}: {what} {path} is a {type(leaf).__name__} ({leaf!r:.60}), which is "
                "not an array. Transformed functions take arrays (or pytrees of arrays); pass other "
                "values through a closure, functools.partial, or jit's static_argnums."
            )


def flatten_outputs(out, name: str, fun: Callable | None = None):
    """The leaves and tree of a traced function's output, every leaf checked to be an array
    (``name`` says which function: ``jit(f)``, ``scan body``; with ``fun``, the traced function,
    the error starts with JAX's words for it)."""
    leaves, tree = tu.tree_flatten(out)
    for i, leaf in enumerate(leaves):
        if not core.is_array_like(leaf) and type(leaf) is not core.Token:
            jax_words = ""
            if type(leaf).__name__ == "ShapeDtypeStruct" and is_abstract(leaf):  # (JAX's words first)
                jax_words = (
                    "A ShapeDtypeStruct does not have a value and cannot be used as a constant in a JAX "
                    "function. "
                )
            elif fun is not None:
                where = ""
                if tree.num_leaves > 1 or tu.tree_structure(leaf) != tree:
                    path = tu.tree_leaves_with_path(out)[i][0]
                    where = f" at output component {tu.keystr(path)}"
                jax_words = (
                    f"function {fun_sourceinfo(fun)} traced for jit returned a value of type {type(leaf)}"
                    f"{where}, which is not a valid JAX type. "
                )
            raise TypeError(
                f"{jax_words}{name} returned a {type(leaf).__name__}, which is not an array: it must return "
                "arrays (or pytrees of arrays)"
            )
    return leaves, tree


def fun_sourceinfo(fun) -> str:
    """JAX's ``api_util.fun_sourceinfo``: ``name at file:line`` of ``fun`` (through partials and
    wrappers), or ``<unknown>``."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    try:
        return f"{fun.__name__} at {fun.__code__.co_filename}:{fun.__code__.co_firstlineno}"
    except AttributeError:
        return "<unknown>"


def signature_arg_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """JAX's names of the leaves of ``(args, kwargs)``: the parameter's name and the path inside it
    (``params[0]['w']``, ``rest[1]`` for ``*rest``, ``k`` for a keyword)."""
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        params = ()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")
    out = []
    for path, _ in tu.tree_leaves_with_path(tuple(args)):
        i, rest = path[0].idx, tu.keystr(path[1:])
        out.append(
            f"{positional[i]}{rest}" if i < len(positional) else f"{star}[{i - len(positional)}]{rest}"
        )
    for path, _ in tu.tree_leaves_with_path(kwargs):
        out.append(f"{path[0].key}{tu.keystr(path[1:])}")
    return out


def arg_paths(args: tuple, argnums: Sequence[int] | None = None) -> list[str]:
    """Readable names of the leaves of ``args``: ``args[0]['w']``."""
    pairs = tu.tree_leaves_with_path(tuple(args))
    out = []
    for path, _ in pairs:
        first, rest = path[0], path[1:]
        index = first.idx if argnums is None else argnums[first.idx]
        out.append(f"args[{index}]{tu.keystr(rest)}")
    return out


def named_arg_paths(fun: Callable, args: tuple, argnums: Sequence[int]) -> list[str]:
    """Like ``arg_paths`` but with the function's parameter names (``x['w']`` rather than
    ``args[0]['w']``), for error messages about traced values."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return arg_paths(args, argnums)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out = []
    for path, _ in tu.tree_leaves_with_path(tuple(args)):
        index = argnums[path[0].idx]
        name = positional[index] if index < len(positional) else f"args[{index}]"
        out.append(f"{name}{tu.keystr(path[1:])}")
    return out


def normalize_argnums(name: str, argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:  # (JAX fails inside: 'max() arg is an empty sequence', also a ValueError)
        raise ValueError(
            f"{name}: argnums={argnums!r} selects no argument to differentiate with respect to; "
            "pass an index or a non-empty tuple of indices"
        )
    for a in nums:
        if not isinstance(a, int | np.integer):
            raise TypeError(f"{name}: argnums must be ints, got {argnums!r}")
        if name == "grad" and a >= nargs:  # (JAX's type and words)
            raise TypeError(
                f"differentiating with respect to argnums={argnums!r} requires at least {max(nums) + 1} "
                f"positional arguments to be passed by the caller, but got only {nargs} positional "
                "arguments."
            )
        if not -nargs <= a < nargs:
            raise ValueError(  # (JAX's words, then funcgrad's)
                "Positional argument indices, e.g. for `static_argnums`, must have value greater than or "
                f"equal to -len(args) and less than len(args), but got value {a} for len(args) == {nargs}. "
                f"({name}: argnums={argnums!r} is out of range for a function called with {nargs} "
                f"positional argument{'s' if nargs != 1 else ''})"
            )
    return tuple(int(a) % nargs for a in nums)


def partial_over(fun: Callable, args: tuple, kwargs: dict, argnums: tuple[int, ...]):
    """``fun`` as a function of ``args[argnums]`` only (the others fixed)."""

    def f(*dyn):
        full = list(args)
        for i, a in zip(argnums, dyn):
            full[i] = a
        return fun(*full, **kwargs)

    return f


# NOTE: [naming the user's transformation]
# Concretization errors (``if x > 0``, ``np.sin(x)`` on a traced value) are raised by the kernel's
# tracers, which know their trace ("a forward-mode derivative (jvp)"), not the API the user called:
# ``grad`` runs jvp and partial evaluation. Each API entry point names itself with
# ``user_transformation(name, fun)`` (``grad`` around its ``vjp``); ``flat_fun`` then rewrites the
# message of an error raised by that trace to say ``grad(loss)``, and adds the fix for a NumPy
# function called on a traced value (use funcgrad.numpy). Errors of an inner transformation (a jit
# inside the grad) keep their own, innermost, name.
_names = threading.local()
_TRACE_WORDS = {
    "jvp": ("a forward-mode derivative (jvp)",),
    "vmap": ("a vectorised function (vmap)",),
}
_JVP_APIS = {"grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "jacobian", "hessian"}
NUMPY_HINT = (
    "\nNumPy functions cannot compute on traced values: inside transformed functions use funcgrad.numpy "
    "(import funcgrad.numpy as fnp; fnp.sin(x)) in place of numpy, which gives the same results and is "
    "differentiable, batchable and compilable."
)


class user_transformation:
    """Name the transformation the user called while it traces ``fun`` (NOTE: [naming the user's
    transformation]). ``sealed``: the transformations it is made of (``hessian``'s jacfwd and
    jacrev) keep its name. (A class, not a generator context manager: it runs on every eager
    ``grad`` call.)"""

    __slots__ = ("name", "fun", "sealed", "stack")

    def __init__(self, name: str, fun: Callable, sealed: bool = False):
        self.name, self.fun, self.sealed = name, fun, sealed

    def __enter__(self):
        stack = self.stack = _names.__dict__.setdefault("stack", [])
        if stack and stack[-1][2]:
            stack.append(stack[-1])
        else:
            fun = self.fun
            stack.append((self.name, getattr(fun, "__name__", None) or type(fun).__name__, self.sealed))

    def __exit__(self, *exc):
        self.stack.pop()


def explain_concretization(
    e: core.ConcretizationTypeError, label: str | None, kind: str | None, traced: str | None = None
) -> None:
    """Rewrite ``e``'s message in place: name the user's transformation ``label`` where the message
    names the kernel's trace of ``kind``, add the funcgrad.numpy fix for NumPy calls, and, with
    ``traced`` (``"f at file:line for jit"``), JAX's line naming the function being traced (the
    innermost: an enclosing trace finds it written)."""
    if not e.args or getattr(e, "_funcgrad_explained", False):
        return
    msg = str(e.args[0])
    if traced is not None and "The error occurred while tracing the function" not in msg:
        words = f"The error occurred while tracing the function {traced}."  # (JAX's words)
        if "\nThis concrete value was not available" in msg:
            msg = msg.replace("\nThis concrete value", f"\n{words} This concrete value", 1)
        elif "\nIt was called (" in msg:
            msg = msg.replace("\nIt was called (", f"\n{words}\nIt was called (", 1)
    if label is not None:
        for words in _TRACE_WORDS.get(kind, ()):
            if f"inside {words}" in msg:
                msg = msg.replace(f"inside {words}", f"inside {label}", 1)
                e._funcgrad_explained = True
                break
    if "numpy.asarray()" in msg and NUMPY_HINT not in msg:
        msg += NUMPY_HINT
    e.args = (msg, *e.args[1:])


def flat_fun(fun: Callable, in_tree, has_aux: bool = False, transform: str | None = None):
    """Wrap a pytree function as a flat one; the output trees are recorded in ``store``. With
    ``transform`` (the API's name), concretization errors name it (NOTE: [naming the user's
    transformation])."""
    store: dict[str, Any] = {}
    stack = getattr(_names, "stack", None)
    if stack:
        label = f"{stack[-1][0]}({stack[-1][1]})"
        kind = "jvp" if stack[-1][0] in _JVP_APIS else stack[-1][0]
    elif transform is not None:
        label = f"{transform}({getattr(fun, '__name__', None) or type(fun).__name__})"
        kind = "jvp" if transform in _JVP_APIS else transform
    else:
        label = kind = None

    def flat(*leaves):
        args = tu.tree_unflatten(in_tree, leaves)
        try:
            out = fun(*args)
        except core.ConcretizationTypeError as e:
            explain_concretization(e, label, kind)
            raise
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError(  # (JAX's words first)
                    "expected function with aux output to return a two-element tuple, but got type "
                    f"{type(out)} with value {out!r} (has_aux=True: return (output, aux))"
                )
            out, aux = out
            aux_leaves, store["aux_tree"] = tu.tree_flatten(aux)
            # Aux leaves that are not traced values (strings, objects, and constants: Python
            # scalars, NumPy values) are returned as they are, as in JAX; only Arrays and tracers
            # travel through the transformation.
            store["aux_static"] = {
                i: a
                for i, a in enumerate(aux_leaves)
                if not core.is_array_like(a)
                or type(a) in python_scalar_types
                or isinstance(a, np.ndarray | np.generic)
            }
            if store["aux_static"]:
                aux_leaves = [a for i, a in enumerate(aux_leaves) if i not in store["aux_static"]]
        else:
            aux_leaves = []
        out_leaves, store["out_tree"] = tu.tree_flatten(out)
        store["n_out"] = len(out_leaves)
        return [*out_leaves, *aux_leaves]

    return flat, store


def split_aux(leaves, store, has_aux: bool):
    out = tu.tree_unflatten(store["out_tree"], [to_public(x) for x in leaves[: store["n_out"]]])
    if not has_aux:
        return out, None
    traced = iter(to_public(x) for x in leaves[store["n_out"] :])
    static = store.get("aux_static") or {}
    n = store["aux_tree"].num_leaves
    aux = tu.tree_unflatten(store["aux_tree"], [static[i] if i in static else next(traced) for i in range(n)])
    return out, aux


def unit_cotangent(aval: ir.ShapedArray) -> Array:
    """The cotangent 1 that ``grad`` pulls back through a scalar output of ``aval``: it has the
    output's weak type, as in JAX (a weak output gives weak gradients), and its cotangent type:
    an output reduced over mesh axes gets a cotangent unreduced over them (the 1 on one device of
    each group, zeros on the others), and the reverse (JAX's ``_one_vjp``; NOTE: [unreduced
    values] in funcgrad/_sharding_unreduced.py)."""
    one = Array._from_owned(np.ones((), aval.dtype), aval.weak_type)
    spec = getattr(getattr(aval, "_sharding", None), "spec", None)
    if spec is None or not (spec.unreduced or spec.reduced):
        return one
    mesh = aval._sharding.mesh
    if not hasattr(mesh, "_flat") and kernel_hooks.context_mesh is not None:
        mesh = kernel_hooks.context_mesh() or mesh  # (a constraint names the concrete mesh)
    return shp.sharding_constraint_p.bind(
        one, mesh=mesh, spec=(), **shp.ur_params(spec.reduced, spec.unreduced)
    )


def zeros_for(aval: ir.ShapedArray):
    if aval.dtype == _dt.float0:
        return np.zeros(aval.shape, _dt.float0)
    return to_public(ad.instantiate(ad.Zero(aval)))


def instantiate_public(ct, aval):
    return zeros_for(aval) if type(ct) is ad.Zero or ct is None else to_public(ct)


# ----------------------------------------------------------------------------------------------
# NOTE: [differentiation dtypes]
# Which dtypes each derivative accepts, as in JAX (its error texts, with funcgrad's names):
# - reverse mode (grad, jacrev): inputs inexact (integers only with allow_int=True, giving float0
#   gradients); outputs real floating. A complex input with a real output is fine (the gradient is
#   JAX's conjugate convention).
# - forward mode (jacfwd): inputs real floating; outputs anything.
# - holomorphic=True (all of them): inputs and outputs complex. The derivative is then f'(z), the
#   complex derivative of a holomorphic f: the vjp with cotangent 1 (grad, jacrev) or the jvp with
#   tangent 1 (jacfwd), which funcgrad's complex rules give without conjugation, as JAX's do.
# A complex output without holomorphic=True is refused, never silently differentiated as if it
# were holomorphic: the user says which derivative they mean (holomorphic=True, or vjp directly).


def check_input_dtypes(
    name: str, leaves, paths, *, holomorphic: bool, allow_int: bool, forward: bool = False
):
    """Refuse the inputs ``name`` cannot differentiate (NOTE: [differentiation dtypes]); ``paths``
    as in ``check_array_leaves``."""
    for i, leaf in enumerate(leaves):
        dtype = core.dtype_of(leaf)
        if holomorphic:
            if dtype.kind != "c":
                raise TypeError(
                    f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dtype.name} for {_path(paths, i)}."
                )
        elif forward and not _dt.is_float(dtype):
            raise TypeError(
                f"{name} requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
                f"but got {dtype.name} for {_path(paths, i)}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving complex "
                "inputs or integer inputs, use funcgrad.jvp directly."
            )
        elif not _dt.is_inexact(dtype) and not allow_int:
            path = _path(paths, i)
            raise TypeError(
                f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
                f"of np.inexact), but got {dtype.name} for {path}. If you want to use "
                "integer-valued inputs, use vjp or set allow_int to True; to differentiate with "
                f"respect to this argument, pass a float (e.g. {path}.astype(float))."
            )


def check_output_dtype(name: str, aval: ir.ShapedArray, *, holomorphic: bool, forward: bool = False):
    """Refuse an output ``name`` cannot differentiate (NOTE: [differentiation dtypes])."""
    if holomorphic:
        if aval.dtype.kind != "c":
            raise TypeError(
                f"{name} with holomorphic=True requires outputs with complex dtype, but got "
                f"{aval.dtype.name}."
            )
    elif forward:
        return
    elif aval.dtype.kind == "c":
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
            f"but got {aval.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For "
            "differentiation of non-holomorphic functions involving complex outputs, use "
            "funcgrad.vjp directly."
        )
    elif not _dt.is_float(aval.dtype):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
            f"but got {aval.dtype.name}. Make the output a float, e.g. by computing it from float "
            "inputs; for functions with integer outputs, use funcgrad.vjp directly."
        )


def check_scalar_output(name: str, out, *, holomorphic: bool) -> None:
    """``grad``'s output: one scalar leaf of a differentiable dtype."""
    leaves = tu.tree_leaves(out)
    if len(leaves) != 1:
        raise TypeError(  # (JAX's first sentence, which code written for JAX matches)
            f"Gradient only defined for scalar-output functions. {name} requires a function that "
            f"returns one scalar, but it returned a pytree with {len(leaves)} leaves. Use vjp or "
            "jacrev for non-scalar outputs."
        )
    aval = core.get_aval(leaves[0])
    if aval.shape != ():
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: {aval.shape}. "
            f"{name} requires scalar output ({aval.str_short()}): reduce it (e.g. .sum() or "
            ".mean()), or use jacrev / vmap(grad) / vjp for non-scalar outputs."
        )
    check_output_dtype(name, aval, holomorphic=holomorphic)


def _path(paths, i: int) -> str:
    return (paths() if callable(paths) else paths)[i]
