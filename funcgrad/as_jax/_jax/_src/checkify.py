"""``jax._src.checkify`` under the alias: funcgrad's ``experimental.checkify`` (flax's nnx.checkify
imports it from here), and JAX's error classes, which its tests import from here."""

from funcgrad.experimental._checkify_rules import (  # noqa: F401 - JAX's names in this module
    DivisionByZeroError,
    FailedCheckError,
    NaNError,
    OOBError,
)
from funcgrad.experimental.checkify import *  # noqa: F403
