"""JAX's extension API on funcgrad's kernel: ``funcgrad.extend.core``, ``linear_util``, ``backend``,
``source_info_util``, ``funcgrad.core`` and ``funcgrad.interpreters`` (``ad``, ``batching``,
``partial_eval``, ``xla``, ``pxla``), each name checked for what it does (values against NumPy or
closed forms, jaxprs by structure)."""

from __future__ import annotations

import functools
import os
import sys
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import core as fcore
from funcgrad.extend import backend as eb
from funcgrad.extend import core as ec
from funcgrad.extend import linear_util as lu
from funcgrad.extend import source_info_util as siu
from funcgrad.interpreters import ad, batching, mlir, pxla, xla
from funcgrad.interpreters import partial_eval as pe
from funcgrad.kernel import core as kcore
from funcgrad.kernel import ir as kir

F64 = np.dtype("float64")

# ----------------------------------------------------------------------------------------------
# extend.core: the kernel's own objects


def test_primitive_and_ir_classes_are_the_kernels():
    # (a library's Primitive is the kernel's, typing its eager results as JAX's bind: a subclass
    # that isinstance/issubclass take for the kernel's, as Jaxpr and JaxprEqn below)
    assert issubclass(ec.Primitive, kcore.Primitive) and issubclass(kcore.Primitive, ec.Primitive)
    assert isinstance(kcore.Primitive("k"), ec.Primitive) and ec.Primitive.__mro__[1] is kcore.Primitive
    assert ec.Var is kir.Var and ec.Literal is kir.Literal
    assert ec.ClosedJaxpr is kir.ClosedJaxpr
    closed = funcgrad.make_jaxpr(fnp.sin)(1.0)
    assert isinstance(closed.jaxpr, ec.Jaxpr) and isinstance(closed.eqns[0], ec.JaxprEqn)
    assert issubclass(kir.Jaxpr, ec.Jaxpr) and not isinstance(closed, ec.Jaxpr)


# A multiple-results primitive declared as JAX code does: the attribute set after construction.
sincos_p = ec.Primitive("test_extend_sincos")
sincos_p.multiple_results = True
sincos_p.def_impl(lambda x: (np.sin(x), np.cos(x)))
sincos_p.def_abstract_eval(lambda x: [fcore.ShapedArray(x.shape, x.dtype)] * 2)


def _sincos_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = sincos_p.bind(x)
    return [s, c], [t * c, -t * s]


def _sincos_batch(axis_data, args, dims):
    assert isinstance(axis_data, batching.AxisData) and axis_data.size == args[0].shape[dims[0]]
    return sincos_p.bind(*args), [dims[0], dims[0]]


ad.primitive_jvps[sincos_p] = _sincos_jvp
batching.fancy_primitive_batchers[sincos_p] = _sincos_batch
mlir.register_lowering(sincos_p, mlir.lower_fun(lambda x: [fnp.sin(x), fnp.cos(x)], multiple_results=True))


def test_multiple_results_primitive_through_the_transformations():
    x = np.linspace(-1.0, 1.0, 5)
    s, c = sincos_p.bind(x)
    np.testing.assert_allclose(np.asarray(s), np.sin(x), rtol=1e-15)
    js, jc = funcgrad.jit(sincos_p.bind)(x)
    np.testing.assert_allclose(np.asarray(jc), np.cos(x), rtol=1e-15)
    g = funcgrad.grad(lambda a: sincos_p.bind(a)[0] * sincos_p.bind(a)[1])(0.3)
    np.testing.assert_allclose(float(g), np.cos(0.6), rtol=1e-14)  # d/da sin a cos a = cos 2a
    vs, vc = funcgrad.vmap(sincos_p.bind, in_axes=1)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(np.asarray(vc), np.cos(np.stack([x, 2 * x]).T), rtol=1e-15)
    assert batching.primitive_batchers[sincos_p] is not None  # readable in JAX's plain signature too


def test_jaxpr_construction_in_jax_argument_order_and_check():
    from funcgrad.primitives.elementwise import mul_p, sin_p

    x = ec.Var(fcore.ShapedArray((3,), F64))
    a, b = ec.gensym()(x.aval), ec.gensym()(x.aval)
    eqns = [
        ec.new_jaxpr_eqn([x], [a], sin_p, {}, ec.no_effects),
        ec.new_jaxpr_eqn([a, x], [b], mul_p, {}, ec.no_effects),
    ]
    jaxpr = ec.Jaxpr([], [x], [b], eqns)
    ec.check_jaxpr(jaxpr)
    assert [v for v in ec.subjaxprs(jaxpr)] == []
    v = np.array([0.1, 0.2, 0.3])
    (out,) = ec.jaxpr_as_fun(ec.ClosedJaxpr(jaxpr, []), v)
    np.testing.assert_allclose(np.asarray(out), np.sin(v) * v, rtol=1e-15)
    bad = ec.Var(fcore.ShapedArray((2,), F64))  # declared f64[2], computed f64[3]
    with pytest.raises(ec.JaxprTypeError, match="sin"):
        ec.check_jaxpr(ec.Jaxpr([], [x], [bad], [ec.new_jaxpr_eqn([x], [bad], sin_p, {}, ec.no_effects)]))
    assert repr(ec.DropVar(x.aval)) == "_"


