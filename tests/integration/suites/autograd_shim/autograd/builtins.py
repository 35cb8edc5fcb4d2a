"""autograd.builtins: containers are plain Python containers under funcgrad (a list of traced values
is a pytree), and ``isinstance``/``type`` look under tracers at the values they stand for."""

import builtins as _b

from .tracer import getval, notrace_primitive

tuple = _b.tuple
list = _b.list
dict = _b.dict
isinstance = notrace_primitive(_b.isinstance)
type = notrace_primitive(_b.type)


def container_take(A, idx):
    return A[idx]


__all__ = ["tuple", "list", "dict", "isinstance", "type", "getval"]
