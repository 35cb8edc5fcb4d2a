"""Experimental key-reuse checking (``jax.experimental.key_reuse``).

Layer: surface. The checker itself is funcgrad/_key_reuse.py (NOTE: [key reuse]); its helpers
and types as JAX names them are in ``funcgrad.experimental.key_reuse._core``.

Key reuse checking is enabled with the ``jax_debug_key_reuse`` configuration, globally::

  >>> import funcgrad
  >>> funcgrad.config.update('jax_debug_key_reuse', True)  # doctest: +SKIP

or locally with the :func:`funcgrad.debug_key_reuse` context manager. When enabled, using the same
key twice raises a :class:`~funcgrad.errors.KeyReuseError`, eagerly, in a jitted function (when
it is traced, or called with a key it consumes that was consumed before), and in control flow (a
``scan`` or ``while_loop`` body consuming a key it closes over, or a carried key it does not
replace)::

  >>> from funcgrad import random
  >>> from funcgrad.errors import KeyReuseError
  >>> with funcgrad.debug_key_reuse(True):
  ...     key = random.key(0)
  ...     val1 = random.normal(key)
  ...     try:
  ...         val2 = random.normal(key)
  ...     except KeyReuseError as e:
  ...         print(e)
  Previously-consumed key passed to jit-compiled function at index 0

Split a key to draw from it again (``random.split``), or ``random.clone`` it to reuse it on
purpose.
"""

__all__: list[str] = []
