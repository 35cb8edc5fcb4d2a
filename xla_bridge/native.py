"""jaxlib's C++ dispatcher driving funcgrad's executables: making one (the record it reads from a
cache miss is ``programs.Compiled.fastpath_data``), and whether a call waits for its results.

Layer: xla_bridge. Imports ``execute`` (the runtime, on first use), ``spmd_route`` and the kernel's
pytree registry. Used by ``dispatch``'s native route (NOTE: [jitted call route]).

# NOTE: [native dispatch]
# jaxlib's C++ ``pjit`` object is a dispatcher that does not depend on jax: given our executable,
# shardings and avals (``Compiled.fastpath_data``) it computes argument signatures, transfers NumPy
# arguments (to the executable's device) and runs the executable in C++, calling back into
# Python only on a cache miss. It reads three process-wide jaxlib states (x64, disable_jit,
# post_hook), which we set to our own configs (x64 on) -- unless jax's config is loaded, which
# takes those states over (jax's x64 is off: NumPy float64 arguments would be squashed to
# float32); then calls take the compiled route instead (slower by the trace-cache lookup, and
# correct).
"""

from __future__ import annotations

import sys

from funcgrad.xla_bridge.execute import runtime
from funcgrad.xla_bridge.spmd_route import spmd

from funcgrad.kernel import dtypes as _fdt
from funcgrad.kernel.tree_util import registry as _registry

__all__ = ["follow_x64", "make_native_dispatcher", "native_dispatch_available", "waits_for_results"]

JAX_CONFIG = "jax._src.config"

_states: list = []


def native_dispatch_available() -> bool:
    """Whether jaxlib's C++ dispatch can be used now: it reads process-wide jaxlib states
    (x64, disable_jit) that ``import jax`` takes over with jax's own config (x64 off by
    default), so it is used only while jax's config module is not loaded."""
    return JAX_CONFIG not in sys.modules


def _init_native():
    if not _states and native_dispatch_available():
        jx = runtime()._jax
        config = jx.config.Config
        _states.extend(
            [
                config("funcgrad_x64", bool(_fdt.__dict__["x64_enabled"])),  # (the process-wide mode)
                config("funcgrad_disable_jit", False),
                config("funcgrad_post_hook", None),
            ]
        )
        jx.jax_jit.set_enable_x64_state(_states[0])
        jx.jax_jit.set_disable_jit_state(_states[1])
        jx.jax_jit.set_post_hook_state(_states[2])


def follow_x64(on: bool) -> None:
    """Set jaxlib's x64 state, which the C++ dispatcher reads, to funcgrad's mode (NOTE: [x64 mode]):
    off, it canonicalises NumPy and Python-scalar arguments to 32 bits and keys its signatures on
    the mode, as under jax's default, so jitted calls keep the native route in 32-bit mode."""
    if _states:
        _states[0].set_global(bool(on))


def make_native_dispatcher(name: str, cache_miss, capacity: int = 4096, statics: bool = True):
    """A C++ dispatcher: ``d(treedef, statics, *leaves) -> outputs`` (see ``Compiled.fastpath_data``).

    ``cache_miss(treedef, statics, *leaves)`` runs when the (treedef, statics, leaf signatures)
    triple is new and returns ``(outputs, Compiled.fastpath_data(...) or None)``; ``statics`` must be
    hashable (the static arguments of the jitted function, ``()`` when it has none). With
    ``statics=False`` the dispatcher is ``d(*leaves)`` and ``cache_miss(*leaves)``.
    """
    _init_native()
    jx = runtime()._jax

    def miss(*args):
        outs, fast = cache_miss(*args)
        return outs, fast, False

    def fallback(x, sharding, *layout):
        # Values for several devices (NOTE: [SPMD call route]); the C++ side moves the others.
        buf = spmd().shard_arg(x, sharding)
        if buf is None:
            raise TypeError(f"jit({name}): cannot transfer argument {x!r} to the device")
        return buf

    key = (name, id(cache_miss))  # any hashable; each dispatcher has its own cache anyway
    cache = jx.PjitFunctionCache(capacity=capacity)
    return jx.pjit(name, None, miss, [0, 1] if statics else [], [], key, _registry, fallback, cache)


def waits_for_results(device) -> bool:
    """Whether a native call on ``device`` (``None``: the default device) waits for its results
    when it transferred a NumPy argument (NOTE: [synchronous CPU dispatch]): on a CPU client that
    runs programs in the calling thread. PJRT copies a large host array in the background, and a
    program waiting for an input runs in a worker thread: without the wait such a call would
    return before its computation ends (and read a NumPy argument the caller may change)."""
    rt = runtime()
    if device is None:
        device = rt.default_device()
    return rt.normalize_platform(device.platform) == "cpu" and not rt.cpu_async_dispatch()
