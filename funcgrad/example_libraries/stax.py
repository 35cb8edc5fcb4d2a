"""``funcgrad.example_libraries.stax``: JAX's example neural-network layer library, on funcgrad.

Surface layer (imports funcgrad.lax, funcgrad.nn, funcgrad.numpy, funcgrad.random). A layer is a
pair ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape)`` gives ``(output_shape, params)``,
``apply_fun(params, inputs, **kwargs)`` the outputs (``rng=`` reaches layers that draw, such as
``Dropout``). ``serial`` and ``parallel`` combine layers; ``FanOut``/``FanInSum``/``FanInConcat``
route values between them. The layers, their parameter shapes, initialisers and formulas are JAX's.

>>> import funcgrad
>>> init, apply = serial(Dense(3), Relu, Dense(1))
>>> out_shape, params = init(funcgrad.random.PRNGKey(0), (-1, 2))
>>> out_shape, apply(params, funcgrad.numpy.ones((4, 2))).shape
((-1, 1), (4, 1))
"""

from __future__ import annotations

import functools

import funcgrad.numpy as fnp
from funcgrad import lax, random
from funcgrad.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from funcgrad.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu",
    "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "parallel", "serial",
    "shape_dependent",
]  # fmt: skip

glorot, randn, logsoftmax = glorot_normal, normal, log_softmax  # (JAX's older names)


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully-connected layer: ``inputs @ W + b``."""

    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return (*input_shape[:-1], out_dim), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return fnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape):
    spatial = iter(filter_shape)
    return [
        out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
        for c in rhs_spec
    ]


def _conv_layer(transpose, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))
    out_shape_of = lax.conv_transpose_shape_tuple if transpose else lax.conv_general_shape_tuple

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape)
        output_shape = out_shape_of(input_shape, kernel_shape, strides, padding, dimension_numbers)
        k1, k2 = random.split(rng)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        if transpose:
            return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers) + b
        out = lax.conv_general_dilated(
            inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers
        )
        return out + b

    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                b_init=normal(1e-6)):  # fmt: skip
    """A convolution with ``dimension_numbers`` = (input, kernel, output) layouts."""
    return _conv_layer(False, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init)


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                         W_init=None, b_init=normal(1e-6)):  # fmt: skip
    """A transposed convolution with ``dimension_numbers`` = (input, kernel, output) layouts."""
    return _conv_layer(True, dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones):
    """Normalise over ``axis`` (batch statistics), then scale by gamma and shift by beta."""
    axis = (axis,) if fnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(fnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        return z + beta[expand] if center else z

    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""
    return (lambda rng, input_shape: (input_shape, ())), (
        lambda params, inputs, **kw: fun(inputs, **fun_kwargs)
    )


Tanh = elementwise(fnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(fnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """A pooling layer over ``window_shape`` (spatial dims; ``spec`` names the layout, NHWC
        when None)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        kept = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
        dims, steps = list(window_shape), list(strides)
        for i in sorted(kept):
            dims.insert(i, 1)
            steps.insert(i, 1)
        dims, steps = tuple(dims), tuple(steps)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, dims, steps, padding)
            ones_ = (1,) * len(dims)
            return lax.reduce_window_shape_tuple(input_shape, dims, steps, pads, ones_, ones_), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, dims, steps, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -fnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        kept = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial = tuple(n for i, n in enumerate(inputs.shape) if i not in kept)
        sizes = lax.reduce_window(fnp.ones(spatial, dtype=inputs.dtype), 0.0, lax.add, dims, strides, padding)
        for i in sorted(kept):
            sizes = fnp.expand_dims(sizes, i)
        return outputs / sizes

    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


def Flatten():
    """Flatten all but the leading (batch) dimension."""

    def init_fun(rng, input_shape):
        size = 1
        for n in input_shape[1:]:
            size *= n
        return (input_shape[0], size), ()

    return init_fun, lambda params, inputs, **kwargs: fnp.reshape(inputs, (inputs.shape[0], -1))


Flatten = Flatten()


def Identity():
    """The layer that returns its inputs."""
    return (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kwargs: inputs)


Identity = Identity()


def FanOut(num):
    """``num`` copies of the inputs (for ``parallel``)."""
    return (lambda rng, input_shape: ([input_shape] * num, ())), (lambda params, inputs, **kw: [inputs] * num)


def FanInSum():
    """The sum of a list of inputs."""
    return (lambda rng, input_shape: (input_shape[0], ())), (lambda params, inputs, **kwargs: sum(inputs))


FanInSum = FanInSum()


def FanInConcat(axis=-1):
    """The concatenation of a list of inputs along ``axis``."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        return (*input_shape[0][:ax], concat_size, *input_shape[0][ax + 1 :]), ()

    return init_fun, lambda params, inputs, **kwargs: fnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):
    """Keep each input with probability ``rate`` (scaled by ``1/rate``) in ``"train"`` mode;
    ``apply_fun`` then needs ``rng=``."""

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, "
                "instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, "
                "rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`)."
            )
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return fnp.where(keep, inputs / rate, 0)

    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def serial(*layers):
    """The layers one after the other."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        for fun, p, r in zip(apply_funs, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Each layer on its own input of a list (of as many)."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer made by ``make_layer(input_shape)`` when its shape is known."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun


def __dir__():  # the public names only, not the helpers
    return sorted(__all__)
