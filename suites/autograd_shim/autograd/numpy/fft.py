"""autograd.numpy.fft is funcgrad.numpy.fft."""

import funcgrad.numpy.fft as _ff
from funcgrad.numpy.fft import *  # noqa: F403

for _name in dir(_ff):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_ff, _name)
