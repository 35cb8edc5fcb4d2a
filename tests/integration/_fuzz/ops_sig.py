"""The four-way table's signature-driven pool (session 21; ops_quad runs it): every public function of
``jax.numpy``, ``jax.numpy.linalg``, ``jax.numpy.fft``, ``jax.nn`` and ``jax.scipy.special``, its
arguments drawn from its signature.

For each function (found on jax's side, so funcgrad must have the same names) each parameter is drawn
by its name and default: array parameters (``x``, ``a``, ``x1``/``x2``, ``arr``, ``ary``, ``m``, ...)
as inputs of every dtype (bool, int8..uint64, float16, bfloat16, float32/64, complex64/128) or as
Python scalars written into the call, with broadcastable shapes among them (square stacks for
linalg); ``axis`` as ``None``, an integer (negative too) or a tuple; ``keepdims``/flags as booleans;
``dtype=`` as a dtype; ``where=`` as a mask; ``initial=`` as a scalar; string parameters (``order``,
``mode``, ``side``, ``method``, ``norm``, ...) from the quoted words of the function's docstring;
counts (``n``, ``N``, ``k``, ``num``, ``bins``, ...) as small integers; a keyword with a default is
left out half of the time. A draw is kept where jax's abstract evaluation accepts it (in 64-bit
mode), and one in eight of those jax refuses is kept too (funcgrad must refuse it as well).

``UNDRAWN``: the functions no older table's source names; the pool ``sig:new`` draws only those,
``sig`` all (``sig:NAME,NAME`` the functions so named).

>>> "isposinf" in NAMES
True
"""

from __future__ import annotations

import inspect
import pathlib
import re

import numpy as onp
from hypothesis import assume
from hypothesis import strategies as st

from _fuzz import programs

# Modules as the case's source names them (``np``/``nn``/``special`` are bound; the rest via T).
_MODULES = {
    "np": "numpy",
    "np.linalg": "numpy.linalg",
    "np.fft": "numpy.fft",
    "nn": "nn",
    "special": "scipy.special",
}
# Not numerical, not pure, or functions that return functions.
_EXCLUDE = {
    "load",
    "save",
    "savez",
    "fromfile",
    "fromstring",
    "frombuffer",
    "fromiter",
    "from_dlpack",
    "printoptions",
    "set_printoptions",
    "get_printoptions",
    "array_repr",
    "array_str",
    "einsum_path",
    "vectorize",
    "frompyfunc",
    "iterable",
    "isdtype",
    "issubdtype",
    "can_cast",
    "result_type",
    "promote_types",
    "dtype",
    "finfo",
    "iinfo",
    "get_scaled_dot_general_config",
    "scaled_dot_general",
    "scaled_matmul",
    "ndim",
    "shape",
    "size",
    "isscalar",
    "broadcast_shapes",
    "mask_indices",
}

DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
_FLOAT_HEAVY = ["float32", "float64", "float64", "float16", "bfloat16", "complex64", "int32"]

# Array parameters, by name.
_ARRAY_NAMES = {
    "x",
    "a",
    "x1",
    "x2",
    "y",
    "b",
    "arr",
    "ary",
    "m",
    "v",
    "array",
    "z",
    "ar",
    "ar1",
    "ar2",
    "a1",
    "a2",
    "p",
    "q",
    "u",
    "xp",
    "fp",
    "condition",
    "element",
    "test_elements",
    "values",
    "val",
    "filt",
    "f",
    "sample",
    "prototype",
    "A",
    "lmbda",
    "weights",
    "object",
    "vals",
    "mask",
    "c",
    "k_arr",
    "input",
    "operand",
    "prepend",
    "append",
    "to_end",
    "to_begin",
    "mean",
    "fweights",
    "aweights",
    "w",
    "choices",
    "keys",
    "seq_of_zeros",
    "data",
    "alpha_arr",
    "dx_arr",
    "r",
    "n_arr",
    "df",
    "s_arr",
    "nu",
    "a_arr",
    "b_arr",
}
_INT_NAMES = {
    "n",
    "N",
    "M",
    "k",
    "num",
    "deg",
    "ind",
    "ndim",
    "minlength",
    "length",
    "count",
    "offset",
    "shift",
    "start",
    "decimals",
    "ddof",
    "kth",
    "repeats",
    "total_repeat_length",
    "num_classes",
    "m",
    "dimension",
    "size",
    "n_terms",
    "edge_order",
    "ord_int",
}
_AXIS_NAMES = {"axis", "axis1", "axis2", "axisa", "axisb", "axisc", "source", "destination", "start_axis"}


