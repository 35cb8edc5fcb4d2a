"""autograd.scipy.stats.t is funcgrad.scipy.stats.t."""

import funcgrad.scipy.stats.t as _m
from funcgrad.scipy.stats.t import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
