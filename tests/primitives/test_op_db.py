"""Generic checks of every primitive, driven by the operator table ``tests/primitives/op_db/``.

- values of the NumPy impl against the NumPy/SciPy reference, over hypothesis-drawn shapes (0-d
  and size-0 included where the op allows them) and dtypes; abstract evaluation (via
  ``make_jaxpr``) gives the impl's shape and dtype, and the op really binds its primitive;
- first and second derivatives, forward (jvp) and reverse (vjp), against central finite
  differences in float64, and in complex128 for the entries listing complex dtypes
  (``funcgrad.testing.check_grads``, JAX's complex convention); non-differentiable ops give zero
  tangents;
- vmap against a Python loop for every ``in_axes`` (each operand unbatched, batched at axis 0 or at
  its last axis), in the entry's first dtype and its first complex one;
- the dot-product test ``<ct, L t> == <L^T ct, t>`` of every transpose rule, on the jaxpr of the op
  (``backward_pass`` calls the transpose rules directly), and each rule's handling of a symbolic
  zero cotangent; for complex values ``<a, b> = Re(sum(a * b))``, unconjugated (NOTE: [complex
  cotangents] in primitives/complex.py);
- every jaxpr made by ``make_jaxpr`` of the op, of its ``grad``, ``grad`` of ``grad``, ``jvp`` and
  ``vmap`` passes ``funcgrad.kernel.ir.typecheck_jaxpr``.

Collectives (entries with a ``named_axis``) run under ``vmap(op, axis_name=...)`` over the
instances stacked in each argument's leading dimension (``_instances``); their jaxprs are traced
per instance with the axis bound (``_jaxpr``), and their transposes are evaluated under that vmap.

Budget: the whole file runs in well under 90 s on 2 cores with ``CI=1`` (the hypothesis ``ci``
profile in tests/conftest.py); derivative and vmap checks use the fixed samples of
``op_db.sample_inputs`` rather than hypothesis, since each costs far more than a value check.
"""

from __future__ import annotations

import numpy as np
import op_db
import pytest
from _checks import assert_close, typecheck
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from hypothesis import given
from hypothesis import strategies as st

import funcgrad
from funcgrad import primitives
from funcgrad.kernel import batching, core, ir
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.ad import UndefinedPrimal, Zero, backward_pass, instantiate
from funcgrad.testing import check_grads

OPS = op_db.OPS
F64 = np.dtype(np.float64)
SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))
LANES = 3


def _derivative_dtypes(entry):
    return [d for d in op_db.DERIVATIVE_DTYPES if d in entry.dtypes]


def _random_like(rng, aval):
    """Standard normal values of ``aval``'s shape and dtype (both parts random for complex)."""
    v = rng.standard_normal(aval.shape)
    if np.dtype(aval.dtype).kind == "c":
        v = v + 1j * rng.standard_normal(aval.shape)
    return np.asarray(v).astype(aval.dtype)


def _pairing(a, b) -> float:
    """``Re(sum(a * b))``: the pairing transposes are defined by (NOTE: [complex cotangents])."""
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _ids(entries):
    return [e.name for e in entries]


def _outputs(out):
    return list(out) if isinstance(out, list | tuple) else [out]


def _call(entry, sample, args=None):
    return entry.op(*(sample.args if args is None else args), **sample.params)


def _diff_argnums(entry, sample):
    if entry.diff_argnums is not None:
        return entry.diff_argnums
    return tuple(i for i, a in enumerate(sample.args) if _dt.is_inexact(np.asarray(a).dtype))


def _restricted(entry, sample, argnums):
    """The op as a function of the arguments at ``argnums`` (the others fixed to the sample's)."""

    def f(*vals):
        args = list(sample.args)
        for i, v in zip(argnums, vals):
            args[i] = v
        return _call(entry, sample, args)

    return f