def _public(mod):
    out = []
    for name in dir(mod):
        f = getattr(mod, name)
        if name.startswith("_") or name in _EXCLUDE or inspect.isclass(f) or inspect.ismodule(f):
            continue
        if not callable(f):
            continue
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            continue
        out.append((name, sig, f.__doc__ or ""))
    return out


def _functions():
    import jax  # the oracle: names, signatures and docstrings are jax's

    jax_mods = {k: jax for k in _MODULES}
    import jax.nn
    import jax.numpy
    import jax.scipy.special

    jax_mods = {
        "np": jax.numpy,
        "np.linalg": jax.numpy.linalg,
        "np.fft": jax.numpy.fft,
        "nn": jax.nn,
        "special": jax.scipy.special,
    }
    table = {}
    for prefix, mod in jax_mods.items():
        for name, sig, doc in _public(mod):
            table.setdefault(f"{prefix}.{name}", (prefix, name, sig, doc))
    return table


FUNCS = _functions()
NAMES = {v[1] for v in FUNCS.values()}


def _undrawn():
    here = pathlib.Path(__file__).resolve().parent
    src = "\n".join(
        p.read_text() for p in here.glob("*.py") if p.name not in ("ops_sig.py", "ops_quad_more.py")
    )
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", src))
    return sorted(q for q, (_, name, _, _) in FUNCS.items() if name not in words)


UNDRAWN = _undrawn()

_QUOTED = re.compile(r"""[`"']{1,2}([A-Za-z][A-Za-z0-9_\-]{0,14})[`"']{1,2}""")


def _words(doc, pname):
    """Quoted words of a docstring (the candidates of a string parameter), those near pname first."""
    words = _QUOTED.findall(doc)
    near = []
    for m in re.finditer(rf"\b{re.escape(pname)}\b", doc):
        near += _QUOTED.findall(doc[m.start() : m.start() + 400])
    return sorted(set(near)) or sorted(set(words))


def _shape(draw, rank_hi=3):
    return tuple(draw(st.sampled_from([0, 1, 2, 2, 3, 4])) for _ in range(draw(st.integers(0, rank_hi))))


def _values(draw, shape, dtype, special):
    n = int(onp.prod(shape))
    if dtype == "bool":
        vals = [draw(st.booleans()) for _ in range(n)]
    elif dtype[0] in "iu":
        info = onp.iinfo(dtype)
        pool = [0, 1, 2, 3, 1, 2, 5, -1, -2, -3]
        if special:
            pool += [int(info.min), int(info.max)]
        vals = [v for v in (draw(st.sampled_from(pool)) for _ in range(n))]
        vals = [min(max(v, int(info.min)), int(info.max)) for v in vals]
    else:
        pool = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 0.25, 1.5, -3.0, 0.1]
        if special:
            pool += [float("nan"), float("inf"), float("-inf"), 1e30, 7e4]
        vals = [draw(st.sampled_from(pool)) for _ in range(n)]
        if dtype.startswith("complex"):
            vals = [complex(v, draw(st.sampled_from(pool))) for v in vals]
    dt = programs._BF16 if dtype == "bfloat16" else dtype
    with onp.errstate(over="ignore", invalid="ignore"):
        return onp.array(vals, dtype=dt).reshape(shape)


