"""autograd.core on funcgrad: ``make_vjp``, ``make_jvp``, ``vspace`` and the registration of
derivative makers (``defvjp``, ``defjvp``, ``def_linear``, ...) for ``primitive`` functions."""

from __future__ import annotations

import warnings

import numpy as onp

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import Tracer

from . import tracer as _tracer
from .tracer import getval, primitive_jvps, primitive_vjps  # noqa: F401


def make_vjp(fun, x):
    """``(vjp, ans)``: ``vjp(g)`` is the cotangent of ``x`` for the output cotangent ``g``."""
    ans, f_vjp = funcgrad.vjp(fun, x)

    def vjp(g):
        return f_vjp(_cotangent_like(g, ans))[0]

    return vjp, ans


def make_jvp(fun, x):
    """``jvp(v) -> (ans, tangent)``."""

    def jvp(g):
        return funcgrad.jvp(fun, (x,), (_cotangent_like(g, x),))

    return jvp


def _cotangent_like(g, like):
    def leaf(g, p):
        g = fnp.asarray(g)
        dtype = fnp.result_type(p)
        if not fnp.issubdtype(dtype, fnp.inexact):
            return g
        if not fnp.issubdtype(dtype, fnp.complexfloating):
            g = fnp.real(g)
        return fnp.broadcast_to(g.astype(dtype), fnp.shape(p))

    return funcgrad.tree_util.tree_map(leaf, g, like)


# ----------------------------------------------------------------------------------------------
# Registration of derivative makers (autograd.extend)


def _translate_vjp(vjpfun, fun, argnum):
    if vjpfun is None:
        return lambda ans, *args, **kwargs: lambda g: vspace(args[argnum]).zeros()
    if callable(vjpfun):
        return vjpfun
    raise TypeError(f"Can't convert {vjpfun} to VJP")


def defvjp_argnums(fun, vjpmaker):
    primitive_vjps[fun] = vjpmaker


def defvjp_argnum(fun, vjpmaker):
    def vjp_argnums(argnums, *args):
        vjps = [vjpmaker(argnum, *args) for argnum in argnums]
        return lambda g: tuple(vjp(g) for vjp in vjps)

    defvjp_argnums(fun, vjp_argnums)


def defvjp(fun, *vjpmakers, **kwargs):
    argnums = kwargs.get("argnums", range(len(vjpmakers)))
    vjps_dict = {n: _translate_vjp(v, fun, n) for n, v in zip(argnums, vjpmakers)}

    def vjp_argnums(argnums, ans, args, kwargs):
        missing = [n for n in argnums if n not in vjps_dict]
        if missing:
            raise NotImplementedError(f"VJP of {fun.__name__} wrt argnum {missing[0]} not defined")
        vjps = [vjps_dict[n](ans, *args, **kwargs) for n in argnums]
        return lambda g: tuple(vjp(g) for vjp in vjps)

    defvjp_argnums(fun, vjp_argnums)


def _translate_jvp(jvpfun, fun, argnum):
    if jvpfun is None:
        return lambda g, ans, *a, **k: vspace(ans).zeros()
    if jvpfun == "same":
        return lambda g, ans, *args, **kwargs: fun(*_subval(args, argnum, g), **kwargs)
    if callable(jvpfun):
        return jvpfun
    raise TypeError(f"Can't convert {jvpfun} to JVP")


def _subval(args, i, v):
    args = list(args)
    args[i] = v
    return args


def defjvp_argnums(fun, jvpmaker):
    primitive_jvps[fun] = jvpmaker


def defjvp_argnum(fun, jvpmaker):
    def jvp_argnums(argnums, gs, ans, args, kwargs):
        return sum_outgrads(jvpmaker(n, g, ans, args, kwargs) for n, g in zip(argnums, gs))

    defjvp_argnums(fun, jvp_argnums)


def defjvp(fun, *jvpfuns, **kwargs):
    argnums = kwargs.get("argnums", range(len(jvpfuns)))
    jvps_dict = {n: _translate_jvp(j, fun, n) for n, j in zip(argnums, jvpfuns)}

    def jvp_argnums(argnums, gs, ans, args, kwargs):
        missing = [n for n in argnums if n not in jvps_dict]
        if missing:
            raise NotImplementedError(f"JVP of {fun.__name__} wrt argnum {missing[0]} not defined")
        return sum_outgrads(jvps_dict[n](g, ans, *args, **kwargs) for n, g in zip(argnums, gs))

    defjvp_argnums(fun, jvp_argnums)


