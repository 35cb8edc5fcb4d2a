"""Errors of the transformation API in JAX's types and words (cases of JAX's api_test:
test_scalar_conversion_errors, test_jit_of_noncallable, test_static_argnum_on_static_method_is_not_supported,
test_intersecting_static_and_donate_argnames, test_pmap_empty_arguments, test_mesh_creation_error_message,
test_num_cpu_devices_called_after_initialization, test_returned_non_jaxtype,
test_grad_without_enough_args_error_message, test_jvp_mismatched_arguments,
test_vjp_mismatched_arguments, test_float0_error, test_pmap_in_axes_bool_error,
test_error_for_invalid_dtype): the same exception type and message as jax
0.10.2's (funcgrad may add its own advice after JAX's words)."""

from __future__ import annotations

import functools
import operator
import re

import numpy as np
import pytest

import funcgrad

jax = pytest.importorskip("jax")


def _cases(lib):
    np_mod = lib.numpy
    return {
        "index of an int array": lambda: operator.index(np_mod.arange(10)),
        "index of a float scalar": lambda: operator.index(np_mod.float32(0)),
        "hex of an empty array": lambda: hex(np_mod.arange(0, dtype="int32")),
        "int of an array": lambda: int(np_mod.arange(10)),
        "float of a 1-element array": lambda: float(np_mod.arange(1.0)),
        "complex of an array": lambda: complex(np_mod.ones(2)),
        "jit index of an int array": lambda: lib.jit(operator.index)(np_mod.arange(10)),
        "jit hex of a float scalar": lambda: lib.jit(hex)(np_mod.float32(0)),
        "jit float of an array": lambda: lib.jit(float)(np_mod.ones(2)),
        "jit of an int": lambda: lib.jit(3),
        "jit of a classmethod": lambda: lib.jit(classmethod(lambda cls, x: x)),
        "static and donated names": lambda: lib.jit(lambda x: x, static_argnames="x", donate_argnames="x"),
        "static and donated numbers": lambda: lib.jit(
            lambda x, y: x, static_argnums=(0,), donate_argnums=(0,)
        ),
        "pmap of no arguments": lambda: lib.pmap(lambda: 0.0)(),
        "mesh of too few dimensions": lambda: lib.sharding.Mesh(np.array(lib.devices()[:1]), ("x", "y")),
        "jit returning a str": lambda: lib.jit(lambda x: (x, "a"))(1.0),
        "jit returning an object in a dict": lambda: lib.jit(lambda x: {"a": [x, object()]})(1.0),
        "jit returning a function": lambda: lib.jit(lambda x: len)(1.0),
        "grad without enough arguments": lambda: functools.partial(lib.grad(lambda x, y: x + y), x=0.0)(
            y=1.0
        ),
        "value_and_grad argnums too large": lambda: lib.value_and_grad(lambda x, y: x, argnums=2)(1.0, 2.0),
        "jacfwd argnums too large": lambda: lib.jacfwd(lambda x, y: x, argnums=2)(1.0, 2.0),
        "jvp tuple and list": lambda: lib.jvp(lambda x, y: x * y, (np.float32(2),), [np.float32(2)]),
        "jvp tangent dtype": lambda: lib.jvp(lambda x: -x, (np.float16(2),), (np.float32(4),)),
        "jvp tangent shape": lambda: lib.jvp(lambda x: x + 1, (np_mod.ones(3),), (np_mod.ones(4),)),
        "float0 plus an array": lambda: lib.grad(lambda x: x + 0.0, allow_int=True)(1) + np_mod.zeros(()),
        "lax.add of a float0": lambda: lib.lax.add(
            lib.grad(lambda x: x + 0.0, allow_int=True)(1), np_mod.zeros(())
        ),
        "lax.add of an object array": lambda: lib.lax.add(1.0, np.array([1], dtype=object)),
        "lax.add of a string array": lambda: lib.lax.add(np_mod.array(7), np.array("hello")),
        "pmap in_axes True": lambda: lib.pmap(lambda x: x, in_axes=True)(np_mod.ones((1,))),
        "device_put_sharded removed": lambda: lib.device_put_sharded,
        "device_put_replicated removed": lambda: lib.device_put_replicated,
        "pmap out_axes True": lambda: lib.pmap(lambda x: x, out_axes=True)(np_mod.ones((1,))),
        "iterating a 0-d array": lambda: iter(np_mod.array(1.0)),
        "iterating a traced 0-d array": lambda: lib.jit(lambda x: list(x))(1.0),
        "device_put of a str": lambda: lib.device_put("abc"),
        "device_put of an object": lambda: lib.device_put({"a": object()}),
        "device_put may_alias and donate": lambda: lib.device_put(
            np_mod.ones(2), may_alias=True, donate=True
        ),
        "vjp cotangent tree": lambda: lib.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))[1](
            (np.float32(7), np.float32(100))
        ),
    }