def _scalarized(f, weights):
    """``sum_i <f(...)_i, w_i>`` built from primitives (a scalar to take ``grad`` of)."""

    def g(*args):
        total = None
        for o, w in zip(_outputs(f(*args)), weights):
            term = red.reduce_sum(ew.mul(o, np.asarray(w, core.get_aval(o).dtype)), tuple(range(np.ndim(w))))
            term = ew.convert_element_type(term, F64)
            total = term if total is None else ew.add(total, term)
        return total

    return g


def _instances(entry, f):
    """``f`` as the checks call it: a collective runs under the vmap that binds its axis."""
    if entry.named_axis is None:
        return f
    return funcgrad.vmap(f, axis_name=entry.named_axis)


def _axis_env(entry, args):
    """The named axis of a collective's entry, sized by the instances in ``args``."""
    return [(entry.named_axis, np.shape(args[0])[0])] if entry.named_axis else []


def _jaxpr(entry, f, args):
    """The jaxpr of ``f`` at ``args`` (for a collective: of one instance, with the axis bound)."""
    if entry.named_axis is None:
        return funcgrad.make_jaxpr(f)(*args)
    return funcgrad.make_jaxpr(f, axis_env=_axis_env(entry, args))(*[np.asarray(a)[0] for a in args])


def _transpose_cotangents(entry, closed, avals, ct):
    """``backward_pass`` of ``closed`` for the cotangents ``ct`` (under the collective's vmap)."""
    undefined = [UndefinedPrimal(a) for a in avals]
    if entry.named_axis is None:
        return backward_pass(closed.jaxpr, closed.consts, undefined, ct)
    back = lambda *c: [instantiate(x) for x in backward_pass(closed.jaxpr, closed.consts, undefined, c)]  # noqa: E731
    return _instances(entry, back)(*ct)


def _primitives_in(closed):
    found = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            found.add(eqn.primitive)
            for sub in ir.jaxprs_in_params(eqn.params):
                walk(sub)

    walk(closed.jaxpr)
    return found


# ----------------------------------------------------------------------------------------------
# The table itself


def test_entry_names_are_unique():
    names = _ids(OPS)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_every_primitive_has_an_op_db_entry():
    covered = {e.primitive for e in OPS}
    missing = [
        p.name for p in primitives.all_primitives() if p not in covered and not op_db.carries_jaxprs(p)
    ]
    assert not missing, f"primitives without an entry in tests/primitives/op_db/: {missing}"


# Transpose rules that only refuse, in JAX's words (tested where the refusal is:
# tests/surface/api/test_callbacks.py): nothing to dot-product test.
REFUSING_TRANSPOSES = {"io_callback"}


def test_every_transpose_rule_is_dot_product_tested():
    tested = {e.primitive for e in OPS if e.linear_argnums and _derivative_dtypes(e)}
    untested = [
        p.name
        for p in primitives.all_primitives()
        if p.transpose is not None
        and p not in tested
        and not op_db.carries_jaxprs(p)
        and p.name not in REFUSING_TRANSPOSES
    ]
    assert not untested, (
        f"transpose rules without a linear_argnums entry in tests/primitives/op_db/: {untested}"
    )


# ----------------------------------------------------------------------------------------------
# Values and abstract evaluation


# XLA's counter-based generators draw thousands of bits per example: the slow tier checks them.
_VALUE_OPS = [
    pytest.param(e, marks=pytest.mark.slow) if e.name.startswith("rng_bit_generator") else e for e in OPS
]


