"""``jax._src.core`` under the alias: funcgrad's ``core`` (``ShapedArray``, ``Tracer``, ...), plus
``physical_aval``, which is the aval itself since funcgrad has no extended dtypes with a separate
physical representation (flax's fp8 helpers import these), ``trace_state_clean`` (numpyro asks
it whether it runs outside any transformation), and the token types ``AbstractToken``,
``abstract_token`` and ``Token`` (``lax.create_token``'s).

>>> import funcgrad
>>> trace_state_clean()
True
>>> seen = []
>>> _ = funcgrad.vmap(lambda x: seen.append(trace_state_clean()) or x)(funcgrad.numpy.ones(2))
>>> seen
[False]
"""

from funcgrad._utilities import typeof  # noqa: F401 - JAX's core.typeof, jax.typeof
from funcgrad.core import *  # noqa: F403
from funcgrad.export._shape_poly import DimExpr as _DimExpr
from funcgrad.extend.core import check_jaxpr, jaxpr_as_fun, primal_dtype_to_tangent_dtype  # noqa: F401
from funcgrad.kernel.batching import trace_state_clean  # noqa: F401 - JAX's core.trace_state_clean
from funcgrad.kernel.errors import JaxprTypeError  # noqa: F401
from funcgrad.kernel.ir import AbstractToken, abstract_token  # noqa: F401 - JAX's names here
from funcgrad.kernel.values import Token  # noqa: F401
from funcgrad.lax.parallel import pcast as _pcast
from funcgrad.primitives._sharding_rules import ShardingTypeError  # noqa: F401 - JAX's core holds it
from funcgrad.ref import new_ref  # noqa: F401 - JAX's core.new_ref


def reduced_vary_cast(x, axis_name):
    """JAX's Reduced->Varying cast of a shard_map body's value: ``lax.pcast(x, axis_name,
    to='varying')`` of a reduced value (JAX's shard_map tests call it by this name)."""
    return _pcast(x, axis_name, to="varying")


def is_constant_dim(d) -> bool:
    """Whether a dimension is a known integer, not a symbolic one (JAX's export tests ask)."""
    return not isinstance(d, _DimExpr)


def is_constant_shape(shape) -> bool:
    """Whether every dimension of ``shape`` is a known integer."""
    return all(map(is_constant_dim, shape))


def physical_aval(aval):
    """The aval of the buffers that hold a value of ``aval``: ``aval`` itself in funcgrad."""
    return aval
