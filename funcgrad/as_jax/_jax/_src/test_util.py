"""``jax._src.test_util`` under the alias: the helpers JAX's documentation notebooks use from it
(``create_mesh``; the device queries flax's fp8 guide asks, ``is_cuda_compute_capability_at_least``)
and funcgrad's ``test_util`` (``check_grads``, ``check_jvp``, ``check_vjp``). JAX's test-case
machinery itself (``JaxTestCase``, skip decorators) is not provided.

>>> device_under_test() in ("cpu", "gpu"), is_device_tpu()
(True, False)
"""

from funcgrad import local_devices as _local_devices
from funcgrad.extend.backend import get_backend as _get_backend
from funcgrad.sharding import make_mesh as _make_mesh
from funcgrad.test_util import *  # noqa: F403


def device_under_test() -> str:
    """The platform of the default backend (``cpu``, ``gpu``), as JAX's test helper names it."""
    return _get_backend().platform


def is_device_cuda() -> bool:
    return "cuda" in _get_backend().platform_version


def is_device_rocm() -> bool:
    return "rocm" in _get_backend().platform_version


def is_device_tpu(version: int | None = None, variant: str = "") -> bool:
    return False  # funcgrad has no TPU backend


def _compute_capability(capability: str):
    if not is_device_cuda():
        return None
    current = _local_devices(backend="gpu")[0].compute_capability
    return tuple(int(x) for x in current.split(".")), tuple(int(x) for x in capability.split("."))


def is_cuda_compute_capability_at_least(capability: str) -> bool:
    """Whether the first GPU's compute capability is at least ``capability`` ("9.0"); False
    without a CUDA device."""
    pair = _compute_capability(capability)
    return pair is not None and pair[0] >= pair[1]


def is_cuda_compute_capability_equal(capability: str) -> bool:
    pair = _compute_capability(capability)
    return pair is not None and pair[0] == pair[1]


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    """A mesh over the first ``prod(mesh_shape)`` devices, as JAX's test helper makes one."""
    del iota_order  # devices are laid out in order either way on one host
    return _make_mesh(tuple(mesh_shape), tuple(axis_names), axis_types)
