"""Lists and tuples where JAX wants arrays (NOTE: [array-like arguments]): every function of
``funcgrad.numpy`` (and its ``linalg`` and ``fft``) that JAX checks refuses a list in each parameter
JAX refuses it in, with JAX's TypeError and words (function name and position), found by passing a
list in each parameter in turn to jax 0.10.2 and to funcgrad in the same call (and the array
methods that are those functions); the functions JAX lets take sequences still take them; list
indices raise JAX's TypeError."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.numpy._arraylike import ARRAYLIKE_ARGS

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

_MSG = re.compile(
    r"requires ndarray(, scalar, or None| or scalar) arguments, got <class '(list|tuple)'> at position \d+\.$"
)
_LIST = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]


def _fillers():
    return (np.ones((3, 3), np.float32) + np.eye(3, dtype=np.float32), np.float32(2.0), np.arange(3))


def _message(fn, args, kwargs):
    """The check's message when ``fn(*args, **kwargs)`` raises it, else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except TypeError as e:
        return str(e) if _MSG.search(str(e)) else None
    except Exception:
        return None
    return None


def _calls(sig, param):
    """Calls with a list in ``param``, arrays in the other required parameters and the defaults
    (or arrays) in the optional ones before it."""
    params = list(sig.parameters.values())
    for from_defaults in (True, False):
        for fill in _fillers():
            for value in (_LIST, _LIST[0], tuple(_LIST[0])):
                args, kwargs = [], {"inplace": False} if "inplace" in sig.parameters else {}
                after = False
                for q in params:
                    if q is param:
                        after = True
                        if q.kind == q.KEYWORD_ONLY:
                            kwargs[q.name] = value
                        else:
                            args.append(value)
                    elif q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD):
                        if q.default is q.empty:
                            args.append(fill)
                        elif after:
                            break
                        else:
                            args.append(q.default if from_defaults else fill)
                    elif q.kind == q.KEYWORD_ONLY and q.default is q.empty:
                        kwargs[q.name] = fill
                yield args, kwargs


def _module(key, numpy):
    sub, _, name = key.rpartition(".")
    return getattr(getattr(numpy, sub) if sub else numpy, name)


@pytest.mark.parametrize("key", sorted(ARRAYLIKE_ARGS))
def test_lists_refused_as_jax_refuses_them(key):
    ours, theirs = _module(key, fnp), _module(key, jnp)
    sig = inspect.signature(theirs)
    calls = ARRAYLIKE_ARGS[key] if key != "einsum" else ()
    checked = {p.lstrip("*") for call in calls for p in call[1:] if isinstance(p, str)}
    found = 0
    for param in sig.parameters.values():
        if param.name not in checked and param.kind != param.POSITIONAL_ONLY:
            continue
        for args, kwargs in _calls(sig, param):
            want = _message(theirs, args, kwargs)
            if want is not None:
                assert _message(ours, args, kwargs) == want, (param.name, args, kwargs)
                found += 1
                break
    # (einsum's operands follow a string: the probe above does not reach them)
    assert found or key == "einsum", f"jax refuses no list for {key}: the table is out of date"