def test_avals_and_values():
    aval = fcore.ShapedArray((2, 5, 3), F64)
    assert ec.mapped_aval(5, 1, aval).shape == (2, 3)
    assert ec.unmapped_aval(5, 1, ec.mapped_aval(5, 1, aval)) == aval
    assert ec.mapped_aval(4, None, aval) is aval
    with pytest.raises(ValueError, match="size 4"):
        ec.mapped_aval(4, 1, aval)
    assert ec.primal_dtype_to_tangent_dtype(np.float32) == np.float32
    assert ec.valid_jaxtype(np.ones(2)) and not ec.valid_jaxtype(object())
    assert np.ndarray in ec.array_types and type(fnp.ones(2)) in ec.array_types
    assert isinstance(aval, fcore.AbstractValue) and isinstance(ec.AbstractToken(), fcore.AbstractValue)
    assert ec.primitives.sin_p.name == "sin" and ec.primitives.add_jaxvals_p is ad.add_jaxvals_p


def test_concrete_or_error():
    assert ec.concrete_or_error(int, 3.0) == 3
    with pytest.raises(kcore.ConcretizationTypeError, match="the number of steps"):
        funcgrad.jit(lambda x: ec.concrete_or_error(int, x, "the number of steps"))(3.0)


def test_trace_introspection():
    assert not ec.unsafe_am_i_under_a_jit_DO_NOT_USE() and not ec.unsafe_am_i_under_a_vmap_DO_NOT_USE()
    seen = {}

    def f(x):
        seen["jit"] = ec.unsafe_am_i_under_a_jit_DO_NOT_USE()
        seen["state"] = ec.get_opaque_trace_state()
        seen["top"] = ec.find_top_trace([x])
        return x

    outer = ec.get_opaque_trace_state()
    funcgrad.jit(f)(1.0)
    assert seen["jit"] and seen["state"] != outer and outer == ec.get_opaque_trace_state()
    assert type(seen["top"]).__name__ == "StagingTrace"

    def g(x):
        seen["vmap"] = ec.unsafe_am_i_under_a_vmap_DO_NOT_USE()
        seen["names"] = ec.unsafe_get_axis_names_DO_NOT_USE()
        seen["nonempty"] = ec.nonempty_axis_env_DO_NOT_USE()
        return x

    funcgrad.vmap(g, axis_name="batch")(np.ones(2))
    assert seen["vmap"] and seen["names"] == ["batch"] and seen["nonempty"]
    assert ec.TraceTag() == ec.TraceTag() and hash(ec.TraceTag()) == hash(ec.TraceTag())


def test_take_and_set_current_trace():
    from funcgrad.primitives.elementwise import neg_p

    def f(x):
        with ec.take_current_trace() as parent:
            with pytest.raises(RuntimeError, match="taken"):
                neg_p.bind(x)
            with ec.set_current_trace(parent):
                return neg_p.bind(x)

    assert float(funcgrad.grad(f)(2.0)) == -1.0


def test_call_primitive_has_every_rule():
    call_p = ec.CallPrimitive("test_extend_call")

    def f(x):
        return call_p.bind(lu.wrap_init(lambda y: [fnp.sin(y) * x]), x)[0]

    assert float(f(0.5)) == np.sin(0.5) * 0.5
    np.testing.assert_allclose(float(funcgrad.grad(f)(0.5)), np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-14)
    np.testing.assert_allclose(float(funcgrad.jit(f)(0.5)), np.sin(0.5) * 0.5, rtol=1e-15)
    xs = np.array([0.1, 0.2])
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(f)(xs)), np.sin(xs) * xs, rtol=1e-15)
    assert ec.call_impl(lu.wrap_init(lambda y: [y + 1]), 1) == [2]


def test_call_primitive_binds_jax_0_10s_subfuns_form():
    # JAX 0.10: ``call_p.bind(*args, subfuns=(fun,))`` (its core_test's core_call), with the
    # function's output tree read back after the bind
    from funcgrad.extend.core.primitives import call_p

    from funcgrad.api_util import flatten_fun_nokwargs

    def core_call(f, *args):
        flat, in_tree = funcgrad.tree_util.tree_flatten(args)
        g, out_tree = flatten_fun_nokwargs(lu.wrap_init(f), in_tree)
        out = call_p.bind(*flat, subfuns=(g,))
        return funcgrad.tree_util.tree_unflatten(out_tree(), out)

    f = lambda x, y: {"s": fnp.sin(x * y)}  # noqa: E731
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(np.asarray(core_call(f, x, x)["s"]), np.sin(x * x), rtol=1e-15)
    tangent = funcgrad.jvp(lambda a: core_call(f, a, a)["s"], (x,), (np.ones(2),))[1]
    np.testing.assert_allclose(np.asarray(tangent), 2 * x * np.cos(x * x), rtol=1e-14)


# ----------------------------------------------------------------------------------------------
# linear_util, as flax and JAX's api_util use it


@lu.transformation_with_aux2
def _flatten_fun_nokwargs(f, store, in_tree, *args_flat):
    py_args = funcgrad.tree_util.tree_unflatten(in_tree, args_flat)
    ans, out_tree = funcgrad.tree_util.tree_flatten(f(*py_args))
    store.store(out_tree)
    return ans


