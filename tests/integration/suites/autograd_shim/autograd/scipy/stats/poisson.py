"""autograd.scipy.stats.poisson is funcgrad.scipy.stats.poisson."""

import funcgrad.scipy.stats.poisson as _m
from funcgrad.scipy.stats.poisson import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
