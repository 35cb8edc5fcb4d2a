"""``funcgrad.extend.ifrt_programs``: jaxlib's IFRT program builders, as ``jax.extend.ifrt_programs``.

Layer: surface. Names one module of the XLA bridge: ``ifrt_programs`` is jaxlib's own
``_jax.ifrt_programs`` (``make_hlo_program``, ``make_plugin_program``,
``make_colocated_python_program`` and their compile options), the very module JAX publishes here.
Compiling such a program needs a client that runs IFRT programs (Pathways' IFRT proxy):
``device.client.compile_ifrt_program`` is jaxlib's and fails as it does under JAX on a client
without it (orbax reaches these names only for Pathways checkpoints).

>>> from funcgrad.extend import ifrt_programs
>>> callable(ifrt_programs.ifrt_programs.make_plugin_program)
True
"""

from funcgrad.xla_bridge.backends import ifrt_programs as ifrt_programs  # (a re-export)

# An attribute, as in JAX, not a documented function: the docs site documents the names of
# ``__all__``, and this one is jaxlib's extension module.
__all__: list[str] = []
