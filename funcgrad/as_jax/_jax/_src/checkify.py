"""``jax._src.checkify`` under the alias: funcgrad's ``experimental.checkify`` (flax's nnx.checkify
imports it from here)."""

from funcgrad.experimental.checkify import *  # noqa: F403
