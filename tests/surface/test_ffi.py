"""``funcgrad.ffi``: a C++ kernel built against the XLA FFI headers that jaxlib ships
(tests/_support/ffi/rms_norm.cc, RMS normalisation as in JAX's FFI tutorial) called from eager
code, ``jit``, ``vmap`` (each ``vmap_method``) and ``grad`` through ``custom_vjp``, against a NumPy
reference; the lowered custom call and the errors of a wrong call without compiling anything."""

from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
from funcgrad.xla_bridge.backends import XlaBridgeError
from jaxlib._jax import JaxRuntimeError

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import ffi
from funcgrad.interpreters import mlir
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray

SOURCE = pathlib.Path(__file__).resolve().parents[1] / "_support" / "ffi" / "rms_norm.cc"
EPS = np.float32(1e-5)
RNG = np.random.default_rng(0)
# A target jaxlib registers itself (the Python host callback): calls to it can be lowered to text
# without building anything; they are never compiled here.
KNOWN = "xla_ffi_python_cpu_callback"


def rms_norm_ref(x, eps=EPS):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)


def rms_norm_vjp_ref(x, ct, eps=EPS):
    x, ct = np.asarray(x, np.float64), np.asarray(ct, np.float64)
    r = 1 / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
    return r * ct - x * r**3 * np.mean(x * ct, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------------------------
# Without a compiler: the lowered call and the errors


def test_include_dir_has_the_ffi_headers():
    assert (pathlib.Path(ffi.include_dir()) / "xla" / "ffi" / "api" / "ffi.h").is_file()
    from funcgrad.extend import ffi as extend_ffi

    assert extend_ffi.ffi_call is ffi.ffi_call and extend_ffi.include_dir is ffi.include_dir


def test_lowered_custom_call_attributes_layouts_and_aliases():
    def f(x, y):
        call = ffi.ffi_call(
            KNOWN,
            (funcgrad.ShapeDtypeStruct(x.shape, x.dtype), funcgrad.ShapeDtypeStruct((), np.float32)),
            has_side_effect=True,
            input_layouts=[(1, 0), None],
            output_layouts=[(1, 0), None],
            input_output_aliases={0: 0},
        )
        return call(x, y, eps=np.float32(0.5), n=3, flag=True, name="abc", arr=np.arange(3, dtype=np.int32))

    text = funcgrad.jit(f).lower(np.ones((2, 3), np.float32), np.float32(1)).as_text()
    line = next(ln for ln in text.splitlines() if "custom_call" in ln)
    assert f"stablehlo.custom_call @{KNOWN}(%arg0, %arg1)" in line
    assert 'backend_config = ""' in line and "has_side_effect = true" in line  # (JAX's form)
    assert (
        "mhlo.backend_config = {arr = dense<[0, 1, 2]> : tensor<3xi32>, eps = 5.000000e-01 : f32, "
        'flag = true, n = 3 : i64, name = "abc"}' in line
    )
    # major-to-minor (1, 0) is XLA's minor-to-major [0, 1]; a scalar has the empty layout
    assert "operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]" in line
    assert "output_tuple_indices = [0], operand_index = 0" in line
    # a side-effecting call stays in the program when its result is unused
    jaxpr = funcgrad.make_jaxpr(lambda x, y: (f(x, y), x)[1])(np.ones((2, 3), np.float32), np.float32(1))
    assert "ffi_call_effect" in str(jaxpr)
    text = (
        funcgrad.jit(lambda x, y: (f(x, y), x * 2)[1])
        .lower(np.ones((2, 3), np.float32), np.float32(1))
        .as_text()
    )
    assert "custom_call" in text


def test_legacy_api_version_takes_an_opaque_backend_config():
    call = ffi.ffi_call(
        KNOWN,
        funcgrad.ShapeDtypeStruct((2,), np.float64),
        custom_call_api_version=2,
        legacy_backend_config="opaque",
    )
    text = funcgrad.jit(call).lower(np.ones(2)).as_text()
    assert 'api_version = 2 : i32, backend_config = "opaque"' in text
    with pytest.raises(
        ValueError, match="legacy_backend_config parameter requires custom_call_api_version < 4"
    ):
        ffi.ffi_call(KNOWN, np.zeros(2), legacy_backend_config="x")


def test_errors_of_a_wrong_call():
    x = np.ones(3, np.float32)
    # A target not registered lowers, as in JAX (jax's own ffi_test reads such modules); compiling
    # it is XLA's JaxRuntimeError, as jax's, with the registration as the hint.
    call = ffi.ffi_call("not_registered_anywhere", x)
    assert "@not_registered_anywhere" in funcgrad.jit(call).lower(x).as_text()
    jax = pytest.importorskip("jax")
    assert (
        "@not_registered_anywhere"
        in jax.jit(jax.ffi.ffi_call("not_registered_anywhere", x)).lower(x).as_text()
    )
    for f in (funcgrad.jit(call), call):  # (eager: compiled, so the same error)
        with pytest.raises(
            JaxRuntimeError, match="No FFI handler registered for not_registered_anywhere"
        ) as e:
            f(x)
        assert isinstance(e.value, XlaBridgeError), type(e.value)  # (a JaxRuntimeError, with the hint)
        assert "register_ffi_target('not_registered_anywhere'" in str(e.value)
    with pytest.raises(ValueError, match="must have 'shape' and 'dtype'.*position 1"):
        ffi.ffi_call(KNOWN, [x, (3,)])
    with pytest.raises(ValueError, match="negative dimension"):
        ffi.ffi_call(KNOWN, funcgrad.ShapeDtypeStruct((-1,), np.float32))
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        ffi.ffi_call(KNOWN, x, vmap_method="vectorized")
    with pytest.raises(
        ValueError,
        match="referring to an input with abstract value float32\\[3\\] and an output with a different "
        "abstract value float64\\[3\\]",  # (jax's words)
    ):
        ffi.ffi_call(KNOWN, np.zeros(3), input_output_aliases={0: 0})(x)
    with pytest.raises(ValueError, match="output index 2 outside the range"):
        ffi.ffi_call(KNOWN, x, input_output_aliases={0: 2})(x)
    with pytest.raises(
        ValueError, match="number of input \\(1\\) must equal the number of input layouts \\(2\\)"
    ):
        ffi.ffi_call(KNOWN, x, input_layouts=[None, None])(x)
    with pytest.raises(TypeError, match="Non-hashable keyword argument"):
        ffi.ffi_call(KNOWN, x)(x, bad=[1, 2])
    # attributes JAX's mlir.ir_attribute refuses, refused with its words (NOTE: [attributes as text])
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    for lib in (funcgrad, jax):
        for bad, words in (
            (np.complex64(1), "Unsupported scalar attribute type"),
            (object(), "No attribute handler"),
        ):
            with pytest.raises(TypeError, match=words):
                lib.jit(lambda v: lib.ffi.ffi_call(KNOWN, x)(v, bad=bad)).lower(x)  # noqa: B023
    call = ffi.ffi_call(KNOWN, x)
    with pytest.raises(NotImplementedError, match="vmap_method= one of"):
        funcgrad.vmap(call)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="cannot be differentiated.*custom_vjp"):
        funcgrad.grad(lambda v: fnp.sum(call(v)))(x)
    with pytest.raises(ValueError, match="register_ffi_type"):
        ffi.register_ffi_type_id("t", None)


