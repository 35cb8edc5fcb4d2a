"""``jax.experimental`` submodules that exist only under the alias (``hijax``); the rest of
``jax.experimental`` is ``funcgrad.experimental``."""
