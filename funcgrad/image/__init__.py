"""funcgrad.image: image resampling with ``jax.image``'s names -- ``resize``,
``scale_and_translate`` and ``ResizeMethod``.

Layer: surface. Re-exports ``funcgrad.image._scale``. ``dir(funcgrad.image)`` is ``__all__``.

>>> import numpy as np
>>> from funcgrad import image
>>> image.resize(np.array([0.0, 1.0]), (4,), "linear").tolist()
[0.0, 0.25, 0.75, 1.0]
"""

from __future__ import annotations

from funcgrad.image import _scale
from funcgrad.image._scale import *  # noqa: F403 - the module's public names are its __all__

__all__ = list(_scale.__all__)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