@pytest.mark.parametrize("entry", _VALUE_OPS, ids=_ids(OPS))
@given(data=st.data())
def test_impl_matches_reference_and_abstract_eval(entry, data):
    dtype = data.draw(st.sampled_from(entry.dtypes), label="dtype")
    shape = data.draw(entry.shapes, label="shape")
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    sample = entry.sampler(shape, dtype, np.random.default_rng(seed))
    outs = [
        np.asarray(o) for o in _outputs(_instances(entry, lambda *a: _call(entry, sample, a))(*sample.args))
    ]
    expected = [
        np.asarray(e) for e in _outputs(entry.ref(*[np.asarray(a) for a in sample.args], **sample.params))
    ]
    rtol, atol = (
        (entry.rtol, entry.atol) if dtype not in SINGLE else (max(entry.rtol, 2e-5), max(entry.atol, 1e-6))
    )
    assert len(outs) == len(expected)
    for o, e in zip(outs, expected):
        assert o.shape == e.shape, f"{entry.name}: impl shape {o.shape}, reference shape {e.shape}"
        np.testing.assert_allclose(o, e.astype(o.dtype) if e.dtype != o.dtype else e, rtol=rtol, atol=atol)
    closed = _jaxpr(entry, lambda *a: _call(entry, sample, a), sample.args)
    with batching.extend_axis_env(_axis_env(entry, sample.args)):
        typecheck(closed)
    assert entry.primitive in _primitives_in(closed), f"{entry.name} does not bind {entry.primitive}"
    for o, aval in zip(outs, closed.out_avals):
        shape = o.shape[1:] if entry.named_axis else o.shape
        assert (shape, o.dtype) == (aval.shape, aval.dtype), (entry.name, o.shape, o.dtype, aval)


# ----------------------------------------------------------------------------------------------
# Derivatives


DIFFERENTIABLE = [e for e in OPS if e.differentiable and _derivative_dtypes(e)]
FINITE_DIFFERENCES = [(e, d) for e in DIFFERENTIABLE if e.check_fd for d in _derivative_dtypes(e)]


@pytest.mark.parametrize(
    "entry, dtype", FINITE_DIFFERENCES, ids=[f"{e.name}-{d.name}" for e, d in FINITE_DIFFERENCES]
)
def test_derivatives_match_finite_differences(entry, dtype):
    rng = np.random.default_rng(0)
    for sample in op_db.sample_inputs(entry, dtype, rng):
        argnums = _diff_argnums(entry, sample)
        f = _instances(entry, _restricted(entry, sample, argnums))
        args = [sample.args[i] for i in argnums]
        if not all(np.all(np.isfinite(o)) for o in _outputs(f(*args))):
            continue  # finite differences of inf (an empty max) are nan: nothing to compare
        check_grads(f, args, order=entry.order, rtol=entry.grad_rtol, atol=entry.grad_atol)


def _has_inexact_operand(entry) -> bool:
    dtype = next(d for d in entry.dtypes if _dt.is_inexact(d))
    sample = op_db.sample_inputs(entry, dtype, np.random.default_rng(0))[0]
    return any(_dt.is_inexact(np.asarray(a).dtype) for a in sample.args)


# (An op without an inexact operand -- iota -- has nothing to differentiate.)
NOT_DIFFERENTIABLE = [
    e
    for e in OPS
    if not e.differentiable
    and e.derivative_error is None
    and any(_dt.is_inexact(d) for d in e.dtypes)
    and _has_inexact_operand(e)
]
REFUSING = [e for e in OPS if e.derivative_error is not None]


@pytest.mark.parametrize("entry", NOT_DIFFERENTIABLE, ids=_ids(NOT_DIFFERENTIABLE))
def test_not_differentiable_ops_have_zero_tangents(entry):
    dtype = next(d for d in entry.dtypes if _dt.is_inexact(d))
    sample = op_db.sample_inputs(entry, dtype, np.random.default_rng(0))[0]
    argnums = tuple(i for i, a in enumerate(sample.args) if _dt.is_inexact(np.asarray(a).dtype))
    args = tuple(sample.args[i] for i in argnums)
    _, tangents = funcgrad.jvp(
        _instances(entry, _restricted(entry, sample, argnums)), args, tuple(np.ones_like(a) for a in args)
    )
    for t in _outputs(tangents):
        t = np.asarray(t)
        assert t.dtype == _dt.float0 or not np.any(t), f"{entry.name}: nonzero tangent {t}"