def test_flatten_fun_pattern_and_stores():
    args = ({"a": 1.0}, [2.0, 3.0])
    flat, in_tree = funcgrad.tree_util.tree_flatten(args)
    fun, out_tree = _flatten_fun_nokwargs(lu.wrap_init(lambda d, l: (d["a"] + l[0], l[1])), in_tree)
    with pytest.raises(lu.StoreException):
        out_tree()
    assert fun.call_wrapped(*flat) == [3.0, 3.0]
    assert funcgrad.tree_util.tree_unflatten(out_tree(), [0, 1]) == (0, 1)
    with pytest.raises(lu.StoreException, match="occupied"):
        fun.call_wrapped(*flat)  # a store is filled once
    assert fun.f is not None and fun.params == () and fun.debug_info.func_name == "<lambda>"


def test_transformation_generators_and_cache():
    @lu.transformation
    def scale(k, *args):
        out = yield args, {}
        yield out * k

    calls = []

    @lu.cache
    def traced(fun, n):
        calls.append(n)
        return fun.call_wrapped(n)

    def base(x):
        return x + 1

    assert scale(lu.wrap_init(base), 10).call_wrapped(1) == 20
    fun1, aux1 = _flatten_fun_nokwargs(lu.wrap_init(base), funcgrad.tree_util.tree_structure((0,)))
    fun2, aux2 = _flatten_fun_nokwargs(lu.wrap_init(base), funcgrad.tree_util.tree_structure((0,)))
    assert traced(fun1, 2) == traced(fun2, 2) == [3] and calls == [2]
    assert aux1() == aux2()  # the cache hit filled the second function's store
    funcgrad.clear_caches()
    traced(lu.wrap_init(base), 2)
    assert calls == [2, 2]
    assert lu.merge_linear_aux(aux1, lambda: lu.Store().val) == (True, aux1())


# ----------------------------------------------------------------------------------------------
# partial_eval


def test_trace_to_jaxpr_nounits_splits_known_from_unknown():
    def f(x, y):
        k = fnp.exp(x) * 2.0  # known: computed now
        return [k, fnp.sin(y) * k]

    aval = fcore.ShapedArray((3,), F64)
    x = np.array([0.1, 0.2, 0.3])
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
        lu.wrap_init(f), [pe.PartialVal.known(x), pe.PartialVal.unknown(aval)]
    )
    assert out_pvals[0].is_known() and not out_pvals[1].is_known()
    np.testing.assert_allclose(np.asarray(out_pvals[0].get_known()), np.exp(x) * 2.0, rtol=1e-15)
    assert out_pvals[1].get_aval().shape == (3,) and "exp" not in str(jaxpr)
    y = np.array([1.0, 2.0, 3.0])
    (out,) = kcore.eval_jaxpr(jaxpr, consts, y)
    np.testing.assert_allclose(np.asarray(out), np.sin(y) * np.exp(x) * 2.0, rtol=1e-15)
    for pv, const in out_pvals:  # flax unpacks them as pairs
        assert (pv is None) == (const is not None)


def test_trace_to_jaxpr_dynamic_and_dce():
    aval = fcore.ShapedArray((), F64)
    jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(
        lu.wrap_init(lambda a, b: [fnp.sin(a), fnp.cos(b) + np.arange(2.0)]), [aval, aval]
    )
    assert out_avals[1].shape == (2,) and len(consts) == 1
    new, used_consts, used_inputs = pe.dce_jaxpr_consts(jaxpr, [True, False])
    assert used_consts == [False] and used_inputs == [True, False] and len(new.eqns) == 1
    new, used = pe.dce_jaxpr(pe.convert_constvars_jaxpr(jaxpr), [False, False], instantiate=True)
    assert new.eqns == [] and used == [True, True, True]


def test_dce_rules_are_applied_by_dce_jaxpr():
    pair_p = ec.Primitive("test_extend_pair")
    pair_p.multiple_results = True
    pair_p.def_impl(lambda x, y: (x, y))
    pair_p.def_abstract_eval(lambda x, y: [x, y])
    seen = []

    def rule(used_outputs, eqn):
        seen.append(list(used_outputs))
        keep = [u for u in used_outputs]
        new = eqn._replace(
            invars=[v for v, k in zip(eqn.invars, keep) if k],
            outvars=[v for v, k in zip(eqn.outvars, keep) if k],
        )
        return keep, new

    pe.dce_rules[pair_p] = rule
    try:
        jaxpr = funcgrad.make_jaxpr(lambda a, b: pair_p.bind(a, b)[1])(1.0, 2.0).jaxpr
        new, used = pe.dce_jaxpr(jaxpr, [True])
        assert seen == [[False, True]] and used == [False, True] and len(new.eqns[0].invars) == 1
    finally:
        del pe.dce_rules[pair_p]


def test_dce_closed_call_rule_on_a_jit_equation():
    j = funcgrad.make_jaxpr(funcgrad.jit(lambda x, y: (fnp.sin(x), fnp.cos(y))))(1.0, 2.0).jaxpr
    used, eqn = pe.dce_jaxpr_closed_call_rule([False, True], j.eqns[0])
    assert used == [False, True] and [e.primitive.name for e in eqn.params["jaxpr"].eqns] == ["cos"]
    assert pe.dce_jaxpr_closed_call_rule([False, False], j.eqns[0]) == ([False, False], None)


