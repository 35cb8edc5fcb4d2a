"""autograd.scipy.special is funcgrad.scipy.special (``psi`` is ``digamma``)."""

import funcgrad.scipy.special as _fs
from funcgrad.scipy.special import *  # noqa: F403

for _name in dir(_fs):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_fs, _name)

psi = _fs.digamma
