"""``jax._src.lax`` under the alias: JAX's tutorial on defining primitives imports ``lax`` from here
(``from jax._src.lax import lax``); its modules are funcgrad's ``lax``."""
