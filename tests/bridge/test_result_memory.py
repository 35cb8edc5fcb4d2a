"""A jitted function's results typed in host memory (a ``device_put`` to ``memory.Space.Host``) are
in the device's "pinned_host" memory, as JAX's: jax 0.10.2 gives
``SingleDeviceSharding(cpu:0, memory_kind=pinned_host)`` and ``float32<host>[3]`` for the same calls
(its lowering places them from the output types; checked with jax, not imported here: it would
take the native route away). On the native route's first call, its later calls, the staged route
and an AOT-compiled call (NOTE: [one compiled program] in xla_bridge/programs.py)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
from funcgrad import memory


@pytest.mark.parametrize("route", ["native", "staged", "aot"])
def test_results_typed_in_host_memory_are_in_pinned_host(route):
    f = funcgrad.jit(lambda a: (a * 2, funcgrad.device_put(a, memory.Space.Host)))
    x = funcgrad.numpy.arange(3.0)
    call = {"native": f, "staged": lambda a: f._call((a,), {}), "aot": f.lower(x).compile()}[route]
    for _ in range(3):  # a miss, then cached calls
        y, h = call(x)
        assert (y.sharding.memory_kind, h.sharding.memory_kind) == ("device", "pinned_host")
        assert str(funcgrad.typeof(h)) == "float64<host>[3]"
        np.testing.assert_array_equal(h, [0.0, 1.0, 2.0])
        np.testing.assert_array_equal(y, [0.0, 2.0, 4.0])