@pytest.mark.parametrize("case", sorted(_cases(funcgrad)))
def test_api_error_as_jax(case):
    with pytest.raises(Exception) as want:
        _cases(jax)[case]()
    with pytest.raises(type(want.value)) as got:
        _cases(funcgrad)[case]()
    got, want = (re.sub(r" at 0x[0-9a-f]+", "", str(e.value)) for e in (got, want))
    assert got.startswith(want), (got, want)


@pytest.mark.parametrize("method", ["block_until_ready", "copy_to_host_async", "__dlpack__"])
def test_buffer_methods_of_a_traced_value_as_jax(method):
    # (JAX's type and first line; the lines after it say where the value was traced)
    def first_line(lib):
        with pytest.raises(Exception) as e:
            lib.jit(lambda x: getattr(x, method)())(np.float32(1))
        return type(e.value).__name__, str(e.value).splitlines()[0]

    assert first_line(funcgrad) == first_line(jax)


def test_cuda_array_interface_of_a_cpu_array_as_jax():
    # (array_interoperability_test testCudaArrayInterfaceOnNonCudaFails: CuPy/Numba probe it)
    def probe(lib, np_):
        x = np_.arange(5)
        with pytest.raises(AttributeError) as e:
            x.__cuda_array_interface__  # noqa: B018
        seen = []
        lib.jit(lambda t: seen.append(hasattr(t, "__cuda_array_interface__")) or t)(x)
        return hasattr(x, "__cuda_array_interface__"), str(e.value), seen

    assert probe(funcgrad, funcgrad.numpy) == probe(jax, jax.numpy)


def test_static_argument_whose_eq_raises_and_device_put_copies_as_jax():
    # (api_test test_cpp_jit_raises_on_non_hashable_static_argnum, test_device_put_aliasing)
    class HashableWithoutEq:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            raise NotImplementedError("A Python error is as is, without stack trace")

    for lib in (jax, funcgrad):
        f = lib.jit(lambda x, y: x + 3, static_argnums=[1])
        f(1, 1)
        words = re.escape("static arguments should be comparable using __eq__")
        with pytest.raises(ValueError, match=words):
            f(1, HashableWithoutEq())  # (a cached static argument of the same hash: compared)
            f(1, HashableWithoutEq())
        if lib is funcgrad:  # (the Python route's cache, as the native one's)
            with pytest.raises(ValueError, match=words):
                f._stage((1, HashableWithoutEq()), {})
        a = lib.numpy.arange(3.0)
        copies = [lib.device_put(a, **kw) is a for kw in ({}, {"may_alias": True}, {"may_alias": False})]
        assert copies == [True, True, False]
        assert lib.device_put({"a": a}, may_alias=False)["a"] is not a
        # a committed Array put where it is (a sharding equal to its own) is itself; to a device, new
        d0 = lib.devices()[0]
        c = lib.device_put(np.arange(3.0), d0)
        s = lib.sharding.SingleDeviceSharding(d0)
        same = [lib.device_put(c, t, **kw) is c for t in (s, d0) for kw in ({}, {"may_alias": False})]
        assert same == [True, False, False, False]


def test_scalar_conversions_that_work():
    x = funcgrad.numpy.int32(3)
    assert (
        operator.index(x) == 3 and hex(x) == "0x3" and int(x) == 3 and float(funcgrad.numpy.float32(2)) == 2.0
    )
    with pytest.raises(funcgrad.errors.TracerIntegerConversionError):
        funcgrad.jit(operator.index)(x)


