"""``vectorize`` and ``apply_along_axis`` of funcgrad.numpy: a Python function mapped over arrays
with ``vmap`` (NumPy's generalized-ufunc signatures, ``excluded`` arguments, 1-D slices along an
axis), so the function is traced once and batched, as in jax.numpy.

Layer: surface. Imports the other funcgrad.numpy modules, the kernel's batching (``vmap_flat``) and
pytrees.
"""

from __future__ import annotations

import functools
import math
import re
import warnings

import numpy as np

from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.batching import vmap_flat
from funcgrad.numpy._core import (
    _flags,
    asarray,
    aval,
    broadcast_to,
    normalize_axis,
)
from funcgrad.numpy.manipulation import moveaxis, reshape

__all__ = ["apply_along_axis", "vectorize"]


def _vmap(fn, arrays):
    """``vmap`` over axis 0 of ``arrays`` with the kernel's batching (pytree outputs allowed).
    The arrays are flattened too: a typed key array is a pytree over its data, whose axis 0 is the
    keys' (the function gets key arrays back, as under ``vmap``)."""
    tree = []
    n = aval(arrays[0]).shape[0]
    leaves, in_tree = tu.tree_flatten(list(arrays))

    def flat_fn(*xs):
        out_leaves, treedef = tu.tree_flatten(fn(*tu.tree_unflatten(in_tree, list(xs))))
        tree.append(treedef)
        return [asarray(leaf) for leaf in out_leaves]

    outs = vmap_flat(flat_fn, n, [0] * len(leaves), lambda: [0] * tree[0].num_leaves, leaves)
    return tu.tree_unflatten(tree[0], outs)


# NumPy's generalized-ufunc signatures: "(m,n),(n)->(m)".
_DIM = r"\w+"
_ARG = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_SIGNATURE = rf"^{_ARG}(?:,{_ARG})*->{_ARG}(?:,{_ARG})*$"


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    compact = signature.replace(" ", "")
    if not re.match(_SIGNATURE, compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = compact.split("->")
    return [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, ins)], [
        tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, outs)
    ]


