"""The type errors of cond/switch/while_loop/fori_loop/scan/associative_scan against jax 0.10.2's
(the cases of JAX's lax_control_flow_test: testCallableErrors, testCondPredIsNone,
testCondTypeErrors, testSwitchErrors, testWhileTypeErrors, testForiLoopErrors,
testScanBodyOutputError, testScanBodyCarry*Errors, testScanMetadataError, unroll checks): the
same exception type and the same message, up to object addresses and source lines. Also the
values JAX computes where funcgrad raised: fori_loop with float bounds, cond's forwarded operand
as an Array."""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # (as funcgrad's default mode: the oracle modules' rule)


def _i32(lib, v=0):
    return lib.numpy.array(v, "int32")


CASES = {
    "fori_not_callable": lambda lib: lib.lax.fori_loop(0, 1, 42, 0),
    "while_not_callable": lambda lib: lib.lax.while_loop(42, 42, 0),
    "switch_not_callable": lambda lib: lib.lax.switch(0, [42]),
    "cond_not_callable": lambda lib: lib.lax.cond(0, 42, 42),
    "scan_not_callable": lambda lib: lib.lax.scan(42, 0, 1),
    "associative_scan_not_callable": lambda lib: lib.lax.associative_scan(42, 0),
    "cond_pred_none": lambda lib: lib.lax.cond(None, lambda x: x + 1, lambda x: x + 2, 1.0),
    "cond_pred_none_jit": lambda lib: lib.jit(lambda p, x: lib.lax.cond(p, lambda x: x, lambda x: x, x))(
        None, 1.0
    ),
    "cond_pred_function": lambda lib: lib.lax.cond(lambda x: True, lambda t: 2.0, lambda f: 3.0, 1.0),
    "cond_pred_str": lambda lib: lib.lax.cond("foo", lambda t: 2.0, lambda f: 3.0, 1.0),
    "cond_pred_tuple": lambda lib: lib.lax.cond((1.0, 1.0), lambda t: 2.0, lambda f: 3.0, 1.0),
    "cond_pred_complex": lambda lib: lib.lax.cond(1j, lambda t: 2.0, lambda f: 3.0, 1.0),
    "cond_tree": lambda lib: lib.lax.cond(True, lambda t: dict(a=2.0), lambda f: dict(a=(3.0, 3.0)), 1.0),
    "cond_types": lambda lib: lib.lax.cond(
        True, lambda t: lib.numpy.array([1.0], "float32"), lambda f: lib.numpy.float32(1.0), 1.0
    ),
    "cond_types_two": lambda lib: lib.lax.cond(
        True,
        lambda t: (lib.numpy.array([1.0], "float32"), lib.numpy.int32(1)),
        lambda f: (lib.numpy.float32(1.0), lib.numpy.float32(1.0)),
        1.0,
    ),
    "switch_index_function": lambda lib: lib.lax.switch(lambda x: True, [lambda _: 2.0, lambda _: 3.0], 1.0),
    "switch_index_str": lambda lib: lib.lax.switch("foo", [lambda _: 2.0, lambda _: 3.0], 1.0),
    "switch_index_tuple": lambda lib: lib.lax.switch((1.0, 1.0), [lambda _: 2.0, lambda _: 3.0], 1.0),
    "switch_index_float": lambda lib: lib.lax.switch(1.0, [lambda _: 2.0, lambda _: 3.0], 1.0),
    "switch_empty": lambda lib: lib.lax.switch(0, [], 1.0),
    "switch_tree": lambda lib: lib.lax.switch(1, [lambda _: dict(a=2.0), lambda _: dict(a=(3.0, 3.0))], 1.0),
    "switch_types": lambda lib: lib.lax.switch(
        1,
        [lambda _: dict(a=lib.numpy.array([1.0], "float32")), lambda _: dict(a=lib.numpy.float32(1.0))],
        1.0,
    ),
    "while_cond_pytree": lambda lib: lib.lax.while_loop(lambda c: (1.0, 1.0), lambda c: c, 0.0),
    "while_cond_float": lambda lib: lib.lax.while_loop(
        lambda c: np.float32(1.0), lambda c: c, np.float32(0.0)
    ),
    "while_body_tree": lambda lib: lib.lax.while_loop(lambda c: True, lambda c: (1.0, 1.0), 0.0),
    "while_body_types": lambda lib: lib.lax.while_loop(
        lambda c: True, lambda c: (True, True), (np.bool_(True), np.float32(0.0))
    ),
    "fori_bound_types": lambda lib: lib.lax.fori_loop(
        np.int16(0), lib.numpy.int32(10), lambda i, c: c, lib.numpy.float32(7)
    ),
    "fori_metadata": lambda lib: lib.lax.fori_loop(
        0, 1, lambda i, x: {"T": lib.numpy.array([0.5])}, {"t": lib.numpy.array([1.0])}
    ),
    "fori_dynamic_unroll": lambda lib: lib.jit(
        lambda n: lib.lax.fori_loop(np.int16(0), n, lambda i, c: c + 1, lib.numpy.float32(10), unroll=3)
    )(10),
    "scan_not_a_pair": lambda lib: lib.lax.scan(lambda c, x: np.float32(0.0), 0, lib.numpy.arange(5.0)),
    "scan_carry_length": lambda lib: lib.lax.scan(
        lambda c, x: ((0, 0, 0), x), (1, (2, 3)), lib.numpy.arange(5.0)
    ),
    "scan_carry_tuple_length": lambda lib: lib.lax.scan(
        lambda x, _: ((x[0].astype("float32"),), None), (_i32(lib),) * 2, None, length=1
    ),
    "scan_carry_list": lambda lib: lib.lax.scan(
        lambda x, _: ([x[0].astype("float32")] * 2, None), (_i32(lib),) * 2, None, length=1
    ),
    "scan_carry_dict": lambda lib: lib.lax.scan(
        lambda x, _: ({"a": x["a"], "b": x["a"]}, None), {"a": _i32(lib)}, None, length=1
    ),
    "scan_carry_dtype": lambda lib: lib.lax.scan(
        lambda x, _: (x.astype("float32"), None), _i32(lib), None, length=1
    ),
    "scan_carry_dtype_component": lambda lib: lib.lax.scan(
        lambda x, _: ((x[0], x[1].astype("float32")), None), (_i32(lib),) * 2, None, length=1
    ),
    "scan_carry_dtypes_two": lambda lib: lib.lax.scan(
        lambda x, _: ((x[0].astype("float32"), x[1].astype("float32")), None),
        (_i32(lib),) * 2,
        None,
        length=1,
    ),
    "scan_carry_shape": lambda lib: lib.lax.scan(
        lambda x, _: (lib.numpy.zeros((2,), "int32"), None), _i32(lib), None, length=1
    ),
    "scan_negative_unroll": lambda lib: lib.lax.scan(lambda x, _: (x, x), 0, lib.numpy.arange(5), unroll=-1),
    # a weakly typed carry is promoted with the body's output (JAX's _promote_weak_typed_inputs):
    # a weak float made int32 stays a float, a mismatch (funcgrad took the body's int32)
    "scan_weak_float_carry_made_int": lambda lib: lib.lax.scan(
        lambda c, x: (c.astype("int32"), x), 0.0, lib.numpy.ones(3)
    ),
    "while_weak_float_carry_made_int": lambda lib: lib.lax.while_loop(
        lambda c: c < 3, lambda c: (c + 1).astype("int32"), 0.0
    ),
}


