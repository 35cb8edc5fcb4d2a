"""The compiled program of a staged jaxpr, on one device or several: one class, ``Compiled``, and
one cache of them, ``cached``; what jaxlib's C++ dispatcher reads to run one without Python,
``Compiled.fastpath_data``.

Layer: xla_bridge. Imports the kernel's cache registry, dtypes and ``ir`` (memory spaces) and the
sibling ``fastpath`` only. The two
builders live with their lowerings: ``execute.compiled`` (one device) and ``spmd.compiled``
(several devices, Shardy annotations); both store here, and every route runs what they return
through ``execute.run`` (NOTE: [one compiled program]).

# NOTE: [one compiled program]
# A jaxpr compiled by XLA is a ``Compiled`` wherever it runs. Its placement is one of two:
# ``in_shardings is None``: one device (``device``), every argument a whole value there, the
# results uncommitted unless the call commits them; or one ``MeshSharding`` per input over
# ``devices`` (``device`` is None), the results laid out as the executable reports. The one-device
# case is a thin specialisation, not a mesh of one device: its executable skips the sharding
# checks of the SPMD one (about 1 us a call), takes XLA's compiler options and keeps results
# uncommitted. One cache holds both, keyed on (jaxpr id, placement, donation, options); an entry
# keeps its jaxpr (and shardings) so that an ``id`` is never reused while it lives (NOTE:
# [compiled jit cache] in xla_bridge/execute.py).
"""

from __future__ import annotations

import functools
import weakref

from funcgrad.xla_bridge.executables import forget_executables
from funcgrad.xla_bridge.fastpath import fastpath_record, prepend_constants

from funcgrad.kernel import extended as _ext
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.dtypes import float0
from funcgrad.kernel.ir import MemorySpace, ShapedArray, abstract_token

__all__ = ["Compiled", "cached", "clear_cache", "float0_positions", "host_positions"]


def float0_positions(out_avals) -> tuple:
    """The positions of the float0 outputs among ``out_avals`` (NOTE: [float0 results] in
    xla_bridge/execute.py).

    >>> import numpy as np
    >>> from funcgrad.kernel.ir import ShapedArray
    >>> float0_positions([ShapedArray((), np.float32), ShapedArray((2,), float0)])
    (1,)
    """
    return tuple(i for i, a in enumerate(out_avals) if a.dtype == float0)


def host_positions(out_avals) -> tuple:
    """The positions of the outputs typed in host memory among ``out_avals``.

    >>> import numpy as np
    >>> from funcgrad.kernel.ir import ShapedArray
    >>> host = ShapedArray((2,), np.float32, memory_space=MemorySpace.Host)
    >>> host_positions([ShapedArray((), np.float32), host])
    (1,)
    """
    return tuple(i for i, a in enumerate(out_avals) if a.memory_space is MemorySpace.Host)


class Compiled:
    """A jaxpr compiled by XLA (NOTE: [one compiled program]).

    ``call(buffers)`` runs the executable on the jaxpr's argument buffers (hoisted constants are
    prepended); ``in_avals`` are the jaxpr's input avals, ``out_weak`` the outputs' weak types,
    ``donate_argnums`` the parameters the program consumes; ``device`` (one device) or
    ``in_shardings`` (several: one per input) say where the arguments go.

    >>> import numpy as np, funcgrad
    >>> from funcgrad.xla_bridge.execute import compiled
    >>> c = compiled(funcgrad.make_jaxpr(lambda x: x * 2.0)(np.ones(2)), "double")
    >>> c.in_shardings is None, c.devices == (c.device,)
    (True, True)
    """

    __slots__ = (
        "_closed_ref",
        "executable",
        "const_buffers",
        "in_avals",
        "out_avals",
        "out_weak",
        "donate_argnums",
        "text",
        "device",
        "devices",
        "in_shardings",
        "float0_outs",
        "extended_outs",
        "token_outs",
        "host_outs",
        "_one_sharding",
        "call",
    )

    def __init__(
        self, closed, executable, const_buffers, text, donate_argnums, device=None, in_shardings=None,
        one_sharding=None,
    ):  # fmt: skip
        # Held weakly: the jaxpr's consts (a closure's arrays) die with the jaxpr's owner, as in JAX
        # (NOTE: [jit instances hold their function weakly] in funcgrad/jitting.py).
        self._closed_ref = weakref.ref(closed)
        self.executable = executable
        self.const_buffers = const_buffers
        self.in_avals = closed.in_avals
        self.out_avals = closed.out_avals  # (the jaxpr itself is held weakly)
        self.out_weak = tuple(a.weak_type for a in closed.out_avals)
        self.donate_argnums = tuple(donate_argnums)
        self.text = text
        self.device = device
        self.in_shardings = None if in_shardings is None else tuple(in_shardings)
        self.devices = (device,) if in_shardings is None else tuple(executable.devices)
        # float0 results have no XLA type: NumPy values made where outputs become values (NOTE:
        # [float0 results] in xla_bridge/execute.py).
        self.float0_outs = float0_positions(closed.out_avals)
        # Results of an extended dtype are EArrays around their representation's buffers (NOTE:
        # [extended dtypes] in funcgrad/kernel/extended.py); such programs take no C++ fast path.
        self.extended_outs = tuple(i for i, a in enumerate(closed.out_avals) if _ext.is_extended(a.dtype))
        # Token results are Tokens around their bool[0] buffers (NOTE: [tokens] in kernel/ir.py).
        self.token_outs = tuple(i for i, a in enumerate(closed.out_avals) if a is abstract_token)
        # Results typed in host memory (a device_put to memory.Space.Host): on one device they are
        # moved to its "pinned_host" memory after the call, as JAX's lowering places them (NOTE:
        # [memory space in types]); such programs take no C++ fast path.
        self.host_outs = () if in_shardings is not None else host_positions(closed.out_avals)
        self._one_sharding = one_sharding  # the one device's sharding (what its buffers carry)
        self.call = prepend_constants(executable.call, const_buffers)

    @property
    def closed(self):
        """The jaxpr compiled (None once it has been collected)."""
        return self._closed_ref()

    def as_text(self) -> str:
        """The StableHLO module text the program was compiled from."""
        return self.text

    def fastpath_data(self, outputs, n_args: int, committed: bool):
        """What jaxlib's C++ dispatcher needs to run this program for ``n_args`` leaves, whose
        results have the pytree structure of ``outputs`` (committed with ``committed``); ``None``
        when it cannot (a program over several devices whose parameters are not the leaves, or one
        with host callbacks, whose runtime token Python records: NOTE: [runtime tokens]).

        The one-device program gives every parameter and result its device's sharding; the SPMD
        program its executable's, which the dispatcher compares with each argument's, as JAX's.
        """
        exe = self.executable
        if exe.effectful:
            return None  # its runtime token is recorded in Python (NOTE: [runtime tokens])
        if any(a is abstract_token for a in self.in_avals):
            return None  # a Token argument is passed as a buffer by Python (NOTE: [tokens])
        n_in = len(self.const_buffers) + n_args
        if self.in_shardings is None:
            ins = [self._one_sharding] * n_in
            outs = [self._one_sharding] * len(exe.out_avals)
        else:
            if len(exe.in_shardings) != n_in:
                return None
            ins, outs = exe.in_shardings, exe.out_shardings
        return fastpath_record(exe._loaded, outputs, ins, outs, exe.out_avals, self.const_buffers, committed)


