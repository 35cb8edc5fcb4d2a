"""autograd.scipy is funcgrad.scipy, with autograd's own ``signal.convolve`` and ``integrate.odeint``."""

from . import integrate, linalg, signal, special, stats  # noqa: F401
