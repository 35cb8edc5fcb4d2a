"""``jax._src.interpreters.ad`` under the alias: ``jax.interpreters.ad``'s names (funcgrad's,
``funcgrad.interpreters.ad``), ``CustomVJPException`` among them (diffrax's tests catch it there).
"""

from funcgrad.interpreters.ad import *  # noqa: F403
from funcgrad.interpreters.ad import CustomVJPException  # noqa: F401
