"""``jax._src.ad_util`` under the alias: the tangent helpers JAX keeps there, as funcgrad's own
objects. Libraries import ``stop_gradient_p`` from it to give it rules of their own (lineax
registers a transpose for it), so it is funcgrad's ``stop_gradient`` primitive itself; ``Zero``,
``add_jaxvals``/``add_jaxvals_p``, ``zeros_like_aval`` and ``instantiate`` are those of
``funcgrad.interpreters.ad``.

>>> import funcgrad
>>> stop_gradient_p is funcgrad.lax.stop_gradient_p
True
>>> float(funcgrad.grad(lambda x: x * stop_gradient_p.bind(x))(3.0))
3.0
"""

from funcgrad.interpreters.ad import Zero, add_jaxvals, add_jaxvals_p, zeros_like_aval
from funcgrad.interpreters.ad import instantiate_zeros as instantiate
from funcgrad.primitives.elementwise import stop_gradient_p

__all__ = ["Zero", "add_jaxvals", "add_jaxvals_p", "instantiate", "stop_gradient_p", "zeros_like_aval"]
