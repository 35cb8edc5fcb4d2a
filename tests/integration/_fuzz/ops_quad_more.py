"""The four-way table's session-21 pools (ops_quad runs them; ``--pool random|index|half``):

- ``random``: every ``jax.random`` sampler, its parameters drawn from its signature -- shapes
  (broadcasting against array parameters, empty), dtypes (float16/bfloat16/float32/float64,
  integer widths), parameter arrays and edge values (``alpha=0``, ``p=0``/``1``, ``lam=0``, ``n=0``,
  ``df`` tiny, ``minval > maxval``) -- from a raw ``uint32`` key or a typed one (threefry or rbg),
  the key an argument of the call (so jit takes it), under ``vmap`` over split keys now and then.
  The result is compared *bit for bit* (``_bits``: floats bitcast to unsigned integers of their
  width) beside its values (which the derivatives see);
- ``index``: ``x[idx]`` chains and ``x.at[idx].get/set/add/multiply/divide/power/min/max/apply``
  with every ``mode`` (``fill`` with ``fill_value``, ``clip``, ``drop``, ``promise_in_bounds``),
  advanced indices (lists, arrays with negative and out-of-range entries, boolean masks -- eager
  only on jax's side -- ``None``/``Ellipsis`` mixtures, negative steps), over every dtype;
- ``half``: float16/bfloat16 programs of two to four elementwise steps and reductions (jax computes
  many in float32 and rounds), and complex branch cuts (``sqrt``/``log``/``arctanh``/``arccos``/
  ``arcsin``/``arccosh``/``power`` at signed zeros and on the axes).

>>> sorted(POOLS)
['half', 'index', 'random']
"""

from __future__ import annotations

import inspect

import numpy as onp
from hypothesis import strategies as st

from _fuzz import ops_sig, programs

# ----------------------------------------------------------------------------------------------
# jax.random


def _random_signatures():
    import jax.random

    skip = {
        "PRNGKey",
        "key",
        "key_data",
        "key_dtype",
        "key_impl",
        "wrap_key_data",
        "clone",
        "fold_in",
        "split",
    }
    out = {}
    for name in dir(jax.random):
        f = getattr(jax.random, name)
        if name.startswith("_") or name in skip or not callable(f) or inspect.isclass(f):
            continue
        try:
            out[name] = inspect.signature(f)
        except (TypeError, ValueError):
            continue
    return out


SAMPLERS = _random_signatures()
_FDT = ["float32", "float32", "float64", "float16", "bfloat16"]
_IDT = ["int32", "int8", "uint8", "int16", "uint16", "int64", "uint32", "uint64"]
# parameter values at the edges of their domains, and plain ones
_EDGE = {
    "p": ["0.0", "1.0", "0.5", "1e-3", "0.999"],
    "a": ["0.0", "1e-3", "0.5", "1.0", "3.0", "100.0"],
    "b": ["0.0", "1e-3", "0.5", "2.0", "50.0"],
    "alpha": ["0.0", "1e-3", "0.5", "1.0", "3.0"],
    "lam": ["0.0", "0.5", "3.0", "30.0", "1e4"],
    "n": ["0.0", "1.0", "5.0", "40.0", "3.5"],
    "df": ["1e-3", "0.5", "1.0", "3.0", "1e4"],
    "dfnum": ["0.5", "1.0", "4.0"],
    "dfden": ["0.5", "1.0", "4.0"],
    "sigma": ["0.0", "0.5", "1.0", "3.0"],
    "scale": ["0.0", "0.5", "1.0", "2.0"],
    "concentration": ["0.5", "1.0", "3.0"],
    "mean": ["0.5", "1.0", "3.0"],
    "loc": ["0.0", "-1.0", "2.0"],
    "lower": ["-1.0", "-np.inf", "0.0", "2.0", "-3.0"],
    "upper": ["1.0", "np.inf", "0.0", "2.5", "-2.0"],
    "minval": ["0", "-3", "1", "5", "-1.5", "0.5"],
    "maxval": ["1", "3", "0", "-1", "2.5", "10"],
    "left": ["0.0", "-1.0"],
    "mode": ["0.5", "0.0", "1.0"],
    "right": ["1.0", "2.0"],
}