def test_num_cpu_devices_after_the_backend_started_in_jax_words():
    funcgrad.numpy.ones(1).block_until_ready()
    n = len(funcgrad.devices("cpu"))
    with pytest.raises(RuntimeError, match="jax_num_cpu_devices config should be updated before backends"):
        funcgrad.config.update("jax_num_cpu_devices", n + 1)


def test_transformed_functions_docstrings_and_names_as_jax():
    # api_test test_vmap_preserves_docstr, test_make_jaxpr_name: JAX's docstrings of vmap, grad,
    # value_and_grad, jacfwd, jacrev of a function, and make_jaxpr(f)'s name.
    def superfun(a):
        """Does things with stuff."""
        return a

    for make in (
        lambda lib: lib.vmap(superfun),
        lambda lib: lib.vmap(lambda x: x),
        lambda lib: lib.grad(superfun),
        lambda lib: lib.value_and_grad(superfun, argnums=(0,)),
        lambda lib: lib.jacfwd(superfun),
        lambda lib: lib.jacrev(superfun, argnums=0),
    ):
        assert make(funcgrad).__doc__ == make(jax).__doc__
    for attr in ("__name__", "__qualname__"):
        assert getattr(funcgrad.make_jaxpr(superfun), attr) == getattr(jax.make_jaxpr(superfun), attr)


def test_arrays_are_unhashable_as_jax():
    # api_test test_device_array_hash
    import collections.abc

    x = funcgrad.numpy.ones((1,)) + 1.0
    assert not isinstance(x, collections.abc.Hashable)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(x)


def test_linear_transpose_function_passes_through_jit_as_jax():
    # api_test test_linear_transpose_fun_jit: the transposed function is a pytree (a Partial over
    # the program's constants), so jit can return it and take it
    w = np.arange(6.0).reshape(2, 3)
    outs = []
    for lib in (jax, funcgrad):
        make = lib.jit(lambda f, x, lib=lib: lib.linear_transpose(f, x), static_argnums=0)
        t = make(lambda x: 2.0 * x, 1.0)
        outs.append(float(lib.jit(lambda f, x: f(x)[0])(t, 3.0)))
        tw = lib.jit(lambda x, lib=lib: lib.linear_transpose(lambda v: w @ v, x))(np.ones(3))
        outs.append(np.asarray(lib.jit(lambda f, c: f(c)[0])(tw, np.ones(2))).tolist())
    assert outs[:2] == outs[2:] == [6.0, [3.0, 5.0, 7.0]]


@pytest.mark.parametrize(
    "first, second, words",
    [
        (None, ((0.0, 1.0), {}), ["never seen function"]),
        (((0.0, 1.0), {"y": (2.0, 2.1)}), ((0.0, (1.0, 1.1)), {"y": 2.0}), ["different input pytree"]),
        (
            ((np.float32(0), np.float32(1)), {}),
            ((np.float32(0), np.int32(1)), {}),
            ["different input types", "at y, now i32[] and before f32[]"],
        ),
        (
            ("default float array", {}),
            ((0.0, np.float32(1)), {}),
            ["different input types", "[]{weak_type=True} and before ", "[]{weak_type=False}"],
        ),
    ],
)
def test_cache_miss_explanations_in_jax_words(caplog, first, second, words):
    # api_test test_cache_miss_explanations_*: the reasons JAX logs for a retrace (funcgrad's own
    # detail follows them)
    logs = {}
    for lib in (jax, funcgrad):

        def f(x, y):
            return x

        def g(*args, **kwargs):
            return args[0]

        jf = lib.jit(g if "different input pytree" in words else f)
        if first is not None:
            args = (lib.numpy.zeros(()), np.float32(1)) if first[0] == "default float array" else first[0]
            jf(*args, **first[1])
        caplog.clear()
        with (
            lib.config.explain_cache_misses(True)
            if hasattr(lib.config, "explain_cache_misses")
            else _flag(lib)
        ):
            jf(*second[0], **second[1])
        logs[lib.__name__] = " ".join(
            r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()
        )
    for w in words:
        assert w in logs["jax"] and w in logs["funcgrad"], (w, logs)