def _scalar_literal(draw):
    return draw(
        st.sampled_from(["2", "-1", "0", "1.5", "-0.0", "True", "(1+2j)", "3", "0.5", "float('nan')"])
    )


class _Ctx:
    """What one call's draw has made so far: its inputs and the base shape of its arrays."""

    def __init__(self, draw, linalg, special):
        self.draw, self.inputs, self.linalg, self.special = draw, [], linalg, special
        if linalg:
            n = draw(st.sampled_from([0, 1, 2, 3]))
            self.base = tuple(draw(st.sampled_from([1, 2])) for _ in range(draw(st.integers(0, 1)))) + (n, n)
        else:
            self.base = _shape(draw)
        self.dtype = draw(st.sampled_from(_FLOAT_HEAVY if draw(st.booleans()) else DTYPES))

    def array(self, like_base=True, dtype=None):
        draw = self.draw
        if not like_base:
            shape = _shape(draw, 2)
        else:
            b = self.base
            kind = draw(st.integers(0, 5))
            if kind == 0 and b:
                shape = b[draw(st.integers(0, len(b))) :]
            elif kind == 1 and b:
                shape = tuple(1 if draw(st.booleans()) else d for d in b)
            else:
                shape = b
        if dtype is None:
            dtype = self.dtype if draw(st.integers(0, 2)) else draw(st.sampled_from(DTYPES))
        if not self.inputs and draw(st.integers(0, 9)) == 0:
            return _scalar_literal(draw)
        self.inputs.append(_values(draw, shape, dtype, self.special))
        return f"x{len(self.inputs) - 1}"

    def nd(self):
        return len(self.base)


def _axis(draw, nd, allow_none=True, allow_tuple=True):
    opts = []
    if allow_none:
        opts.append("None")
    if nd:
        opts += [str(draw(st.integers(-nd, nd - 1))), str(draw(st.integers(-nd, nd - 1)))]
        if allow_tuple:
            k = draw(st.integers(0, nd))
            perm = draw(st.permutations(range(nd)))[:k]
            opts.append(repr(tuple(p - nd if draw(st.booleans()) else p for p in perm)))
    else:
        opts.append("0")
    if draw(st.integers(0, 15)) == 0:
        opts.append(str(nd + 1))  # out of range: both must raise
    return draw(st.sampled_from(opts))


def _dtype_src(draw):
    return draw(
        st.sampled_from(["None"] + [f"np.{d}" for d in DTYPES if d != "bool"] + ["bool", "float", "int"])
    )


def _or_array(draw, literals, make):
    # one of the literals, or (one time in k+1) an array made only then
    i = draw(st.integers(0, len(literals)))
    return literals[i] if i < len(literals) else make()