@pytest.mark.parametrize("entry", REFUSING, ids=_ids(REFUSING))
def test_derivative_is_refused_with_a_clear_error(entry):
    dtype = next(d for d in entry.dtypes if _dt.is_inexact(d))
    sample = op_db.sample_inputs(entry, dtype, np.random.default_rng(0))[0]
    argnums = tuple(i for i, a in enumerate(sample.args) if _dt.is_inexact(np.asarray(a).dtype))
    args = tuple(sample.args[i] for i in argnums)
    with pytest.raises(entry.derivative_error, match=entry.primitive.name):
        funcgrad.jvp(_restricted(entry, sample, argnums), args, tuple(np.ones_like(a) for a in args))


# ----------------------------------------------------------------------------------------------
# vmap


BATCHABLE = [
    e
    for e in OPS
    if e.vmap_is_loop
    and e.sample_shapes
    and e.sampler(e.sample_shapes[0], e.dtypes[0], np.random.default_rng(0)).args
]


def _lanes(entry, shape, dtype):
    lanes = [entry.sampler(shape, dtype, np.random.default_rng(k)) for k in range(LANES)]
    assert all(lane.params == lanes[0].params for lane in lanes), f"{entry.name}: params depend on values"
    return lanes


def _vmap_dtypes(entry):
    complex_dtypes = [d for d in entry.dtypes if d.kind == "c"]
    first = entry.dtypes[0]
    return [first] + ([complex_dtypes[0]] if complex_dtypes and first.kind != "c" else [])


BATCHED = [(e, d) for e in BATCHABLE for d in _vmap_dtypes(e)]


@pytest.mark.parametrize("entry, dtype", BATCHED, ids=[f"{e.name}-{d.name}" for e, d in BATCHED])
def test_vmap_matches_loop_for_every_in_axes(entry, dtype):
    tol = 1e-10 if dtype not in SINGLE else 1e-5
    for shape in entry.sample_shapes:
        lanes = _lanes(entry, shape, dtype)

        f = _instances(entry, lambda *args, params=lanes[0].params: entry.op(*args, **params))

        for n, axes in enumerate(op_db.in_axes_combinations(lanes[0])):
            batched = [
                lanes[0].args[i] if ax is None else np.stack([lane.args[i] for lane in lanes], axis=ax)
                for i, ax in enumerate(axes)
            ]
            got = [np.asarray(o) for o in _outputs(funcgrad.vmap(f, in_axes=axes)(*batched))]
            per_lane = [
                _outputs(
                    f(*[lane.args[i] if ax is not None else lanes[0].args[i] for i, ax in enumerate(axes)])
                )
                for lane in lanes
            ]
            expected = [np.stack([np.asarray(outs[j]) for outs in per_lane]) for j in range(len(got))]
            assert_close(
                got, expected, rtol=tol, atol=tol, err_msg=f"{entry.name} shape={shape} in_axes={axes}"
            )
            if n == 0:
                typecheck(funcgrad.make_jaxpr(funcgrad.vmap(f, in_axes=axes))(*batched))


# ----------------------------------------------------------------------------------------------
# Transpose rules


TRANSPOSABLE = [(e, group, d) for e in OPS for d in _derivative_dtypes(e) for group in e.linear_argnums]


