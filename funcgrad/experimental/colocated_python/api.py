"""The colocated Python API (``colocated_cpu_devices``, ``colocated_python``,
``colocated_python_class``); see the package's docstring for what colocation means here.

Layer: surface. Imports this package's ``_devices``, ``func`` and ``obj``.
"""

from __future__ import annotations

from funcgrad.experimental.colocated_python._devices import colocated_cpu_devices
from funcgrad.experimental.colocated_python.func import ColocatedCallable
from funcgrad.experimental.colocated_python.obj import wrap_class

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]


def colocated_python(fun):
    """A callable that runs ``fun`` on the CPU devices colocated with its array arguments
    (``.specialize(in_specs=, out_specs_fn=, out_specs=, devices=)`` fixes what JAX lets one fix).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = colocated_python(lambda x: x + 1).specialize(devices=funcgrad.devices()[:1])
    >>> f(funcgrad.device_put(fnp.zeros(2), funcgrad.devices()[0]))
    Array([1., 1.], dtype=float64)
    """
    return ColocatedCallable(fun)


def colocated_python_class(cls):
    """A wrapper class whose instances make one ``cls`` object, on first use, on the colocated
    host, and run its methods there (each method a colocated callable).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @colocated_python_class
    ... class Acc:
    ...     def __init__(self):
    ...         self.total = 0.0
    ...     def add(self, x):
    ...         self.total += float(x.sum())
    ...         return x * 0 + self.total
    >>> acc = Acc()
    >>> x = funcgrad.device_put(fnp.ones(2), funcgrad.devices()[0])
    >>> _ = acc.add(x); acc.add(x)
    Array([4., 4.], dtype=float64)
    """
    return wrap_class(cls)