@pytest.mark.parametrize(
    "call",
    [
        lambda n: n.array([1.0, 2.0]),
        lambda n: n.asarray((1, 2)),
        lambda n: n.block([[1.0, 2.0], [3.0, 4.0]]),
        lambda n: n.reshape(np.ones(4), [2, 2]),
        lambda n: n.pad(np.ones(2), [1, 2]),
        lambda n: n.tile(np.ones(2), [2, 1]),
        lambda n: n.roll(np.ones((2, 2)), [1, 1], axis=[0, 1]),
        lambda n: n.split(np.ones(4), [1]),
        lambda n: n.concatenate([np.ones(2), np.ones(1)]),
        lambda n: n.stack((np.ones(()), 1.0)),
        lambda n: n.einsum(np.ones((2, 2)), [0, 1], np.ones(2), [1]),
        lambda n: n.einsum("i,i", np.ones(2), np.ones(2)),
        lambda n: n.array_equal([1.0, 2.0], [1.0, 2.0]),
        lambda n: n.r_[[1, 2], 3],
        lambda n: n.ones((2, 3)).reshape([3, 2]),
        lambda n: n.ones((2, 3)).transpose([1, 0]),
        lambda n: n.ones((2, 3)).sum(axis=(0, 1)),
    ],
)
def test_sequences_taken_where_jax_takes_them(call):
    got, want = call(fnp), call(jnp)
    for g, w in zip(got, want, strict=True) if isinstance(want, list) else [(got, want)]:
        np.testing.assert_allclose(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize(
    "call",
    [
        lambda n: n.sin(None),
        lambda n: n.dot(np.ones(2), None),
        lambda n: n.einsum("i->", [1.0, 2.0]),
        lambda n: n.concatenate([np.ones(2), [1.0]]),
        lambda n: n.select([np.ones(2) > 0], [np.ones(2)], [1.0, 2.0]),
        lambda n: n.where(np.ones(2) > 0, 1.0, [1.0, 2.0]),
        lambda n: n.clip(np.ones(2), max=[0.0, 1.0]),
        lambda n: n.linalg.inv([[1.0]]),
        lambda n: n.fft.fft([1.0, 2.0]),
        lambda n: n.add.reduce([1.0, 2.0]),
        lambda n: n.add.accumulate((1.0, 2.0)),
        lambda n: n.multiply.outer(np.ones(2), [1.0]),
        lambda n: n.add.reduceat(np.ones(3), [0, 1]),
        lambda n: n.ones(3).take([0, 1]),
        lambda n: n.ones(3).dot([1.0, 2.0, 3.0]),
        lambda n: n.ones(3).sum(where=[True, False, True]),
        lambda n: n.ones(3).repeat([1, 2, 3]),
        lambda n: n.ones(3).clip([0.0, 0.0, 0.0]),
        lambda n: n.ones(3).clip(max=[0.0, 0.0, 0.0]),
        lambda n: n.ones(3).compress([1, 0, 1]),
        lambda n: n.arange(2).choose([[1.0, 2.0], [3.0, 4.0]]),
    ],
)
def test_refusals_in_jax_words(call):
    with pytest.raises(TypeError) as want:
        call(jnp)
    with pytest.raises(TypeError) as got:
        call(fnp)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("update", [False, True])
@pytest.mark.parametrize("idx", [[0, 1], [True, False, True], [0, slice(None)], [np.array([0]), 1], range(2)])
def test_list_index_refused_as_jax(idx, update):
    def index(n):
        x = n.arange(6).reshape(3, 2)
        return x.at[idx].set(0) if update else x[idx]

    with pytest.raises(TypeError) as want:
        index(jnp)
    with pytest.raises(TypeError) as got:
        index(fnp)
    assert str(got.value) == str(want.value)
    x = fnp.arange(6).reshape(3, 2)
    assert x[(0, 1)].item() == 1 and x[np.array([0, 1])].shape == (2, 2)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions_take_duck_typed_prototypes(name):
    # JAX's *_like take any object with dtype and shape (optax's tree_zeros_like of eval_shape's
    # ShapeDtypeStructs); a list is still refused.
    def call(n, proto):
        return getattr(n, name)(proto, 2.0) if name == "full_like" else getattr(n, name)(proto)

    want = call(jnp, jax.ShapeDtypeStruct((2, 3), jnp.float32))
    got = call(fnp, funcgrad.ShapeDtypeStruct((2, 3), np.float32))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if name != "empty_like":
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError) as w:
        call(jnp, [1.0])
    with pytest.raises(TypeError) as g:
        call(fnp, [1.0])
    assert str(g.value) == str(w.value)


@pytest.mark.parametrize("a", [[1.0, 2.0], (1.0, 2.0), [[1.0, 2.0], [3.0, 4.0]], []])
def test_average_of_a_sequence_fails_as_jax(a):
    # JAX's average is jitted with ``a`` a pytree: a list's leaves are traced and its np.ndim(a)
    # is a TracerArrayConversionError (an empty list reaches the check: JAX's TypeError); funcgrad
    # computed the average
    with pytest.raises(TypeError) as want:
        jnp.average(a)
    with pytest.raises(TypeError) as got:
        fnp.average(a)
    assert type(got.value).__name__ == type(want.value).__name__
    first = str(want.value).splitlines()[0]
    assert str(got.value).startswith(first.split(" with shape")[0] if a else first)
