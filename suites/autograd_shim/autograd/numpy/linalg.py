"""autograd.numpy.linalg is funcgrad.numpy.linalg."""

from numpy.linalg import LinAlgError  # noqa: F401

import funcgrad.numpy.linalg as _fl
from funcgrad.numpy.linalg import *  # noqa: F403

for _name in dir(_fl):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_fl, _name)