def _normalised(msg: str) -> str:
    msg = re.sub(r" at 0x[0-9a-f]+", " at 0x", msg)
    msg = re.sub(r" at [^ \n]+:\d+", " at FILE:LINE", msg)  # (fun_sourceinfo's file and line)
    return msg.replace("funcgrad.kernel.ir.ShapedArray", "jax._src.core.ShapedArray")


def _raised(lib, case):
    with pytest.raises(Exception) as info:
        CASES[case](lib)
    return info.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_control_flow_error_as_jax(case):
    got, want = _raised(funcgrad, case), _raised(jax, case)
    assert isinstance(got, type(want)) or type(got).__name__ == type(want).__name__, (got, want)
    assert _normalised(str(got)) == _normalised(str(want))


def test_weak_carries_promoted_with_the_body_s_output_as_jax():
    # (a weak int carry made float32, a weak float carry made float16: promoted, as JAX's)
    for lib in (funcgrad, jax):
        out = (
            lib.lax.scan(lambda c, x: (c + x, x), 0, lib.numpy.ones(3, np.float32))[0],
            lib.lax.fori_loop(0, 3, lambda i, c: (c + 1).astype(np.float16), 0.0),
            lib.lax.while_loop(lambda c: c < 3, lambda c: c + np.float32(1.5), 0),
        )
        assert [(o.dtype, float(o)) for o in out] == [(np.float32, 3.0), (np.float16, 3.0), (np.float32, 3.0)]


