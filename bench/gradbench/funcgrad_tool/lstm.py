"""GradBench eval ``lstm``: the loss of a stacked LSTM over a character sequence and its gradient
with respect to the weights (benchmark code).

``main_params`` holds, per layer, a row of weights and a row of biases for the four gates (an
elementwise "matrix", as in ADBench); ``extra_params`` the input scale and the output scale and
bias; ``state`` per layer a hidden and a cell row. The time steps are a ``lax.scan`` carrying the
state; the layers are unrolled (at most a handful). The normaliser is ``log(2 + sum(exp(y)))``,
as in the reference. The gradient is reverse mode through the scan.
"""

import numpy as np

import funcgrad
import funcgrad.numpy as jnp
from funcgrad import lax
from funcgrad_tool.runs import evaluation, to_float


def _cell(weight, bias, hidden, cell, x):
    b = hidden.shape[0]
    gates = jnp.concatenate([x, hidden, x, hidden]) * weight + bias
    # one sigmoid over the three sigmoid gates: XLA's CPU backend makes one loop of it instead of
    # three (a loop per step and layer is most of the cost at these sizes: 7 values a gate);
    # l=6, c=8192, CPU time: objective 22.3 -> 18.5 ms, gradient 122 -> 95 ms
    sig = funcgrad.nn.sigmoid(gates[: 3 * b])
    forget, ingate, outgate = sig[:b], sig[b : 2 * b], sig[2 * b :]
    change = jnp.tanh(gates[3 * b :])
    cell = cell * forget + ingate * change
    return outgate * jnp.tanh(cell), cell


def lstm_objective(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2

    def step(state, xs):
        x, gold = xs
        x = x * extra_params[0]
        new = []
        for i in range(layers):
            h, c = _cell(main_params[2 * i], main_params[2 * i + 1], state[2 * i], state[2 * i + 1], x)
            new += [h, c]
            x = h
        ypred = x * extra_params[1] + extra_params[2]
        ynorm = ypred - jnp.log(2.0 + jnp.sum(jnp.exp(ypred)))
        return jnp.stack(new), jnp.sum(gold * ynorm)

    _, totals = lax.scan(step, state, (sequence[:-1], sequence[1:]))
    count = (sequence.shape[0] - 1) * sequence.shape[1]
    return -jnp.sum(totals) / count


_objective = funcgrad.jit(lstm_objective)
_jacobian = funcgrad.jit(funcgrad.grad(lstm_objective, argnums=(0, 1)))


def _pre(input):
    def arr(v):
        return funcgrad.device_put(np.asarray(v, dtype=np.float64))

    return tuple(arr(input[k]) for k in ("main_params", "extra_params", "state", "sequence"))


def _post_jacobian(grads):
    main, extra = (np.asarray(g).reshape(-1) for g in grads)
    return np.concatenate([main, extra]).tolist()


@evaluation(pre=_pre, post=to_float)
def objective(main_params, extra_params, state, sequence):
    return _objective(main_params, extra_params, state, sequence)


@evaluation(pre=_pre, post=_post_jacobian)
def jacobian(main_params, extra_params, state, sequence):
    return _jacobian(main_params, extra_params, state, sequence)