def _key_src(draw, n_inputs):
    """(key source text over input x{n}, the input): a raw uint32 key or a typed one from its data."""
    seed = draw(st.sampled_from([0, 1, 7, 42, 2**31 - 1, 123456789]))
    impl = draw(st.sampled_from(["threefry2x32"] * 5 + ["rbg", "unsafe_rbg"]))
    data = {
        "threefry2x32": onp.array([0, seed], onp.uint32),
        "rbg": onp.array([0, seed, 0, seed ^ 0x5A5A], onp.uint32),
        "unsafe_rbg": onp.array([seed, 3, 0, seed], onp.uint32),
    }[impl]
    x = f"x{n_inputs}"
    if impl == "threefry2x32" and draw(st.booleans()):
        return x, data  # a raw key
    return f"T.random.wrap_key_data({x}, impl={impl!r})", data


def _param_src(draw, name, inputs, shape):
    """A parameter: an edge literal, or an array (from a new float64 input) of a shape broadcasting
    against ``shape``."""
    pool = _EDGE.get(name, ["0.5", "1.0", "2.0"])
    if draw(st.integers(0, 2)) or name in ("minval", "maxval") and draw(st.booleans()):
        return draw(st.sampled_from(pool))
    sub = shape[draw(st.integers(0, len(shape))) :] if shape else ()
    sub = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in sub)
    vals = [float(eval(draw(st.sampled_from(pool)), {"np": onp})) for _ in range(int(onp.prod(sub)))]  # noqa: S307
    inputs.append(onp.array(vals, onp.float64).reshape(sub))
    return f"x{len(inputs) - 1}"


@st.composite
def random_calls(draw):
    """A jax.random sampler call, bit for bit (see the module docstring)."""
    name = draw(st.sampled_from(sorted(SAMPLERS)))
    sig = SAMPLERS[name]
    inputs = []
    shape = tuple(draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(draw(st.integers(0, 3))))
    args = []
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and p.name == "out_sharding":
            continue
        if p.name == "key":  # (the key: k, the call's argument)
            continue
        required = p.default is p.empty
        if not required and draw(st.booleans()):
            continue
        if p.name == "shape":
            v = repr(shape)
        elif p.name == "dtype":
            integer = name in ("randint", "poisson", "geometric", "rademacher", "bits")
            v = f"np.{draw(st.sampled_from(_IDT if integer else _FDT))}"
            if name == "bits":
                v = f"np.{draw(st.sampled_from(['uint8', 'uint16', 'uint32', 'uint64']))}"
        elif name in ("ball", "orthogonal") and p.name in ("d", "n", "m"):
            v = str(draw(st.integers(1, 4)))
        elif p.name == "p" and name == "ball":
            v = draw(st.sampled_from(["1", "2", "0.5", "np.inf"]))
        elif p.name == "p" and name == "generalized_normal":
            v = draw(st.sampled_from(["0.5", "1.0", "2.0", "5.0"]))
        elif name in ("categorical",) and p.name == "logits":
            n = draw(st.integers(1, 4))
            vals = [draw(st.sampled_from([0.0, -onp.inf, 1.0, -2.0, 30.0])) for _ in range(n)]
            inputs.append(onp.array(vals, onp.float64))
            v = f"x{len(inputs) - 1}"
        elif name in ("choice", "permutation") and p.name in ("a", "x"):
            n = draw(st.integers(0, 5))
            if draw(st.booleans()):
                v = str(n)
            else:
                inputs.append(onp.arange(n, dtype=onp.float64) * 1.5 - 1)
                v = f"x{len(inputs) - 1}"
        elif name == "choice" and p.name == "p":
            v = draw(st.sampled_from(["None", "np.ones_like(np.atleast_1d(np.arange(5.0)))[:5] / 5"]))
        elif name == "dirichlet" and p.name == "alpha":
            vals = [draw(st.sampled_from([0.0, 1e-3, 0.5, 1.0, 5.0])) for _ in range(draw(st.integers(1, 4)))]
            inputs.append(onp.array(vals, onp.float64))
            v = f"x{len(inputs) - 1}"
        elif name == "multinomial" and p.name == "p":
            vals = [draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])) for _ in range(draw(st.integers(1, 4)))]
            inputs.append(onp.array(vals, onp.float64))
            v = f"x{len(inputs) - 1}"
        elif name == "multivariate_normal" and p.name in ("mean", "cov"):
            d = 2
            if p.name == "mean":
                inputs.append(onp.array([0.5, -1.0]))
            else:
                inputs.append(onp.array([[2.0, 0.5], [0.5, 1.0]]) if draw(st.booleans()) else onp.eye(d) * 0)
            v = f"x{len(inputs) - 1}"
        elif p.name == "method":
            v = repr(draw(st.sampled_from(["cholesky", "eigh", "svd"])))
        elif p.name == "mode" and name != "triangular":
            v = repr(
                draw(st.sampled_from(["low", "high"] if name in ("bernoulli", "gumbel") else ["low", "high"]))
            )
        elif p.name in ("axis",):
            v = "0"
        elif p.name in ("replace", "independent"):
            v = repr(draw(st.booleans()))
        elif p.name == "unroll":
            v = draw(st.sampled_from(["1", "2"]))
        else:
            v = _param_src(draw, p.name, inputs, shape)
        args.append(f"{p.name}={v}")
    keysrc, data = _key_src(draw, len(inputs))
    inputs.append(data)
    call = f"T.random.{name}(k, {', '.join(args)})"
    if draw(st.integers(0, 3)) == 0:  # vmap over split keys
        n = draw(st.integers(0, 3))
        body = f"T.vmap(lambda k: {call})(T.random.split({keysrc}, {n}))"
    else:
        body = f"(lambda k: {call})({keysrc})"
    bits = (
        "(lambda o: (lax.bitcast_convert_type(o, {2: np.uint16, 4: np.uint32, 8: np.uint64}"
        "[o.dtype.itemsize]) if np.issubdtype(o.dtype, np.floating) else o, o))"
    )
    # (x0 first: the derivatives are taken with respect to the first input, a parameter array)
    return f"rnd.{name}", f"{bits}({body})", inputs