def _bind_core_dims(sizes: dict, shape, core, what: str, exact: bool) -> None:
    """Check ``shape``'s trailing core dimensions against (and record them in) ``sizes``."""
    if len(shape) < len(core) or (exact and len(shape) != len(core)):
        # (JAX's words for each case, then which argument or output and its core dimensions)
        words = (
            f"output shape {tuple(shape)} does not match"
            if exact
            else f"input with shape {tuple(shape)} does not have enough dimensions"
        )
        raise ValueError(f"vectorize: {words} the core dimensions {core} ({what})")
    for name, size in zip(core, shape[len(shape) - len(core) :]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(
                f"vectorize: inconsistent size for core dimension {name!r}: {size} vs {sizes[name]} ({what})"
            )


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """``pyfunc`` applied over the broadcast leading ("loop") dimensions of its arguments, with
    ``vmap``. Without ``signature`` it is written for scalars; with a generalized-ufunc
    ``signature`` such as ``"(n),(n)->()"`` each argument keeps its trailing core dimensions and
    the outputs get theirs (checked, sizes matched by name). Keyword arguments are vectorized
    too; ``excluded`` names positions or keywords passed through unchanged.

    >>> vectorize(lambda a, b: a + 2 * b)(np.array([1.0, 2.0]), 1.0).tolist()
    [3.0, 4.0]
    >>> dot = vectorize(lambda u, v: (u * v).sum(), signature="(n),(n)->()")
    >>> dot(np.ones((2, 3)), np.arange(3.0)).tolist()
    [3.0, 3.0]
    """
    if any(not isinstance(e, int | str) for e in excluded):
        raise TypeError(
            "jax.numpy.vectorize can only exclude integer or string arguments (positions and keyword "
            f"names), but excluded={excluded!r}"
        )
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    parsed = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        dyn = [i for i in range(len(args)) if i not in excluded]
        dyn_kw = [k for k in kwargs if k not in excluded]
        in_core, out_core = parsed if parsed is not None else ([()] * (len(dyn) + len(dyn_kw)), None)
        # A positional None is passed through unchanged (JAX's), where its core dimensions are ().
        none_pos = {i for i in dyn if args[i] is None}
        if none_pos:
            if len(in_core) == len(dyn) + len(dyn_kw) and any(in_core[dyn.index(i)] != () for i in none_pos):
                raise ValueError(f"Cannot pass None at locations {none_pos} with signature={signature!r}")
            in_core = [c for k, c in enumerate(in_core) if k >= len(dyn) or dyn[k] not in none_pos]
            dyn = [i for i in dyn if i not in none_pos]
        arrays = [asarray(args[i]) for i in dyn] + [asarray(kwargs[k]) for k in dyn_kw]
        if len(in_core) != len(arrays):
            raise TypeError(
                f"wrong number of positional arguments: the signature {signature!r} has {len(in_core)} "
                f"inputs, got {len(arrays)} vectorized arguments"
            )
        sizes: dict = {}
        for k, (x, core_dims) in enumerate(zip(arrays, in_core)):
            _bind_core_dims(sizes, x.shape, core_dims, f"argument {k}", exact=False)
        loops = [x.shape[: x.ndim - len(c)] for x, c in zip(arrays, in_core)]
        if _flags["rank_promotion"] != "allow" and len({len(lp) for lp in loops if lp}) > 1:
            msg = f"operands with shapes {[x.shape for x in arrays]} require rank promotion"
            if _flags["rank_promotion"] == "raise":  # (JAX's check, as for its elementwise functions)
                raise ValueError(msg)
            warnings.warn(msg, UserWarning, stacklevel=2)
        loop = np.broadcast_shapes(*loops) if loops else ()

        def core_fn(*xs):
            full = list(args)
            for i, x in zip(dyn, xs):
                full[i] = x
            kw = {**kwargs, **dict(zip(dyn_kw, xs[len(dyn) :]))}
            out = pyfunc(*full, **kw)
            if out_core is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) > 1 and not isinstance(out, tuple):
                    raise TypeError(
                        f"output must be a tuple: the signature {signature!r} has {len(out_core)}"
                    )
                if len(outs) != len(out_core):
                    raise TypeError(
                        f"wrong number of output arguments: the signature {signature!r} has "
                        f"{len(out_core)}, the function returned {len(outs)}"
                    )
                known = dict(sizes)
                for k, (o, core_dims) in enumerate(zip(outs, out_core)):
                    _bind_core_dims(known, np.shape(o), core_dims, f"output {k}", exact=True)
            return out

        if not loop:
            return core_fn(*arrays)
        n = int(np.prod(loop))
        flat = [
            reshape(broadcast_to(x, loop + x.shape[len(lp) :]), (n, *x.shape[len(lp) :]))
            for x, lp in zip(arrays, loops)
        ]
        out = _vmap(core_fn, flat)
        return tu.tree_map(lambda o: reshape(o, loop + aval(o).shape[1:]), out)

    return wrapped


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to the 1-D slices of ``arr`` along ``axis`` (with ``vmap``).

    >>> apply_along_axis(lambda v: v.sum(), 1, np.arange(6.0).reshape(2, 3)).tolist()
    [3.0, 12.0]
    """
    arr = asarray(arr)
    axis = normalize_axis(axis, arr.ndim)
    moved = moveaxis(arr, axis, -1)
    batch = moved.shape[:-1]
    # (the batch size written out: -1 cannot be inferred beside a zero-length axis, JAX computes it)
    flat = reshape(moved, (math.prod(batch), moved.shape[-1]))
    out = _vmap(lambda v: asarray(func1d(v, *args, **kwargs)), [flat])
    out = reshape(out, batch + aval(out).shape[1:])
    nd_out = aval(out).ndim - len(batch)
    return (
        moveaxis(out, tuple(range(len(batch), len(batch) + nd_out)), tuple(range(axis, axis + nd_out)))
        if nd_out
        else out
    )
