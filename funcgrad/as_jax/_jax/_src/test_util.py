"""``jax._src.test_util`` under the alias: the helpers JAX's documentation notebooks use from it
(``create_mesh``) and funcgrad's ``test_util`` (``check_grads``, ``check_jvp``, ``check_vjp``).
JAX's test-case machinery itself (``JaxTestCase``, skip decorators) is not provided."""

from funcgrad.sharding import make_mesh as _make_mesh
from funcgrad.test_util import *  # noqa: F403


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    """A mesh over the first ``prod(mesh_shape)`` devices, as JAX's test helper makes one."""
    del iota_order  # devices are laid out in order either way on one host
    return _make_mesh(tuple(mesh_shape), tuple(axis_names), axis_types)