def test_cache_miss_explanations_of_contexts_and_redefined_functions_as_jax(caplog):
    # api_test test_cache_miss_explanations_other_tracing_config / _new_function_in_loop: a retrace
    # under another rank promotion and matmul precision names both, and a function defined again
    # on the same line is said to be (JAX's words)
    logs = {}
    for lib in (jax, funcgrad):
        jf = lib.jit(lambda x, y: x + y)
        jf(0.0, 1.0)
        caplog.clear()
        with _flag(lib), lib.numpy_rank_promotion("warn"), lib.default_matmul_precision("high"):
            jf(0.0, 1.0)
            for _ in range(2):
                lib.jit(lambda x: 2 * x)(3)
        logs[lib.__name__] = [
            r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()
        ]
    for words in (
        ["Tracing context doesn't match", "now warn and before allow", "now high and before None"],
        ["never seen function"],
        ["but seen another function defined on the same line"],
    ):
        for lib in ("jax", "funcgrad"):
            assert any(all(w in m for w in words) for m in logs[lib]), (words, logs[lib])


class _flag:
    def __init__(self, lib):
        self.lib = lib

    def __enter__(self):
        self.lib.config.update("jax_explain_cache_misses", True)

    def __exit__(self, *exc):
        self.lib.config.update("jax_explain_cache_misses", False)


def test_python_int_overflow_under_jit_as_jax():
    # api_test NamedCallTest.test_integer_overflow: in 32-bit mode a Python int beyond int32 that
    # a jitted function closes over or returns is JAX's OverflowError (it had wrapped around to
    # -2**31), and as an argument JAX's words name its path
    x = 2**31
    for lib in (jax, funcgrad):
        with lib.enable_x64(False):
            for fn, words in (
                (lambda lib=lib: lib.jit(lambda: x)(), "Python int 2147483648 too large to convert to int32"),
                (
                    lambda lib=lib: lib.jit(lambda: x + 0)(),
                    "Python int 2147483648 too large to convert to int32",
                ),
                (
                    lambda lib=lib: lib.jit(lambda x: x + 0)(x),
                    "An overflow was encountered while parsing an argument",
                ),
            ):
                with pytest.raises(OverflowError, match=words):
                    fn()
            assert int(lib.jit(lambda: x - 1)()) == x - 1


def test_bool_of_a_traced_empty_or_many_element_array_as_jax():
    # api_test test_scalar_conversion_errors: JAX checks the size before the concretization, so
    # bool() of a traced array of 0 or several elements is NumPy's ValueError, of one element
    # TracerBoolConversionError
    for lib in (jax, funcgrad):
        for x, words in ((np.arange(0), "truth value of an empty array"), (np.arange(3), "more than one")):
            with pytest.raises(ValueError, match=words):
                lib.jit(bool)(x)
        with pytest.raises(lib.errors.TracerBoolConversionError):
            lib.jit(bool)(np.int32(1))


@pytest.mark.parametrize(
    "in_axes, out_axes, args",
    [(([0],), 0, (np.ones(3),)), (0, (2, 3), (np.ones(3),)), (({"a": 0}, None), 0, ({"b": np.ones(2)}, 1))],
)
def test_vmap_axes_not_a_tree_prefix_as_jax(in_axes, out_axes, args):
    # api_test test_vmap_in_axes_tree_prefix_error / _mismatched_axis_sizes_error_message_issue_705:
    # JAX's words, each mismatch by key path ("Mismatch details (n found)")
    words = []
    for lib in (jax, funcgrad):
        with pytest.raises(ValueError) as e:
            lib.vmap(lambda x, *_: x, in_axes=in_axes, out_axes=out_axes)(*args)
        text = str(e.value)
        words.append([text.split(";")[0], text.count("pytree structure error"), text.split("\n")[3:5]])
    assert words[0] == words[1] and "Mismatch details" in text


