"""The CUDA path: what a module for the GPU calls, checked here on any machine, and the same
programs run on a GPU when one is present (NOTE: [CUDA extension], NOTE: [LAPACK custom calls]).

The first half lowers programs with ``platform="cuda"`` and reads the module text: linear algebra
goes to jaxlib's cuSOLVER targets with their attributes, a triangular solve to XLA's own op,
callbacks to the GPU callback handler, and what only LAPACK implements fails with an error that
names the CPU device. The second half runs on a CUDA device (skipped without one, e.g. in CI) and
holds results to NumPy/SciPy: factorisations of every float and complex dtype, batched, wide and
tall, failures as NaN, derivatives, vmap and host callbacks.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.linalg as sla
from funcgrad.xla_bridge.lowering import LoweringError, lower_jaxpr

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.scipy.linalg as fsl
from funcgrad import lax

RNG = np.random.default_rng(7)
SPD = np.eye(4) * 3 + 0.1
WIDE = RNG.standard_normal((3, 5))


def _gpu_text(f, *args) -> str:
    return lower_jaxpr(funcgrad.make_jaxpr(f)(*args), "f", platform="cuda").text


def _calls(text: str) -> list[tuple[str, str]]:
    """(target, backend_config) of each custom call in the module."""
    return re.findall(r"custom_call @(\w+)\(.*?mhlo.backend_config = \{([^}]*)\}", text)


# ----------------------------------------------------------------------------------------------
# Lowering for the GPU (any machine)

LOWERED = [
    ("cholesky", lambda a: fnp.linalg.cholesky(a), SPD, [("cusolver_potrf_ffi", "lower = true")]),
    ("lu", lambda a: fsl.lu_factor(a), SPD, [("cusolver_getrf_ffi", "")]),
    ("qr", lambda a: fnp.linalg.qr(a), WIDE.T, [("cusolver_geqrf_ffi", ""), ("cusolver_orgqr_ffi", "")]),
    ("eigh", fnp.linalg.eigh, SPD, [("cusolver_syevd_ffi", "lower = true, algorithm = 0 : ui8")]),
    (
        "eigh upper",
        lambda a: fnp.linalg.eigvalsh(a, UPLO="U"),
        SPD,
        [("cusolver_syevd_ffi", "lower = false, algorithm = 0 : ui8")],
    ),
    (
        "svd tall",
        lambda a: fnp.linalg.svd(a, full_matrices=False),
        WIDE.T,
        [("cusolver_gesvd_ffi", "full_matrices = false, compute_uv = true, transposed = false")],
    ),
    (
        "svd wide",
        lambda a: fnp.linalg.svd(a),
        WIDE,
        [("cusolver_gesvd_ffi", "full_matrices = true, compute_uv = true, transposed = true")],
    ),
    (
        "svdvals",
        lambda a: fnp.linalg.svd(a, compute_uv=False),
        WIDE,
        # (jnp.linalg.svd passes its full_matrices=True through with compute_uv=False, as JAX's
        # svd does, and JAX's GPU lowering writes it as given: the attribute is jax's)
        [("cusolver_gesvd_ffi", "full_matrices = true, compute_uv = false, transposed = true")],
    ),
]


@pytest.mark.parametrize("name,f,x,want", LOWERED, ids=[c[0] for c in LOWERED])
def test_linear_algebra_lowers_to_cusolver(name, f, x, want):
    text = _gpu_text(f, x)
    assert _calls(text) == want
    assert "lapack_" not in text
    # The CPU module of the same program calls LAPACK instead.
    cpu = lower_jaxpr(funcgrad.make_jaxpr(f)(x), "f").text
    assert "cusolver" not in cpu and "@lapack_" in cpu


def test_wide_svd_is_factorised_transposed_in_row_major_layouts():
    text = _gpu_text(lambda a: fnp.linalg.svd(a, full_matrices=False), WIDE)
    (line,) = [ln for ln in text.splitlines() if "cusolver_gesvd_ffi" in ln]
    layouts = re.search(r"result_layouts = \[(.*?)\], output", line).group(1)
    assert "[0, 1]" not in layouts and layouts.count("[1, 0]") == 3  # a, u-slot, vt-slot


@pytest.mark.parametrize("trans,want", [(0, "NO_TRANSPOSE"), (1, "TRANSPOSE"), (2, "ADJOINT")])
def test_triangular_solve_is_xlas_op_on_the_gpu(trans, want):
    a = np.tril(SPD).astype(np.complex128)
    b = np.ones((4, 2), a.dtype)
    text = _gpu_text(lambda a, b: fsl.solve_triangular(a, b, lower=True, trans=trans), a, b)
    assert f"transpose_a = #stablehlo<transpose {want}>" in text
    assert "left_side = true, lower = true, unit_diagonal = false" in text
    assert "custom_call" not in text


CPU_ONLY = [
    ("eig", lambda a: fnp.linalg.eigvals(a)),
    ("schur", lambda a: fsl.schur(a)[0]),
    ("hessenberg", lambda a: fsl.hessenberg(a)),
    ("geqp3", lambda a: fsl.qr(a, pivoting=True)[0]),
    ("tridiagonal_solve", lambda a: lax.linalg.tridiagonal_solve(a[0], a[1], a[2], a[:, :2])),
]


@pytest.mark.parametrize("name,f", CPU_ONLY, ids=[c[0] for c in CPU_ONLY])
def test_lapack_only_routines_name_the_cpu_device(name, f):
    with pytest.raises(LoweringError, match=r"no GPU kernel in jaxlib.*devices\('cpu'\)"):
        _gpu_text(f, SPD)


def test_callbacks_call_the_platforms_handler():
    def f(x):
        return funcgrad.pure_callback(np.sin, funcgrad.ShapeDtypeStruct((3,), np.float64), x)

    assert "@xla_ffi_python_gpu_callback" in _gpu_text(f, np.ones(3))
    assert "@xla_ffi_python_cpu_callback" in lower_jaxpr(funcgrad.make_jaxpr(f)(np.ones(3)), "f").text


def test_a_missing_companion_wheel_names_the_pip_command(monkeypatch):
    from funcgrad.xla_bridge import plugins

    monkeypatch.setattr(plugins, "_cuda_extension", [None])  # as where jax-cudaNN-plugin is absent
    monkeypatch.setattr(plugins, "_solvers_registered", [])
    with pytest.raises(plugins.PluginError, match=r"host callbacks .* pip install jax-cuda1[23]-plugin==\S+"):
        plugins.require_cuda_extension("host callbacks on the GPU call handlers that")
    with pytest.raises(plugins.PluginError, match=r"cuSOLVER kernels, which come with .* companion wheel"):
        plugins.register_cuda_solvers()


# ----------------------------------------------------------------------------------------------
# On a GPU

try:
    _CUDA = funcgrad.devices("cuda")[0]
except Exception:  # noqa: BLE001 -- no plugin, no GPU: the runtime says why; here it means skip
    _CUDA = None

needs_gpu = pytest.mark.skipif(_CUDA is None, reason="needs a CUDA device (a GPU and the CUDA plugin)")
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _on_gpu(f):
    return funcgrad.jit(f, device=_CUDA)


def _sample(dtype, shape):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _close(got, want, dtype, scale=1.0):
    tol = (2e-4 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-10) * scale
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


@needs_gpu
def test_gpu_factorisations_match_numpy():
    for dtype in DTYPES:
        _factorisations(dtype)


def _factorisations(dtype):
    a = _sample(dtype, (5, 5))
    spd = a @ a.conj().T + 5 * np.eye(5, dtype=dtype)
    batch = np.stack([spd, 2 * spd])
    _close(_on_gpu(fnp.linalg.cholesky)(batch), np.linalg.cholesky(batch), dtype)
    assert np.isnan(np.asarray(_on_gpu(fnp.linalg.cholesky)(-spd))).all()
    _close(_on_gpu(fnp.linalg.solve)(a, spd), np.linalg.solve(a, spd), dtype, 10)
    _close(_on_gpu(fnp.linalg.inv)(batch), np.linalg.inv(batch), dtype)
    _close(_on_gpu(fnp.linalg.det)(a), np.linalg.det(a), dtype, 100)
    for got, want in zip(_on_gpu(fsl.lu_factor)(a), sla.lu_factor(a)):
        _close(got, want, dtype)
    b = _sample(dtype, (5, 3))
    for lower in (True, False):
        for trans in (0, 1, 2):
            solve = _on_gpu(lambda a, b, lo=lower, t=trans: fsl.solve_triangular(a, b, lower=lo, trans=t))
            got = solve(spd, b)
            _close(got, sla.solve_triangular(spd, b, lower=lower, trans=trans), dtype, 10)


@needs_gpu
def test_gpu_qr_and_svd_reconstruct():
    for dtype in DTYPES:
        for shape in [(5, 5), (3, 6), (6, 3)]:
            _qr_and_svd(dtype, shape)


def _qr_and_svd(dtype, shape):
    a = _sample(dtype, shape)
    k = min(shape)
    q, r = map(np.asarray, _on_gpu(fnp.linalg.qr)(a))
    _close(q @ r, a, dtype, 10)
    _close(q.conj().T @ q, np.eye(q.shape[1]), dtype, 10)
    u, s, vt = map(np.asarray, _on_gpu(lambda x: fnp.linalg.svd(x, full_matrices=False))(a))
    _close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    _close((u * s) @ vt, a, dtype, 10)
    u, s, vt = map(np.asarray, _on_gpu(fnp.linalg.svd)(a))
    assert u.shape == (shape[0],) * 2 and vt.shape == (shape[1],) * 2
    _close((u[:, :k] * s) @ vt[:k], a, dtype, 10)
    s_only = _on_gpu(lambda x: fnp.linalg.svd(x, compute_uv=False))(a)
    _close(s_only, np.linalg.svd(a, compute_uv=False), dtype, 10)


@needs_gpu
def test_gpu_eigh_matches_numpy():
    for dtype in DTYPES:
        a = _sample(dtype, (5, 5))
        h = a + a.conj().T
        w, v = map(np.asarray, _on_gpu(fnp.linalg.eigh)(h))
        _close(w, np.linalg.eigvalsh(h), dtype, 10)
        _close(h @ v, v * w, dtype, 10)
        upper = _on_gpu(lambda x: fnp.linalg.eigvalsh(x, UPLO="U"))(h)
        _close(upper, np.linalg.eigvalsh(h, UPLO="U"), dtype, 10)


@needs_gpu
def test_gpu_derivatives_vmap_and_callbacks():
    spd = np.eye(4) * 2 + 0.1
    logdet = _on_gpu(funcgrad.grad(lambda a: 2 * fnp.sum(fnp.log(fnp.diag(fnp.linalg.cholesky(a))))))
    np.testing.assert_allclose(np.asarray(logdet(spd)), np.linalg.inv(spd), rtol=1e-10)
    svd_sum = _on_gpu(funcgrad.grad(lambda a: fnp.sum(fnp.linalg.svd(a, compute_uv=False))))
    np.testing.assert_allclose(np.asarray(svd_sum(np.diag([3.0, 2.0, 1.0]))), np.eye(3), atol=1e-10)
    batch = np.stack([spd, 2 * spd])
    np.testing.assert_allclose(
        np.asarray(_on_gpu(funcgrad.vmap(fnp.linalg.eigvalsh))(batch)), np.linalg.eigvalsh(batch), rtol=1e-10
    )
    shape = funcgrad.ShapeDtypeStruct((3,), np.float64)
    out = _on_gpu(lambda x: funcgrad.pure_callback(np.sin, shape, x) * 2)(np.arange(3.0))
    np.testing.assert_allclose(np.asarray(out), 2 * np.sin(np.arange(3.0)))
    with pytest.raises(Exception, match="no GPU kernel"):
        _on_gpu(fnp.linalg.eigvals)(spd)
