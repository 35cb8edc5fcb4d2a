"""Colocated Python objects: the wrapper class ``colocated_python_class`` makes, as JAX's
``jax.experimental.colocated_python.obj``.

Layer: surface. Imports this package's ``func``.
"""

from __future__ import annotations

from funcgrad.experimental.colocated_python.func import ColocatedCallable

__all__ = ["wrap_class"]


def wrap_class(cls):
    """A class whose instances hold ``cls``'s constructor arguments, make the ``cls`` object when
    a method is first called (on the colocated host: here, this process) and run each method as a
    colocated callable."""

    class Wrapped:
        def __init__(self, *args, **kwargs):
            self._colocated_init = (args, kwargs)
            self._colocated_obj = None

        def __getattr__(self, name):
            if name.startswith("_colocated") or not callable(getattr(cls, name, None)):
                raise AttributeError(f"colocated {cls.__name__} has no method {name!r}")

            def method(*args, **kwargs):
                if self._colocated_obj is None:
                    init_args, init_kwargs = self._colocated_init
                    self._colocated_obj = cls(*init_args, **init_kwargs)
                return getattr(self._colocated_obj, name)(*args, **kwargs)

            method.__name__ = name
            return ColocatedCallable(method)

    Wrapped.__name__ = Wrapped.__qualname__ = cls.__name__
    Wrapped.__doc__ = cls.__doc__
    return Wrapped
