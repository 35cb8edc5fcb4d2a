"""autograd.scipy.stats.t is funcgrad.scipy.stats.t."""

import funcgrad.scipy.stats.t as _m
from funcgrad.scipy.stats.t import *  # noqa: F403

for _name in dir(_m):
    if not _name.startswith("__") and _name not in globals():
        globals()[_name] = getattr(_m, _name)

# t.cdf and t.logcdf are autograd's (not JAX's): SciPy's values on the host, differentiable in x,
# loc and scale (d cdf / dx is the pdf).
import scipy.stats as _sst  # noqa: E402

import funcgrad.numpy as _np  # noqa: E402

from ...core import defvjp as _defvjp  # noqa: E402
from .._host import host_ufunc as _host_ufunc  # noqa: E402
from .._host import unbroadcast as _unbroadcast  # noqa: E402

cdf = _host_ufunc(_sst.t.cdf, "cdf")
logcdf = _host_ufunc(_sst.t.logcdf, "logcdf")


def _vjps(scale_by):
    def d_x(ans, x, df, loc=0.0, scale=1.0):
        return lambda g: _unbroadcast(g * scale_by(ans, x, df, loc, scale), x)

    def d_loc(ans, x, df, loc=0.0, scale=1.0):
        return lambda g: _unbroadcast(-g * scale_by(ans, x, df, loc, scale), loc)

    def d_scale(ans, x, df, loc=0.0, scale=1.0):
        return lambda g: _unbroadcast(-g * scale_by(ans, x, df, loc, scale) * (x - loc) / scale, scale)

    return d_x, None, d_loc, d_scale


_d_cdf = _vjps(lambda ans, x, df, loc, scale: pdf(x, df, loc, scale))  # noqa: F405
_d_logcdf = _vjps(lambda ans, x, df, loc, scale: pdf(x, df, loc, scale) / _np.exp(ans))  # noqa: F405
_defvjp(cdf, *_d_cdf)
_defvjp(logcdf, *_d_logcdf)
