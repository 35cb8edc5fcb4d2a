"""``funcgrad.experimental.checkify``: runtime checks in functional code, as ``jax.experimental.checkify``.

Layer: surface. Imports the kernel (``core``, ``tree_util``, ``partial_eval``), the surface's
argument helpers, ``primitives.checks`` and the interpreter in ``_checkify_rules``.

``checkify(f, errors=...)`` returns a function that computes ``(err, f(*args))``: ``err`` is an
``Error`` value saying whether (and where) something failed. Because the error is an ordinary
returned value, checks work under ``jit`` (compiled code cannot raise), ``vmap`` (one error per
batch element) and ``grad``: ``jit(checkify(f))``, ``checkify(jit(f))``, ``vmap(checkify(f))``,
``checkify(grad(f))`` and ``grad`` of a function with a ``check`` (which differentiation ignores).

What is checked is chosen by ``errors``, a set of categories (combine them with ``|``):

- ``user_checks``: the user's ``check``/``debug_check`` calls (the default);
- ``nan_checks``: a primitive that may make a NaN from operands without one
  (``traits.may_produce_nan``, stated in its family file) produced one (the message names it);
- ``div_checks``: a division by zero;
- ``index_checks``: an out-of-bounds index of a gather, dynamic_slice, dynamic_update_slice or
  scatter (NumPy-style indexing clamps, so these are where a clamp or a fill happened);
- ``float_checks`` = nan | div, ``automatic_checks`` = float | index, ``all_checks``.

How it works: ``f`` is staged to a jaxpr and interpreted with an error value threaded through its
equations (NOTE: [checkify error state] in ``_checkify_rules.py``); ``check`` is the primitive
``check_p`` (NOTE: [functionalized checks] in ``primitives/checks.py``).

>>> import funcgrad, funcgrad.numpy as fnp
>>> def f(x):
...     check(x > 0, "x must be positive, got {}", x)
...     return fnp.log(x)
>>> err, y = funcgrad.jit(checkify(f))(-2.0)
>>> err.get()
'x must be positive, got -2.0 (`check` failed)'
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._api_util import canonicalize, flat_fun, to_public
from funcgrad.experimental import _checkify_rules as rules
from funcgrad.experimental._checkify_rules import (
    SITES,
    DivisionByZeroError,
    ErrorCategory,
    ErrorState,
    FailedCheckError,
    NaNError,
    OOBError,
    Site,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.primitives.checks import JaxRuntimeError, check_p

__all__ = [
    "Error",
    "ErrorCategory",
    "JaxRuntimeError",
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "debug_check",
    "div_checks",
    "float_checks",
    "index_checks",
    "init_error",
    "nan_checks",
    "user_checks",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
div_checks = frozenset({DivisionByZeroError})
index_checks = frozenset({OOBError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


# ----------------------------------------------------------------------------------------------
# The error value


class Error:
    """What a checkified function returns first: whether a check failed, and its message.

    ``get()`` is the message of the first failure (None if nothing failed); ``throw()`` raises it
    as ``JaxRuntimeError``. Under ``vmap`` each batch element has its own error and ``get()`` lists
    every failing element (``at mapped index i: ...``), as jax does. An ``Error`` is a pytree, so
    it can be returned from ``jit`` and ``vmap``.

    >>> init_error.get() is None
    True
    """

    __slots__ = ("_err", "_code", "_payloads", "_sites")

    def __init__(self, err, code, payloads: dict, sites: tuple):
        self._err, self._code, self._payloads, self._sites = err, code, payloads, sites

    @staticmethod
    def _from_state(state: ErrorState) -> Error:
        return Error(state.err, state.code, dict(state.payloads), state.sites)

    def _state(self) -> ErrorState:
        return ErrorState(self._err, self._code, self._payloads)

    def _concrete(self, what: str):
        leaves = tu.tree_leaves(self)
        if any(isinstance(v, core.Tracer) for v in leaves):
            raise ValueError(
                f"Error.{what}() needs concrete values, but this error is being traced (inside jit, "
                "vmap or grad). Return the error from the transformed function and call "
                f"err.{what}() outside it, or call checkify.check_error(err) inside."
            )
        return [np.asarray(v) for v in leaves]

    def _message(self, index=()) -> str | None:
        err = np.asarray(self._err)[index]
        if not err:
            return None
        code = int(np.asarray(self._code)[index])
        return SITES[code].message([np.asarray(v)[index] for v in self._payloads[code]])

    def get(self) -> str | None:
        """The message of the first failure, or None if nothing failed.

        >>> import funcgrad.numpy as fnp
        >>> err, _ = checkify(lambda x: fnp.sin(x), errors=nan_checks)(fnp.inf)
        >>> err.get()
        'nan generated by primitive: sin.'
        """
        self._concrete("get")
        shape = np.shape(self._err)
        if not shape:
            return self._message()
        lines = [
            f"at mapped index {', '.join(map(str, idx))}: {self._message(idx)}"
            for idx in np.ndindex(*shape)
            if np.asarray(self._err)[idx]
        ]
        return "\n".join(lines) or None

    def get_exception(self) -> JaxRuntimeError | None:
        """The failure as an exception (not raised), or None if nothing failed.

        >>> err, _ = checkify(lambda x: x)(1.0)
        >>> err.get_exception() is None
        True
        """
        msg = self.get()
        return None if msg is None else JaxRuntimeError(msg)

    def throw(self) -> None:
        """Raise ``JaxRuntimeError`` with the message if something failed.

        >>> err, _ = checkify(lambda x: x)(1.0)
        >>> err.throw()  # nothing failed: no exception
        """
        msg = self.get()
        if msg is not None:
            raise JaxRuntimeError(msg)

    def __str__(self):
        return f"Error({self.get()})"

    __repr__ = __str__


def _flatten_error(e: Error):
    leaves = [e._err, e._code]
    for s in e._sites:
        leaves.extend(e._payloads[s])
    return leaves, e._sites


def _unflatten_error(sites, leaves):
    state, _ = ErrorState.unflatten(sites, list(leaves))
    return Error(state.err, state.code, state.payloads, sites)


tu.register_pytree_node(Error, _flatten_error, _unflatten_error)

init_error = Error(np.bool_(False), np.int32(-1), {}, ())


# ----------------------------------------------------------------------------------------------
# check, debug_check, check_error


def _check(pred, msg: str, debug: bool, fmt_args, fmt_kwargs, name: str) -> None:
    if not isinstance(msg, str):
        raise TypeError(f"{name}: the message must be a str, got {type(msg).__name__}")
    # As JAX's: a Python bool or an array (not a NumPy scalar: np.int32(3) >= 0 is refused).
    if not isinstance(pred, bool | fnp.ndarray | core.Tracer):
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")  # (JAX's words)
    pred = canonicalize([pred])[0]
    aval = core.get_aval(pred)
    if aval.dtype != np.bool_ or aval.shape:
        # As jax: one message per check, so one predicate (reduce an array with fnp.all).
        raise TypeError(
            f"{name} takes a scalar pred as argument, got {aval.str_short()}: a boolean scalar; reduce "
            "an array predicate with funcgrad.numpy.all (or any)"
        )
    leaves, tree = tu.tree_flatten((tuple(fmt_args), dict(fmt_kwargs)))
    for leaf in leaves:
        # As JAX's: arrays only (a Python or NumPy scalar is refused, also when a checkified
        # function passes its own Python-int argument through).
        if not isinstance(leaf, fnp.ndarray | np.ndarray | core.Tracer):
            raise TypeError(
                # (checkify.check for debug_check too, as JAX says)
                "Formatting arguments to checkify.check need to be PyTrees of arrays, but got "
                f"{leaf!r} of type {type(leaf)}."
            )
    check_p.bind(pred, *canonicalize(leaves), msg=msg, fmt_tree=tree, debug=debug, batch_ndim=0)


def check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Check that the scalar ``pred`` is true; if not, fail with ``msg.format(*fmt_args, **fmt_kwargs)``
    formatted with the runtime values.

    Called eagerly it raises ``JaxRuntimeError`` at once. Under ``checkify`` the failure is recorded
    in the returned error. Staged without ``checkify`` (``jit(f)``) it is an error that says to
    wrap the function with ``checkify``.

    >>> import funcgrad.numpy as fnp
    >>> def f(x):
    ...     check(fnp.all(x < 10), "too big: {big}", big=fnp.max(x))
    ...     return x
    >>> err, _ = checkify(f)(fnp.array([1.0, 12.0]))
    >>> print(err.get())
    too big: 12.0 (`check` failed)
    """
    _check(pred, msg + " (`check` failed)", False, fmt_args, fmt_kwargs, "check")


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """A ``check`` that runs only under ``checkify``; elsewhere (eager, ``jit``) it does nothing.

    >>> def f(x):
    ...     debug_check(x != 0, "cannot be zero!")
    ...     return x
    >>> _ = f(0)  # without checkify: no check
    >>> err, _ = checkify(f)(0)
    >>> err.get()
    'cannot be zero! (`check` failed)'
    """
    _check(pred, msg + " (`check` failed)", True, fmt_args, fmt_kwargs, "debug_check")


