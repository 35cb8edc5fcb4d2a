"""The jaxpr pretty printer: stable, deterministic text that reads like JAX's.

Layer: kernel. Imports core and numpy.

    { lambda ; a:f64[3]. let
        b:f64[3] = sin a
        c:f64[] = reduce_sum[axes=(0,)] b
      in (c,) }

Names are given in order of first appearance (a, b, ..., z, ba, bb, ...) and continue into inner
jaxprs of higher-order equations, which print indented inside their parameter list.
"""

from __future__ import annotations

import string

import numpy as np

from funcgrad import core

_RESERVED = frozenset({"in", "let", "if", "do"})
_WIDTH = 100  # JAX uses 80; 100 keeps two-equation programs on one line, as the spec example shows


class _Names:
    """Names variables in order of first appearance, skipping words of the printed syntax."""

    def __init__(self):
        self.names: dict[core.Var, str] = {}
        self.count = 0

    def __call__(self, v: core.Var) -> str:
        name = self.names.get(v)
        if name is None:
            name = _nth_name(self.count)
            self.count += 1
            while name in _RESERVED:
                name = _nth_name(self.count)
                self.count += 1
            self.names[v] = name
        return name


def _nth_name(n: int) -> str:
    letters = string.ascii_lowercase
    s = ""
    while True:
        s = letters[n % 26] + s
        n = n // 26
        if n == 0:
            return s
        # After 'z' comes 'ba' (not 'aa'), like JAX.


def _binder(names, v) -> str:
    return f"{names(v)}:{v.aval.str_short()}"


def _atom(names, a) -> str:
    if type(a) is core.Literal:
        return f"{_literal_str(a.val)}:{a.aval.str_short()}"
    return names(a)


def _literal_str(val) -> str:
    v = np.asarray(val)
    if v.dtype == np.bool_:
        return str(bool(v))
    if v.dtype.kind in "iu":
        return str(int(v))
    if v.dtype.kind == "f":
        return repr(float(v))
    return str(v.item())


def _param_str(value, names, indent: int, source_info: bool) -> str:
    if isinstance(value, core.ClosedJaxpr | core.Jaxpr):
        jaxpr = value.jaxpr if isinstance(value, core.ClosedJaxpr) else value
        return _pp(jaxpr, names, indent, source_info)
    if isinstance(value, tuple) and value and isinstance(value[0], core.ClosedJaxpr | core.Jaxpr):
        inner = [_param_str(v, names, indent + 2, source_info) for v in value]
        pad = " " * (indent + 2)
        return "(\n" + "".join(f"{pad}{s}\n" for s in inner) + " " * indent + ")"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


def _pp_eqn(eqn: core.JaxprEqn, names, indent: int, source_info: bool) -> str:
    lhs = " ".join(_binder(names, v) for v in eqn.outvars) or "_"
    rhs_args = " ".join(_atom(names, a) for a in eqn.invars)
    params = sorted(eqn.params.items())
    has_jaxpr = any(core.jaxprs_in_params({k: v}) for k, v in params)
    if not params:
        head = eqn.primitive.name
    elif has_jaxpr:
        # Higher-order equations print their parameters one per line, inner jaxprs indented.
        pad = " " * (indent + 2)
        body = "".join(f"{pad}{k}={_param_str(v, names, indent + 2, source_info)}\n" for k, v in params)
        head = f"{eqn.primitive.name}[\n{body}{' ' * indent}]"
    else:
        head = (
            f"{eqn.primitive.name}["
            + " ".join(f"{k}={_param_str(v, names, indent, source_info)}" for k, v in params)
            + "]"
        )
    line = f"{lhs} = {head} {rhs_args}".rstrip()
    if source_info and eqn.source_info is not None:
        line += f"  # {eqn.source_info}"
    return line


def _pp(jaxpr: core.Jaxpr, names: _Names, indent: int, source_info: bool) -> str:
    consts = " ".join(_binder(names, v) for v in jaxpr.constvars)
    ins = " ".join(_binder(names, v) for v in jaxpr.invars)
    eqns = [_pp_eqn(e, names, indent + 4, source_info) for e in jaxpr.eqns]
    outs = " ".join(_atom(names, a) for a in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    head = f"{{ lambda {consts}; {ins}. let"
    # Like JAX's layout: a jaxpr that fits on one line is printed on one line.
    one_line = f"{head} {'; '.join(eqns)} in {outs} }}"
    if indent + len(one_line) <= _WIDTH and not any("\n" in e or "  #" in e for e in eqns):
        return one_line
    pad = " " * (indent + 4)
    body = "".join(f"\n{pad}{e}" for e in eqns)
    return f"{head}{body}\n{' ' * (indent + 2)}in {outs} }}"


def pp_jaxpr(jaxpr: core.Jaxpr, *, source_info: bool = False) -> str:
    """The text of ``jaxpr``; with ``source_info=True`` each equation ends in ``# file:line``.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> print(pp_jaxpr(funcgrad.make_jaxpr(fnp.sin)(1.0).jaxpr))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    """
    return _pp(jaxpr, _Names(), 0, source_info)
