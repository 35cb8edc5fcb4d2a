"""``funcgrad.interpreters.pxla``: the one name JAX 0.10 still exports from ``jax.interpreters.pxla``.

Layer: surface. Imports ``funcgrad.xla_bridge.backends`` (``compile_options``, what
``funcgrad.extend.backend.get_compile_options`` calls).

JAX 0.10 removed ``pmap``'s executables from this module and deprecated the rest; what remains is
``create_compile_options``, the XLA ``CompileOptions`` of an SPMD program over a device array.

>>> import numpy as np
>>> o = create_compile_options(None, False, [False], [False], None, np.array([0]), {})
>>> o.num_replicas, o.num_partitions
(1, 1)
"""

from __future__ import annotations

import numpy as np

from funcgrad.xla_bridge import backends as _bridge

__all__ = ["create_compile_options"]


def create_compile_options(
    computation, tuple_args, allow_prop_to_inputs, allow_prop_to_outputs, backend, np_dev, compiler_options
):
    """``CompileOptions`` for one replica partitioned over the devices (or device ids) in the
    array ``np_dev``: ``tuple_args`` whether parameters are passed as one tuple,
    ``allow_prop_to_inputs``/``_outputs`` whether Shardy may choose each parameter's/result's
    sharding, ``compiler_options`` XLA options by name (``fdo_profile`` among them)."""
    del computation, backend
    np_dev = np.asarray(np_dev, dtype=object)
    compiler_options = dict(compiler_options or {})
    fdo_profile = compiler_options.pop("fdo_profile", None)
    opts = _bridge.compile_options(
        num_replicas=1,
        num_partitions=np_dev.size,
        device_assignment=np_dev.reshape(1, np_dev.size),
        env_options_overrides=compiler_options,
        fdo_profile=fdo_profile,
    )
    opts.parameter_is_tupled_arguments = tuple_args
    build = opts.executable_build_options
    build.allow_spmd_sharding_propagation_to_parameters = list(allow_prop_to_inputs)
    build.allow_spmd_sharding_propagation_to_output = list(allow_prop_to_outputs)
    return opts
