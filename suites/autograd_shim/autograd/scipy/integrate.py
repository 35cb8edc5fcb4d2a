"""autograd.scipy.integrate.odeint (SciPy's signature) on funcgrad's adaptive odeint, whose
gradient is the adjoint method."""

from funcgrad.experimental.ode import odeint as _odeint


def odeint(func, y0, t, args=(), rtol=1.4e-8, atol=1.4e-8, mxstep=float("inf"), **unused):
    return _odeint(func, y0, t, *args, rtol=rtol, atol=atol, mxstep=mxstep)
