"""funcgrad: composable function transformations — grad, vmap, jit — for NumPy programs.

Layer: surface. Exports are resolved lazily (module ``__getattr__``), so ``import funcgrad``,
``import funcgrad.primitives`` or ``import funcgrad.xla_bridge`` can each come first. ``__all__`` (and ``dir()``) is
the public names and subpackages, never the helpers this module uses.

>>> import funcgrad, funcgrad.numpy as fnp
>>> float(funcgrad.grad(fnp.sin)(0.0))
1.0
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_API = {
    name: "funcgrad.api"
    for name in (
        "grad",
        "value_and_grad",
        "vjp",
        "jvp",
        "linearize",
        "linear_transpose",
        "vmap",
        "jacfwd",
        "jacrev",
        "jacobian",
        "hessian",
        "make_jaxpr",
        "stop_gradient",
        "jit",
        "custom_jvp",
        "custom_vjp",
        "checkpoint",
        "remat",
        "eval_shape",
        "device_put",
        "device_get",
        "block_until_ready",
        "ShapeDtypeStruct",
    )
}
_API.update(
    {
        # The isinstance/annotation type, true for tracers too (as jax.Array); "module:attribute"
        "Array": "funcgrad.numpy._dtypes:PublicArray",
        "typecheck_jaxpr": "funcgrad.kernel.ir",
        "checkpoint_policies": "funcgrad._remat",
        "devices": "funcgrad._devices",
        "local_devices": "funcgrad._devices",
        "device_count": "funcgrad._devices",
        "local_device_count": "funcgrad._devices",
        "process_index": "funcgrad._devices",
        "process_count": "funcgrad._devices",
        "process_indices": "funcgrad._devices",
        "host_count": "funcgrad._devices",
        "host_id": "funcgrad._devices",
        "host_ids": "funcgrad._devices",
        "Device": "funcgrad._devices",
        "Shard": "funcgrad._placement",
        "copy_to_host_async": "funcgrad._placement",
        "default_backend": "funcgrad._devices",
        "make_array_from_callback": "funcgrad._placement",
        "make_array_from_single_device_arrays": "funcgrad._placement",
        "make_array_from_process_local_data": "funcgrad._placement",
        "reshard": "funcgrad._placement",
        "shard_map": "funcgrad.parallel",
        "pmap": "funcgrad.parallel",
        "P": "funcgrad.sharding",
        "NamedSharding": "funcgrad.sharding",
        "make_mesh": "funcgrad.sharding",
        "set_mesh": "funcgrad.sharding",
    }
)
# Debugging and testing tools (funcgrad/introspect.py, debug.py, testing.py).
_API.update({name: "funcgrad.introspect" for name in ("memory_report", "print_saved_residuals", "graph")})
_API.update(
    {"check_finite": "funcgrad.debug", "debug_nans": "funcgrad.debug", "check_grads": "funcgrad.testing"}
)
_API.update(
    {"closure_convert": "funcgrad.custom_derivatives", "custom_gradient": "funcgrad.custom_derivatives"}
)
_API.update({"float0": "funcgrad.dtypes", "pure_callback": "funcgrad._callbacks"})
_API.update({"fwd_and_bwd": "funcgrad._fwd_and_bwd"})
# Taylor mode (funcgrad/experimental/jet.py).
_API.update({"jet": "funcgrad.experimental.jet", "taylor_derivatives": "funcgrad.experimental.jet"})
# Per-example gradient norms and DP-SGD's clipped sum by ghost clipping (funcgrad/per_example.py).
_API.update({name: "funcgrad.per_example" for name in ("clipped_grad_sum", "per_example_norms")})
# Scopes, compile-time evaluation, caches and environment (funcgrad/_utilities.py).
_API.update(
    {
        name: "funcgrad._utilities"
        for name in (
            "clear_caches", "ensure_compile_time_eval", "live_arrays", "named_call", "named_scope",
            "print_environment_info", "typeof",
        )
    }
)  # fmt: skip
# The configuration object and its context managers (funcgrad/_config.py).
_API.update(
    {
        name: "funcgrad._config"
        for name in (
            "config", "check_tracer_leaks", "checking_leaks", "debug_infs", "default_device",
            "default_matmul_precision", "disable_jit", "enable_checks", "enable_x64", "explain_cache_misses",
            "log_compiles", "no_execution", "no_tracing", "numpy_dtype_promotion", "numpy_rank_promotion",
            "transfer_guard", "transfer_guard_device_to_device", "transfer_guard_device_to_host",
            "transfer_guard_host_to_device",
        )
    }
)  # fmt: skip
_MODULES = {
    "numpy",
    "nn",
    "lax",
    "tree_util",
    "tree",
    "core",
    "dtypes",
    "random",
    "optim",
    "scipy",
    "debug",
    "testing",
    "custom_derivatives",
    "custom_batching",
    "flatten_util",
    "ops",
    "experimental",
    "sharding",
    "distributed",
    "image",
    "errors",
    "typing",
    "dlpack",
    "profiler",
    "stages",
}


# Everything above, resolved on first use; ``dir(funcgrad)`` shows exactly these names.
__all__ = sorted([*_API, *_MODULES])


def __getattr__(name):
    if name in _API:
        module, _, attribute = _API[name].partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        globals()[name] = value
        return value
    if name in _MODULES:
        module = importlib.import_module(f"funcgrad.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'funcgrad' has no attribute '{name}'")


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
