"""What an export refuses, and the refusals a user may disable: ``DisabledSafetyCheck`` (JAX's
``jax.export.DisabledSafetyCheck``) and the check of the custom calls a module may hold.

Layer: surface. Imports the standard library only; ``_exported`` applies the checks (at export:
custom calls; at a call: the platform and the shape assertions).
"""

from __future__ import annotations

import re

__all__ = ["DisabledSafetyCheck", "check_custom_calls"]


class DisabledSafetyCheck:
    """A safety check to skip (JAX's ``jax.export.DisabledSafetyCheck``): ``platform()`` lets an
    ``Exported`` be called on a platform it was not exported for; ``custom_call(name)`` allows a
    custom call target at export; ``shape_assertions()`` skips the shape checks of a
    polymorphic module when it is called.

    >>> DisabledSafetyCheck.platform(), DisabledSafetyCheck.custom_call("my_kernel").is_custom_call()
    (platform, 'my_kernel')
    """

    def __init__(self, _impl: str):
        self._impl = _impl

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return cls(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls) -> DisabledSafetyCheck:
        return cls("shape_assertions")

    def is_custom_call(self) -> str | None:
        m = re.match(r"custom_call:(.+)$", self._impl)
        return m.group(1) if m else None

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)


# Custom-call targets with compatibility guarantees (JAX's ``_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE``):
# jaxlib's LAPACK and GPU solver kernels (the prefixes) and XLA's named ones.
_STABLE_TARGET_PREFIXES = ("lapack_", "cusolver_", "hipsolver_", "cusparse_", "cu_", "hip_")
_STABLE_TARGETS = frozenset(
    {
        "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
        "Eigh", "Qr", "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK",
        "stablehlo.dynamic_approx_top_k", "tf.call_tf_function", "tpu_custom_call", "AllocateBuffer",
        "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window", "stablehlo.dynamic_rng_bit_generator",
        "stablehlo.dynamic_top_k", "shape_assertion",
    }
)  # fmt: skip
_CUSTOM_CALL = re.compile(r'custom_call @([\w.$-]+)|call_target_name = "([^"]+)"')


def check_custom_calls(text: str, checks) -> None:
    """JAX's refusal of custom calls whose targets have no compatibility guarantees (a user's
    ``mlir.custom_call`` or FFI kernel), unless ``DisabledSafetyCheck.custom_call`` names them."""
    allowed = {c.is_custom_call() for c in checks} - {None}
    if "ALL" in allowed or "custom_call" not in text:
        return
    bad = []
    for line in text.splitlines():
        for m in _CUSTOM_CALL.finditer(line):
            target = m.group(1) or m.group(2)
            if target in _STABLE_TARGETS or target in allowed or target.startswith(_STABLE_TARGET_PREFIXES):
                continue
            bad.append(line.strip())
    if bad:
        raise ValueError(
            "Cannot serialize code with custom calls whose targets have no compatibility guarantees. "
            "See https://docs.jax.dev/en/latest/export/export.html"
            "#compatibility-guarantees-for-custom-calls. "
            "Examples are:\n" + "\n".join(bad) + ".\n"
        )
