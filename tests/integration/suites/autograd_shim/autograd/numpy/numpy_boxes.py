"""autograd's ArrayBox is a funcgrad tracer."""

from funcgrad.core import Tracer as ArrayBox  # noqa: F401
