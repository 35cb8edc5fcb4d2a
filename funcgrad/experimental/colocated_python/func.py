"""Colocated Python functions: ``ColocatedCallable`` (what ``colocated_python(fun)`` returns) and
its specialisation, as JAX's ``jax.experimental.colocated_python.func``.

Layer: surface. Imports funcgrad (pytrees, ``device_put``, ``ShapeDtypeStruct``) and the kernel's
``Tracer`` (a colocated call runs Python on concrete arrays, so it is refused under a trace).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import funcgrad
from funcgrad.experimental.colocated_python._devices import colocated_cpu_devices
from funcgrad.kernel.core import Tracer

__all__ = ["ColocatedCallable", "Specialization"]


@dataclasses.dataclass(frozen=True)
class Specialization:
    """What a colocated callable is fixed to: its arguments' specs (a pytree of
    ``ShapeDtypeStruct`` over ``(args, kwargs)``), its outputs' specs (given, or a function of the
    arguments' specs) and its devices."""

    in_specs: Any = None
    out_specs_fn: Any = None
    out_specs: Any = None
    devices: tuple | None = None

    def update(self, in_specs=None, out_specs_fn=None, out_specs=None, devices=None) -> Specialization:
        given = {
            "in_specs": in_specs,
            "out_specs_fn": out_specs_fn,
            "out_specs": out_specs,
            "devices": devices,
        }
        changes = {}
        for name, value in given.items():
            if value is None:
                continue
            if getattr(self, name) is not None:
                raise ValueError(f"{name} already specified")
            changes[name] = tuple(value) if name == "devices" else value
        return dataclasses.replace(self, **changes)


class ColocatedCallable:
    """``fun`` run on the CPU devices colocated with its arguments' devices (see the package's
    docstring); ``specialize`` returns a new callable with more fixed."""

    def __init__(self, fun, specialization: Specialization | None = None):
        self.fun = fun
        self.specialization = specialization or Specialization()
        self.__wrapped__ = fun
        self.__name__ = getattr(fun, "__name__", type(fun).__name__)

    def specialize(self, in_specs=None, out_specs_fn=None, out_specs=None, devices=None) -> ColocatedCallable:
        return ColocatedCallable(
            self.fun, self.specialization.update(in_specs, out_specs_fn, out_specs, devices)
        )

    def __call__(self, *args, **kwargs):
        spec = self.specialization
        leaves, tree = funcgrad.tree.flatten((args, kwargs))
        if any(isinstance(x, Tracer) for x in leaves):
            raise TypeError(
                f"colocated_python({self.__name__}) was called with traced values: a colocated Python "
                "function runs on concrete arrays, outside jit/vmap/grad; call it outside the transformation"
            )
        devices = _devices_of(leaves, self.__name__)
        if spec.devices is not None:
            if devices is not None and tuple(devices) != spec.devices:
                raise ValueError(
                    f"colocated_python({self.__name__}): the arguments are on {devices}, but the function "
                    f"was specialized to devices {spec.devices}"
                )
            devices = spec.devices
        if devices is None:
            raise ValueError(
                "No devices found. colocated_python function without input arguments must be first "
                "specialized with devices."
            )
        in_specs = funcgrad.tree.unflatten(tree, [_spec(x) for x in leaves])
        if spec.in_specs is not None:
            _check_specs(spec.in_specs, in_specs, f"colocated_python({self.__name__}): input")
        cpu = tuple(colocated_cpu_devices(devices))
        moved = [_place(x, cpu) for x in leaves]
        call_args, call_kwargs = funcgrad.tree.unflatten(tree, moved)
        result = self.fun(*call_args, **call_kwargs)
        result = funcgrad.tree.map(lambda x: _place(funcgrad.numpy.asarray(x), cpu), result)
        want = spec.out_specs
        if want is None and spec.out_specs_fn is not None:
            spec_args, spec_kwargs = in_specs
            want = spec.out_specs_fn(*spec_args, **spec_kwargs)
        if want is not None:
            _check_specs(want, funcgrad.tree.map(_spec, result), f"colocated_python({self.__name__}): output")
        return result

    def __repr__(self) -> str:
        return f"<colocated_python {self.__name__}>"


def _devices_of(leaves, name: str):
    """The devices the array arguments are on (all of them the same), or None for no arrays."""
    found = None
    for x in leaves:
        if not isinstance(x, funcgrad.Array) or not hasattr(x, "sharding"):
            continue
        here = tuple(sorted(x.sharding.device_set, key=lambda d: d.id))
        if found is None:
            found = here
        elif here != found:
            raise ValueError(
                f"colocated_python({name}): the array arguments are on different devices ({found} and "
                f"{here}); put them on the same devices"
            )
    return found


def _spec(x):
    if isinstance(x, funcgrad.Array) or hasattr(x, "shape") and hasattr(x, "dtype"):
        return funcgrad.ShapeDtypeStruct(tuple(x.shape), x.dtype)
    return x


def _place(x, cpu: tuple):
    """``x`` on the colocated CPU device (one device); several devices stay as they are laid out
    (a CPU device is its own colocated device)."""
    if not isinstance(x, funcgrad.Array) or len(cpu) != 1:
        return x
    if x.sharding.device_set == {cpu[0]}:
        return x
    return funcgrad.device_put(x, cpu[0])


def _check_specs(want, got, what: str) -> None:
    w_leaves, w_tree = funcgrad.tree.flatten(want)
    g_leaves, g_tree = funcgrad.tree.flatten(got)
    if w_tree != g_tree:
        raise ValueError(f"{what} structure {g_tree} does not match the specified {w_tree}")
    for w, g in zip(w_leaves, g_leaves):
        if (tuple(w.shape), w.dtype) != (tuple(g.shape), g.dtype):
            raise ValueError(
                f"{what} spec {g.dtype}{list(g.shape)} does not match the specified {w.dtype}{list(w.shape)}"
            )
