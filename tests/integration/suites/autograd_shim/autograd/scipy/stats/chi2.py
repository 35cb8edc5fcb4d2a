"""autograd.scipy.stats.chi2 is funcgrad.scipy.stats.chi2."""

import funcgrad.scipy.stats.chi2 as _m
from funcgrad.scipy.stats.chi2 import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)
