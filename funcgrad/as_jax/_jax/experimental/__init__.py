"""``jax.experimental`` submodules that exist only under the alias (none now: ``hijax`` is
``funcgrad.experimental.hijax``); ``jax.experimental`` is ``funcgrad.experimental``."""
