"""``funcgrad.example_libraries``: JAX's small example libraries (``jax.example_libraries``), on
funcgrad -- ``optimizers`` (first-order optimizers as ``(init, update, get_params)`` triples over
pytrees) and ``stax`` (layers as ``(init_fun, apply_fun)`` pairs). Surface layer: it imports
funcgrad's public modules only. numpyro builds its ``optim`` and autoguides on them.

>>> from funcgrad.example_libraries import optimizers, stax
>>> callable(optimizers.adam) and callable(stax.serial)
True
"""

from funcgrad.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]


def __dir__():  # the public names only, not the helpers
    return sorted(__all__)
