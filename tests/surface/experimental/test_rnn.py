"""``funcgrad.experimental.rnn`` (JAX's ``jax.experimental.rnn``): the packed cuDNN LSTM weights
and the LSTM against jax's ``lstm_ref``, one and two layers, one and two directions, ragged
sequence lengths."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import rnn

jax = pytest.importorskip("jax")


def test_lstm_as_jax(num_layers=2, bidirectional=True):  # (every path: two layers, two directions)
    from jax.experimental import rnn as jrnn

    n = rnn.get_num_params_in_lstm(3, 4, num_layers, bidirectional)
    assert n == jrnn.get_num_params_in_lstm(3, 4, num_layers, bidirectional)
    r = np.random.RandomState(0)
    w = r.uniform(-0.5, 0.5, n).astype(np.float32)
    x = r.randn(2, 5, 3).astype(np.float32)
    h0 = r.randn((2 if bidirectional else 1) * num_layers, 2, 4).astype(np.float32)
    lengths = np.array([5, 3], np.int32)
    args = (3, 4, num_layers, 0.0, bidirectional)

    def loss(lib, mod, w):
        ws = mod.unpack_lstm_weights(w, 3, 4, num_layers, bidirectional)
        y, h, c = mod.lstm_ref(x, h0, h0, *ws, lib.numpy.asarray(lengths), *args)
        return (y**2).sum() + h.sum() + c.sum(), (y, h, c)

    got, outs = loss(funcgrad, rnn, w)
    want, jouts = loss(jax, jrnn, w)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(outs, jouts):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(outs[0][1, 3:], 0)  # (zero past the sequence's length)
    for a, b in zip(rnn.lstm(x, h0, h0, w, lengths, *args), outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        rnn.swap_lstm_gates(w, 3, 4, num_layers, bidirectional),
        jrnn.swap_lstm_gates(w, 3, 4, num_layers, bidirectional),
    )
    key_w = rnn.init_lstm_weight(funcgrad.random.key(1), 3, 4, num_layers, bidirectional)
    assert key_w.shape == (n,) and float(fnp.abs(key_w).max()) <= 0.5
