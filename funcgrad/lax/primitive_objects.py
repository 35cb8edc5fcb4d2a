"""The primitive objects under ``jax.lax``'s names: ``funcgrad.lax.add_p``, ``stop_gradient_p``,
``scatter_add_p``, ... (libraries such as equinox key tables of their own by them).

Layer: surface. Imports the primitive catalog. Each primitive of the catalog is exported as
``<name>_p`` (a ``-`` in the name becomes ``_``: ``scatter-add`` is ``scatter_add_p``), so the
list is derived from the catalog, never kept here; these are the same objects as
``funcgrad.extend.core.primitives``. (JAX keeps the linear-algebra ones in ``lax.linalg`` and the
call primitives elsewhere; funcgrad's ``lax`` has them all.)

>>> from funcgrad import lax
>>> lax.stop_gradient_p.name, lax.scatter_add_p.name
('stop_gradient', 'scatter-add')
"""

from __future__ import annotations

from funcgrad import primitives as _catalog

_OBJECTS = {f"{p.name.replace('-', '_')}_p": p for p in _catalog.all_primitives()}
globals().update(_OBJECTS)
__all__ = sorted(_OBJECTS)