def test_custom_partial_eval_rule_runs_under_linearize():
    from funcgrad.primitives.elementwise import mul_p

    calls = []

    def rule(trace, *args, **params):
        calls.append([trace.is_unknown(a) for a in args])
        return trace.stage(mul_p, list(args), params)

    original = mul_p.partial_eval
    pe.custom_partial_eval_rules[mul_p] = rule
    try:
        assert pe.custom_partial_eval_rules[mul_p] is rule
        assert float(funcgrad.grad(lambda x: x * 3.0)(2.0)) == 3.0
        assert calls and calls[0] == [True, False]
    finally:
        del pe.custom_partial_eval_rules[mul_p]
        mul_p.partial_eval = original


# ----------------------------------------------------------------------------------------------
# ad and batching helpers


def test_ad_helpers():
    p = ec.Primitive("test_extend_exp")
    p.def_impl(np.exp)
    p.def_abstract_eval(lambda x: x)
    ad.defjvp2(p, lambda g, ans, x: g * ans)
    batching.defvectorized(p)
    x = np.array([0.0, 1.0])
    np.testing.assert_allclose(np.asarray(funcgrad.vmap(funcgrad.grad(p.bind))(x)), np.exp(x), rtol=1e-15)
    outs, tans = ad.jvp(lu.wrap_init(lambda a: [p.bind(a)]), [1.0], [2.0])
    np.testing.assert_allclose(float(tans[0]), 2 * np.e, rtol=1e-15)
    _, zeros, jaxpr, consts = ad.linearize(lambda a: [p.bind(a), 1.0], [1.0])
    assert zeros == [False, True]
    np.testing.assert_allclose(float(kcore.eval_jaxpr(jaxpr, consts, 3.0)[0]), 3 * np.e, rtol=1e-15)
    z = ad.Zero(fcore.ShapedArray((2,), F64))
    assert ad.add_tangents(z, 1.0) == 1.0 and np.all(np.asarray(ad.instantiate_zeros(z)) == 0)
    assert float(ad.add_jaxvals(1.0, 2.0)) == 3.0 and ad.zeros_like_aval(z.aval).shape == (2,)
    assert ad.is_undefined_primal(ad.UndefinedPrimal(z.aval)) and not ad.is_undefined_primal(1.0)


def test_deflinear_transpose_sees_no_operands():
    twice_p = ec.Primitive("test_extend_twice")
    twice_p.def_impl(lambda x: 2 * x)
    twice_p.def_abstract_eval(lambda x: x)
    seen = []

    def transpose(ct, **params):
        seen.append(params)
        return [twice_p.bind(ct)]

    ad.deflinear(twice_p, transpose)
    assert float(funcgrad.grad(lambda x: twice_p.bind(x) * x)(3.0)) == 12.0 and seen == [{}]
    assert twice_p.traits.linear


def test_batching_helpers_and_axis_primitive_batchers():
    assert batching.bdim_at_front(np.ones((2, 3)), 1, 3).shape == (3, 2)
    assert batching.broadcast(np.ones(2), 4, 0).shape == (4, 2)
    # equinox's form: rule(axis_size, axis_name, trace_type, args, dims)
    p = ec.Primitive("test_extend_axis_rule")
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda x: x)
    seen = []

    def rule(axis_size, axis_name, trace_type, args, dims):
        seen.append((axis_size, axis_name))
        return p.bind(*args), dims[0]

    batching.axis_primitive_batchers[p] = rule
    out = funcgrad.vmap(p.bind, axis_name="i")(np.arange(3.0))
    assert out.tolist() == [0.0, 2.0, 4.0] and seen == [(3, "i")]

    class Boxed:
        pass

    batching.register_vmappable(Boxed, int, int, None, None, None)
    assert Boxed in batching.vmappables
    batching.unregister_vmappable(Boxed)


def test_defreducer_matches_numpy_for_every_batch_axis():
    sum_p = ec.Primitive("test_extend_sum")
    sum_p.def_impl(lambda x, axes: np.sum(x, axes))
    sum_p.def_abstract_eval(
        lambda x, axes: fcore.ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
    )
    batching.defreducer(sum_p)
    x = np.arange(24.0).reshape(2, 3, 4)
    for in_axis in range(3):
        out = funcgrad.vmap(lambda a: sum_p.bind(a, axes=(1,)), in_axes=in_axis)(x)
        expected = np.stack([np.take(x, i, in_axis).sum(1) for i in range(x.shape[in_axis])])
        np.testing.assert_allclose(np.asarray(out), expected)


# ----------------------------------------------------------------------------------------------
# source_info_util


def test_name_stack_managers_show_in_jaxprs():
    def f(x):
        with siu.extend_name_stack("outer"):
            with siu.transform_name_stack("vmap"):
                y = fnp.sin(x)
                with siu.extend_name_stack("inner"):
                    w = fnp.exp(y)
            with siu.reset_name_stack():
                z = fnp.cos(w)
        return z

    lines = funcgrad.make_jaxpr(f)(1.0).pretty_print(name_stack=True).splitlines()
    # As JAX prints them: a transformation wraps the names staged inside it.
    # (JAX aligns the annotations in one column and prints an empty scope as ``[]``.)
    assert [" ".join(ln.split("=")[1].split()) for ln in lines[1:4]] == [
        "sin a # [outer]",
        "exp b # [outer/vmap(inner)]",
        "cos c # []",
    ]
    with funcgrad.named_scope("a"), siu.extend_name_stack("b"):
        assert str(siu.current_name_stack()) == "a/b"
        info = siu.current()
        assert info.name_stack == "a/b" and info.function == "test_name_stack_managers_show_in_jaxprs"
    assert siu.summarize(info).endswith("(test_name_stack_managers_show_in_jaxprs)")
    assert str(siu.new_name_stack("m").extend("n")) == "m/n" and siu.new_source_info().line == 0


