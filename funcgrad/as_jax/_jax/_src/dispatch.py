"""``jax._src.dispatch`` under the alias: imported by equinox, which reads ``wait_for_tokens`` only
if present. funcgrad has no runtime tokens that must be awaited at exit, so the module is empty.
"""