def test_lowered_calls_as_jax():
    """The custom calls JAX's ffi_test reads, against jax's text: a token operand and result,
    ``ffi_lowering`` with a ``Layout`` (major-to-minor) and extra attributes (attributes in
    ``mhlo.backend_config``), and JAX's refusals and words."""
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    from jax._src import core as jcore
    from jax._src.interpreters import mlir as jmlir
    from jax.experimental.layout import Layout as JLayout
    from jax.extend.core import Primitive as JPrimitive

    from funcgrad.experimental.layout import Layout
    from funcgrad.kernel.ir import abstract_token

    def line(lib, f, *args):
        text = lib.jit(f).lower(*args).as_text()
        return next(ln.strip() for ln in text.splitlines() if "custom_call" in ln).replace("jax", "fg")

    want = line(jax, lambda: jax.ffi.ffi_call(KNOWN, jcore.abstract_token)(jax.lax.create_token()))
    got = line(funcgrad, lambda: ffi.ffi_call(KNOWN, abstract_token)(funcgrad.lax.create_token()))
    assert got == want and "(!stablehlo.token) -> !stablehlo.token" in got

    lines = []
    for lib, layout, m, prim in (
        (funcgrad, Layout, mlir, Primitive),
        (jax, JLayout, jmlir, JPrimitive),
    ):
        p = prim(f"ffi_demo_{lib.__name__}")
        p.def_impl(lambda x, **_: x)
        p.def_abstract_eval(lambda x, **_: x)

        def rule(ctx, v, lib=lib, m=m, layout=layout, **params):
            attrs = {"mhlo.frontend_attributes": m.ir_attribute({"num_batch_dims": "1"})}
            lower = lib.ffi.ffi_lowering(KNOWN, operand_layouts=[layout((1, 0))], extra_attributes=attrs)
            return lower(ctx, v, **params)

        m.register_lowering(p, rule)
        lines.append(line(lib, lambda v, p=p: p.bind(v, eps=np.float32(0.5)), np.ones((2, 3), np.float32)))
    got, want = lines
    assert got == want.replace("ffi_demo_fg", "ffi_demo_funcgrad"), (got, want)
    assert (
        "mhlo.backend_config = {eps = 5.000000e-01 : f32}" in got
        and "operand_layouts = [dense<[0, 1]>" in got
    )
    assert 'mhlo.frontend_attributes = {num_batch_dims = "1"}' in got

    x = np.ones(3, np.float32)
    zero = np.zeros((), dtype=jax.dtypes.float0)  # (a float0 attribute: a false boolean, as jax's)
    texts = [
        line(lib, lambda v, lib=lib: lib.ffi.ffi_call(KNOWN, v)(v, param=zero), x) for lib in (funcgrad, jax)
    ]
    assert texts[0] == texts[1] and "param = dense<false> : tensor<i1>" in texts[0]
    # dict and array attributes print in a jaxpr as JAX's (FrozenDict, HashableArray)
    printed = [
        str(lib.make_jaxpr(lambda v, lib=lib: lib.ffi.ffi_call(KNOWN, v)(v, d={"a": 1}, a=np.arange(2)))(x))
        for lib in (funcgrad, jax)
    ]
    for text in printed:
        assert "('a', HashableArray(array([0, 1])))" in text and "('d', FrozenDict({'a': 1}))" in text
    # a typed PRNG key goes as its key data (JAX's physical type)
    texts = [
        line(lib, lambda k, lib=lib: lib.ffi.ffi_call(KNOWN, (), has_side_effect=True)(k), lib.random.key(0))
        for lib in (funcgrad, jax)
    ]
    assert texts[0].split("=", 1)[1] == texts[1].split("=", 1)[1] and "(tensor<2xui32>) -> ()" in texts[0]
    for lib in (funcgrad, jax):
        f = lib.ffi.ffi_call(KNOWN, x, custom_call_api_version=2)
        with pytest.raises(ValueError, match="The use of ffi_call attributes requires a custom call API"):
            lib.jit(lambda v, f=f: f(v, attribute=1)).lower(x)
        f = lib.ffi.ffi_call(KNOWN, x)
        with pytest.raises(ValueError, match="The FFI call to `.+` cannot be differentiated."):
            lib.grad(lambda v, f=f: f(v).sum())(x)


