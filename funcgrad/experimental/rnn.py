"""``funcgrad.experimental.rnn``: JAX's ``jax.experimental.rnn`` -- the multi-layer LSTM of cuDNN
(PyTorch's ``torch.nn.LSTM``), its packed weights and a reference implementation.

Layer: surface. Imports funcgrad.numpy, funcgrad.nn, funcgrad.lax (``scan``), funcgrad.random and
funcgrad.jit.

Weights are one flat vector in cuDNN's layout: for each pseudo-layer (a layer and direction,
``layer * num_directions + direction``) ``W_ih`` (``4 * hidden`` rows: the input, forget, cell
and output gates) then ``W_hh``; after all matrices, for each pseudo-layer ``b_ih`` then ``b_hh``.
Inputs are batch-first. ``lstm`` computes what JAX's cuDNN kernel computes, with ``lstm_ref``'s
scans on any device (JAX's own ``lstm`` runs on GPUs only); dropout is not supported.

>>> import funcgrad, funcgrad.numpy as fnp
>>> w = init_lstm_weight(funcgrad.random.key(0), 3, 4, 1, False)
>>> x, h0 = fnp.ones((2, 5, 3)), fnp.zeros((1, 2, 4))
>>> y, h, c = lstm(x, h0, h0, w, fnp.array([5, 3], "int32"), 3, 4, 1, 0.0, False)
>>> y.shape, h.shape, bool((y[1, 3:] == 0).all())
((2, 5, 4), (1, 2, 4), True)
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

import funcgrad.numpy as jnp
from funcgrad import jit, lax, vmap
from funcgrad import nn as _nn
from funcgrad import random as _random

__all__ = [
    "get_num_params_in_lstm",
    "init_lstm_weight",
    "lstm",
    "lstm_ref",
    "swap_lstm_gates",
    "unpack_lstm_weights",
]


def _param_shapes(input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> list:
    """The shapes of the flat weight vector's pieces, in cuDNN's order (the module docstring)."""
    directions = 2 if bidirectional else 1
    layers = num_layers * directions
    matrices = []
    for i in range(layers):
        inputs = input_size if i < directions else directions * hidden_size
        matrices += [(4 * hidden_size, inputs), (4 * hidden_size, hidden_size)]
    return matrices + [(4 * hidden_size,)] * (2 * layers)


def get_num_params_in_lstm(input_size: int, hidden_size: int, num_layers: int, bidirectional: bool) -> int:
    """The length of the flat weight vector of an LSTM.

    >>> get_num_params_in_lstm(3, 4, 1, False)
    144
    """
    return sum(math.prod(s) for s in _param_shapes(input_size, hidden_size, num_layers, bidirectional))


def init_lstm_weight(rng, input_size: int, hidden_size: int, num_layers: int, bidirectional: bool):
    """Random LSTM weights, uniform in ``[-k, k)`` with ``k = sqrt(1 / hidden_size)`` (float32).

    >>> import funcgrad
    >>> init_lstm_weight(funcgrad.random.key(0), 3, 4, 2, True).shape
    (736,)
    """
    count = get_num_params_in_lstm(input_size, hidden_size, num_layers, bidirectional)
    k = np.sqrt(1.0 / hidden_size)
    return _random.uniform(rng, shape=(count,), dtype=jnp.float32, minval=-k, maxval=k)


def unpack_lstm_weights(weights, input_size: int, hidden_size: int, num_layers: int, bidirectional: bool):
    """The flat weight vector as four dicts ``W_ih, W_hh, b_ih, b_hh`` keyed by pseudo-layer
    (``W_ih[l]`` of shape ``(4 * hidden_size, inputs)``: the gates i, f, g, o stacked).

    >>> import funcgrad.numpy as fnp
    >>> W_ih, W_hh, b_ih, b_hh = unpack_lstm_weights(fnp.zeros(144), 3, 4, 1, False)
    >>> W_ih[0].shape, W_hh[0].shape, b_ih[0].shape
    ((16, 3), (16, 4), (16,))
    """
    shapes = _param_shapes(input_size, hidden_size, num_layers, bidirectional)
    layers = len(shapes) // 4
    pieces, offset = [], 0
    for shape in shapes:
        n = math.prod(shape)
        pieces.append(weights[offset : offset + n].reshape(shape))
        offset += n
    W_ih = {l: pieces[2 * l] for l in range(layers)}
    W_hh = {l: pieces[2 * l + 1] for l in range(layers)}
    b_ih = {l: pieces[2 * layers + 2 * l] for l in range(layers)}
    b_hh = {l: pieces[2 * layers + 2 * l + 1] for l in range(layers)}
    return W_ih, W_hh, b_ih, b_hh


def swap_lstm_gates(weights, input_size: int, hidden_size: int, num_layers: int, bidirectional: bool):
    """The weights with the third and fourth gates of every matrix and bias exchanged, in JAX's
    order of pieces (each layer and direction's ``W_ih, W_hh, b_ih, b_hh``).

    >>> import funcgrad.numpy as fnp
    >>> swap_lstm_gates(fnp.arange(144.0), 3, 4, 1, False)[24:28].tolist()
    [36.0, 37.0, 38.0, 39.0]
    """
    weights = jnp.asarray(weights)
    shapes = _param_shapes(input_size, hidden_size, num_layers, bidirectional)
    offset = 0
    for shape in shapes:  # (JAX walks the shapes in their own order, four per pseudo-layer)
        n = math.prod(shape)
        gates = jnp.split(weights[offset : offset + n].reshape(shape), 4, axis=0)
        swapped = jnp.concatenate([gates[0], gates[1], gates[3], gates[2]], axis=0)
        weights = weights.at[offset : offset + n].set(swapped.ravel())
        offset += n
    return weights


def _cell(carry, x, *, W_ih, W_hh, b_ih, b_hh):
    h, c = carry
    gates = x @ W_ih.T + b_ih[None] + h @ W_hh.T + b_hh[None]
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = _nn.sigmoid(f) * c + _nn.sigmoid(i) * jnp.tanh(g)
    h = _nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


def _run(cell, h0, c0, seq_first, seq_lengths):
    """One direction of one layer over the sequence: the outputs (zero past each sequence's
    length) and the carry at each sequence's last step."""

    def step(carry, x):
        carry, y = cell(carry, x)
        return carry, (carry, y)

    _, ((hs, cs), ys) = lax.scan(step, (h0, c0), seq_first)
    batch = jnp.arange(hs.shape[1])
    h_t, c_t = hs[seq_lengths - 1, batch], cs[seq_lengths - 1, batch]
    mask = seq_lengths[None] > jnp.arange(ys.shape[0], dtype=jnp.int32)[:, None]
    return (h_t, c_t), jnp.where(mask[..., None], ys, 0)


def _flip(seq_first, seq_lengths):
    """Each sequence reversed within its length, the padding kept at the end."""
    rolled = vmap(partial(jnp.roll, axis=0), in_axes=(1, 0), out_axes=1)(
        seq_first, seq_first.shape[0] - seq_lengths
    )
    return rolled[::-1]


@partial(jit, static_argnums=(8, 9, 10, 11, 12))
def lstm_ref(
    x, h_0, c_0, W_ih, W_hh, b_ih, b_hh, seq_lengths, input_size, hidden_size, num_layers, dropout,
    bidirectional,
):  # fmt: skip
    """The LSTM computed with scans (JAX's reference implementation): ``x`` is
    ``(batch, max_len, input_size)``, ``h_0``/``c_0`` ``(num_directions * num_layers, batch,
    hidden_size)``, the weights as ``unpack_lstm_weights`` gives them, ``seq_lengths`` int32 of
    shape ``(batch,)``. Returns ``y`` (``(batch, max_len, num_directions * hidden_size)``, zero
    past each length), ``h_n`` and ``c_n``.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> ws = unpack_lstm_weights(fnp.full(144, 0.1), 3, 4, 1, False)
    >>> y, h, c = lstm_ref(fnp.ones((1, 2, 3)), fnp.zeros((1, 1, 4)), fnp.zeros((1, 1, 4)), *ws,
    ...                    fnp.array([2], "int32"), 3, 4, 1, 0.0, False)
    >>> round(float(y[0, 1, 0]), 4)
    0.3015
    """
    if seq_lengths.dtype != np.dtype("int32"):
        raise NotImplementedError("`seq_lengths` can only be int32.")  # (JAX's words)
    if dropout != 0.0:
        raise NotImplementedError(
            "Dropout not supported in LSTM reference because we cannot determine CUDNN dropout mask."
        )
    seq_first = x.transpose(1, 0, 2)
    directions = 2 if bidirectional else 1
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            l = layer * directions + d
            cell = partial(_cell, W_ih=W_ih[l], W_hh=W_hh[l], b_ih=b_ih[l], b_hh=b_hh[l])
            inputs = seq_first if d == 0 else _flip(seq_first, seq_lengths)
            (h_t, c_t), ys = _run(cell, h_0[l], c_0[l], inputs, seq_lengths)
            outs.append(ys if d == 0 else _flip(ys, seq_lengths))
            hs.append(h_t)
            cs.append(c_t)
        seq_first = outs[0] if directions == 1 else jnp.concatenate(outs, axis=-1)
    return seq_first.transpose(1, 0, 2), jnp.stack(hs), jnp.stack(cs)


def lstm(
    x, h_0, c_0, weights, seq_lengths, input_size: int, hidden_size: int, num_layers: int,
    dropout: float, bidirectional: bool, precision=None,
):  # fmt: skip
    """The LSTM of cuDNN on the flat ``weights`` (JAX's ``jax.experimental.rnn.lstm``; see the
    module docstring): returns ``(y, h_n, c_n)`` as ``lstm_ref``. ``precision`` is accepted for
    JAX's signature (the products run at the default precision).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> w = fnp.full(get_num_params_in_lstm(3, 4, 1, False), 0.1)
    >>> y, h, c = lstm(fnp.ones((1, 2, 3)), fnp.zeros((1, 1, 4)), fnp.zeros((1, 1, 4)), w,
    ...                fnp.array([2], "int32"), 3, 4, 1, 0.0, False)
    >>> round(float(h[0, 0, 0]), 4)
    0.3015
    """
    del precision
    W_ih, W_hh, b_ih, b_hh = unpack_lstm_weights(weights, input_size, hidden_size, num_layers, bidirectional)
    return lstm_ref(
        x, h_0, c_0, W_ih, W_hh, b_ih, b_hh, seq_lengths, input_size, hidden_size, num_layers,
        dropout, bidirectional,
    )  # fmt: skip
