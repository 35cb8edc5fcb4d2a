"""An import shim: HIPS autograd's API on funcgrad, so that autograd programs and autograd's own
test suite run unchanged (``PYTHONPATH=tests/integration/suites/autograd_shim``; see
``tests/integration/suites/README.md``).

It lives outside the library on purpose: it is a harness that maps names, and every derivative
comes from funcgrad. ``autograd.numpy`` is ``funcgrad.numpy``; ``grad``, ``jacobian``,
``make_vjp``, ... are a few lines each over ``funcgrad.vjp``/``funcgrad.jvp``; ``primitive`` +
``defvjp`` become ``funcgrad.custom_vjp``.
"""

from .builtins import dict, isinstance, list, tuple, type  # noqa: F401
from .core import primitive_with_deprecation_warnings as primitive  # noqa: F401
from .differential_operators import (  # noqa: F401
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