def test_device_put_with_a_tree_of_devices_as_jax():
    # api_test test_device_put_mismatched_tree_shows_* / test_invalid_value_device_put: a pytree
    # prefix of devices (None: left as it is) places each leaf; one that is not a prefix, and a
    # device that is not one, are JAX's ValueErrors
    x = {"a": np.arange(2), "b": np.arange(3)}
    outs = []
    for lib in (jax, funcgrad):
        d = lib.devices()[0]
        placed = lib.device_put(x, {"a": d, "b": None})
        outs.append([type(v).__name__ for v in (placed["a"], placed["b"])])
        with pytest.raises(
            ValueError, match=r"(?s)tree prefix of the corresponding value.*Mismatch details \(2 found\)"
        ):
            lib.device_put(x, device={"a": [None, None], "b": (None, None)})
        with pytest.raises(ValueError, match="Received invalid value"):
            lib.device_put(np.arange(8), "cpu")
    assert outs == [["ArrayImpl"] * 2, ["Array"] * 2]


def test_compiled_call_argument_errors_as_jax():
    # api_test test_jit_lower_compile_arg_type_mismatch / _vmap: a compiled function called with
    # other types, or under a transformation, is JAX's TypeError in its words
    for lib in (jax, funcgrad):
        compiled = lib.jit(lambda x: x * 2.0).lower(np.float32(1)).compile()
        with pytest.raises(TypeError, match="(?s)Argument types differ .*Argument 'x' compiled with float32"):
            compiled(np.int32(1))
        with pytest.raises(TypeError, match="Cannot apply JAX transformations .* Detected .*BatchTracer"):
            lib.vmap(lambda x, c=compiled: c(x))(np.ones(3, np.float32))
        assert float(compiled(np.float32(3))) == 6.0


def test_eval_shape_of_a_non_array_output_as_jax():
    # api_test test_eval_shape_error_bad_output
    def f(x):
        return (2.0, f)

    for lib in (jax, funcgrad):
        with pytest.raises(
            TypeError, match=r"function f at .*returned a value.*at output component \[1\], which"
        ):
            lib.eval_shape(f, 1)


def test_pmap_static_argument_passed_by_keyword_as_jax():
    # api_test test_pmap_static_kwarg_error_message (JAX issue 3007)
    for lib in (jax, funcgrad):
        g = lib.pmap(lambda a, b: a + b, static_broadcasted_argnums=(1,))
        with pytest.raises(
            ValueError, match=r"static_broadcasted_argnums=\(1,\) but was called with only 1 positional"
        ):
            g(np.ones((1, 1)), b=1)
        assert g(np.ones((1, 1)), 2).tolist() == [[3.0]]


def test_vmap_named_axis_batched_output_with_out_axes_none_as_jax():
    # api_test test_vmap_mismatched_axis_sizes_error_message_issue_705's last checks
    for lib in (jax, funcgrad):
        with pytest.raises(
            ValueError, match=r"vmap has mapped output \(axis_name=foo\) but out_axes is None"
        ):
            lib.vmap(lambda x: x, out_axes=None, axis_name="foo")(np.array([1.0, 2.0]))
        with pytest.raises(ValueError, match="at vmap out_axes"):
            lib.vmap(lambda x: x, out_axes=None)(np.array([1.0, 2.0]))
        psum = lib.vmap(lambda x, lib=lib: lib.lax.psum(x, "foo"), out_axes=None, axis_name="foo")
        assert float(psum(np.array([1.0, 2.0]))) == 3.0


def test_log_compiles_tells_each_trace_as_jax(caplog):
    # api_test test_clear_cache / test_jit_compilation_time_logging: under log_compiles a trace is
    # logged as "Finished tracing add for jit in ... sec" (WARNING), again after clear_caches
    import logging

    for lib in (jax, funcgrad):

        def add(x):
            return x * 2

        f = lib.jit(add)
        caplog.clear()
        with caplog.at_level(logging.WARNING), lib.log_compiles(True):
            f(np.arange(8)), f(np.arange(8))
            lib.clear_caches()
            f(np.arange(8))
        traced = [r for r in caplog.records if "Finished tracing add for jit" in r.getMessage()]
        assert len(traced) == 2 and any("Compiling jit(add)" in r.getMessage() for r in caplog.records)


