"""autograd's ``unary_to_nary`` and naming helpers, for the shim (see ``tests/integration/suites/README.md``).

A unary operator ``op(fun, x, *op_args)`` becomes an n-ary one ``op(fun, argnum=0)(*args)`` that
differentiates with respect to ``args[argnum]`` (or the tuple ``args[i] for i in argnum``).
"""

from __future__ import annotations

import functools


def get_name(f):
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    return getattr(f, "__doc__", "")


def subvals(seq, pairs):
    out = list(seq)
    for i, v in pairs:
        out[i] = v
    return tuple(out)


def wraps(fun, namestr="{fun}", docstr="{doc}", **kw):
    def decorate(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kw)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kw)
        except (AttributeError, KeyError, ValueError):
            pass
        return f

    return decorate


def unary_to_nary(unary_operator):
    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        if type(argnum) not in (int, tuple, list):
            raise TypeError(f"argnum must be an int, a tuple or a list, got {argnum!r}")

        @wraps(
            fun,
            "{op}_of_{fun}_wrt_argnum_{argnum}",
            "    {op} of function {fun} with respect to argument number {argnum}. Takes the\n"
            "    same arguments as {fun} but returns the {op}.\n    ",
            op=get_name(unary_operator),
            argnum=argnum,
        )
        def nary_f(*args, **kwargs):
            @wraps(fun)
            def unary_f(x):
                pairs = [(argnum, x)] if isinstance(argnum, int) else zip(argnum, x)
                return fun(*subvals(args, pairs), **kwargs)

            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *op_args, **op_kwargs)

        return nary_f

    return nary_operator
