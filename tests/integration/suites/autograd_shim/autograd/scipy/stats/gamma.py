"""autograd.scipy.stats.gamma is funcgrad.scipy.stats.gamma."""

import funcgrad.scipy.stats.gamma as _m
from funcgrad.scipy.stats.gamma import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
