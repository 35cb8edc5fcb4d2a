"""Registering jaxlib's LAPACK (CPU) and cuSOLVER (GPU) kernels with XLA, once, the first time a
module needs them.

Layer: xla_bridge (runtime half). May import: stdlib and jaxlib. Never the surface, never jax.

``runtime.compile`` calls ``ensure_registered`` before compiling (or loading from the persistent
cache) a module whose text calls a LAPACK target (NOTE: [LAPACK custom calls] in
``xla_bridge/rules/_lapack.py``). Following the verified recipe of
shared/notes/jaxlib-linalg-fft-facts.md: ``_lapack.initialize()`` first (registering without it
segfaults at the first LAPACK call; it imports scipy, ~0.5 s, which is why it is lazy), then one
``register_custom_call_target(..., api_version=1)`` per typed-FFI target. The cuSOLVER targets
come from the CUDA plugin's companion wheel (``plugins.register_cuda_solvers``, NOTE: [CUDA
extension]).
"""

from __future__ import annotations

import threading

from jaxlib import xla_client as xc

from . import plugins

_lock = threading.Lock()
_registered = False

# Substrings of a module text that call a target of jaxlib's LAPACK module, and of its cuSOLVER one.
_MARKERS = ("@lapack_", "@tridiagonal_solve_perturbed_ffi")
_GPU_MARKERS = ("@cusolver_",)


def needs_lapack(module_text) -> bool:
    """Whether the StableHLO text calls one of jaxlib's LAPACK kernels.

    >>> needs_lapack("stablehlo.custom_call @lapack_dpotrf_ffi(%a)"), needs_lapack("stablehlo.add")
    (True, False)
    """
    return isinstance(module_text, str) and any(m in module_text for m in _MARKERS + _GPU_MARKERS)


def ensure_registered(platform: str, module_text: str = "") -> None:
    """Register the kernels ``module_text`` calls on ``platform``: LAPACK on the CPU, cuSOLVER on
    a GPU. Raises ValueError (saying what to do) when they cannot run there."""
    global _registered
    if platform == "cuda" and not any(m in module_text for m in _MARKERS):
        try:
            plugins.register_cuda_solvers()
        except plugins.PluginError as e:
            raise ValueError(str(e)) from None
        return
    if platform != "cpu":
        raise ValueError(
            f"dense linear algebra is lowered to jaxlib's CPU LAPACK kernels, which cannot run on "
            f"{platform}; run it on the CPU device (jit(f, device=funcgrad.devices('cpu')[0]))"
        )
    if _registered:
        return
    with _lock:
        if _registered:
            return
        from jaxlib.cpu import _lapack  # noqa: PLC0415 - import-time cost: loaded when first needed

        _lapack.initialize()  # before registering, or the first LAPACK call segfaults
        for name, capsule in _lapack.registrations().items():
            xc.register_custom_call_target(name, capsule, platform="cpu", api_version=1)
        from jaxlib import lapack  # noqa: PLC0415 - as above

        for name in lapack.batch_partitionable_targets():  # (NOTE: [LAPACK custom calls])
            xc.register_custom_call_as_batch_partitionable(name)
        _registered = True
