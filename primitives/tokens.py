"""The token primitives: ``create_token`` makes an XLA token, ``after_all`` merges tokens (JAX's
``lax.create_token``/``lax.after_all``; NOTE: [tokens] in funcgrad/kernel/ir.py).

Layer: primitives. Imports only the funcgrad kernel and numpy.

A token's abstract value is ``abstract_token`` (printed ``Tok``); eagerly it is a ``Token`` around
a ``bool[0]`` array, the buffer a token travels as between compiled programs. Neither primitive
computes anything differentiable: a token is its own tangent, so the JVP passes tokens through;
``vmap`` never batches a token (``after_all`` of a batched operand is refused, as a token has no
batch axis); ``after_all`` refuses anything but tokens with JAX's ``TypeError``.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel.ad import defjvp_zero
from funcgrad.kernel.core import Primitive, Token, abstract_token

__all__ = ["after_all", "after_all_p", "create_token", "create_token_p"]


def _new_token(*_operands) -> Token:
    # (eagerly a token orders nothing: NumPy runs in program order; its buffer is JAX's bool[0])
    return Token(np.zeros(0, np.bool_))


create_token_p = Primitive("create_token")
create_token_p.def_impl(_new_token)
create_token_p.def_abstract_eval(lambda *_: abstract_token)
create_token_p.def_batch(lambda axis_size, vals, dims, **params: (create_token_p.bind(), None))
defjvp_zero(create_token_p)


def _after_all_abstract_eval(*operands):
    if any(x is not abstract_token for x in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return abstract_token


def _after_all_batch(axis_size, vals, dims, **params):
    if any(d is not None for d in dims):  # (a token operand can only enter vmap unbatched)
        raise TypeError("Arguments to after_all must be tokens")
    return after_all_p.bind(*vals), None


def _after_all_impl(*operands) -> Token:
    if any(type(x) is not Token for x in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return _new_token()


after_all_p = Primitive("after_all")
after_all_p.def_impl(_after_all_impl)
after_all_p.def_abstract_eval(_after_all_abstract_eval)
after_all_p.def_batch(_after_all_batch)
after_all_p.def_traits(takes_tokens=True)
defjvp_zero(after_all_p)


def create_token(_=None):
    """A token with no preconditions for sequencing effects (JAX's ``lax.create_token``; the
    argument is ignored, kept for backward compatibility).

    >>> import funcgrad
    >>> print(funcgrad.make_jaxpr(lambda x: create_token(x))(1.0))
    { lambda ; a:f64[]. let b:Tok = create_token  in (b,) }
    """
    return create_token_p.bind()


def after_all(*operands):
    """Merge tokens into one that comes after all of them (JAX's ``lax.after_all``, XLA's
    ``AfterAll``); anything but tokens raises ``TypeError``.

    >>> import funcgrad
    >>> print(funcgrad.make_jaxpr(lambda t: after_all(t, create_token()))(create_token()))
    { lambda ; a:Tok. let b:Tok = create_token ; c:Tok = after_all a b in (c,) }
    >>> after_all(1.0)
    Traceback (most recent call last):
    TypeError: Arguments to after_all must be tokens
    """
    return after_all_p.bind(*operands)