def _param(draw, ctx, fname, p, doc, first):
    """Source text of parameter p's value, or None to leave it at its default."""
    name, default = p.name, p.default
    required = default is inspect.Parameter.empty
    if first and required and (name in _ARRAY_NAMES or ctx.linalg):
        return ctx.array()
    if name in ("out", "device", "out_sharding", "copy", "overwrite_input", "inplace", "_dot_general"):
        return None if not required else "None"
    if not required and draw(st.booleans()):
        return None
    if name == "shape" or name == "new_shape" or name == "dims" or name == "dimensions":
        nd = draw(st.integers(0, 3))
        return repr(
            tuple(draw(st.integers(0, 3)) for _ in range(nd)) if nd != 1 else (draw(st.integers(0, 4)),)
        )
    if name == "dtype" or name == "preferred_element_type":
        return _dtype_src(draw)
    if name in _AXIS_NAMES or name == "axes" and fname in ("transpose", "permute_dims"):
        nd = ctx.nd()
        if name == "axes":
            return repr(tuple(draw(st.permutations(range(nd))))) if nd else "None"
        return _axis(draw, nd, allow_none=not required, allow_tuple=name == "axis")
    if name == "axes":
        nd = max(ctx.nd(), 1)
        return draw(
            st.sampled_from(
                ["None", "(-1,)", "(0,)", "(-2, -1)", "(0, 1)", "2", "1", "0", repr(tuple(range(nd)))]
            )
        )
    if name == "where":
        return ctx.array(dtype="bool")
    if name in ("initial", "fill_value", "nan", "posinf", "neginf", "default", "left", "right", "period"):
        if name in ("left", "right") and isinstance(default, bool):
            return repr(draw(st.booleans()))
        return draw(st.sampled_from(["0", "-1", "2.5", "1", "float('inf')", "-3", "True"]))
    if isinstance(default, bool) or name in ("keepdims", "sparse", "endpoint", "retstep", "increasing"):
        return repr(draw(st.booleans()))
    if isinstance(default, str) or name in (
        "order",
        "mode",
        "side",
        "method",
        "norm",
        "kind",
        "UPLO",
        "trim",
        "bitorder",
        "indexing",
        "casting",
        "optimize",
    ):
        cands = _words(doc, name) + ([default] if isinstance(default, str) else [])
        if name == "norm":
            cands += ["backward", "ortho", "forward"]
        return repr(draw(st.sampled_from(cands or ["x"])))
    if name == "ord":
        return draw(
            st.sampled_from(["None", "1", "2", "-1", "-2", "np.inf", "-np.inf", "'fro'", "'nuc'", "0", "3"])
        )
    if name in ("rtol", "atol", "tol", "rcond", "dx", "base", "beta", "alpha", "d", "discont", "bias_val"):
        return draw(st.sampled_from(["None", "0.5", "1e-3", "2.0", "0", "-1.0"]))
    if name in ("s",):
        return draw(st.sampled_from(["None", "(2,)", "(3, 2)", "(1,)", "(4, 4)"]))
    if name == "bins":
        return _or_array(draw, ["3", "1", "'auto'"], lambda: ctx.array(like_base=False, dtype="float64"))
    if name in ("range",):
        return draw(st.sampled_from(["None", "(0.0, 1.0)", "(-2, 2)", "(1, 1)"]))
    if name in ("indices_or_sections",):
        return draw(st.sampled_from(["1", "2", "3", "[1]", "[0, 2]", "[3, 1]"]))
    if name in ("pad_width",):
        return draw(st.sampled_from(["1", "(1, 2)", "((0, 1),)", "0", "2"]))
    if name in ("reps", "repeats"):
        return _or_array(draw, ["2", "0", "(2, 1)", "[1, 2]", "1"], lambda: ctx.array(dtype="int32"))
    if name in ("indices", "obj", "ind", "multi_index"):
        return _or_array(draw, ["[0, -1]", "1", "slice(0, 2)", "(0,)"], lambda: ctx.array(dtype="int32"))
    if name in ("subscripts",):
        return draw(st.sampled_from(["'i->'", "'ij->ji'", "'...->...'", "'ii->i'", "'ij,j->i'"]))
    if name in ("num_classes", "num", "N", "M", "n", "k", "deg", "m"):
        return draw(st.sampled_from(["0", "1", "2", "3", "-1", "5"] + (["None"] if not required else [])))
    if name in _INT_NAMES:
        return draw(st.sampled_from(["0", "1", "2", "-1", "3"] + (["None"] if not required else [])))
    if name in ("subset_by_index",):
        return draw(st.sampled_from(["None", "(0, 1)", "(0, 2)"]))
    if name in ("func", "func1d", "function", "pyfunc"):
        return draw(st.sampled_from(["np.sum", "np.cumsum", "lambda v, *a: v * 2", "np.max"]))
    if name in ("funclist",):
        return "[lambda v: v * 2, 1.5]"
    if name in ("condlist",):
        return f"[{ctx.array(dtype='bool')}, {ctx.array(dtype='bool')}]"
    if name in ("choicelist",):
        return f"[{ctx.array()}, {ctx.array()}]"
    if name in ("arrays", "tup"):
        k = draw(st.integers(1, 3))
        return "[" + ", ".join(ctx.array() for _ in range(k)) + "]"
    if name in ("precision",):
        return draw(st.sampled_from(["None", "'highest'", "lax.Precision.HIGH"]))
    if name in ("unroll",):
        return draw(st.sampled_from(["1", "2", "16"]))
    if name in ("equal_nan", "assume_unique", "return_index", "return_inverse", "return_counts"):
        return repr(draw(st.booleans()))
    if name in ("bins_edges", "xi"):
        return ctx.array()
    if name in _ARRAY_NAMES or required:
        return ctx.array(like_base=name not in ("xp", "fp", "bins", "keys", "weights") or draw(st.booleans()))
    if default is None:
        return _or_array(draw, ["None"], ctx.array)
    if isinstance(default, (int, float)):
        return repr(draw(st.sampled_from([default, 0, 1, 2, -1])))
    return None