@pytest.mark.parametrize(
    "entry, group, dtype", TRANSPOSABLE, ids=[f"{e.name}-{g}-{d.name}" for e, g, d in TRANSPOSABLE]
)
def test_transpose_rule_dot_product(entry, group, dtype):
    rng = np.random.default_rng(0)
    for sample in op_db.sample_inputs(entry, dtype, rng):
        f = _restricted(entry, sample, group)
        closed = _jaxpr(entry, f, [sample.args[i] for i in group])
        assert entry.primitive in _primitives_in(closed)
        avals = [v.aval for v in closed.jaxpr.invars]
        # A collective's jaxpr is one instance's: its values are stacked over the instances.
        lead = (np.shape(sample.args[group[0]])[0],) if entry.named_axis else ()
        t = [_random_like(rng, ir.ShapedArray((*lead, *a.shape), a.dtype)) for a in avals]
        run = _instances(entry, lambda *xs, c=closed: core.eval_jaxpr(c.jaxpr, c.consts, *xs))
        # The linear part L t = f(t) - f(0): an op can be affine (gather's fill value).
        y = run(*t)
        y0 = run(*[np.zeros(x.shape, x.dtype) for x in t])
        lin = [np.asarray(a, np.complex128) - np.asarray(b, np.complex128) for a, b in zip(y, y0)]
        ct = [_random_like(rng, core.get_aval(o)) for o in y]
        cts = _transpose_cotangents(entry, closed, avals, ct)
        lhs = sum(_pairing(c, o) for c, o in zip(ct, lin))
        rhs = sum(0.0 if type(c) is Zero else _pairing(c, ti) for c, ti in zip(cts, t))
        single = any(a.dtype in SINGLE for a in [*avals, *map(core.get_aval, y)])
        tol = 1e-5 if single else 1e-10
        np.testing.assert_allclose(lhs, rhs, rtol=tol, atol=tol, err_msg=f"{entry.name} group {group}")
        with batching.extend_axis_env(_axis_env(entry, [sample.args[i] for i in group])):
            _check_zero_cotangent(entry.primitive, closed)


def _check_zero_cotangent(primitive, closed):
    """The primitive's transpose rule, given a symbolic zero cotangent, returns zeros (or None)."""
    jaxpr = closed.jaxpr
    linear = set(jaxpr.invars)
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update((v, np.zeros(v.aval.shape, v.aval.dtype)) for v in jaxpr.invars)

    def read(a):
        return a.val if type(a) is ir.Literal else env[a]

    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        if eqn.primitive is primitive:
            args = [UndefinedPrimal(a.aval) if a in linear else v for a, v in zip(eqn.invars, ins)]
            zero = (
                [Zero(v.aval) for v in eqn.outvars]
                if primitive.multiple_results
                else Zero(eqn.outvars[0].aval)
            )
            for c in primitive.transpose(zero, *args, **eqn.params):
                assert c is None or type(c) is Zero or not np.any(np.asarray(c)), f"{primitive}: {c}"
            return
        outs = eqn.primitive.bind(*ins, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
        if any(type(a) is ir.Var and a in linear for a in eqn.invars):
            linear.update(eqn.outvars)


# ----------------------------------------------------------------------------------------------
# Derived jaxprs type-check


TYPECHECKED = [(e, d) for e in DIFFERENTIABLE for d in _derivative_dtypes(e)]


@pytest.mark.parametrize("entry, dtype", TYPECHECKED, ids=[f"{e.name}-{d.name}" for e, d in TYPECHECKED])
def test_derived_jaxprs_typecheck(entry, dtype):
    rng = np.random.default_rng(1)
    sample = op_db.sample_inputs(entry, dtype, rng)[0]
    argnums = _diff_argnums(entry, sample)
    f = _instances(entry, _restricted(entry, sample, argnums))
    args = [sample.args[i] for i in argnums]
    weights = [_random_like(rng, core.get_aval(o)) for o in _outputs(f(*args))]
    loss = _scalarized(f, weights)
    pos = tuple(range(len(args)))
    grad = funcgrad.grad(loss, argnums=pos)
    v = [_random_like(rng, core.get_aval(a)) for a in args]
    second = funcgrad.grad(_scalarized(grad, v), argnums=pos)  # traced only where entry.order >= 2
    jvp = lambda *a: funcgrad.jvp(f, tuple(a), tuple(v))  # noqa: E731
    for g in (f, grad, second, jvp) if entry.order >= 2 else (f, grad, jvp):
        typecheck(funcgrad.make_jaxpr(g)(*args))