# ----------------------------------------------------------------------------------------------
# indexing

_ALL_DT = ops_sig.DTYPES  # (every dtype once, as the signature pool draws them)


def _vals(draw, shape, dtype):
    n = int(onp.prod(shape))
    if dtype == "bool":
        v = [draw(st.booleans()) for _ in range(n)]
    elif dtype[0] in "iu":
        v = [
            draw(st.sampled_from([0, 1, 2, 3, 7, 100] + ([-1, -5] if dtype[0] == "i" else [])))
            for _ in range(n)
        ]
    else:
        v = [
            draw(st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.0, float("nan"), float("inf"), 0.25]))
            for _ in range(n)
        ]
        if dtype.startswith("complex"):
            v = [complex(a, draw(st.sampled_from([0.0, 1.0, -2.0]))) for a in v]
    dt = programs._BF16 if dtype == "bfloat16" else dtype
    return onp.array(v, dtype=dt).reshape(shape)


def _one_index(draw, n, eager):
    """One entry of an index tuple for an axis of size n (src, consumes_axis)."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return str(draw(st.integers(-n - 2, n + 1))), True
    if kind == 1:
        lo, hi = draw(st.integers(-n - 2, n + 2)), draw(st.integers(-n - 2, n + 2))
        step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
        parts = [draw(st.sampled_from(["", str(lo)])), draw(st.sampled_from(["", str(hi)]))]
        return ":".join(parts + ([str(step)] if step else [])), True
    if kind == 2:
        k = draw(st.integers(0, 4))
        return repr([draw(st.integers(-n - 2, n + 1)) for _ in range(k)]), True
    if kind == 3:
        k = draw(st.integers(1, 3))
        idx = [
            [draw(st.integers(-n, max(n - 1, -n))) for _ in range(k)] for _ in range(draw(st.integers(1, 2)))
        ]
        return f"np.array({idx!r}, np.{draw(st.sampled_from(['int32', 'int8', 'uint8', 'int64']))})", True
    if kind == 4:
        return "None", False
    if kind == 5 and eager and n:
        return repr([draw(st.booleans()) for _ in range(n)]), True
    if kind == 6:
        return ":", True
    return str(draw(st.integers(-n, n - 1)) if n else 0), True


@st.composite
def index_calls(draw):
    """An indexing expression or an ``.at[]`` update (see the module docstring)."""
    shape = tuple(draw(st.sampled_from([0, 1, 2, 3, 4])) for _ in range(draw(st.integers(0, 3))))
    dtype = draw(st.sampled_from(_ALL_DT))
    x = _vals(draw, shape, dtype)
    parts, axis, ell = [], 0, False
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        if not ell and draw(st.integers(0, 5)) == 0:
            parts.append("...")
            ell = True
            axis = len(shape) - (len(shape) - axis) // 2
            continue
        n = shape[axis] if axis < len(shape) else 1
        src, uses = _one_index(draw, n, eager=False)
        parts.append(src)
        axis += uses
    idx = "(" + "".join(p + ", " for p in parts) + ")"
    inputs = [x]
    op = draw(
        st.sampled_from(
            ["get", "getitem", "set", "add", "multiply", "divide", "power", "min", "max", "apply"]
        )
    )
    if op == "getitem":
        expr = f"x0[{idx}]"
        if draw(st.booleans()):
            expr = f"x0[{idx}][..., ::-1]" if shape else expr
        return "idx.getitem", expr, inputs
    mode = draw(st.sampled_from(["None", "'clip'", "'drop'", "'fill'", "'promise_in_bounds'"]))
    extra = f"mode={mode}"
    if mode == "'fill'" and draw(st.booleans()):
        extra += f", fill_value={draw(st.sampled_from(['0', '-1', '2.5', 'True', 'np.nan']))}"
    if draw(st.integers(0, 3)) == 0:
        extra += f", indices_are_sorted={draw(st.booleans())}, unique_indices={draw(st.booleans())}"
    if op == "get":
        return "idx.at_get", f"x0.at[{idx}].get({extra})", inputs
    if op == "apply":
        fn = draw(
            st.sampled_from(
                ["lambda v: v * 2", "lambda v: -v", "np.abs", "np.sqrt" if dtype[0] in "fbc" else "np.abs"]
            )
        )
        return "idx.at_apply", f"x0.at[{idx}].apply({fn}, {extra})", inputs
    vdt = draw(st.sampled_from([dtype, dtype, "float32", "int32", "weak"]))
    if vdt == "weak":
        val = draw(st.sampled_from(["2", "-1", "0.5", "True", "3.0"]))
    else:
        # (a value of the indexed shape, found by jax's abstract evaluation, or one broadcast)
        vshape = draw(st.sampled_from(["()", "full"]))
        if vshape == "()":
            inputs.append(_vals(draw, (), vdt))
            val = "x1"
        else:
            val = f"np.ones_like(x0[{idx}]) * 2"
    return f"idx.at_{op}", f"x0.at[{idx}].{op}({val}, {extra})", inputs


# ----------------------------------------------------------------------------------------------
# half precision and complex branch cuts

_HALF_UNARY = [
    "np.exp",
    "np.log",
    "np.log1p",
    "np.expm1",
    "np.tanh",
    "np.sin",
    "np.cos",
    "np.tan",
    "np.sqrt",
    "np.cbrt",
    "np.arctan",
    "np.arcsinh",
    "np.arctanh",
    "np.arccos",
    "np.arcsin",
    "np.exp2",
    "np.log2",
    "np.log10",
    "np.reciprocal",
    "np.square",
    "np.sinh",
    "np.cosh",
    "np.rint",
    "np.sign",
    "np.floor",
    "np.deg2rad",
    "nn.sigmoid",
    "nn.softplus",
    "nn.gelu",
    "nn.silu",
    "nn.relu",
    "special.erf",
    "special.erfc",
    "special.erfinv",
    "special.logit",
    "special.expit",
    "special.gammaln",
    "special.digamma",
    "special.ndtri",
    "special.i0e",
    "special.log_ndtr",
    "np.sinc",
]
_HALF_BINARY = [
    "np.add",
    "np.multiply",
    "np.divide",
    "np.power",
    "np.arctan2",
    "np.hypot",
    "np.remainder",
    "np.fmod",
    "np.floor_divide",
    "np.maximum",
    "np.logaddexp",
    "np.logaddexp2",
    "np.copysign",
    "np.nextafter",
    "special.xlogy",
    "special.xlog1py",
]
_HALF_REDUCE = [
    "np.sum",
    "np.mean",
    "np.var",
    "np.std",
    "np.prod",
    "np.cumsum",
    "np.cumprod",
    "nn.softmax",
    "nn.logsumexp",
    "nn.log_softmax",
    "np.linalg.norm",
    "np.average",
    "np.nanmean",
    "special.logsumexp",
    "nn.standardize",
]
_HALF_VALS = [0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, 6e-8, 1e-4, 3.140625, -2.5, 300.0, 1e4, 0.999, 1.001]
_BRANCH = [
    "np.sqrt", "np.log", "np.arctanh", "np.arccos", "np.arcsin", "np.arccosh", "np.arcsinh", "np.arctan",
    "np.log1p", "np.log10", "np.log2", "np.reciprocal", "np.exp", "np.sign", "np.angle", "np.tan",
    "np.tanh", "np.expm1", "np.cosh", "np.abs",
]  # fmt: skip
_AXIS_VALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, float("inf"), -float("inf"), 1e30, 1e-30]


@st.composite
def half_calls(draw):
    """A float16/bfloat16 program, or a complex function at its branch cuts."""
    if draw(st.integers(0, 2)) == 0:
        n = draw(st.integers(1, 8))
        re = [draw(st.sampled_from(_AXIS_VALS)) for _ in range(n)]
        im = [draw(st.sampled_from([0.0, -0.0] * 3 + _AXIS_VALS)) for _ in range(n)]
        dt = draw(st.sampled_from(["complex64", "complex128"]))
        x = onp.array([complex(a, b) for a, b in zip(re, im)], dt)
        fn = draw(st.sampled_from(_BRANCH + ["lambda z: np.power(z, 0.5)", "lambda z: z ** (1 / 3)"]))
        return "half.branch", f"({fn})(x0)", [x]
    dt = draw(st.sampled_from(["float16", "bfloat16"]))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 5])) for _ in range(draw(st.integers(0, 2))))
    n = int(onp.prod(shape))
    sign = [draw(st.sampled_from([1.0, -1.0])) for _ in range(n)]
    vals = [s * draw(st.sampled_from(_HALF_VALS)) for s in sign]
    x = onp.array(vals, onp.float64).astype(programs._BF16 if dt == "bfloat16" else dt).reshape(shape)
    y = onp.array([draw(st.sampled_from(_HALF_VALS)) for _ in range(n)], onp.float64)
    y = y.astype(programs._BF16 if dt == "bfloat16" else dt).reshape(shape)
    expr = "x0"
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 4))
        if kind <= 1:
            expr = f"{draw(st.sampled_from(_HALF_UNARY))}({expr})"
        elif kind == 2:
            other = draw(st.sampled_from(["x1", "2", "0.5", "np.float16(3)", "-1.5", "x1 * 0"]))
            expr = f"{draw(st.sampled_from(_HALF_BINARY))}({expr}, {other})"
        elif kind == 3:
            fn = draw(st.sampled_from(_HALF_REDUCE))
            ax = draw(st.sampled_from(["", ", axis=-1"] if shape else [""]))
            expr = f"{fn}({expr}{ax})"
        else:
            to = draw(st.sampled_from(["float32", "float16", "bfloat16", "int8", "uint8", "int32"]))
            expr = f"({expr}).astype(np.{to})"
    return "half.prog", expr, [x, y]


POOLS = {"random": random_calls, "index": index_calls, "half": half_calls}