def call(draw, qual):
    """One drawn call of the function qual ('np.name'): (name, expr, inputs)."""
    prefix, fname, sig, doc = FUNCS[qual]
    linalg = prefix == "np.linalg" or fname in (
        "trace",
        "diagonal",
        "matrix_transpose",
        "fill_diagonal",
        "diag_indices_from",
        "tril_indices_from",
        "triu_indices_from",
        "matmul",
        "matvec",
        "vecmat",
    )
    ctx = _Ctx(draw, linalg, special=draw(st.integers(0, 3)) == 0)
    pos, kw = [], []
    skipping = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.kind is p.VAR_POSITIONAL:
            if p.name in ("args", "arys", "xi", "operands", "shapes", "varargs"):
                k = draw(st.integers(0 if p.name == "varargs" else 1, 2))
                pos += [ctx.array() for _ in range(k)]
            continue
        v = _param(draw, ctx, fname, p, doc, first=not pos and not kw)
        if v is None:
            skipping = True
            continue
        if (
            p.kind is p.KEYWORD_ONLY
            or skipping
            or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty and draw(st.booleans()))
        ):
            if p.kind is p.POSITIONAL_ONLY:
                continue
            kw.append(f"{p.name}={v}")
            skipping = True
        else:
            pos.append(v)
    expr = f"{prefix}.{fname}(" + ", ".join(pos + kw) + ")"
    return f"sig.{prefix}.{fname}", expr, ctx.inputs


def _accepted_by_jax(expr, inputs):
    """Whether jax's abstract evaluation (64-bit mode) accepts the call."""
    import jax
    import jax.nn
    import jax.numpy
    import jax.scipy.special

    env = {"T": jax, "np": jax.numpy, "lax": jax.lax, "nn": jax.nn, "special": jax.scipy.special, "onp": onp}
    args = ", ".join(f"x{i}" for i in range(len(inputs)))
    try:
        f = eval(f"lambda {args}: {expr}", env)  # noqa: S307 (the fuzzer's own source text)
        with programs.mode(True):
            jax.eval_shape(f, *inputs)
        return True
    except Exception:
        return False


@st.composite
def sig_calls(draw, only=""):
    """A drawn call of the signature pool: ``only`` is '' (all functions), 'new' (UNDRAWN) or a
    comma-separated list of names ('np.isposinf,nn.swish' or bare 'isposinf')."""
    if only == "new":
        names = UNDRAWN
    elif only:
        want = only.split(",")
        names = [q for q in FUNCS if q in want or FUNCS[q][1] in want]
    else:
        names = sorted(FUNCS)
    qual = draw(st.sampled_from(names))
    name, expr, inputs = call(draw, qual)
    ok = _accepted_by_jax(expr, inputs)
    if not ok:
        assume(draw(st.integers(0, 7)) == 0)
    return name, expr, inputs
