"""``jax._src.interpreters.pxla`` under the alias: the names libraries import with ``earray``
(flax's fp8 helpers). ``global_result_handlers`` is JAX's table of how a compiled program's result
buffers become arrays, by aval type; funcgrad's dispatch makes arrays of an extended dtype itself
(NOTE: [extended dtypes]) and never reads an entry a library adds here."""

global_result_handlers: dict = {}

__all__ = ["global_result_handlers"]
