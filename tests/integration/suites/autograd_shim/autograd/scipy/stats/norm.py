"""autograd.scipy.stats.norm is funcgrad.scipy.stats.norm."""

import funcgrad.scipy.stats.norm as _m
from funcgrad.scipy.stats.norm import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
