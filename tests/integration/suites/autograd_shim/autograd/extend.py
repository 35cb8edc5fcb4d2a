"""autograd.extend: what a user needs to give a function its own derivative."""

from .core import (  # noqa: F401
    SparseObject,
    VSpace,
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    vspace,
)
from .tracer import Box, notrace_primitive, primitive  # noqa: F401
