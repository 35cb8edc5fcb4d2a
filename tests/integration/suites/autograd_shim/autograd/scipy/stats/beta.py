"""autograd.scipy.stats.beta is funcgrad.scipy.stats.beta."""

import funcgrad.scipy.stats.beta as _m
from funcgrad.scipy.stats.beta import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