_cache: dict = register_cache("xla_bridge.compiled_programs", {})  # NOTE: [caches have an owner]
_CACHE_SIZE = 1024


class ArgumentMismatch(TypeError):
    """An argument of a compiled call whose type is not the one the program was compiled for
    (``execute.run``'s check, the one check of a call's arguments: JAX's words, one line per
    argument; ``mismatch_error`` gathers several into JAX's one error).

    >>> import numpy as np
    >>> from funcgrad.kernel.ir import ShapedArray
    >>> print(ArgumentMismatch("x", (2,), np.float32, ShapedArray((3,), np.float32)))
    Argument types differ from the types for which this computation was compiled. ...
    Argument 'x' compiled with float32[3] and called with float32[2]
    """

    def __init__(self, name: str, shape, dtype, aval):
        got = ShapedArray(tuple(shape), dtype).str_short(short_dtypes=False)
        self.line = (
            f"Argument '{name}' compiled with {aval.str_short(short_dtypes=False)} and called with {got}"
        )
        super().__init__(mismatch_error([self.line]).args[0])


def mismatch_error(lines: list) -> TypeError:
    """JAX's error for a compiled call's arguments of other types (``lines``: each one's)."""
    which = f"The first 5 of {len(lines)}" if len(lines) >= 5 else "The"
    return TypeError(
        "Argument types differ from the types for which this computation was compiled. Perhaps "
        "you are calling the compiled executable with a different enable_x64 mode than when it "
        f"was AOT compiled? {which} mismatches are:\n" + "\n".join(lines[:5])
    )


def cached(key, closed, build, in_shardings=None) -> Compiled:
    """The cached program under ``key`` (whose first item is ``id(closed)``) when it was built
    for this very ``closed`` (and these very ``in_shardings`` objects), else ``build()``, stored.

    >>> calls = []
    >>> class P:
    ...     closed, in_shardings = "jaxpr", None
    >>> p = cached(("k", 1), "jaxpr", lambda: calls.append(1) or P())
    >>> cached(("k", 1), "jaxpr", lambda: calls.append(1) or P()) is p, len(calls)
    (True, 1)
    >>> _ = _cache.pop(("k", 1))
    """
    hit = _cache.get(key)
    if hit is not None and hit.closed is closed:
        if in_shardings is None or all(a is b for a, b in zip(hit.in_shardings, in_shardings)):
            return hit
    entry = build()
    if len(_cache) >= _CACHE_SIZE:
        _cache.pop(next(iter(_cache)))  # oldest first
    if isinstance(entry, Compiled):  # (the entry goes when its jaxpr does)
        entry._closed_ref = weakref.ref(closed, functools.partial(_drop, key))
    _cache[key] = entry
    return entry


def _drop(key, ref, cache=_cache) -> None:
    hit = cache.get(key)  # (`cache` bound here: at interpreter exit the globals may be gone)
    if hit is not None and getattr(hit, "_closed_ref", None) is ref:  # (not a later jaxpr's)
        del cache[key]


def forget_programs(closed_jaxprs) -> None:
    """Drop the compiled programs of ``closed_jaxprs`` and their executables from the caches
    (``jit(f).clear_cache()``)."""
    ids = {id(c) for c in closed_jaxprs}
    gone = [k for k, p in _cache.items() if id(getattr(p, "closed", None)) in ids]
    forget_executables([_cache.pop(k).executable for k in gone])


def clear_cache() -> None:
    """Forget every compiled program (the runtime's executable cache is separate).

    >>> clear_cache(); len(_cache)
    0
    """
    _cache.clear()
