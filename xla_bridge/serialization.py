"""Compiled one-device programs as bytes and back: the bridge half of
``jax.experimental.serialize_executable`` (funcgrad/experimental/serialize_executable.py).

Layer: xla_bridge. Imports jaxlib, the kernel's IR, the siblings ``executables``, ``programs`` and
``runtime``, and numpy.

``save(program)`` is a plain record (picklable): XLA's serialized executable (jaxlib's
``Client.serialize_executable``), the StableHLO text it was compiled from, the parameter and result
types, the donated parameters, the device's id and platform, and the program's hoisted constants
as NumPy arrays (JAX refuses programs with constants; their values are part of the program here).
``load(record, device)`` deserializes the executable onto ``device`` (``Client.deserialize_executable``:
no compilation) and makes a program of it again, its constants put back on the device.
"""

from __future__ import annotations

import numpy as np
from jaxlib import xla_client as xc

from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Var

from . import runtime as rt
from .executables import Executable
from .programs import Compiled

__all__ = ["load", "save", "signature"]

_VERSION = 1


def signature(in_avals, out_avals) -> ClosedJaxpr:
    """The parameter and result types of a loaded program, as a jaxpr without equations (what a
    program and its staging read of the jaxpr it was compiled from; the computation is XLA's)."""
    return ClosedJaxpr(Jaxpr([], [Var(a) for a in in_avals], [], [Var(a) for a in out_avals]), [])


def save(program: Compiled) -> dict:
    """The record of a compiled one-device ``program`` (``ValueError`` when it cannot be saved:
    a program over several devices, or one calling back into Python)."""
    exe = program.executable
    if program.in_shardings is not None or not isinstance(exe, Executable):
        raise ValueError(
            "Compilation does not support serialization: funcgrad serializes programs compiled for one device"
        )
    if exe.effectful:
        raise ValueError(
            "Compilation does not support serialization: the program calls back into Python (host callbacks)"
        )
    loaded = exe._loaded
    return {
        "version": _VERSION,
        "executable": loaded.client.serialize_executable(loaded),
        "text": program.text,
        "in_avals": program.in_avals,
        "out_avals": program.out_avals,
        "exe_in_avals": exe.in_avals,
        "exe_out_avals": exe.out_avals,
        "donate_argnums": program.donate_argnums,
        "device_id": program.device.id,
        "platform": program.device.platform,
        "consts": [np.asarray(rt.to_numpy(b)) for b in program.const_buffers],
    }


def load(record: dict, device) -> tuple[Compiled, ClosedJaxpr]:
    """The program of ``record`` loaded on ``device``, and its signature (hold it as long as the
    program: the program holds it weakly, as it holds a jaxpr)."""
    if record.get("version") != _VERSION:
        raise ValueError(
            f"deserialize_and_load: not a funcgrad serialized executable (version {record.get('version')})"
        )
    if device.platform != record["platform"]:
        raise ValueError(
            f"deserialize_and_load: the executable was compiled for {record['platform']}, not for "
            f"{device.platform} ({device})"
        )
    loaded = device.client.deserialize_executable(record["executable"], xc.DeviceList((device,)))
    exe = Executable(
        loaded,
        record["text"],
        record["exe_in_avals"],
        record["exe_out_avals"],
        device,
        record["donate_argnums"],
    )
    sig = signature(record["in_avals"], record["out_avals"])
    consts = [rt.device_put(c, device) for c in record["consts"]]
    program = Compiled(
        sig, exe, consts, record["text"], record["donate_argnums"], device, one_sharding=rt.sharding(device)
    )
    return program, sig
