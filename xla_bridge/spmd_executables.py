"""SPMD executables: a program compiled for several devices, its argument checks and its calls.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, jaxlib, its siblings ``sharded``
(the shardings it checks and gives its results), ``runtime``, ``runtime_tokens``, ``lapack``,
``backends`` and ``executables`` (the compile step shared with the single-device route), and the
kernel's cache registry. Never jax, nothing else of funcgrad.

An SPMD executable checks each argument's sharding (devices, their order, the layout) and aval
before running: XLA segfaults on a buffer on the wrong device instead of raising.
"""

from __future__ import annotations

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from funcgrad.kernel.caches import register_cache

from . import lapack, runtime, runtime_tokens
from .backends import set_compiler_options
from .dtypes import aval
from .executables import load_compiled
from .sharded import MeshSharding, _deleted, _devs, _hlo, same_layout

__all__ = ["SpmdExecutable", "compile_spmd"]


class SpmdExecutable:
    """A program compiled for several devices (``num_partitions`` = len(devices)).

    ``call(buffers)`` checks every argument (see the module docstring) and returns the outputs as
    sharded ArrayImpls laid out as ``out_shardings``. Attributes: ``devices`` (the device
    assignment, in partition order), ``in_shardings``/``out_shardings`` (``MeshSharding``),
    ``in_avals``/``out_avals``, ``donate_argnums``.
    """

    def __init__(
        self, loaded, text, in_avals, out_avals, devices, in_shardings, out_shardings, donate, effectful=False
    ):
        self._loaded = loaded
        # A program with host callbacks returns a runtime token (NOTE: [runtime tokens]).
        self.effectful = effectful
        self._text = text
        self.in_avals = tuple(in_avals)
        self.out_avals = tuple(out_avals)
        self.devices = tuple(devices)
        self.in_shardings = tuple(in_shardings)
        self.donate_argnums = tuple(donate)
        self.out_shardings = list(out_shardings)
        self._handlers = [runtime.result_handler(a, s) for a, s in zip(self.out_avals, out_shardings)]
        self.call = self._make_call()

    def replace_out_sharding(self, j: int, s: MeshSharding) -> None:
        """Give output ``j`` the sharding object ``s`` (laid out the same as XLA's choice)."""
        self.out_shardings[j] = s
        self._handlers[j] = runtime.result_handler(self.out_avals[j], s)

    def _make_call(self):
        execute = self._loaded.execute_sharded
        handlers, expected = self._handlers, list(self.in_avals)
        shardings, n = self.in_shardings, len(self.in_avals)
        check = self.check
        effectful, devices = self.effectful, self.devices

        def call(buffers):
            try:
                ok = len(buffers) == n and all(
                    b.aval is a and b._sharding is s for b, a, s in zip(buffers, expected, shardings)
                )
            except AttributeError:
                ok = False
            if not ok:
                check(buffers)
            try:
                if effectful:
                    results = execute(buffers, with_tokens=True)
                    runtime_tokens.record(results, devices)
                    return results.consume_with_handlers(handlers)
                return execute(buffers).consume_with_handlers(handlers)
            except _jax.JaxRuntimeError as e:
                raise runtime.XlaBridgeError(
                    f"XLA execution failed on {len(self.devices)} devices: {e}", phase="execute"
                ) from None

        return call

    def check(self, buffers) -> None:
        """Raise a clear error unless every buffer matches its parameter: aval, devices (and their
        order), layout (XLA would crash on a buffer on the wrong device)."""
        if len(buffers) != len(self.in_avals):
            raise runtime.XlaBridgeError(
                f"the program takes {len(self.in_avals)} arguments, got {len(buffers)}", phase="execute"
            )
        for i, (b, want, s) in enumerate(zip(buffers, self.in_avals, self.in_shardings)):
            if type(b) is not runtime.ArrayImpl:
                raise runtime.XlaBridgeError(f"argument {i} is a {type(b).__name__}, not a device buffer")
            got = b.aval
            if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
                raise runtime.XlaBridgeError(
                    f"argument {i} is {aval(got.shape, got.dtype)!r} but the program expects {want!r}",
                    phase="execute",
                )
            if b.is_deleted():
                raise _deleted(f"argument {i}: ")
            have = b._sharding
            if _devs(have) != s._fg_devs:
                raise ValueError(
                    f"argument {i} lives on devices {[d.id for d in _devs(have)]} but the program runs on "
                    f"{[d.id for d in s._fg_devs]} (in that order); put it there first with "
                    "device_put(x, sharding) (XLA would crash on a mismatch)"
                )
            if not same_layout(have, s, len(want.shape)):
                raise ValueError(
                    f"argument {i} is laid out as {_hlo(have)} but the program expects {s._fg_hlo}; reshard "
                    "it with device_put(x, sharding)"
                )

    def as_text(self) -> str:
        return self._text

    def as_hlo_text(self) -> str:
        return "\n".join(m.to_string() for m in self._loaded.hlo_modules())

    def memory_analysis(self):
        """XLA's memory plan of this program (jaxlib's ``CompiledMemoryStats``)."""
        return self._loaded.get_compiled_memory_stats()

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of this program (``flops``, ``transcendentals``,
        ``bytes accessed`` and per-operand byte counts), as jaxlib's ``cost_analysis`` reports it."""
        return dict(self._loaded.cost_analysis())


