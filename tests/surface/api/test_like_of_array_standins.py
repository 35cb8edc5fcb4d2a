"""zeros_like/ones_like/full_like of a value that stands for an array (``__jax_array__``, as flax's
Variables: optax's ``tree_zeros_like`` over an nnx state) keep that array's layout over several
devices, as jax's do. Four virtual CPUs in a subprocess of its own."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import numpy as np, funcgrad, funcgrad.numpy as fnp
    funcgrad.config.update("jax_num_cpu_devices", 4)
    from funcgrad.sharding import NamedSharding, PartitionSpec as P, AxisType
    mesh = funcgrad.make_mesh((2, 2), ("r", "c"), axis_types=(AxisType.Auto,) * 2)
    x = funcgrad.device_put(np.ones((4, 2), np.float32), NamedSharding(mesh, P("r", "c")))

    class Stand:
        def __init__(self, v):
            self.v = v
        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.v)
        def __jax_array__(self):
            return self.v

    for like in (fnp.zeros_like, fnp.ones_like, lambda a: fnp.full_like(a, 3.0)):
        assert like(Stand(x)).sharding == x.sharding, like(Stand(x)).sharding
    print("ok")
    """
)


def test_like_of_a_stand_in_keeps_its_arrays_layout():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]
