"""``funcgrad.experimental.colocated_python``: JAX's colocated Python API -- run a Python function
(or the methods of a Python object) on the CPU devices colocated with the devices of its array
arguments, and get its array results back on those devices.

Layer: surface. Imports funcgrad's public modules (devices, meshes, pytrees, ``device_put``).

In JAX the function is serialised and run by the host that owns the devices (possibly a remote
one, through IFRT). funcgrad runs one process with PJRT clients of its own, so every device's
colocated CPU device is on this host: a CPU device is its own colocated CPU device, and an
accelerator's is the CPU device of the same process (in order, as JAX's fallback pairs them).
A colocated call therefore moves its array arguments to the colocated CPU devices, runs the
function here, in Python, on concrete arrays, and checks its results against the output
specification when one is given (``specialize(out_specs_fn=...)`` or ``out_specs=``); what JAX
refuses -- a call under a transformation, arguments on no device with no ``devices=`` -- is refused
with the same meaning.

>>> import funcgrad, funcgrad.numpy as fnp
>>> from funcgrad.experimental import colocated_python as cp
>>> cpu = cp.colocated_cpu_devices(funcgrad.devices()[:1])
>>> cpu == list(funcgrad.devices()[:1])
True
>>> double = cp.colocated_python(lambda x: x * 2)
>>> x = funcgrad.device_put(fnp.arange(3), cpu[0])
>>> double(x)
Array([0, 2, 4], dtype=int64)
"""

from __future__ import annotations

from funcgrad.experimental.colocated_python.api import (
    colocated_cpu_devices,
    colocated_python,
    colocated_python_class,
)

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]