def def_linear(fun):
    """Mark ``fun`` linear in each argument (its VJP and JVP are ``fun`` itself, transposed)."""
    defjvp_argnum(fun, lambda argnum, g, ans, args, kwargs: fun(*_subval(args, argnum, g), **kwargs))


def sum_outgrads(gs):
    total = None
    for g in gs:
        total = g if total is None else total + g
    return total


# ----------------------------------------------------------------------------------------------
# Vector spaces (autograd.core.vspace): what check_grads and user code need of a value's space


class VSpace:
    iscomplex = False

    def __init__(self, value):
        pass

    def zeros(self):
        raise NotImplementedError

    def ones(self):
        raise NotImplementedError

    def standard_basis(self):
        raise NotImplementedError

    def randn(self):
        raise NotImplementedError

    def mut_add(self, x_prev, x_new):
        return self._add(x_prev, x_new) if x_prev is not None else x_new

    def add(self, x, y):
        return self._add(x, y)

    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y):
        return self._inner_prod(x, y)

    def covector(self, x):
        return self._covector(x)

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return f"{type(self).__name__}_{self.__dict__}"

    @classmethod
    def register(cls, value_type, vspace_maker=None):
        _vspace_makers[value_type] = vspace_maker or cls


_vspace_makers: dict = {}


class ArrayVSpace(VSpace):
    def __init__(self, value):
        aval = fnp.asarray(value) if not isinstance(value, Tracer) else value
        self.shape = tuple(fnp.shape(aval))
        self.dtype = onp.dtype(fnp.result_type(aval))

    @property
    def size(self):
        return int(onp.prod(self.shape))

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        return onp.zeros(self.shape, dtype=self.dtype)

    def ones(self):
        return onp.ones(self.shape, dtype=self.dtype)

    def standard_basis(self):
        for idx in onp.ndindex(*self.shape):
            v = onp.zeros(self.shape, dtype=self.dtype)
            v[idx] = 1
            yield v

    def randn(self):
        return onp.array(onp.random.randn(*self.shape)).astype(self.dtype)

    def _add(self, x, y):
        return x + y

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        return fnp.dot(fnp.ravel(x), fnp.ravel(y))

    def _covector(self, x):
        return x


class ComplexArrayVSpace(ArrayVSpace):
    iscomplex = True

    @property
    def size(self):
        return 2 * int(onp.prod(self.shape))

    def ones(self):
        return onp.ones(self.shape, dtype=self.dtype) + 1j * onp.ones(self.shape, dtype=self.dtype)

    def standard_basis(self):
        for idx in onp.ndindex(*self.shape):
            for v in (1.0, 1.0j):
                vec = onp.zeros(self.shape, dtype=self.dtype)
                vec[idx] = v
                yield vec

    def randn(self):
        return onp.asarray(onp.random.randn(*self.shape) + 1j * onp.random.randn(*self.shape)).astype(
            self.dtype
        )

    def _inner_prod(self, x, y):
        return fnp.real(fnp.dot(fnp.conj(fnp.ravel(x)), fnp.ravel(y)))

    def _covector(self, x):
        return fnp.conj(x)


class ContainerVSpace(VSpace):
    def __init__(self, value):
        self.shape = self._build(value)

    @property
    def size(self):
        return sum(self._values(self.shape, lambda vs: vs.size))

    def zeros(self):
        return self._map(lambda vs: vs.zeros())

    def ones(self):
        return self._map(lambda vs: vs.ones())

    def randn(self):
        return self._map(lambda vs: vs.randn())

    def standard_basis(self):
        zero = self.zeros()
        for i, vs in self._kv():
            for x in vs.standard_basis():
                yield self._subval(zero, i, x)

    def _add(self, x, y):
        return self._map(lambda vs, x, y: vs._add(x, y), x, y)

    def _mut_add(self, x, y):
        return self._add(x, y)

    def _scalar_mul(self, x, a):
        return self._map(lambda vs, x: vs._scalar_mul(x, a), x)

    def _inner_prod(self, x, y):
        return sum(self._values(self.shape, lambda vs, x, y: vs._inner_prod(x, y), x, y))

    def _covector(self, x):
        return self._map(lambda vs, x: vs._covector(x), x)


