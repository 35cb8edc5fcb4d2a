"""Shared helpers of the linear-algebra lowerings (``rules/linalg.py``, ``rules/spectral.py``):
LAPACK typed-FFI custom calls as StableHLO text, NaN results for failed factorisations, empty
operands, and lowering a small composition of primitives inline.

Layer: xla_bridge (compiler half). Imports numpy, the funcgrad kernel (``partial_eval`` to trace
compositions, ``ir``), the primitive catalog and ``xla_bridge.emitter``; never jaxlib: the
targets are registered by the runtime (``xla_bridge/lapack.py``) when it compiles a module that
calls one.

# NOTE: [LAPACK custom calls]
# jaxlib's CPU LAPACK kernels are typed-FFI custom calls named ``lapack_<s|d|c|z><routine>_ffi``
# (shared/notes/jaxlib-linalg-fft-facts.md). Each call is emitted as JAX emits it: scalar
# attributes in ``mhlo.backend_config`` (characters as ``ui8`` ASCII codes), explicit layouts --
# column-major (``[nd-2, nd-1, nd-3, ..., 0]``) for operands and results with the most dimensions
# (the matrices), row-major for everything else (vectors of eigenvalues, pivots, ``info``): a
# layout mistake is silent (transposed or scrambled numbers) -- and the in-place results alias
# their operands as the kernels expect. The kernels loop over the leading batch dimensions
# themselves. They return an ``info`` per batch element; a failure becomes NaN outputs with a
# select (NOTE: [factorisation failures]). As JAX's, each call is batch-partitionable: it carries
# ``mhlo.frontend_attributes = {num_batch_dims = "N"}`` (the leading dimensions beyond the
# matrices') and a Shardy rule sharing those dimensions between operands and results, so a batch
# of matrices sharded over devices is factorised where it lies (no all-gather); the runtime
# registers the targets as batch-partitionable (``xla_bridge/lapack.py``).
#
# On the GPU (``ModuleBuilder.platform == "cuda"``) the same calls go to jaxlib's cuSOLVER
# kernels, ``cusolver_<routine>_ffi``, which take the same operands, results and layouts (one
# target for every dtype; boolean attributes such as ``lower = true`` instead of LAPACK's
# characters), as jax lowers them; triangular solves are XLA's own ``triangular_solve`` op. The
# runtime registers the cuSOLVER targets (NOTE: [CUDA extension]). A routine jaxlib has no GPU
# kernel for raises a LoweringError naming the CPU device as the way out (``cpu_only``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from funcgrad.xla_bridge.emitter import LoweringError, aval_type, lower_closed, tensor_type

from funcgrad.kernel.ir import ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

I32 = np.dtype(np.int32)

_PREFIX = {
    np.dtype(np.float32): "s",
    np.dtype(np.float64): "d",
    np.dtype(np.complex64): "c",
    np.dtype(np.complex128): "z",
}


def target(routine: str, dtype) -> str:
    """``lapack_dpotrf_ffi`` for routine ``potrf`` and float64.

    >>> target("potrf", np.float32)
    'lapack_spotrf_ffi'
    """
    return f"lapack_{_PREFIX[np.dtype(dtype)]}{routine}_ffi"


def on_gpu(ctx) -> bool:
    """Whether the module being lowered runs on a GPU (cuSOLVER instead of LAPACK)."""
    return ctx.fb.module.platform == "cuda"


def gpu_target(routine: str) -> str:
    """``cusolver_potrf_ffi`` for routine ``potrf``: one cuSOLVER target serves every dtype.

    >>> gpu_target("getrf")
    'cusolver_getrf_ffi'
    """
    return f"cusolver_{routine}_ffi"


def flag(value: bool) -> str:
    """A boolean attribute of a cuSOLVER FFI call."""
    return "true" if value else "false"


def cpu_only(ctx, what: str) -> None:
    """Raise a LoweringError when lowering for the GPU ``what``, which only LAPACK implements."""
    if on_gpu(ctx):
        raise LoweringError(
            f"{what} has no GPU kernel in jaxlib (LAPACK only); run it on the CPU device: "
            "jit(f, device=funcgrad.devices('cpu')[0])"
        )


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def _layout(aval, column_major: bool) -> str:
    nd = len(aval.shape)
    if nd == 0:
        return "dense<> : tensor<0xindex>"
    dims = (nd - 2, nd - 1, *range(nd - 3, -1, -1)) if column_major else tuple(range(nd - 1, -1, -1))
    body = str(dims[0]) if nd == 1 else "[" + ", ".join(str(d) for d in dims) + "]"
    return f"dense<{body}> : tensor<{nd}xindex>"


def char(c: str) -> str:
    """A character attribute of an FFI call: its ASCII code as ``ui8``."""
    return f"{ord(c)} : ui8"


def ffi_call(
    fb,
    name: str,
    operands: Sequence[str],
    in_avals: Sequence,
    out_avals: Sequence,
    attrs: dict[str, str] | None = None,
    aliases: dict[int, int] | None = None,
    column_major: bool = True,
    num_non_batch_dims: int = 2,
) -> list[str]:
    """Emit one LAPACK custom call (NOTE: [LAPACK custom calls]); returns the result names.
    ``attrs`` maps attribute names to typed values (``char("L")``, ``"4 : i32"``); ``aliases``
    maps a result index to the operand index whose buffer it reuses; ``column_major=False``
    gives every operand and result the row-major layout."""
    rank = max(len(a.shape) for a in in_avals) if column_major else -1
    backend = ", ".join(f"{k} = {v}" for k, v in (attrs or {}).items())
    op_layouts = ", ".join(_layout(a, len(a.shape) == rank) for a in in_avals)
    res_layouts = ", ".join(_layout(a, len(a.shape) == rank) for a in out_avals)
    single = len(out_avals) == 1
    alias_items = []
    for out_i, in_i in (aliases or {}).items():
        tuple_idx = "[]" if single else f"[{out_i}]"
        alias_items.append(
            f"#stablehlo.output_operand_alias<output_tuple_indices = {tuple_idx}, "
            f"operand_index = {in_i}, operand_tuple_indices = []>"
        )
    in_types = ", ".join(aval_type(a) for a in in_avals)
    out_types = [aval_type(a) for a in out_avals]
    results = out_types[0] if single else "(" + ", ".join(out_types) + ")"
    batch = max(max(len(a.shape) for a in in_avals) - num_non_batch_dims, 0)
    text = (
        f"stablehlo.custom_call @{name}({', '.join(operands)}) {{mhlo.backend_config = {{{backend}}}, "
        f'mhlo.frontend_attributes = {{num_batch_dims = "{batch}"}}, '
        f"operand_layouts = [{op_layouts}], result_layouts = [{res_layouts}], "
        f"output_operand_aliases = [{', '.join(alias_items)}], "
        f"sdy.sharding_rule = {_batch_sharding_rule(batch, in_avals, out_avals)}}} : "
        f"({in_types}) -> {results}"
    )
    return fb.emit_results(text, len(out_avals))


def _factor_names():
    yield from "ijklmnopqrstuvwxyz"
    n = 1
    while True:
        yield f"z_{n}"
        n += 1


def _batch_sharding_rule(batch: int, in_avals, out_avals) -> str:
    """JAX's Shardy rule of a batch-partitionable LAPACK call (NOTE: [LAPACK custom calls]): the
    ``batch`` leading dimensions of every operand and result are one factor each, shared, so a
    batch sharded over devices stays sharded (each device's kernel loops over its own matrices);
    every other dimension is a factor of its own, which Shardy keeps whole."""
    names = _factor_names()
    shared = [next(names) for _ in range(batch)]
    sizes = {}

    def mapping(aval) -> str:
        shape = tuple(aval.shape)
        rest = len(shape) - batch
        factors = list(shared) if rest >= 0 else []
        for d in shape[batch:] if rest >= 0 else shape:
            factors.append(next(names))
            sizes[factors[-1]] = d
        for f, d in zip(shared, shape[:batch] if rest >= 0 else ()):
            sizes.setdefault(f, d)
        return "[" + ", ".join(factors) + "]"

    lhs = ", ".join(mapping(a) for a in in_avals)
    rhs = ", ".join(mapping(a) for a in out_avals)
    order = [*shared, *(f for f in sizes if f not in shared)]
    listed = ", ".join(f"{f}={sizes[f]}" for f in order if f in sizes)
    return f"#sdy.op_sharding_rule<({lhs})->({rhs}) {{{listed}}}, custom>"


def info_aval(batch) -> ShapedArray:
    return ShapedArray(tuple(batch), I32)


def ok_flags(fb, info: str, batch, direction: str = "EQ") -> str:
    """``info <direction> 0`` per batch element (``EQ``: success; ``GE``: getrf's convention)."""
    zero = fb.const(0, I32, tuple(batch))
    return fb.compare(direction, info, zero, I32, tuple(batch))


def nan_unless(fb, ok: str, batch, x: str, aval) -> str:
    """``x`` where the batch element's ``ok`` flag holds, NaN elsewhere."""
    batch = tuple(batch)
    shape = tuple(aval.shape)
    okb = fb.broadcast(ok, ShapedArray(batch, np.dtype(np.bool_)), shape, dims=range(len(batch)))
    nan = np.nan + 1j * np.nan if is_complex(aval.dtype) else np.nan
    nans = fb.broadcast(fb.const(nan, aval.dtype), ShapedArray((), aval.dtype), shape)
    return fb.select(okb, x, nans, shape, aval)


def lower_fun(fb, fn: Callable, in_avals: Sequence, args: Sequence[str]) -> list[str]:
    """Lower ``fn`` (a composition of primitives returning a list) inline on ``args``, as JAX's
    ``mlir.lower_fun``: the glue around a custom call (masks, slices, pads, loops) is written
    once, with the catalog's functions, instead of as text."""
    closed = trace_to_jaxpr(lambda *xs: list(fn(*xs)), [ShapedArray(a.shape, a.dtype) for a in in_avals])
    return lower_closed(fb, closed, list(args))


def empty_operands_as_constants(rule: Callable) -> Callable:
    """Wrap a lowering rule: when an operand has no elements the outputs depend on no value, so
    they are the primitive's eager impl on zeros, embedded as constants (LAPACK is never called on
    empty arrays); otherwise ``rule`` runs."""

    @functools.wraps(rule)
    def wrapped(ctx, *args, **params):
        if all(int(np.prod(a.shape)) != 0 for a in ctx.avals_in):
            return rule(ctx, *args, **params)
        outs = ctx.primitive.impl(*[np.zeros(a.shape, a.dtype) for a in ctx.avals_in], **params)
        outs = outs if isinstance(outs, list | tuple) else [outs]
        consts = [ctx.fb.const(np.asarray(o, a.dtype), a.dtype, a.shape) for o, a in zip(outs, ctx.avals_out)]
        return consts if ctx.primitive.multiple_results else consts[0]

    return wrapped


def negate_imag(fb, x: str, aval) -> str:
    """The complex conjugate of ``x`` (the identity for real dtypes)."""
    if not is_complex(aval.dtype):
        return x
    rdt = np.dtype(np.float32 if np.dtype(aval.dtype) == np.complex64 else np.float64)
    t_in, t_re = aval_type(aval), tensor_type(aval.shape, rdt)
    re = fb.emit(f"stablehlo.real {x} : ({t_in}) -> {t_re}")
    im = fb.emit(f"stablehlo.imag {x} : ({t_in}) -> {t_re}")
    neg = fb.emit(f"stablehlo.negate {im} : {t_re}")
    return fb.emit(f"stablehlo.complex {re}, {neg} : {t_in}")