def test_fori_loop_takes_float_bounds_as_jax():
    # lax_control_flow_test testStaticForiGrad / testWhileGradError: concrete float bounds are a scan
    # of int(upper) - int(lower) steps; traced ones (inside a cond) a while loop, differentiable
    # forward and, where the carry is only passed through, in reverse.
    outs = {}
    for name, lib in (("jax", jax), ("funcgrad", funcgrad)):
        f = lambda x, lib=lib: lib.lax.fori_loop(x, x + 2.0, lambda i, c: c, x)  # noqa: E731
        g = lambda x, lib=lib: lib.lax.fori_loop(0.0, 3.0, lambda i, c: c * 2.0 + i, x)  # noqa: E731
        h = lambda x, lib=lib: lib.lax.cond(  # noqa: E731
            True, lambda x, _: lib.lax.fori_loop(x, x + 2.0, lambda i, c: c * 2.0, x), lambda _, x: x, x, 1.0
        )
        outs[name] = [
            float(f(1.0)),
            float(lib.grad(f)(1.0)),
            float(lib.jvp(f, (1.0,), (1.0,))[1]),
            float(g(1.0)),
            float(lib.grad(g)(1.0)),
            float(h(1.0)),
            float(lib.jvp(h, (1.0,), (1.0,))[1]),
        ]
        with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
            lib.grad(h)(1.0)
    assert outs["funcgrad"] == outs["jax"]


def test_cond_returns_a_forwarded_python_scalar_as_an_array():
    # lax_control_flow_test test_cond_casting
    for lib in (jax, funcgrad):
        y = lib.lax.cond(True, lambda x: x, lambda x: x, 1.0)
        assert isinstance(y, lib.Array) and y == 1.0
    assert funcgrad.lax.cond(True, lambda x: x, lambda x: x, 1.0).weak_type
    x = np.ones(3)
    y = funcgrad.lax.cond(True, lambda x: x, lambda x: x, x)
    x[0] = 5.0  # (the result does not alias the caller's NumPy array)
    assert isinstance(y, funcgrad.Array) and float(y[0]) == 1.0


def test_disable_jit_runs_branches_and_loops_in_python_as_jax():
    # JAX under disable_jit: the chosen branch only, loop bodies once per iteration on concrete
    # values (what a print or a debugger inside sees), a zero-length scan its ValueError, a
    # while_loop of a traced predicate (under vmap) staged (lax_control_flow_test testForiLoopIssue8152)
    def run(lib):
        seen = []

        def body(c, x):
            seen.append(("scan", type(c).__name__ in ("float", "int"), np.shape(x)))
            return c + x, x * 2

        def note(tag, v):
            seen.append((tag, type(v).__name__ in ("float", "int")))
            return v

        out = []
        with lib.disable_jit():
            out.append(lib.lax.scan(body, 0.0, np.arange(3.0)))
            out.append(lib.lax.scan(body, 0.0, np.arange(6.0).reshape(3, 2)[:, 0], reverse=True))
            out.append(lib.lax.scan(lambda c, _: (c + 1, None), 0, None, length=2))
            out.append(lib.lax.fori_loop(0, 3, lambda i, c: note("fori", c) + i, 0))
            out.append(lib.lax.fori_loop(0, 0, lambda i, c: c + i, 1.0))
            out.append(lib.lax.while_loop(lambda c: note("cond", c) < 3, lambda c: c + 1, 0))
            out.append(lib.lax.cond(True, lambda v: note("t", v), lambda v: note("f", v), 1.0))
            out.append(lib.lax.switch(5, [lambda v: note("b0", v), lambda v: note("b1", v)], 2.0))
            out.append(
                lib.vmap(lambda v: lib.lax.while_loop(lambda c: c < v, lambda c: c + 1, 0.0))(np.arange(3.0))
            )
            with pytest.raises(ValueError, match="zero-length scan is not supported in disable_jit"):
                lib.lax.scan(body, 0.0, np.zeros((0,)))
        leaves = [np.asarray(v).tolist() if v is not None else None for v in lib.tree_util.tree_leaves(out)]
        return leaves, seen

    assert run(funcgrad) == run(jax)