def test_register_exclusion_moves_source_lines_to_the_caller(tmp_path):
    helper = tmp_path / "exclusion_helper_lib.py"
    helper.write_text("import funcgrad.numpy as fnp\n\ndef helper(x):\n    return fnp.tanh(x)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import exclusion_helper_lib

        def user(x):
            return exclusion_helper_lib.helper(x)

        before = funcgrad.make_jaxpr(user)(1.0).eqns[0].source_info
        siu.register_exclusion(str(tmp_path))
        after = funcgrad.make_jaxpr(user)(1.0).eqns[0].source_info
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("exclusion_helper_lib", None)
    assert os.path.basename(before.file) == "exclusion_helper_lib.py"
    assert after.file == __file__ and after.function.endswith("<locals>.user")  # the qualified name, as JAX


# ----------------------------------------------------------------------------------------------
# backend, xla, pxla, core


def test_backend_is_the_bridges_pjrt_client():
    client = eb.get_backend("cpu")
    assert client.platform == "cpu" and client.devices()[0] == funcgrad.devices("cpu")[0]
    assert isinstance(client, xla.Backend) and "cpu" in eb.backends()
    assert eb.get_default_device() == funcgrad.devices()[0]
    opts = eb.get_compile_options(1, 2, device_assignment=np.array([[0, 1]]))
    assert (opts.num_replicas, opts.num_partitions) == (1, 2)
    assert (
        pxla.create_compile_options(None, False, [False], [False], None, np.array([0]), {}).num_partitions
        == 1
    )
    eb.register_backend_factory("test_extend_backend", lambda: client)
    assert eb.get_backend("test_extend_backend") is client
    with pytest.raises(RuntimeError, match="no_such_platform"):
        eb.get_backend("no_such_platform")


def test_clear_backends_and_registered_caches():
    @functools.lru_cache
    def table(n):
        return n

    eb.register_backend_cache(table, "test_extend_table")
    table(1)
    f = funcgrad.jit(lambda x: x * 2)
    f(1.0)
    eb.clear_backends()
    assert table.cache_info().currsize == 0 and f.cache_info().currsize == 0
    assert float(f(2.0)) == 4.0  # compiles again on the same client
    f(3.0)
    eb.clear_in_memory_compilation_cache()
    assert f.cache_info().currsize == 0


def test_apply_primitive_compiles_one_primitive():
    from funcgrad.primitives.elementwise import atan2_p

    y, x = np.array([1.0, -1.0]), np.array([2.0, 0.5])
    np.testing.assert_allclose(np.asarray(xla.apply_primitive(atan2_p, y, x)), np.arctan2(y, x), rtol=1e-15)
    assert xla.canonicalize_dtype_handlers[float](1.5).dtype == F64


def test_funcgrad_core_additions():
    @funcgrad.jit
    def f(x):
        with fcore.eval_context():
            n = int(fnp.sum(fnp.ones(4)))
        with fcore.ensure_compile_time_eval():
            m = int(fnp.prod(fnp.arange(1, 4)))
            y = fnp.sin(x)  # traced: x is jit's
        return fnp.zeros(n + m) + y

    out = f(0.5)
    assert out.shape == (10,) and float(out[0]) == np.sin(0.5)
    assert fcore.max_dim(2, 7) == 7 and fcore.min_dim(2, 7) == 2
    with pytest.raises(TypeError, match="'str' object cannot be interpreted as an integer"):
        fcore.max_dim("n", 2)  # (jax.core.max_dim's operator.index TypeError, word for word)
    assert fcore.ParamDict == dict[str, object] or fcore.ParamDict.__origin__ is dict


def test_bind_with_trace_and_get_bind_params():
    from funcgrad.primitives.elementwise import sin_p

    def f(x):
        trace = ec.find_top_trace([x])
        with ec.take_current_trace():
            return sin_p.bind_with_trace(trace, (x,), {})

    np.testing.assert_allclose(float(funcgrad.grad(f)(0.3)), np.cos(0.3), rtol=1e-15)
    eqn = funcgrad.make_jaxpr(funcgrad.jit(fnp.sin))(1.0).eqns[0]
    params = eqn.primitive.get_bind_params(eqn.params)
    assert params == eqn.params and params is not eqn.params
    assert float(eqn.primitive.bind(0.0, **params)[0]) == 0.0


def test_replacing_a_rule_forgets_programs_made_with_the_old_one():
    p = ec.Primitive("test_extend_replaced_rule")
    p.def_impl(lambda x: 2 * x)
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False))
    ad.primitive_jvps[p] = lambda ps, ts: (p.bind(*ps), ts[0] * 2.0)

    def f(x):
        return p.bind(x) * x

    jitted = funcgrad.jit(funcgrad.grad(f))
    for _ in range(2):  # the second eager call replays the recorded derivative program
        assert float(funcgrad.grad(f)(3.0)) == 12.0
    assert float(jitted(3.0)) == 12.0
    ad.primitive_jvps[p] = lambda ps, ts: (p.bind(*ps), ts[0] * 100.0)  # a deliberately wrong rule
    assert float(funcgrad.grad(f)(3.0)) == 306.0 and float(jitted(3.0)) == 306.0