def test_control_deps_as_jax():
    """jax.experimental.control_deps: XLA control dependencies through the ``control_dep`` custom
    call, in the compiled program as jax's, values unchanged."""
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    from jax.experimental import control_deps as jcd

    from funcgrad.experimental import control_deps as fcd

    def program(np_mod, cd):
        def f(x, y):
            a, b = np_mod.sin(x @ x), np_mod.cos(y @ y)
            cd.schedule([b, a])
            return a + b

        return f

    x = np.ones((5, 5), np.float32)
    for lib, np_mod, cd in ((funcgrad, fnp, fcd), (jax, jax.numpy, jcd)):
        hlo = lib.jit(program(np_mod, cd)).lower(x, x).as_text(dialect="hlo")
        assert 'custom_call_target="control_dep"' in hlo
    np.testing.assert_allclose(
        funcgrad.jit(program(fnp, fcd))(x, x), jax.jit(program(jax.numpy, jcd))(x, x), rtol=1e-6
    )


# ----------------------------------------------------------------------------------------------
# The C++ kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """Builds tests/_support/ffi/rms_norm.cc with the system's C++ compiler and registers its
    handlers (the build takes several seconds: every test using it is in the slow tier)."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler on this machine (g++, c++ or clang++)")
    out = tmp_path_factory.mktemp("ffi") / "librms_norm.so"
    cmd = [
        cxx,
        "-O1",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-w",
        "-I",
        ffi.include_dir(),
        str(SOURCE),
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lib = ctypes.cdll.LoadLibrary(str(out))
    for name, handler in [
        ("test_rms_norm", lib.RmsNorm),
        ("test_rms_norm_fwd", lib.RmsNormFwd),
        ("test_rms_norm_bwd", lib.RmsNormBwd),
        ("test_scale_rows", lib.ScaleRows),
    ]:
        ffi.register_ffi_target(name, ffi.pycapsule(handler), platform="cpu")
    ffi.register_ffi_target(
        "test_legacy_double", ffi.pycapsule(lib.LegacyDouble), platform="cpu", api_version=0
    )
    return lib


def rms_norm(x, vmap_method="broadcast_all", shape=None):
    out = funcgrad.ShapeDtypeStruct(x.shape if shape is None else shape, x.dtype)
    return ffi.ffi_call("test_rms_norm", out, vmap_method=vmap_method)(x, eps=EPS)


@pytest.mark.slow
def test_eager_and_jit_against_numpy(kernel):
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    for got in (rms_norm(x), funcgrad.jit(rms_norm)(x), funcgrad.jit(rms_norm)(funcgrad.numpy.asarray(x))):
        assert got.dtype == np.float32 and got.shape == x.shape
        np.testing.assert_allclose(got, rms_norm_ref(x), rtol=2e-6)
    # the result aliasing its input (the kernel finishes reading a row before writing it)
    aliased = ffi.ffi_call("test_rms_norm", x, input_output_aliases={0: 0})
    np.testing.assert_allclose(funcgrad.jit(lambda v: aliased(v * 1, eps=EPS))(x), rms_norm_ref(x), rtol=2e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized"]
)
def test_vmap_methods(kernel, method):
    x = RNG.normal(size=(4, 3, 5)).astype(np.float32)
    f = lambda v: rms_norm(v, method)  # noqa: E731
    np.testing.assert_allclose(funcgrad.jit(funcgrad.vmap(f))(x), rms_norm_ref(x), rtol=2e-6)
    # a batch axis that is not the leading one, eagerly, and nested vmaps
    got = funcgrad.vmap(f, in_axes=1, out_axes=1)(x)
    np.testing.assert_allclose(got, rms_norm_ref(x.transpose(1, 0, 2)).transpose(1, 0, 2), rtol=2e-6)
    np.testing.assert_allclose(funcgrad.vmap(funcgrad.vmap(f))(x), rms_norm_ref(x), rtol=2e-6)


@pytest.mark.slow
def test_vmap_methods_with_an_unbatched_operand(kernel):
    # scale_rows(x, s) needs one s per row of x: what each method hands the kernel differs.
    x = RNG.normal(size=(4, 3, 2))
    s = RNG.normal(size=(3,))
    want = x * s[None, :, None]

    def scale(method):
        return lambda a, b: ffi.ffi_call(
            "test_scale_rows", funcgrad.ShapeDtypeStruct(a.shape, a.dtype), vmap_method=method
        )(a, b)

    for method in ("sequential", "sequential_unrolled", "broadcast_all"):
        got = funcgrad.jit(funcgrad.vmap(scale(method), in_axes=(0, None)))(x, s)
        np.testing.assert_allclose(got, want, rtol=1e-15, err_msg=method)
    # expand_dims gives the kernel s with a leading axis of 1 (3 values for 12 rows): the
    # kernel's own error reaches the caller
    with pytest.raises(Exception, match="scale_rows: s must have one element per row of x"):
        funcgrad.jit(funcgrad.vmap(scale("expand_dims"), in_axes=(0, None)))(x, s)


@funcgrad.custom_vjp
def rms_norm_diff(x):
    return rms_norm(x)


def _fwd(x):
    y, res = ffi.ffi_call(
        "test_rms_norm_fwd",
        (funcgrad.ShapeDtypeStruct(x.shape, x.dtype), funcgrad.ShapeDtypeStruct(x.shape[:-1], x.dtype)),
        vmap_method="broadcast_all",
    )(x, eps=EPS)
    return y, (res, x)


def _bwd(res, ct):
    r, x = res
    return (
        ffi.ffi_call(
            "test_rms_norm_bwd", funcgrad.ShapeDtypeStruct(ct.shape, ct.dtype), vmap_method="broadcast_all"
        )(r, x, ct),
    )


rms_norm_diff.defvjp(_fwd, _bwd)


@pytest.mark.slow
def test_grad_through_custom_vjp(kernel):
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    w = RNG.normal(size=(3, 5)).astype(np.float32)
    loss = lambda v: fnp.sum(rms_norm_diff(v) * w)  # noqa: E731
    want = rms_norm_vjp_ref(x, w)
    np.testing.assert_allclose(funcgrad.grad(loss)(x), want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(funcgrad.jit(funcgrad.grad(loss))(x), want, rtol=1e-4, atol=1e-6)
    # per-example gradients: vmap of grad (the fwd and bwd kernels batched by broadcast_all)
    xs = RNG.normal(size=(4, 3, 5)).astype(np.float32)
    per = funcgrad.jit(funcgrad.vmap(funcgrad.grad(loss)))(xs)
    np.testing.assert_allclose(per, rms_norm_vjp_ref(xs, np.broadcast_to(w, xs.shape)), rtol=1e-4, atol=1e-6)
    # the primal value through the custom_vjp is the kernel's
    np.testing.assert_allclose(funcgrad.jit(rms_norm_diff)(x), rms_norm_ref(x), rtol=2e-6)


@pytest.mark.slow
def test_wrong_result_shape_is_the_kernels_error(kernel):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match="rms_norm: the result must have the shape of x"):
        funcgrad.jit(lambda v: rms_norm(v, shape=(3, 2)))(x)
    # operands and attributes the handler cannot decode: XLA's message, and which call it was
    with pytest.raises(Exception, match="Wrong buffer dtype: expected F32 but got F64") as info:
        ffi.ffi_call("test_rms_norm", x.astype(np.float64))(x.astype(np.float64), eps=EPS)
    assert "in the FFI call to 'test_rms_norm'" in "".join(info.value.__notes__)
    with pytest.raises(Exception, match="Wrong number of attributes: expected 1 but got 0"):
        funcgrad.jit(ffi.ffi_call("test_rms_norm", x))(x)


@pytest.mark.slow
def test_ffi_lowering_of_a_library_primitive(kernel):
    # A primitive of a library's own whose lowering is ffi_lowering (jaxlib's MLIR bindings).
    p = Primitive("test_ffi_rms_norm_p")
    p.def_impl(lambda x, *, eps: rms_norm_ref(x, eps).astype(x.dtype))
    p.def_abstract_eval(lambda x, *, eps: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, ffi.ffi_lowering("test_rms_norm"), platform="cpu")
    x = RNG.normal(size=(2, 6)).astype(np.float32)
    lowered = funcgrad.jit(lambda v: p.bind(v, eps=EPS)).lower(x).as_text()
    assert "stablehlo.custom_call @test_rms_norm" in lowered
    np.testing.assert_allclose(funcgrad.jit(lambda v: p.bind(v, eps=EPS))(x), rms_norm_ref(x), rtol=2e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized"]
)
def test_vmap_methods_match_jax(kernel, method):
    # jax (the oracle) calls the same registered handler: what each vmap_method hands the kernel,
    # with an unbatched operand, gives jax's values, or fails where jax's fails.
    jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
    x = RNG.normal(size=(4, 3, 2))
    s = RNG.normal(size=(3,))

    def scale(lib):
        sds = lib.ShapeDtypeStruct
        ffi_call = lib.ffi.ffi_call
        return lambda a, b: ffi_call("test_scale_rows", sds(a.shape, a.dtype), vmap_method=method)(a, b)

    def run(lib):
        try:
            return np.asarray(lib.jit(lib.vmap(scale(lib), in_axes=(0, None)))(x, s))
        except Exception as e:  # noqa: BLE001 - the kernel's refusal is the outcome compared
            return "scale_rows: s must have one element per row of x" in str(e)

    jax.config.update("jax_enable_x64", True)  # (as the suite's other jax oracles do)
    want = run(jax)
    got = run(funcgrad)
    if isinstance(want, bool):
        assert got is want is True
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_legacy_custom_call(kernel):
    # a target of the custom-call API before the typed FFI: its opaque backend config string
    x = np.arange(5.0)
    call = ffi.ffi_call("test_legacy_double", x, custom_call_api_version=3, legacy_backend_config="5")
    np.testing.assert_array_equal(funcgrad.jit(call)(x), 2 * x)
    np.testing.assert_array_equal(call(x), 2 * x)
