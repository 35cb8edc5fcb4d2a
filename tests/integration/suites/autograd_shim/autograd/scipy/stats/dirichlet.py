"""autograd.scipy.stats.dirichlet is funcgrad.scipy.stats.dirichlet."""

import funcgrad.scipy.stats.dirichlet as _m
from funcgrad.scipy.stats.dirichlet import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)

# sampling runs on the host, as in autograd (which re-exports SciPy's)
from scipy.stats import dirichlet as _sp_dirichlet  # noqa: E402

rvs = _sp_dirichlet.rvs
