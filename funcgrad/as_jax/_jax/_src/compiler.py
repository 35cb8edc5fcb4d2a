"""``jax._src.compiler`` under the alias: ``backend_compile_and_load``, the one function through
which every program funcgrad runs is compiled while the alias is on.

Libraries patch it to watch or refuse compilations (chex's ``restrict_backends`` replaces it with a
wrapper that raises for a forbidden platform), so funcgrad's compiler calls look it up in this
module each time: importing the module points ``funcgrad.xla_bridge``'s compile hook here.

>>> import sys, funcgrad
>>> this, calls = sys.modules[__name__], []
>>> inner = this.backend_compile_and_load
>>> def spy(backend, *args, **kwargs):
...     calls.append(backend.platform)
...     return inner(backend, *args, **kwargs)
>>> this.backend_compile_and_load = spy
>>> float(funcgrad.jit(lambda x: x * 41.5)(2.0))
83.0
>>> calls
['cpu']
>>> this.backend_compile_and_load = inner
"""

import sys

from funcgrad.xla_bridge import executables as _executables

__all__ = ["backend_compile_and_load"]


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks=()):
    """Compile ``module`` (MLIR text or module) for ``backend`` (a jaxlib client) and load it on
    ``executable_devices`` with compile ``options``."""
    if host_callbacks:
        return backend.compile_and_load(module, executable_devices, options, list(host_callbacks))
    return backend.compile_and_load(module, executable_devices, options)


def _through_this_module(backend, module, executable_devices, options, host_callbacks=()):
    # Looked up at each call, so a library's replacement of the module attribute takes effect.
    return sys.modules[__name__].backend_compile_and_load(
        backend, module, executable_devices, options, host_callbacks
    )


_executables.set_compile_hook(_through_this_module)
