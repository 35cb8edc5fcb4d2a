"""autograd.scipy.linalg is funcgrad.scipy.linalg."""

import funcgrad.scipy.linalg as _fl
from funcgrad.scipy.linalg import *  # noqa: F403

for _name in dir(_fl):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_fl, _name)
