"""Transfer guards: JAX's ``jax_transfer_guard*`` flags and ``jax.transfer_guard*`` contexts.

Layer: surface (a low floor: imports the kernel and ``xla_bridge.runtime`` only). ``funcgrad.config``
sets the levels (``set_level``); the checks are called where a value crosses into a device.

# NOTE: [transfer guard]
# A level per direction (host-to-device, device-to-device, device-to-host), JAX's five:
#
#   level               implicit transfer       explicit transfer (device_put)
#   "allow"             allowed                 allowed
#   "log"               logged                  allowed
#   "disallow"          JaxRuntimeError         allowed
#   "log_explicit"      logged                  logged
#   "disallow_explicit" JaxRuntimeError         JaxRuntimeError
#
# Unset (None, the default) is "allow"; ``jax_transfer_guard`` sets the three directions at once.
# Where JAX transfers, funcgrad asks the guard, though its eager values live on the host:
# - host-to-device, implicit: a jitted call's dynamic argument that is not an Array (a NumPy array,
#   a NumPy or Python scalar: ``jitting``'s staged route while a guard is set); outside any
#   transformation, host data the user's own call makes an Array (``jnp.asarray``/``jnp.array`` of
#   NumPy data, lists and scalars) and the scalar a creation function the user calls fills
#   (``ones``, ``zeros``, ``full``). JAX's eager operations are compiled programs, so there every
#   host operand is a transfer, but JAX's library functions are mostly jitted, so their own
#   constants are not; funcgrad's library functions run eagerly on the host, so only a call made
#   from outside funcgrad's own files is asked (``_from_user``): ``median(x)`` of a device value
#   passes, as in JAX. A host operand of an operator the user applies to an Array (``x + 1``,
#   ``x < np_array``; not an integer exponent, static in JAX) is asked too, eagerly and under eager
#   ``vmap``/``jvp``/``grad`` (JAX binds each operator alone there), not under ``jit``
#   (``eager_operand``, called by funcgrad/numpy/_methods.py).
#   Eager indexing the user applies (``x[0]``, ``x[1:]``, ``x.at[i].set(v)``: JAX's starts, indices
#   and host updates are arguments; ``x[:]``, ``x[::2]``, ``x[None]`` are static, funcgrad/numpy/
#   indexing.py's ``index_transfer``) and an eager ``grad``'s seed (its 1.0, funcgrad/_autodiff.py)
#   are asked too, and so are host operands a jnp function the user calls promotes
#   (``jnp.maximum(x, 0)``: ``funcgrad.numpy._core.promote_args``), fills (``full_like``), eye's
#   offset and a key's seed. Host operands of other eager operations (``jnp.sin(np_array)``,
#   ``jnp.take(x, 1)``, ``jacrev``'s basis, library constants of ``var``/``softmax``) are not (JAX
#   refuses them): a guard in funcgrad may allow more than JAX's, never less.
#   Under ``jit`` host values are constants of the program: nothing is transferred (JAX's too).
# - host-to-device, explicit: ``device_put`` of host data.
# - device-to-device: ``device_put`` of an Array to another device (explicit), a jitted call with
#   ``device=`` given an Array committed elsewhere (implicit).
# - device-to-host: never guarded: a CPU device's values are host memory (JAX's CPU backend does
#   not guard them either: "device-to-host does not incur transfer on the CPU backend").
# The contexts are process-wide in funcgrad (JAX's are per thread).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.partial_eval import under_staging
from funcgrad.xla_bridge import runtime as _runtime

__all__ = [
    "DIRECTIONS",
    "LEVELS",
    "check_enum",
    "device_value",
    "eager_host_value",
    "eager_operand",
    "explicit",
    "guarding",
    "host_value",
    "jit_arguments",
    "set_level",
    "state",
]

LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
DIRECTIONS = ("host_to_device", "device_to_device", "device_to_host")

_levels: dict[str, str | None] = dict.fromkeys(DIRECTIONS)
_explicit_depth = [0]  # >0 inside device_put: its own conversions are the explicit transfer
_logger = logging.getLogger("funcgrad")
_HOST_VALUES = (np.ndarray, bool, int, float, complex, np.generic)


def check_enum(name: str):
    """The validator of flag ``name`` (JAX's ValueError for a value outside the levels).

    >>> check_enum("jax_transfer_guard")("disallow")
    'disallow'
    """

    def check(v):
        if v is not None and (type(v) is not str or v not in LEVELS):
            raise ValueError(f"new enum value must be None or in {list(LEVELS)}, got {v} of type {type(v)}.")
        return v

    return check


def set_level(direction: str, level: str | None) -> None:
    """Set ``direction``'s level (None: unset, which allows)."""
    _levels[direction] = level
    state.host_to_device = guarding("host_to_device")


class _State:
    """``host_to_device``: whether that direction guards anything (one attribute read for the
    conversions that ask, ``jnp.asarray`` and the creation functions)."""

    host_to_device = False


state = _State()


def guarding(direction: str) -> bool:
    """Whether ``direction``'s level checks anything (not unset or "allow")."""
    return _levels[direction] not in (None, "allow")


def _apply(direction: str, is_explicit: bool, describe) -> None:
    level = _levels[direction]
    if level is None or level == "allow" or (is_explicit and level in ("log", "disallow")):
        return
    text = f"{direction.replace('_', '-')} transfer: {describe()}"
    if level in ("log", "log_explicit"):
        _logger.warning(text)
        return
    # (jaxlib's error class and words: an INVALID_ARGUMENT status)
    raise _runtime.JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {text}")


def _sharding_text(dst) -> str:
    """``dst`` (None: the default device; a device; a sharding) as JAX's error names it."""
    if dst is None or isinstance(dst, _runtime.Device):
        device = _runtime.default_device() if dst is None else dst
        return f"SingleDeviceSharding(device={device!r}, memory_kind=device)"
    return repr(dst)


def _aval_text(value) -> str:
    if type(value) in (bool, int, float, complex):
        aval = core.get_aval(value)
    else:
        aval = core.get_aval(_dt.canonical_value(np.asarray(value)))
    return repr(aval)


def host_value(value, *, is_explicit: bool = False, device=None) -> None:
    """Ask the host-to-device guard about ``value`` (host data) entering ``device`` (None: the
    default one), unless inside ``device_put``'s own conversions (``explicit()``)."""
    if _explicit_depth[0] and not is_explicit:
        return
    _apply(
        "host_to_device",
        is_explicit,
        lambda: f"aval={_aval_text(value)}, dst_sharding={_sharding_text(device)}",
    )


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# (the wrappers every public funcgrad.numpy function may sit in: the surface templates', the
# array-like argument checks')
_PUBLIC_WRAPPERS = (
    _PACKAGE + os.path.join("kernel", "templates.py"),
    _PACKAGE + os.path.join("numpy", "_arraylike.py"),
)


def _from_user(skip: tuple[str, ...]) -> bool:
    """Whether the call being asked about came from outside funcgrad: the first frame above the
    asking function (and above frames of the files ``skip``, its public wrappers, and of the
    public namespaces' own wrappers) is not funcgrad's."""
    skip = skip + _PUBLIC_WRAPPERS
    frame = sys._getframe(3)
    while frame is not None and frame.f_code.co_filename.endswith(skip):
        frame = frame.f_back
    return frame is None or not frame.f_code.co_filename.startswith(_PACKAGE)


def eager_host_value(value, skip: tuple[str, ...] = ()) -> None:
    """``host_value`` for host data made an Array outside any transformation by the user's own
    call (``jnp.asarray``, a creation function's fill; ``skip``: the files of the public function's
    wrappers); nothing under a trace, where it is a constant of the program."""
    if type(core.current_trace()) is core.EvalTrace and _from_user(skip):
        host_value(value)


def eager_operand(value, skip: tuple[str, ...] = ()) -> None:
    """``host_value`` for a host operand of an operator the user applies outside any staged
    program: eagerly, and under eager ``vmap``/``jvp``/``grad`` (JAX binds their primitives one by
    one, each a compiled program taking the operand as an argument); nothing under ``jit``."""
    if not under_staging(core.current_trace()) and _from_user(skip):
        host_value(value)


def device_value(array, device, *, is_explicit: bool) -> None:
    """Ask the device-to-device guard about ``array`` (an Array) moving to ``device``."""
    if not guarding("device_to_device"):
        return
    src = array.devices() if array._buffer is not None else {_runtime.default_device()}
    if src == {device}:
        return
    _apply(
        "device_to_device",
        is_explicit,
        lambda: f"aval={core.get_aval(array)!r}, dst_sharding={_sharding_text(device)}",
    )


@contextlib.contextmanager
def explicit():
    """Inside: conversions are part of an explicit transfer (``device_put``), not implicit ones."""
    _explicit_depth[0] += 1
    try:
        yield
    finally:
        _explicit_depth[0] -= 1


def jit_arguments(leaves, device) -> None:
    """Ask the guards about a jitted call's flat dynamic arguments (``device``: its ``device=``)."""
    for leaf in leaves:
        if type(leaf) is Array:
            if device is not None and leaf._buffer is not None and leaf._buffer._committed:
                device_value(leaf, device, is_explicit=False)
        elif isinstance(leaf, _HOST_VALUES):
            host_value(leaf, device=device)