def test_missing_rules_are_named():
    p = ec.Primitive("test_extend_bare")
    p.def_impl(lambda x: 2 * x)
    assert float(p.bind(1.5)) == 3.0  # eager needs only the impl
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'test_extend_bare'"):
        funcgrad.jit(p.bind)(1.0)
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="test_extend_bare"):
        funcgrad.grad(p.bind)(1.0)
    with pytest.raises(NotImplementedError, match="test_extend_bare"):
        funcgrad.vmap(p.bind)(np.ones(2))
    with pytest.raises(NotImplementedError, match="test_extend_bare"):  # no lowering
        funcgrad.jit(p.bind)(1.0)


def _integer_rules_program(jax, ad, mlir, Primitive):
    """equinox's unvmap_max (no JVP rule) and nondifferentiable_backward (a transpose rule that
    cannot take a float0 cotangent) on an integer argument of a jitted function, differentiated
    in reverse mode (its tangent is a materialised float0 zero)."""
    peak = Primitive("test_int_peak")
    guard = Primitive("test_int_guard")
    for p in (peak, guard):
        p.def_impl(lambda x: x)
        p.def_abstract_eval(lambda x: x)
        mlir.register_lowering(p, mlir.lower_fun(lambda x: x, multiple_results=False))
    ad.deflinear(guard, lambda ct, x: [ct * 0 + 1])  # (fails on a float0 array)

    @jax.jit
    def g(a, n):
        return a * peak.bind(n).astype(a.dtype), guard.bind(n)

    zero = np.zeros((), jax.dtypes.float0)
    out, back = jax.vjp(g, 1.5, 3)
    lin = jax.linearize(g, 1.5, 3)[1](1.0, zero)
    return [out[0], back((1.0, zero))[0], lin[0]]


def test_integer_values_need_no_derivative_rules_as_jax():
    # an integer's tangent and cotangent are zeros, materialised or not: no JVP rule is asked for,
    # a transpose rule sees ad.Zero (diffrax's BacksolveAdjoint through equinox's primitives)
    import jax
    from jax.extend.core import Primitive as JaxPrimitive
    from jax.interpreters import ad as jad
    from jax.interpreters import mlir as jmlir

    ours = _integer_rules_program(funcgrad, ad, mlir, ec.Primitive)
    theirs = _integer_rules_program(jax, jad, jmlir, JaxPrimitive)
    np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float))
    assert [float(x) for x in ours] == [4.5, 3.0, 3.0]


# ----------------------------------------------------------------------------------------------
# What JAX libraries read of equations and call primitives (equinox's finalise_jaxpr), and
# funcgrad.api_util (flax's lazy_init, partial_eval_by_shape and axes_scan)


def test_equation_effects_replace_and_custom_jvp_subfuns():
    closed = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)
    eqn = closed.jaxpr.eqns[0]
    assert eqn.effects == ec.no_effects == frozenset()
    new = eqn.replace(params={}, effects=set(), ctx=None)
    assert new.primitive is eqn.primitive and new.params == {} and new.outvars == eqn.outvars

    @funcgrad.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (fnp.sin(p[0]), 10.0 * t[0]))
    (call,) = [e for e in funcgrad.make_jaxpr(f)(0.5).jaxpr.eqns if e.primitive.name == "custom_jvp_call"]
    params = call.primitive.get_bind_params(call.params)
    fun, jvp = params["subfuns"]  # JAX's calling convention: WrappedFun-like, flat arguments
    np.testing.assert_allclose(fun.call_wrapped(0.5)[0], np.sin(0.5), rtol=1e-15)
    p_out, t_out = jvp.call_wrapped(0.5, 1.0)
    np.testing.assert_allclose([p_out, t_out], [np.sin(0.5), 10.0], rtol=1e-15)
    # binding with the subfuns among the parameters (a JAX-style interpreter) ignores them
    out = funcgrad.jvp(lambda x: call.primitive.bind(x, **params)[0], (0.5,), (1.0,))
    np.testing.assert_allclose(out, [np.sin(0.5), 10.0], rtol=1e-15)


