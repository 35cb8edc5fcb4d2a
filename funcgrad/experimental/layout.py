"""``funcgrad.experimental.layout``: JAX's ``Layout`` and ``Format`` (``jax.experimental.layout``),
defined in ``funcgrad._layouts`` (whose docstring says what funcgrad does with layouts).

Layer: surface. Re-exports ``funcgrad._layouts``.

>>> Format(Layout.AUTO)
Format(layout=AUTO, sharding=None)
"""

from funcgrad._layouts import (  # noqa: F401 - the public names, and device_put's helper
    Format,
    Layout,
    _formats_as_shardings,
    with_layout_constraint,
)

__all__ = ["Format", "Layout", "with_layout_constraint"]
