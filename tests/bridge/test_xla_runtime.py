"""Tests of the XLA runtime half of xla_bridge: buffers, compile/execute, caches, plugins.

Hand-written StableHLO modules are run against NumPy. Behaviour that depends on process state
(the persistent cache, "jax is never imported", multiple CPU devices, plugin discovery) runs in
fresh subprocesses.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # plain `pytest` from anywhere: make the packages importable
    sys.path.insert(0, str(ROOT))

from funcgrad.xla_bridge import backends, compile_cache, plugins, runtime  # noqa: E402
from funcgrad.xla_bridge.dtypes import (  # noqa: E402
    SUPPORTED_DTYPES,
    dense_attr,
    main_signature,
    mlir_element_type,
    mlir_tensor_type,
)

from funcgrad import xla_bridge as xb  # noqa: E402 - after the sys.path fix above

BF16 = np.dtype(ml_dtypes.bfloat16)


def run_py(code: str, env_extra: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter with the repo importable; returns the finished process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        check=False,
        text=True,
        env=env,
        cwd=cwd or ROOT,
        timeout=120,
    )


def last_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Hand-written modules
# ---------------------------------------------------------------------------------------------


def binary_module(op: str, shape, dtype) -> str:
    t = mlir_tensor_type(shape, dtype)
    return f"""func.func public @main(%a: {t}, %b: {t}) -> {t} {{
  %c = stablehlo.{op} %a, %b : {t}
  return %c : {t}
}}"""


def dot_module(m, k, n, dtype) -> str:
    ta, tb, tc = (mlir_tensor_type(s, dtype) for s in ((m, k), (k, n), (m, n)))
    return f"""func.func public @main(%a: {ta}, %b: {tb}) -> {tc} {{
  %c = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({ta}, {tb}) -> {tc}
  return %c : {tc}
}}"""


def reduce_module(op: str, shape, axis: int, dtype) -> str:
    t = mlir_tensor_type(shape, dtype)
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis)
    to, ts = mlir_tensor_type(out_shape, dtype), mlir_tensor_type((), dtype)
    init = dense_attr(np.zeros((), dtype))
    return f"""func.func public @main(%x: {t}) -> {to} {{
  %z = stablehlo.constant {init}
  %r = stablehlo.reduce(%x init: %z) applies stablehlo.{op} across dimensions = [{axis}] : ({t}, {ts}) -> {to}
  return %r : {to}
}}"""


def sample(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 50, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def run(text, args, out_avals, **kw):
    ins = [(np.shape(a), np.asarray(a).dtype) for a in args]
    exe = xb.compile(text, ins, out_avals, **kw)
    outs = exe([xb.device_put(a) for a in args])
    return [xb.to_numpy(o) for o in outs]


def assert_close(got, want, dtype):
    dt = np.dtype(dtype)
    assert got.dtype == dt and got.shape == want.shape
    if dt == BF16:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2)
    elif dt.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if dt == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)


NUMERIC = [np.float32, np.float64, np.int32, BF16]


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_add(dtype):
    a, b = sample((2, 3), dtype, 1), sample((2, 3), dtype, 2)
    (got,) = run(binary_module("add", (2, 3), dtype), [a, b], [((2, 3), dtype)])
    assert_close(got, (a + b).astype(dtype), dtype)


@pytest.mark.parametrize(("op", "ref"), [("or", np.logical_or), ("and", np.logical_and)])
def test_bool_ops(op, ref):
    a, b = sample((5,), bool, 1), sample((5,), bool, 2)
    (got,) = run(binary_module(op, (5,), bool), [a, b], [((5,), bool)])
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref(a, b))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_dot_general(dtype):
    a, b = sample((2, 3), dtype, 3), sample((3, 4), dtype, 4)
    (got,) = run(dot_module(2, 3, 4, dtype), [a, b], [((2, 4), dtype)])
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    assert_close(got, want, dtype)


@pytest.mark.parametrize(
    ("dtype", "op"),
    [
        (np.float32, "add"),
        (np.float64, "add"),
        (np.int32, "add"),
        (BF16, "add"),
        (bool, "or"),
    ],
    ids=str,
)
def test_reduce(dtype, op):
    x = sample((2, 3), dtype, 5)
    (got,) = run(reduce_module(op, (2, 3), 1, dtype), [x], [((2,), dtype)])
    want = x.any(axis=1) if op == "or" else x.astype(np.float64).sum(axis=1).astype(dtype)
    assert_close(got, want, dtype)


def test_multiple_outputs_and_no_inputs():
    text = """func.func public @main() -> (tensor<2xf32>, tensor<i64>) {
  %a = stablehlo.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %b = stablehlo.constant dense<7> : tensor<i64>
  return %a, %b : tensor<2xf32>, tensor<i64>
}"""
    exe = xb.compile(text, [], [((2,), np.float32), ((), np.int64)])
    a, b = (xb.to_numpy(o) for o in exe([]))
    np.testing.assert_array_equal(a, np.array([1.5, 2.5], np.float32))
    assert b.dtype == np.int64 and b.shape == () and b == 7


# ---------------------------------------------------------------------------------------------
# Host <-> device
# ---------------------------------------------------------------------------------------------


def special_values(dt: np.dtype, shape) -> np.ndarray:
    a = sample(shape, dt, 7)
    if dt.kind == "f" or dt == BF16:
        flat = a.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, -0.0]
        flat[: min(len(specials), flat.size)] = specials[: flat.size]
    if dt.kind in "iu" and a.size:
        a.reshape(-1)[0] = np.iinfo(dt).max
    return a


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)], ids=str)
def test_round_trip_all_dtypes(dtype, shape):
    a = special_values(np.dtype(dtype), shape)
    buf = xb.device_put(a)
    assert buf.aval.shape == shape and buf.aval.dtype == dtype
    back = xb.to_numpy(buf)
    assert back.dtype == a.dtype and back.shape == a.shape
    # Bitwise equality: nan payloads and -0.0 survive.
    assert back.tobytes() == np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(1, np.int64), (2.5, np.float64), (True, np.bool_), (1 + 2j, np.complex128)],
)
def test_put_python_scalars(value, dtype):
    back = xb.to_numpy(xb.device_put(value))
    assert back.shape == () and back.dtype == dtype and back == value


def test_put_copies_and_accepts_any_layout():
    base = np.arange(12.0).reshape(3, 4)
    for a in (base[::2], base.T, np.asfortranarray(base), base.astype(">f8")):
        np.testing.assert_array_equal(xb.to_numpy(xb.device_put(a)), a)
    a = np.ones(1000)
    buf = xb.device_put(a)
    a[:] = 5.0  # must not show through: device_put copies
    assert xb.to_numpy(buf)[0] == 1.0


def test_to_numpy_is_readonly_view_on_cpu():
    buf = xb.device_put(np.arange(4, dtype=np.float32))
    v = xb.to_numpy(buf)
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 1.0


def test_put_rejects_unsupported_dtypes():
    with pytest.raises(TypeError, match="not supported"):
        xb.device_put(np.array(["a"]))
    with pytest.raises(TypeError, match="device buffer"):
        xb.to_numpy(np.ones(3))


def test_put_existing_buffer_is_identity():
    buf = xb.device_put(np.ones(2))
    assert xb.device_put(buf) is buf


def test_aval_interning():
    a = xb.aval((2, 3), "float32")
    assert a is xb.aval([2, 3], np.float32) is xb.aval((np.int64(2), 3), np.dtype("f4"))
    assert a is not xb.aval((2, 3), np.float32, weak_type=True)
    assert repr(a) == "float32[2,3]" and a.ndim == 2
    assert xb.device_put(np.zeros((2, 3), np.float32)).aval is a


# ---------------------------------------------------------------------------------------------
# Dense constants round-trip exactly
# ---------------------------------------------------------------------------------------------

CONSTANTS = [
    np.float32(1.0),
    np.float32(0.1),
    np.float32(1e-5),
    np.float32(-0.0),
    np.array([np.nan, np.inf, -np.inf, -0.0, 3.0, 1e-45], np.float32),
    np.array([0.1, 1e300, 5e-324, np.nan], np.float64),
    np.full((2, 2), np.nan, np.float64),
    np.array([1.5, np.nan, 0.1], BF16),
    np.array([65504.0, 1e-7], np.float16),
    np.array([True, False, True]),
    np.array(False),
    np.array([-128, 127], np.int8),
    np.array([np.iinfo(np.int64).min, 0], np.int64),
    np.array([np.iinfo(np.uint64).max], np.uint64),
    np.arange(40, dtype=np.int32).reshape(4, 10),
    np.arange(40, dtype=np.float32).reshape(4, 10) / 7,
    np.array([1 + 2j, np.nan + 1j], np.complex64),
    np.complex128(3 - 4j),
    np.zeros((0, 3), np.float32),
]


@pytest.mark.parametrize("value", CONSTANTS, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_dense_attr_round_trip(value):
    t = mlir_tensor_type(value.shape, value.dtype)
    text = f"""func.func public @main() -> {t} {{
  %c = stablehlo.constant {dense_attr(value)}
  return %c : {t}
}}"""
    (got,) = [xb.to_numpy(o) for o in xb.compile(text, [], [value])([])]
    assert got.dtype == value.dtype and got.shape == value.shape
    assert got.tobytes() == np.ascontiguousarray(value).tobytes()


def test_dtype_names():
    assert mlir_element_type(bool) == "i1"
    assert mlir_element_type(np.uint16) == "ui16"
    assert mlir_element_type(np.complex64) == "complex<f32>"
    assert mlir_tensor_type((), BF16) == "tensor<bf16>"
    assert mlir_tensor_type((0, 2), np.int8) == "tensor<0x2xi8>"
    assert dense_attr(np.float32(1.0)) == "dense<1.0> : tensor<f32>"
    with pytest.raises(TypeError, match="no XLA element type"):
        mlir_element_type(np.dtype("U3"))


# ---------------------------------------------------------------------------------------------
# Input validation and errors
# ---------------------------------------------------------------------------------------------

F32x3 = ((3,), np.float32)


@pytest.fixture(scope="module")
def add3():
    return xb.compile(binary_module("add", (3,), np.float32), [F32x3, F32x3], [F32x3])


def test_wrong_dtype_is_a_clear_error(add3):
    good = xb.device_put(np.ones(3, np.float32))
    bad = xb.device_put(np.ones(3, np.int32))  # same byte size: XLA alone would accept it
    with pytest.raises(xb.XlaBridgeError, match=r"argument 1 should be float32\[3\] but is int32\[3\]") as ei:
        add3([good, bad])
    assert ei.value.phase == "execute" and ei.value.platform == "cpu"


def test_wrong_shape_count_and_type(add3):
    good = xb.device_put(np.ones(3, np.float32))
    with pytest.raises(xb.XlaBridgeError, match=r"should be float32\[3\] but is float32\[1,3\]"):
        add3([good, xb.device_put(np.ones((1, 3), np.float32))])
    with pytest.raises(xb.XlaBridgeError, match="takes 2 arguments, got 1"):
        add3([good])
    with pytest.raises(xb.XlaBridgeError, match="not a device buffer"):
        add3([good, np.ones(3, np.float32)])


def test_weak_type_difference_is_accepted(add3):
    weak = xb.device_put(np.ones(3, np.float32), weak_type=True)
    (out,) = add3.call([weak, weak])
    np.testing.assert_array_equal(xb.to_numpy(out), [2, 2, 2])


def test_fast_call_equals_call(add3):
    x = xb.device_put(np.arange(3, dtype=np.float32))
    a = xb.to_numpy(add3([x, x])[0])
    b = xb.to_numpy(add3.call([x, x])[0])
    c = xb.to_numpy(add3.call_checked((x, x))[0])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert add3.as_text().startswith("func.func public @main")
    assert "add" in add3.as_hlo_text()


def test_compile_error_is_clear():
    text = "func.func public @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %b = stablehlo.bogus %a\n}"
    with pytest.raises(xb.XlaBridgeError, match="failed to compile") as ei:
        xb.compile(text, [F32x3], [F32x3])
    assert ei.value.phase == "compile" and ei.value.module_text == text
    assert "line 2" in str(ei.value)


def test_signature_mismatch_caught_at_compile():
    text = binary_module("add", (3,), np.float32)
    with pytest.raises(xb.XlaBridgeError, match="argument types"):
        xb.compile(text, [F32x3, ((3,), np.int32)], [F32x3])
    with pytest.raises(xb.XlaBridgeError, match="result types"):
        xb.compile(text, [F32x3, F32x3], [((3,), np.float64)])


def test_signature_parser_handles_attributes():
    text = """func.func public @main(%arg0: tensor<2x3xf32> {jax.buffer_donor = true, mhlo.sharding = "{replicated}"}, %arg1: tensor<complex<f64>>) -> (tensor<2x3xf32> {jax.result_info = "result[0]"}, tensor<i1>) {"""  # noqa: E501 - verbatim module text
    sig = main_signature(text)
    assert sig == (
        ["tensor<2x3xf32>", "tensor<complex<f64>>"],
        ["tensor<2x3xf32>", "tensor<i1>"],
    )


def test_in_memory_cache():
    text = binary_module("maximum", (3,), np.float32)
    exe = xb.compile(text, [F32x3, F32x3], [F32x3])
    info = xb.compile_cache_info()
    assert xb.compile(text, [F32x3, F32x3], [F32x3]) is exe
    assert xb.compile_cache_info()["hits"] == info["hits"] + 1
    # Another device, donation or out aval (here: weak_type) is another entry.
    weak = xb.aval((3,), np.float32, weak_type=True)
    assert xb.compile(text, [F32x3, F32x3], [weak]) is not exe


# ---------------------------------------------------------------------------------------------
# Donation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["tf.aliasing_output = 0 : i32", "jax.buffer_donor = true"])
def test_donation(marker):
    text = f"""func.func public @main(%a: tensor<3xf32> {{{marker}}}, %b: tensor<3xf32>) -> tensor<3xf32> {{
  %c = stablehlo.add %a, %b : tensor<3xf32>
  return %c : tensor<3xf32>
}}"""
    exe = xb.compile(text, [F32x3, F32x3], [F32x3], donate_argnums=(0,))
    assert exe.donate_argnums == (0,)
    x, y = xb.device_put(np.ones(3, np.float32)), xb.device_put(np.ones(3, np.float32))
    (out,) = exe([x, y])
    np.testing.assert_array_equal(xb.to_numpy(out), [2, 2, 2])
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(xb.XlaBridgeError, match="donated"):
        exe([x, y])
    with pytest.raises(xb.XlaBridgeError, match="donated"):
        exe.call_checked([x, y])
    with pytest.raises(xb.XlaBridgeError, match="deleted or donated"):
        xb.to_numpy(x)


def test_donation_needs_a_marker():
    with pytest.raises(ValueError, match="tf.aliasing_output"):
        xb.compile(
            binary_module("add", (3,), np.float32),
            [F32x3, F32x3],
            [F32x3],
            donate_argnums=(0,),
        )


# ---------------------------------------------------------------------------------------------
# Backends and plugins
# ---------------------------------------------------------------------------------------------


def test_backend_basics():
    b = xb.get_backend("cpu")
    assert b is xb.get_backend("CPU") is xb.get_backend("host")
    assert b.platform == "cpu" and b.default_device is b.devices[0]
    assert xb.devices("cpu") == b.devices
    assert runtime.sharding(b.default_device) is runtime.sharding(b.default_device)
    with pytest.raises(xb.XlaBridgeError, match="unknown platform 'tpu9'"):
        xb.get_backend("tpu9")


needs_no_gpu = pytest.mark.skipif(plugins.visible_nvidia_gpu(), reason="this machine has a GPU")


@needs_no_gpu
def test_cuda_missing_plugin_message(monkeypatch):
    monkeypatch.delenv("PJRT_NAMES_AND_LIBRARY_PATHS", raising=False)
    if plugins.find_cuda_plugin() is not None:
        pytest.skip("a CUDA plugin is installed")
    with pytest.raises(xb.XlaBridgeError) as ei:
        xb.get_backend("cuda")
    msg = str(ei.value)
    assert ei.value.phase == "backend" and ei.value.platform == "cuda"
    assert "no CUDA PJRT plugin is installed" in msg
    assert "pip install" in msg and "jax-cuda12-pjrt==" in msg and "jax-cuda12-plugin" in msg
    assert "FUNCGRAD_PLATFORM=cpu" in msg
    with pytest.raises(xb.XlaBridgeError):
        xb.get_backend("gpu")  # alias


@needs_no_gpu
def test_cuda_plugin_without_gpu_message_from_env(monkeypatch, tmp_path):
    so = tmp_path / "fake_plugin.so"
    so.write_bytes(b"")
    monkeypatch.setenv("PJRT_NAMES_AND_LIBRARY_PATHS", f"cuda:{so}")
    with pytest.raises(xb.XlaBridgeError, match="no NVIDIA GPU is visible") as ei:
        xb.get_backend("cuda")
    assert str(so) in str(ei.value)


@pytest.mark.slow
@needs_no_gpu
def test_cuda_plugin_package_found_without_running_it(tmp_path):
    pkg = tmp_path / "jax_plugins" / "xla_cuda12"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise SystemExit('plugin __init__ must not run')\n")
    (pkg / "xla_cuda_plugin.so").write_bytes(b"")
    proc = run_py(
        """
        import json
        from funcgrad import xla_bridge as xb
        from funcgrad.xla_bridge import plugins
        p = plugins.find_cuda_plugin()
        try:
            xb.get_backend("cuda")
        except xb.XlaBridgeError as e:
            print(json.dumps({"src": p.source, "path": p.library_path, "msg": str(e)}))
        """,
        {
            "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}",
            "PJRT_NAMES_AND_LIBRARY_PATHS": "",
        },
    )
    out = last_json(proc)
    assert out["src"] == "jax_plugins.xla_cuda12"
    assert out["path"].endswith("xla_cuda_plugin.so")
    assert "plugin is installed" in out["msg"] and "no NVIDIA GPU is visible" in out["msg"]


@needs_no_gpu
def test_funcgrad_platform_env_selects_default(monkeypatch):
    monkeypatch.delenv("PJRT_NAMES_AND_LIBRARY_PATHS", raising=False)
    monkeypatch.setenv("FUNCGRAD_PLATFORM", "gpu")
    monkeypatch.setattr(backends, "_default_platform", None)  # (runtime re-exports it)
    assert xb.default_platform() == "cuda"
    if plugins.find_cuda_plugin() is None:
        with pytest.raises(xb.XlaBridgeError, match="pip install"):
            xb.get_backend()


def test_plugins_from_env_parsing():
    assert plugins.plugins_from_env("cuda:/a.so,foo:/b.so") == {
        "cuda": "/a.so",
        "foo": "/b.so",
    }
    with pytest.warns(UserWarning, match="malformed"):
        assert plugins.plugins_from_env("nopath") == {}


# ---------------------------------------------------------------------------------------------
# Fresh-process behaviour: import cost, no jax, persistent cache, several devices
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_import_is_cheap_and_lazy():
    proc = run_py(
        """
        import json, sys
        from funcgrad import xla_bridge
        heavy = [m for m in ("numpy", "jaxlib", "jaxlib._jax") if m in sys.modules]
        xla_bridge.get_cache_dir  # a lazy attribute that does not need jaxlib
        from funcgrad.xla_bridge import runtime  # imports jaxlib, but must not start a client
        print(json.dumps({"heavy": heavy, "all": sorted(xla_bridge.__all__),
                          "clients": len(runtime._backends),
                          "lazy": sorted(set(xla_bridge._LAZY) | set(xla_bridge._SUBMODULES))}))
        """
    )
    out = last_json(proc)
    assert out["heavy"] == [] and out["clients"] == 0
    assert out["all"] == out["lazy"]


CACHE_SCRIPT = """
import json, sys, time, warnings
import numpy as np, ml_dtypes
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    from funcgrad import xla_bridge as xb
    from funcgrad.xla_bridge import compile_cache
    text = '''func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.multiply %a, %b : tensor<3xf32>
  return %c : tensor<3xf32>
}'''
    A = ((3,), np.float32)
    t0 = time.perf_counter()
    exe = xb.compile(text, [A, A], [A])
    dt = time.perf_counter() - t0
    x = xb.device_put(np.array([1, 2, 3], np.float32))
    out = xb.to_numpy(exe([x, x])[0]).tolist()
    bf = xb.to_numpy(xb.device_put(np.array([1.5, 2.5], ml_dtypes.bfloat16))).tolist()
print(json.dumps({"stats": compile_cache.stats(), "out": out, "bf16": [float(v) for v in bf],
                  "jax": "jax" in sys.modules, "compile_s": dt,
                  "warnings": [str(x.message) for x in w]}))
"""


@pytest.mark.slow
def test_persistent_cache_and_no_jax(tmp_path):
    cache = tmp_path / "cache"
    env = {"FUNCGRAD_COMPILATION_CACHE_DIR": str(cache)}
    first = last_json(run_py(CACHE_SCRIPT, env))
    assert first["stats"] == {"hits": 0, "misses": 1, "stores": 1, "errors": 0}
    assert first["out"] == [1.0, 4.0, 9.0] and first["bf16"] == [1.5, 2.5]
    # jax is installed on the test machines, and nothing above may import it.
    assert first["jax"] is False
    entries = list(cache.glob("*.fgxc"))
    assert len(entries) == 1 and not list(cache.glob(".tmp-*"))

    second = last_json(run_py(CACHE_SCRIPT, env))
    assert second["stats"] == {"hits": 1, "misses": 0, "stores": 0, "errors": 0}
    assert second["out"] == [1.0, 4.0, 9.0] and second["jax"] is False

    # A damaged entry is reported, ignored and replaced; results stay right.
    data = entries[0].read_bytes()
    entries[0].write_bytes(data[: len(data) // 2])
    third = last_json(run_py(CACHE_SCRIPT, env))
    assert third["stats"] == {"hits": 0, "misses": 1, "stores": 1, "errors": 1}
    assert third["out"] == [1.0, 4.0, 9.0]
    assert any("corrupted" in m for m in third["warnings"])
    assert entries[0].read_bytes() == data  # rewritten with a good entry


def test_cache_rejects_bad_blob_with_valid_checksum(tmp_path, monkeypatch):
    # A well-formed entry whose blob XLA cannot load (e.g. from an incompatible build).
    monkeypatch.setattr(compile_cache, "_cache_dir", str(tmp_path))
    xb.clear_compile_cache()
    compile_cache.reset_stats()
    text = binary_module("subtract", (3,), np.float32)
    b = xb.get_backend("cpu")
    opts = b.compile_options(b.default_device)
    key = compile_cache.cache_key(
        text,
        platform=b.client.platform,
        platform_version=b.client.platform_version,
        compile_options=opts.SerializeAsString(),
        devices=[(b.default_device.device_kind, b.default_device.id)],
    )
    assert compile_cache.store(key, b"not an executable")
    with pytest.warns(compile_cache.CompilationCacheWarning, match="cannot load entry"):
        exe = xb.compile(text, [F32x3, F32x3], [F32x3])
    x = xb.device_put(np.array([3, 2, 1], np.float32))
    np.testing.assert_array_equal(xb.to_numpy(exe([x, x])[0]), [0, 0, 0])
    # stores: ours above, then the recompiled executable that replaced it.
    assert compile_cache.stats() == {"hits": 1, "misses": 0, "stores": 2, "errors": 1}


@pytest.mark.parametrize(
    "flag, value, stored",
    [
        ("jax_persistent_cache_min_compile_time_secs", 3600.0, 0),  # (compiled faster: not written)
        ("jax_persistent_cache_min_entry_size_bytes", 2**40, 0),  # (smaller: not written)
        ("jax_persistent_cache_min_entry_size_bytes", -1, 1),  # (JAX's persistent-cache guide)
    ],
)
def test_cache_thresholds_are_jaxs_flags(tmp_path, monkeypatch, flag, value, stored):
    import funcgrad

    monkeypatch.setattr(compile_cache, "_cache_dir", str(tmp_path))
    xb.clear_compile_cache()
    compile_cache.reset_stats()
    funcgrad.config.update(flag, value)
    try:
        xb.compile(binary_module("multiply", (3,), np.float32), [F32x3, F32x3], [F32x3])
    finally:
        funcgrad.config.update(flag, 0)
    assert compile_cache.stats()["stores"] == stored and len(list(tmp_path.iterdir())) == stored
    with pytest.raises(ValueError, match="must be an int"):
        funcgrad.config.update("jax_persistent_cache_min_entry_size_bytes", "x")


def test_cache_unwritable_dir_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(compile_cache, "_cache_dir", str(blocker / "sub"))
    with pytest.warns(compile_cache.CompilationCacheWarning, match="cannot write"):
        assert compile_cache.store("k" * 64, b"blob") is False
    with pytest.warns(compile_cache.CompilationCacheWarning, match="cannot read"):
        assert compile_cache.load("k" * 64) is None


@pytest.mark.slow
def test_several_cpu_devices(tmp_path):
    proc = run_py(
        """
        import json, numpy as np
        from funcgrad import xla_bridge as xb
        devs = xb.devices()
        text = '''func.func public @main(%a: tensor<2xf64>) -> tensor<2xf64> {
          %b = stablehlo.add %a, %a : tensor<2xf64>
          return %b : tensor<2xf64>
        }'''
        exe = xb.compile(text, [((2,), np.float64)], [((2,), np.float64)], device=devs[1])
        x1 = xb.device_put(np.array([1.0, 2.0]), devs[1])
        (out,) = exe([x1])
        res = {"n": len(devs), "out": xb.to_numpy(out).tolist(),
               "out_dev": out._sharding._fg_device.id}
        x0 = xb.device_put(np.array([1.0, 2.0]), devs[0])
        for name, f in (("call", exe), ("checked", exe.call_checked)):
            try:
                f([x0])
            except xb.XlaBridgeError as e:
                res[name] = str(e)
        res["moved"] = xb.to_numpy(exe([xb.device_put(x0, devs[1])])[0]).tolist()
        # Loaded from the persistent cache, the executable must still run on device 1.
        xb.clear_compile_cache()
        exe2 = xb.compile(text, [((2,), np.float64)], [((2,), np.float64)], device=devs[1])
        (out2,) = exe2([x1])
        res["cached"] = [xb.to_numpy(out2).tolist(), out2._sharding._fg_device.id]
        from funcgrad.xla_bridge import compile_cache
        res["stats"] = compile_cache.stats()
        import sys
        res["jax"] = "jax" in sys.modules
        print(json.dumps(res))
        """,
        {
            "FUNCGRAD_NUM_CPU_DEVICES": "2",
            "FUNCGRAD_COMPILATION_CACHE_DIR": str(tmp_path),
        },
    )
    out = last_json(proc)
    assert out["n"] == 2 and out["out"] == [2.0, 4.0] and out["out_dev"] == 1
    assert "device_put" in out["call"] and "device_put" in out["checked"]
    assert out["moved"] == [2.0, 4.0]
    assert out["cached"] == [[2.0, 4.0], 1]
    assert out["stats"]["hits"] == 1 and out["stats"]["errors"] == 0
    assert out["jax"] is False


# -- synchronous or asynchronous CPU dispatch (NOTE: [synchronous CPU dispatch]) ---------------

_DISPATCH_PROBE = """
    import json, sys
    import numpy as np
    import funcgrad, funcgrad.numpy as fnp
    from funcgrad import config
    if sys.argv[1:] == ["config"]:
        config.update("jax_cpu_enable_async_dispatch", True)
    from funcgrad.xla_bridge import runtime
    x = np.random.default_rng(0).standard_normal((600, 600))
    f = funcgrad.jit(lambda a: fnp.tanh(a @ a) @ a)  # far above PJRT's 1000-flop inline limit
    y = f(x)
    ready = y._buffer.is_ready()  # synchronous: always; asynchronous: whenever the thread is done
    err = float(np.max(np.abs(np.asarray(y) - np.tanh(x @ x) @ x)))
    try:
        config.update("jax_cpu_enable_async_dispatch", not runtime.cpu_async_dispatch())
        late = "accepted"
    except RuntimeError as e:
        late = str(e)
    flag, asynchronous = config.jax_cpu_enable_async_dispatch, runtime.cpu_async_dispatch()
    print(json.dumps(dict(flag=flag, asynchronous=asynchronous, ready=ready, err=err, late=late)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["default", "env", "config"])
def test_cpu_dispatch_is_synchronous_unless_asked(how):
    code = _DISPATCH_PROBE
    env = {"FUNCGRAD_CPU_ASYNC_DISPATCH": "1" if how == "env" else ""}
    if how == "config":
        code = code.replace('sys.argv[1:] == ["config"]', "True")
    out = last_json(run_py(code, env))
    asynchronous = how != "default"
    assert out["asynchronous"] is asynchronous
    assert out["flag"] is (True if how == "config" else None)  # None: funcgrad's choice
    assert out["err"] < 1e-9  # the same numbers either way
    if not asynchronous:
        assert out["ready"] is True  # ran in the calling thread: done when the call returns
    assert "before the first computation" in out["late"] and "FUNCGRAD_CPU_ASYNC_DISPATCH" in out["late"]


@pytest.mark.slow
def test_several_cpu_devices_dispatch_asynchronously():
    # Synchronous executions of an 8-device program can starve its collectives' rendezvous on a
    # machine with fewer cores (NOTE: [synchronous CPU dispatch]): asynchronous by default, and
    # asking for synchronous dispatch is refused with the reason.
    code = """
    import json
    import numpy as np
    import funcgrad
    from funcgrad.xla_bridge import runtime
    try:
        x = funcgrad.jit(lambda a: a * 2)(np.ones(3))
        print(json.dumps({"devices": funcgrad.device_count(), "asynchronous": runtime.cpu_async_dispatch()}))
    except Exception as e:
        print(json.dumps({"error": str(e)}))
    """
    flags = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    out = last_json(run_py(code, {**flags, "FUNCGRAD_CPU_ASYNC_DISPATCH": ""}))
    assert out == {"devices": 8, "asynchronous": True}
    out = last_json(run_py(code, {**flags, "FUNCGRAD_CPU_ASYNC_DISPATCH": "0"}))
    assert "one CPU device only" in out["error"]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc/self/task (Linux)")
def test_several_cpu_devices_get_two_pool_threads_per_device():
    # An 8-device all-reduce waits inside threads of XLA's intra-op pool; with jaxlib's
    # max(cores, devices) threads it deadlocked on 2 busy cores (NOTE: [synchronous CPU dispatch]).
    # The pool is sized when the client starts: at least 2 threads per device, PJRT_NPROC not left
    # set; a user's PJRT_NPROC wins (jaxlib's own sizing, max(PJRT_NPROC, devices)).
    code = """
    import json, os
    import numpy as np
    import funcgrad
    funcgrad.config.update("jax_num_cpu_devices", 8)
    funcgrad.jit(lambda a: a * 2)(np.ones(3))
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    print(json.dumps({"eigen": names.count("tf_XLAEigen"), "nproc": os.environ.get("PJRT_NPROC")}))
    """
    out = last_json(run_py(code, {"PJRT_NPROC": "", "NPROC": ""}))
    assert out["eigen"] >= 16 and out["nproc"] == "", out  # (the variable as it was)
    out = last_json(run_py(code, {"PJRT_NPROC": "3"}))
    assert out == {"eigen": 8, "nproc": "3"}