def test_api_util_against_jax():
    import jax
    import jax.api_util as japi
    import jax.extend.linear_util as jlu

    from funcgrad import api_util as fapi
    from funcgrad import tree_util as ftu

    tree = ((1.0, (2.0, 3.0)), {"k": 4.0, "a": (5.0, 6.0)})
    (fleaves, ftree), (jleaves, jtree) = ftu.tree_flatten(tree), jax.tree_util.tree_flatten(tree)

    def g(x, yz, **kw):
        return {"s": x + yz[0] * yz[1], "k": kw["k"] + sum(kw["a"])}

    for ours, theirs in ((fapi, lu), (japi, jlu)):
        leaves, t = (fleaves, ftree) if ours is fapi else (jleaves, jtree)
        fun, out_tree = ours.flatten_fun(theirs.wrap_init(g, debug_info=None), t)
        assert fun.call_wrapped(*leaves) == [15.0, 7.0] and str(out_tree()).endswith("{'k': *, 's': *})")
    _, fargs = ftu.tree_flatten((1.0, (2.0, 3.0)))
    fun, out_tree = fapi.flatten_fun_nokwargs(
        lu.wrap_init(lambda a, bc: (a, bc[0] + bc[1])), ftu.tree_structure((1.0, (2.0, 3.0)))
    )
    assert fun.call_wrapped(1.0, 2.0, 3.0) == [1.0, 5.0] and out_tree().num_leaves == 2
    assert fapi.donation_vector((1,), ("k",), ftree) == japi.donation_vector((1,), ("k",), jtree)
    assert fapi.rebase_donate_argnums((3, 4), (0, 1)) == japi.rebase_donate_argnums((3, 4), (0, 1))
    with pytest.raises(ValueError, match="cannot intersect"):
        fapi.rebase_donate_argnums((1,), (1,))

    def h(x, y, *, scale):
        return x

    fi = fapi.debug_info("jit", h, (1.0, {"w": 2.0}), {"scale": 3}, static_argnames=("scale",))
    ji = japi.debug_info("jit", h, (1.0, {"w": 2.0}), {"scale": 3}, static_argnames=("scale",))
    assert (fi.traced_for, fi.func_src_info, fi.arg_names) == (ji.traced_for, ji.func_src_info, ji.arg_names)
    fun, dyn = fapi.argnums_partial(lu.wrap_init(lambda a, b, c: a * b + c), (0, 2), (2.0, 10.0, 1.0))
    assert dyn == (2.0, 1.0) and fun.call_wrapped(*dyn) == 21.0
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        fapi.argnums_partial(lu.wrap_init(lambda a, b: a), (0,), (1.0, [2]))
    assert fapi.flatten_axes("in_axes", ftu.tree_structure(((1, 2), 3)), (0, None)) == japi.flatten_axes(
        "in_axes", jax.tree_util.tree_structure(((1, 2), 3)), (0, None)
    )
    aval = fapi.shaped_abstractify(funcgrad.ShapeDtypeStruct((2,), np.float32))
    assert str(aval) == str(japi.shaped_abstractify(jax.ShapeDtypeStruct((2,), np.float32)))


def test_extend_core_primitives_is_an_importable_submodule_as_jax():
    # numpyro: from jax.extend.core.primitives import call_p, closed_call_p, jit_p
    import importlib

    import jax.extend.core.primitives as theirs

    ours = importlib.import_module("funcgrad.extend.core.primitives")
    assert ours is ec.primitives
    for name in ("call_p", "closed_call_p", "jit_p", "custom_jvp_call_p", "sin_p"):
        assert getattr(ours, name).name == getattr(theirs, name).name
    assert float(funcgrad.jit(lambda x: x * 2)(ours.jit_p is not None)) == 2.0


def test_an_abstract_eval_of_the_wrong_arity_is_refused_in_jaxs_words():
    # (JAX's api_test test_wrong_output_abstract_eval)
    from funcgrad.extend.core import Primitive

    one = Primitive("foo")
    one.def_abstract_eval(lambda x: [x])  # a list for one result
    one.def_impl(lambda x: x)
    many = Primitive("foo2")
    many.multiple_results = True
    many.def_abstract_eval(lambda x: x)  # one aval for several results
    many.def_impl(lambda x: [x])
    for p in (one, many):
        with pytest.raises(ValueError, match=rf"{p.name}.abstract_eval\(\) method should return a tuple or"):
            funcgrad.jit(p.bind)(1.0)


class _Named:
    """batching_test's NamedArray: named axes around an array, a pytree and a vmappable type."""

    def __init__(self, names, data):
        self.names, self.data = list(names), data


class _NamedSpec:
    def __init__(self, name, axis):
        self.name, self.axis = name, axis


def _named_to_elt(cont, _, val, spec):
    names = list(val.names)
    assert names.pop(spec.axis) == spec.name
    return _Named(names, cont(val.data, spec.axis))


def _named_from_elt(cont, size, elt, spec):
    names = list(elt.names)
    names.insert(spec.axis, spec.name)
    return _Named(names, cont(size, elt.data + 1, spec.axis))  # (a handler may compute)


def test_vmap_maps_registered_vmappable_types_as_jax():
    # (batching_test's VmappableTest: a registered type is a leaf of vmap's arguments and
    # results, mapped through its to_elt/from_elt handlers along specs of its own type)
    import jax
    from jax.interpreters import batching as jax_batching

    got = []
    for lib, bt in ((jax, jax_batching), (funcgrad, batching)):
        lib.tree_util.register_pytree_node(
            _Named, lambda x: ((x.data,), x.names), lambda n, xs: _Named(n, xs[0])
        )
        bt.register_vmappable(_Named, _NamedSpec, int, _named_to_elt, _named_from_elt, None)
        f = lambda x: _Named(x.names, x.data * x.data)  # noqa: E731
        try:
            for g in (f, lib.jit(f)):
                g = lib.vmap(g, in_axes=_NamedSpec("i", 0), out_axes=_NamedSpec("i", 1), axis_size=3)
                out = g(_Named(["i", "j"], np.arange(12.0).reshape(3, 4)))
                got.append((out.names, np.asarray(out.data)))
        finally:
            bt.unregister_vmappable(_Named)
    want = np.arange(12.0).reshape(3, 4).T ** 2 + 1
    for names, data in got:
        assert names == ["j", "i"]
        np.testing.assert_allclose(data, want)


