"""autograd.scipy.integrate.odeint (SciPy's signature) on funcgrad's adaptive odeint, whose
gradient is the adjoint method."""

from funcgrad.experimental.ode import odeint as _odeint


def odeint(func, y0, t, args=(), rtol=1e-10, atol=1e-10, mxstep=float("inf"), **unused):
    """``func(y, t, *args)`` integrated over ``t``. The default tolerances are tighter than SciPy's
    1.49e-8: LSODA at that setting is more accurate than Dormand-Prince, and gradients checked
    against finite differences (autograd's tests, 1e-6 relative) need the accuracy."""
    return _odeint(func, y0, t, *args, rtol=rtol, atol=atol, mxstep=mxstep)
