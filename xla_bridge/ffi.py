"""XLA's typed FFI: registering a user's C/C++ handlers with jaxlib and lowering a call to one.

Layer: xla_bridge. May import: stdlib, numpy, jaxlib (``xla_client``, ``_jax``), the funcgrad
kernel and the siblings ``emitter`` and ``dtypes``. Never the surface, never jax.

The surface (``funcgrad/ffi.py``) defines the ``ffi_call`` primitive and its transformation rules,
as JAX defines it outside its primitive catalog; this module holds what talks to XLA: the
registrations (``register_target``, ``register_type``, ``register_batch_partitionable``), the
headers (``include_dir``), and ``lower_ffi_call``, the text lowering rule of the primitive.

# NOTE: [FFI custom call form]
# A call of a typed-FFI handler is JAX's ``stablehlo.custom_call @target(...)`` with
# ``backend_config = ""`` and the keyword arguments of the call as the dictionary
# ``mhlo.backend_config = {eps = 1.0e-05 : f32, ...}`` (api_version left at its default), which
# XLA decodes into the handler's typed attributes. StableHLO's own form, ``api_version = 4 : i32``
# with the dictionary as ``backend_config``, is read the same way by XLA (funcgrad's host
# callbacks use it), but programs are read as JAX writes them: JAX's ffi_test and tools looking
# for ``op.attributes["mhlo.backend_config"]``, exported modules compared with JAX's. Python
# values become attributes as JAX converts them: ``int`` -> ``i64``, ``float`` -> ``f64``,
# ``bool`` -> ``i1``, NumPy scalars keep their dtype, NumPy arrays become dense elements (a
# float0 array false booleans), ``str`` a string, dicts dictionaries (``dtypes.attribute_text``,
# NOTE: [attributes as text]). Layouts are minor-to-major ``dense<...> : tensor<Nxindex>``;
# ``input_output_aliases`` become ``output_operand_aliases``. A legacy target (api_version < 4)
# gets its opaque ``backend_config`` string instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import jaxlib
import numpy as np
from funcgrad.xla_bridge.dtypes import attribute_text, string_literal
from funcgrad.xla_bridge.emitter import aval_type
from jaxlib import _jax
from jaxlib import xla_client as xc

__all__ = [
    "Buffer",
    "ExecutionContext",
    "ExecutionStage",
    "HashableAttribute",
    "include_dir",
    "is_registered",
    "layout_text",
    "lower_ffi_call",
    "plain",
    "register_batch_partitionable",
    "register_target",
    "register_type",
]

# What a buffer callback receives (jax.experimental.buffer_callback): XLA's FFI buffers (NumPy's
# ``__array__``, DLPack, ``__cuda_array_interface__`` on the GPU) and its execution context.
Buffer = _jax.ffi.Buffer
ExecutionContext = _jax.ffi.ExecutionContext
ExecutionStage = _jax.ffi.ExecutionStage

# funcgrad's platform names -> XLA's (jaxlib keys its FFI registry by the latter).
_XLA_PLATFORMS = {"cpu": "Host", "host": "Host", "cuda": "CUDA", "gpu": "CUDA", "rocm": "ROCM"}


def include_dir() -> str:
    """The folder of the C/C++ headers jaxlib ships (``xla/ffi/api/ffi.h``): compile a handler
    with ``-I`` this folder.

    >>> os.path.exists(os.path.join(include_dir(), "xla", "ffi", "api", "ffi.h"))
    True
    """
    return os.path.join(os.path.dirname(os.path.abspath(jaxlib.__file__)), "include")


def register_target(name: str, fn, platform: str = "cpu", api_version: int = 1, **kwargs) -> None:
    """Register ``fn`` (a PyCapsule of a handler, or a dict of them by FFI stage) as the custom
    call target ``name`` on ``platform`` (api_version 1: typed FFI; 0: the legacy custom call)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_ffi_target: the target name must be a non-empty str, got {name!r}")
    xc.register_custom_call_target(name, fn, platform=platform, api_version=api_version, **kwargs)
    _registered.add((name, _XLA_PLATFORMS.get(platform, platform)))


# Targets registered through funcgrad: jaxlib queues a registration made before the platform's
# client exists (and lists only typed-FFI handlers), so its registry alone cannot tell.
_registered: set[tuple[str, str]] = set()


def register_type(name: str, type_registration, platform: str = "cpu") -> None:
    """Register a user type for FFI handlers (``{"type_id": capsule, "type_info": capsule}``)."""
    return xc.register_custom_type(name, type_registration, platform=platform)


