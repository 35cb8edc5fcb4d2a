"""autograd.scipy.stats.multivariate_normal is funcgrad.scipy.stats.multivariate_normal."""

import funcgrad.scipy.stats.multivariate_normal as _m
from funcgrad.scipy.stats.multivariate_normal import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
