"""autograd.numpy.fft is funcgrad.numpy.fft."""

import funcgrad.numpy.fft as _ff

from ._wrap import wrap_namespace as _wrap_namespace

_wrap_namespace(_ff, globals())