def register_batch_partitionable(name: str) -> None:
    """Let the partitioner run target ``name`` on each shard of a batch-sharded operand."""
    xc.register_custom_call_as_batch_partitionable(name)


def is_registered(name: str, platform: str) -> bool:
    """Whether XLA has an FFI handler ``name`` for ``platform`` (or a legacy target of it)."""
    xla_platform = _XLA_PLATFORMS.get(platform, platform)
    if (name, xla_platform) in _registered:
        return True
    # Registered through jaxlib's xla_client directly, before the platform's client started:
    # still queued there (a private list; absent from other jaxlib versions, then not consulted).
    pending = getattr(xc, "_custom_callback", {}).get(xla_platform, ())
    if any(entry[0] == name for entry in pending):
        return True
    try:
        return name in _jax.custom_call_targets(xla_platform)
    except Exception:  # a platform jaxlib has no registry for: let XLA decide at compile time
        return True


# ----------------------------------------------------------------------------------------------
# Attributes, hashable by value (the call's parameters key the caches)


class HashableAttribute:
    """A NumPy array or dict attribute of an FFI call, hashable by value (the call's parameters
    key the compiled-program caches)."""

    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        if isinstance(value, np.ndarray):
            self._key = ("array", value.dtype.str, value.shape, value.tobytes())
        else:
            items = (
                (k, HashableAttribute(v) if isinstance(v, np.ndarray | dict) else v) for k, v in value.items()
            )
            self._key = ("dict", tuple(sorted(items, key=lambda kv: kv[0])))

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, HashableAttribute) and self._key == other._key

    def __repr__(self):  # (as JAX prints them in a jaxpr's params)
        kind = "HashableArray" if isinstance(self.value, np.ndarray) else "FrozenDict"
        return f"{kind}({self.value!r})"


def plain(value):
    """An attribute's own value (a ``HashableAttribute``'s array or dict), for ``attribute_text``."""
    return value.value if isinstance(value, HashableAttribute) else value


def layout_text(minor_to_major: Sequence[int]) -> str:
    """A custom call's operand or result layout as MLIR text (minor-to-major ``index`` elements).

    >>> layout_text((1, 0)), layout_text(())
    ('dense<[1, 0]> : tensor<2xindex>', 'dense<> : tensor<0xindex>')
    """
    n = len(minor_to_major)
    body = "" if n == 0 else "[" + ", ".join(str(int(d)) for d in minor_to_major) + "]"
    return f"dense<{body}> : tensor<{n}xindex>"


# ----------------------------------------------------------------------------------------------
# The lowering rule


def lower_ffi_call(
    ctx,
    *args,
    result_avals,
    target_name: str,
    has_side_effect: bool,
    input_layouts,
    output_layouts,
    input_output_aliases,
    custom_call_api_version: int,
    legacy_backend_config,
    attributes,
    vmap_method=None,
):
    """The custom call of an ``ffi_call`` equation (NOTE: [FFI custom call form])."""
    # (no check that the target is registered: JAX lowers a call of any name, and programs are
    # lowered to be read or exported before their handler exists; XLA's compile refuses an
    # unknown one, with the hint of executables._compile_error)
    in_types = [aval_type(a) for a in ctx.avals_in]
    out_types = [aval_type(a) for a in ctx.avals_out]
    attrs = []
    if custom_call_api_version >= 4:
        config = attribute_text({k: plain(v) for k, v in attributes})
        attrs.append(f'backend_config = "", mhlo.backend_config = {config}')
    else:
        attrs.append(f"api_version = {int(custom_call_api_version)} : i32")
        attrs.append(f"backend_config = {string_literal(legacy_backend_config or '')}")
    attrs.append(f"has_side_effect = {'true' if has_side_effect else 'false'}")
    attrs.append("operand_layouts = [" + ", ".join(layout_text(lay) for lay in input_layouts) + "]")
    attrs.append("result_layouts = [" + ", ".join(layout_text(lay) for lay in output_layouts) + "]")
    if input_output_aliases:
        many = len(out_types) > 1
        aliases = ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = [{o if many else ''}], "
            f"operand_index = {i}, operand_tuple_indices = []>"
            for i, o in input_output_aliases
        )
        attrs.append(f"output_operand_aliases = [{aliases}]")
    rhs = (
        f"stablehlo.custom_call @{target_name}({', '.join(args)}) {{{', '.join(attrs)}}} : "
        f"({', '.join(in_types)}) -> ({', '.join(out_types)})"
    )
    return ctx.fb.emit_results(rhs, len(out_types))
