"""The few array operations the kernel's transformations need, supplied by the primitive catalog.

Layer: kernel. Imports nothing from above; ``primitives`` fills ``ops`` when it is imported
(dependency inversion, see design.md), so the kernel never imports the catalog.

- ``add_any(x, y)``: add two tangents/cotangents of the same aval (accumulating cotangents).
- ``zeros(aval)``: a materialised zero of ``aval`` (instantiating a symbolic ``Zero``).
- ``moveaxis(x, src, dst)`` and ``broadcast_batch(x, axis_size, dim)``: moving or creating a batch
  dimension (``vmap``'s in/out axes and batch rules of higher-order primitives).
"""

from __future__ import annotations


class _MissingOps:
    def __getattr__(self, name):
        if name.startswith("__"):
            # Protocol probes (inspect.unwrap's __wrapped__, copy, pickle) must see a plain
            # AttributeError, or doctest collection of any module importing ``ops`` crashes.
            raise AttributeError(name)
        raise RuntimeError(
            f"funcgrad kernel operation '{name}' is not registered: import the primitive catalog "
            "(`import primitives`, done by `import funcgrad`) before transforming functions."
        )


class KernelOps(_MissingOps):
    """Attributes are set by ``primitives`` at import time."""


ops = KernelOps()