def _spmd_options(devices) -> xc.CompileOptions:
    # jax's get_compile_options for jit/shard_map: one replica, one partition per device, Shardy.
    o = xc.CompileOptions()
    o.num_replicas = 1
    o.num_partitions = len(devices)
    b = o.executable_build_options
    b.use_spmd_partitioning = True
    b.use_shardy_partitioner = True
    o.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]).reshape(1, -1))
    return o


_cache: dict = register_cache("xla_bridge.spmd_executables", {})  # NOTE: [caches have an owner]


def compile_spmd(
    text,
    in_avals,
    out_avals,
    devices,
    in_shardings,
    mesh=None,
    donate_argnums=(),
    host_callbacks=(),
    read=None,
    compiler_options=(),
):
    """Compile an SPMD module for ``devices``; output shardings come from XLA (the partitioner's
    choice where the module does not fix them), over ``mesh`` for the surface to name.
    ``host_callbacks``: the Python functions of the module's host-callback custom calls (a
    ``debug.print`` in a shard_map body); without them XLA would call a missing function.
    ``read``: one flag per parameter, whether the program reads it (None: all).
    ``compiler_options``: XLA's options as sorted (name, value) pairs
    (``executables.option_overrides``), set as on one device; XLA refuses an unknown name or a
    bad value (``XlaBridgeError``, a ``JaxRuntimeError``)."""
    devices = tuple(devices)
    host_callbacks = tuple(host_callbacks)
    # (the mesh too: results name it, and one module text may be compiled for two meshes over
    # the same devices, e.g. the same axes Auto and Explicit)
    read = tuple(read) if read is not None else (True,) * len(in_avals)
    compiler_options = tuple(compiler_options)
    # (and the user sharding of the argument the results may be given, below: a reduced and a
    # replicated argument lower to one text, and their results must not share one)
    model = next(((i, b) for i, b, r in zip(in_shardings, in_avals, read) if r), None)
    if model is not None and not (isinstance(model[0], MeshSharding) and model[0]._fg_user is not None):
        model = None
    user = None if model is None else model[0]._fg_user
    spec = getattr(user, "spec", None)
    if getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        # (an unreduced or reduced argument is no model: XLA's layout of a result does not say
        # whether it is still a partial sum, its type does -- spmd.py gives typed results theirs)
        model = user = None
    key = (text, tuple(d.id for d in devices), tuple(donate_argnums), host_callbacks, mesh, read, user)
    if compiler_options:
        key = (*key, compiler_options)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    if lapack.needs_lapack(text):  # (as the one-device route: jaxlib's kernels, registered once)
        try:
            lapack.ensure_registered(runtime.normalize_platform(devices[0].platform), text)
        except ValueError as e:
            raise runtime.XlaBridgeError(str(e), phase="compile", module_text=text) from None
    opts = _spmd_options(devices)
    if compiler_options:
        set_compiler_options(opts, compiler_options)
    try:
        loaded = load_compiled(devices[0].client, text, xc.DeviceList(devices), opts, devices, host_callbacks)
    except _jax.JaxRuntimeError as e:
        raise runtime.XlaBridgeError(
            f"XLA failed to compile an SPMD program for {len(devices)} devices:\n  {e}",
            phase="compile",
            module_text=text,
        ) from None
    protos = loaded.get_output_shardings()  # None for a program on one device
    if protos is None:
        out_hlo = [xc.HloSharding.replicate()] * len(out_avals)
    else:
        out_hlo = [xc.HloSharding.from_proto(p) for p in protos]
    # As JAX's (pxla's maybe_recover_user_shardings): the first argument the program reads is the
    # model (JAX's jit drops unread arguments); when it has a user's sharding, a result laid out as
    # it is given that sharding, so its spec is kept (P('i') over a mesh axis of size 1 stays
    # P('i'), where reading XLA's layout back would give P()). Every other result's spec is read
    # from XLA's layout: P('X',), not another argument's P('X', None) (JAX's parallel guide prints
    # the former after a with_sharding_constraint; a Python scalar read first gives it too).
    out_shardings = []
    for h, a in zip(out_hlo, out_avals):
        if (
            model is not None
            and model[0]._fg_hlo == h
            and len(model[1].shape) == len(a.shape)
            and model[0]._fg_kind is None
        ):
            like = model[0]
            out_shardings.append(MeshSharding(devices, h, mesh, like._fg_user, like._fg_spec))
        else:
            out_shardings.append(MeshSharding(devices, h, mesh))
    exe = SpmdExecutable(
        loaded,
        text,
        in_avals,
        out_avals,
        devices,
        in_shardings,
        out_shardings,
        donate_argnums,
        effectful=runtime_tokens.has_effects(text, host_callbacks),
    )
    _cache[key] = exe
    return exe