class SequenceVSpace(ContainerVSpace):
    def _build(self, value):
        return self.seq_type(vspace(v) for v in value)

    def _kv(self):
        return enumerate(self.shape)

    def _values(self, shape, f, *xs):
        return [f(vs, *(x[i] for x in xs)) for i, vs in enumerate(shape)]

    def _map(self, f, *xs):
        return self.seq_type(f(vs, *(x[i] for x in xs)) for i, vs in enumerate(self.shape))

    def _subval(self, xs, i, v):
        xs = list(xs)
        xs[i] = v
        return self.seq_type(xs)


class ListVSpace(SequenceVSpace):
    seq_type = list


class TupleVSpace(SequenceVSpace):
    seq_type = tuple


class DictVSpace(ContainerVSpace):
    def _build(self, value):
        return {k: vspace(v) for k, v in value.items()}

    def _kv(self):
        return self.shape.items()

    def _values(self, shape, f, *xs):
        return [f(vs, *(x[k] for x in xs)) for k, vs in shape.items()]

    def _map(self, f, *xs):
        return {k: f(vs, *(x[k] for x in xs)) for k, vs in self.shape.items()}

    def _subval(self, xs, k, v):
        xs = dict(xs)
        xs[k] = v
        return xs


def vspace(value):
    """The vector space of ``value`` (arrays, scalars, tracers, lists, tuples, dicts)."""
    for t, maker in _vspace_makers.items():
        if isinstance(value, t):
            return maker(value)
    if isinstance(value, list):
        return ListVSpace(value)
    if isinstance(value, tuple):
        return TupleVSpace(value)
    if isinstance(value, dict):
        return DictVSpace(value)
    try:
        dtype = onp.dtype(fnp.result_type(value))
    except (TypeError, ValueError) as e:
        raise TypeError(f"Can't find vector space for value {value} of type {type(value)}") from e
    if dtype.kind == "c":
        return ComplexArrayVSpace(value)
    if dtype.kind not in "fiub":
        raise TypeError(f"Can't find vector space for value {value} of type {type(value)}")
    return ArrayVSpace(value)


# ----------------------------------------------------------------------------------------------
# autograd's deprecated per-primitive registration methods


def _deprecated(f_wrapped):
    def defvjp_unstaged(vjpmaker, argnum=0):
        warnings.warn("f.defvjp is deprecated: use autograd.extend.defvjp", stacklevel=2)

        def staged(ans, *args, **kwargs):
            return lambda g: vjpmaker(g, ans, vspace(args[argnum]), vspace(g), *args, **kwargs)

        _add_vjp(f_wrapped, argnum, staged)

    def defgrad(gradfun, argnum=0):
        warnings.warn("f.defgrad is deprecated: use autograd.extend.defvjp", stacklevel=2)
        _add_vjp(f_wrapped, argnum, gradfun)

    def defvjp_is_zero(argnums=(0,)):
        warnings.warn("f.defvjp_is_zero is deprecated: use autograd.extend.defvjp", stacklevel=2)
        for n in argnums:
            _add_vjp(f_wrapped, n, None)

    f_wrapped.defvjp = defvjp_unstaged
    f_wrapped.defgrad = defgrad
    f_wrapped.defvjp_is_zero = defvjp_is_zero
    return f_wrapped


_vjp_tables: dict = {}


def _add_vjp(fun, argnum, maker):
    table = _vjp_tables.setdefault(fun, {})
    table[argnum] = maker
    nums = sorted(table)
    defvjp(fun, *[table[n] for n in nums], argnums=nums)


def primitive_with_deprecation_warnings(f_raw):
    return _deprecated(_tracer.primitive(f_raw))


class SparseObject:
    """A cotangent that knows how to add itself into a dense one (autograd's sparse gradients)."""

    def __init__(self, vs, mut_add):
        self.vs = vs
        self.mut_add = mut_add


primitive = primitive_with_deprecation_warnings
