"""The modules that exist only under ``funcgrad.as_jax``, laid out as JAX's: ``jax.version``,
``jax.lib`` and the few ``jax._src`` helpers libraries import as if public.

Layer: surface, reachable only through the alias (``import jax._src.X`` finds
``funcgrad.as_jax._jax._src.X``); nothing in funcgrad imports these.
"""