def test_custom_vjp_fwd_output_of_another_shape_as_jax():
    # custom_api_test test_fwd_rule_primal_out_type_doesnt_match_primal_error_message: JAX's words
    # (jax 0.10.2's default), then those of its jax_custom_vjp3 mode (CustomVJP3Test's)
    for lib in (jax, funcgrad):

        @lib.custom_vjp
        def f(x):
            return x

        f.defvjp(lambda x, lib=lib: (lib.numpy.zeros((3, *x.shape), x.dtype), None), lambda _, g: (g,))
        scan_f = lambda x, lib=lib, f=f: lib.lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]  # noqa: E731
        with pytest.raises(
            TypeError, match=r"(?s)first element had shapes/dtypes of:\n    float32\[3\]\n"
        ) as e:
            lib.grad(scan_f)(np.float32(1.0))
    assert "got fwd output type float32[3] which doesn't match primal output type float32[]" in str(e.value)


def _branch_on(x):
    if x > 0:
        return x
    return -x


def test_traced_bool_names_the_traced_function_as_jax():
    """JAX's 'The error occurred while tracing the function f at FILE:LINE for jit.' before the
    argument it depends on; under nested jits the innermost function is named."""
    outer = lambda f: lambda y: f(y) * 2  # noqa: E731

    def first_lines(lib, fun):
        with pytest.raises(lib.errors.TracerBoolConversionError) as info:
            fun(1.0)
        return str(info.value).splitlines()[:2]

    for make in (lambda lib: lib.jit(_branch_on), lambda lib: lib.jit(outer(lib.jit(_branch_on)))):
        assert first_lines(funcgrad, make(funcgrad)) == first_lines(jax, make(jax))


def _concrete_tracer_cases(lib):
    np_mod = lib.numpy
    return {
        "int under grad": lambda: lib.grad(lambda x: x * int(x))(2.0),
        "int under jvp": lambda: lib.jvp(lambda x: x * int(x), (2.0,), (1.0,)),
        "index under grad": lambda: lib.grad(lambda x: np_mod.arange(5.0)[int(x)] * x)(3.0),
        "repeat count under grad": lambda: lib.grad(lambda x: np_mod.sum(np_mod.repeat(x, int(x))))(2.0),
        "split sections under jvp": lambda: lib.jvp(
            lambda s: np_mod.split(np_mod.arange(12.0) * s, s)[1], (3.0,), (1.0,)
        ),
        "float under grad (refused)": lambda: lib.grad(lambda x: x * float(x))(2.0),
        "int under jit (refused)": lambda: lib.jit(lambda x: x * int(x))(2.0),
    }


@pytest.mark.parametrize("name", list(_concrete_tracer_cases(funcgrad)))
def test_concrete_values_of_forward_and_eager_grad_tracers_as_jax(name):
    # JAX's Tracer.to_concrete_value: forward mode's tracer of a concrete primal (and eager grad's)
    # converts with int(), as an index or a count (core.concrete_or_error); float() stays refused
    def run(lib):
        try:
            return lib.tree_util.tree_map(np.asarray, _concrete_tracer_cases(lib)[name]())
        except Exception as e:  # noqa: BLE001 - the oracle's exception is the expectation
            return type(e).__name__

    got, want = run(funcgrad), run(jax)
    if isinstance(want, str):
        assert got == want
    else:
        funcgrad.tree_util.tree_map(np.testing.assert_allclose, got, want)


@pytest.mark.parametrize(
    "fun, n",
    [(lambda *args, **kw: args[0], 2), (lambda x, *rest: x, 3), (lambda x, y=1.0, *more: x, 4)],
)
def test_compiled_call_names_star_args_as_jax(fun, n):
    # a *args parameter's leaves are named args[i] (counted from it) in JAX's mismatch message
    # (funcgrad said 'args' for the first and args[2] for a third positional argument)
    args = [np.ones(i + 1, np.float32) for i in range(n)]
    bad = [*args[:-1], args[-1].astype(np.int32)]
    lines = []
    for lib in (jax, funcgrad):
        with pytest.raises(TypeError) as e:
            lib.jit(fun).lower(*args).compile()(*bad)
        lines.append(str(e.value).splitlines()[-1])
    assert lines[0] == lines[1]
