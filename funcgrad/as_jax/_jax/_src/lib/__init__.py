"""``jax._src.lib`` under the alias: only ``mlir`` (jaxlib's MLIR bindings, for lowering rules
written with MLIR builders)."""