def check_error(error: Error) -> None:
    """Raise ``error`` if it failed; inside a traced function, re-emit it as checks, so that a
    ``checkify`` around it carries it out again (``checkify(lambda x: check_error(g(x)))``).

    >>> err, _ = checkify(lambda x: x)(1.0)
    >>> check_error(err)  # nothing failed
    """
    if not isinstance(error, Error):
        raise TypeError(f"check_error: expected a checkify.Error, got {type(error).__name__}")
    if not any(isinstance(v, core.Tracer) for v in tu.tree_leaves(error)):
        return error.throw()
    for s in error._sites:
        site: Site = SITES[s]
        failed = fnp.logical_and(error._err, fnp.equal(error._code, s))
        tree = site.fmt_tree or tu.tree_structure((tuple(range(len(site.payload_avals))), {}))
        check_p.bind(
            fnp.logical_not(failed),
            *error._payloads[s],
            msg=site.msg,
            fmt_tree=tree,
            debug=False,
            batch_ndim=0,
        )


# ----------------------------------------------------------------------------------------------
# checkify


def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
    """``checkify(f, errors)(*args, **kwargs)`` is ``(err, f(*args, **kwargs))``, with the failures
    of the ``errors`` categories recorded in ``err`` instead of raised (module docstring).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = checkify(lambda x, i: x[i], errors=index_checks)
    >>> err, _ = funcgrad.jit(f)(fnp.arange(3.0), 5)
    >>> err.get()
    'out-of-bounds indexing for array of shape (3,): index 5 is out of bounds for axis 0 with size 3. '
    """
    enabled = frozenset(errors)
    unknown = [e for e in enabled if not (isinstance(e, type) and issubclass(e, ErrorCategory))]
    if unknown:
        raise TypeError(
            f"checkify: errors must be a set of error categories (checkify.user_checks, nan_checks, "
            f"div_checks, index_checks, ... combined with |), got {unknown[0]!r}"
        )

    @functools.wraps(f)
    def checked(*args, **kwargs):
        # As JAX's, ``f`` closes over its arguments (they are not abstracted): concrete values stay
        # concrete (Python control flow on them, jit's static arguments) and any Python value
        # may be passed; traced ones are the staged program's constants.
        flat, store = flat_fun(lambda: f(*args, **kwargs), tu.tree_structure(()), transform="checkify")
        closed = trace_to_jaxpr(flat, [], description=f"checkify({getattr(f, '__name__', 'f')})")
        state = ErrorState()
        outs = rules.checkify_jaxpr(closed.jaxpr, closed.consts, state, [], enabled)
        err = Error._from_state(state)
        err = tu.tree_unflatten(tu.tree_structure(err), [to_public(v) for v in tu.tree_leaves(err)])
        return err, tu.tree_unflatten(store["out_tree"], [to_public(o) for o in outs])

    return checked
