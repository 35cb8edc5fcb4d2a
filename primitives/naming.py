"""The ``name`` primitive (``checkpoint_name``): the identity with a ``name`` parameter, the handle
by which checkpoint's name policies pick values (``primitives._remat_policies``) and
``funcgrad.ad_checkpoint.saved_residuals`` reports them. The tangent passes through unnamed.

Layer: primitives. Imports the funcgrad kernel only.
"""

from __future__ import annotations

from funcgrad.kernel.core import Primitive

name_p = Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
# The tangent passes through unnamed (as in JAX): a name marks a primal value, the one a policy may
# save; the tangent program never holds a ``name`` equation.
name_p.def_jvp(lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0]))
name_p.def_transpose(lambda ct, x, *, name: [ct])
name_p.def_batch(lambda axis_size, vals, dims, *, name: (name_p.bind(vals[0], name=name), dims[0]))
name_p.def_traits(
    linear=True,  # the identity: a linear program (``linear_transpose``) may hold one
    forwards_operands=True,
    taylor_from_jvp="the identity: its series is its operand's, which its JVP passes through",
)


def checkpoint_name(x, name: str):
    """``x`` itself, named ``name`` for the saving policies (one array; the surface
    ``funcgrad.ad_checkpoint.checkpoint_name`` takes pytrees).

    >>> import numpy as np
    >>> float(checkpoint_name(np.float64(2.0), "a"))
    2.0
    """
    return name_p.bind(x, name=name)