def _subclassed_tag_program(jax, Primitive, ad, batching, mlir, core):
    """kfac-jax's tags: a Primitive subclass that defines ``impl`` and ``abstract_eval`` as
    methods (JAX's effectful form, ``(avals, effects)``) and ``multiple_results`` as a class
    attribute, its rules registered in the interpreters' tables; eager, jitted, vmapped and
    differentiated."""

    class Tag(Primitive):
        multiple_results = True

        def __init__(self):
            super().__init__("test_sub_tag")
            mlir.register_lowering(self, lambda ctx, *args: list(args))
            ad.primitive_jvps[self] = lambda xs, ts: (self.bind(*xs), list(ts))
            batching.primitive_batchers[self] = lambda xs, dims: (self.bind(*xs), dims)

        def impl(self, *args):
            return list(args)

        def abstract_eval(self, *avals):
            return list(avals), core.no_effects

    tag = Tag()

    def f(x, y):
        a, b = tag.bind(x, y)
        return (a * b).sum()

    x, y = np.arange(3.0, dtype=np.float32), np.float32(2.0)
    eqns = [e.primitive.name for e in jax.make_jaxpr(f)(x, y).jaxpr.eqns]
    return [
        [np.asarray(v) for v in tag.bind(x, y)],
        jax.jit(f)(x, y),
        jax.grad(f, argnums=(0, 1))(x, y),
        jax.vmap(f, in_axes=(0, None))(x[:, None], y),
        eqns[0],
        tag.multiple_results,
    ]


def test_primitive_subclass_with_jax_style_methods_as_jax():
    import jax
    from jax import core as jcore
    from jax.extend.core import Primitive as JaxPrimitive
    from jax.interpreters import ad as jad
    from jax.interpreters import batching as jbatching
    from jax.interpreters import mlir as jmlir

    with warnings.catch_warnings():  # (jax.core.no_effects: deprecated, on both sides)
        warnings.simplefilter("ignore", DeprecationWarning)
        ours = _subclassed_tag_program(funcgrad, ec.Primitive, ad, batching, mlir, fcore)
        theirs = _subclassed_tag_program(jax, JaxPrimitive, jad, jbatching, jmlir, jcore)

    def flat(r):
        return np.hstack([np.ravel(v) for v in (r if isinstance(r, list | tuple) else [r])])

    for a, b in zip(ours[:4], theirs[:4]):
        np.testing.assert_allclose(flat(a), flat(b))
    assert ours[4:] == theirs[4:] == ["test_sub_tag", True]


def test_effectful_abstract_eval_and_deprecated_core_names_as_jax():
    import jax

    # JAX 0.10 still serves these from jax.core (with a DeprecationWarning): the same objects as
    # jax.extend.core's
    # jax.extend.core's, warning on the first use of each name (JAX's getattr is cached)
    for name in ("Effects", "Effect", "DebugInfo", "DropVar", "gensym", "new_jaxpr_eqn", "no_effects"):
        vars(fcore).pop(name, None)  # (as never used in this process)
        message = f"jax.core.{name} is deprecated. Use jax.extend.core.{name}"
        with pytest.warns(DeprecationWarning, match=message):
            assert getattr(fcore, name) is getattr(ec, name)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert getattr(fcore, name) is getattr(ec, name)
            warnings.simplefilter("ignore")
            assert getattr(jax.core, name) is getattr(jax.extend.core, name)
    with pytest.raises(AttributeError, match="has no attribute 'not_a_name'"):
        fcore.not_a_name  # noqa: B018

    def program(Primitive):
        p = Primitive("test_effectful_ae")
        p.def_impl(lambda x: 2 * x)
        p.def_effectful_abstract_eval(lambda x: (x, set()))
        return p, [float(p.bind(1.5))]

    p, out = program(ec.Primitive)
    assert out == program(jax.extend.core.Primitive)[1] == [3.0]
    closed = funcgrad.make_jaxpr(p.bind)(1.0)
    assert [e.primitive for e in closed.jaxpr.eqns] == [p] and not p.traits.has_side_effects

    # Jaxpr.replace (kfac-jax rebuilds programs so) and debug_info, as JAX's jaxpr without one
    jaxpr = closed.jaxpr
    assert jaxpr.debug_info is None
    new = jaxpr.replace(eqns=[], outvars=jaxpr.invars, debug_info=None)
    assert new.eqns == [] and new.outvars == jaxpr.invars and new.invars == jaxpr.invars
    assert jaxpr.eqns and funcgrad.core.eval_jaxpr(new, [], 4.0) == [4.0]
    with pytest.raises(TypeError, match="unexpected fields \\['bogus'\\]"):
        jaxpr.replace(bogus=1)


def test_at_least_vspace_is_the_tangent_aval_as_jax():
    import jax

    for dtype in (np.float32, np.int32, np.bool_):
        ours = fcore.ShapedArray((2, 3), dtype).at_least_vspace()
        theirs = jax.core.ShapedArray((2, 3), dtype).at_least_vspace()
        assert (ours.shape, str(ours.dtype)) == (theirs.shape, str(theirs.dtype))
    assert kir.AbstractToken().at_least_vspace() == kir.AbstractToken().to_tangent_aval()
