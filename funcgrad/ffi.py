"""``funcgrad.ffi``: JAX's ``jax.ffi`` -- calling a C/C++ kernel through XLA's typed FFI.

Layer: surface. Imports the kernel (``Primitive``, avals, ``Zero``), ``funcgrad.lax``/``numpy``
(the batching rule's scan and axis moves), and the bridge's ``xla_bridge.ffi`` (registration,
headers, the lowering rule), ``execute`` (an eager call runs compiled) and, on first use,
``user_custom_calls`` (``ffi_lowering``'s rules in jaxlib's MLIR bindings).

A handler written against XLA's FFI headers (``include_dir()``), compiled into a shared library,
is registered once and called from any funcgrad program::

    lib = ctypes.cdll.LoadLibrary("librms_norm.so")
    funcgrad.ffi.register_ffi_target("rms_norm", funcgrad.ffi.pycapsule(lib.RmsNorm), platform="cpu")
    y = funcgrad.ffi.ffi_call("rms_norm", funcgrad.ShapeDtypeStruct(x.shape, x.dtype),
                              vmap_method="broadcast_all")(x, eps=np.float32(1e-5))

``ffi_call`` binds the ``ffi_call`` primitive, defined here as JAX defines it (outside the
catalog of built-in primitives): it lowers to ``stablehlo.custom_call`` (NOTE: [FFI custom call
form] in xla_bridge/ffi.py); called eagerly it runs as a compiled program of its own; under
``vmap`` its ``vmap_method`` says what the kernel sees (as ``pure_callback``'s): "sequential"
(a scan over the batch), "sequential_unrolled", "expand_dims" (unbatched operands get a leading
axis of size 1), "broadcast_all" (every operand gets the batch axis) or "legacy_vectorized";
None refuses. It has no derivative: give the kernel one with ``funcgrad.custom_vjp`` (a second
kernel for the backward pass, as JAX's tutorial does).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad import lax
from funcgrad.kernel import core
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import AbstractToken, ShapedArray
from funcgrad.numpy._dtypes import ExtendedArray
from funcgrad.xla_bridge import execute as _execute
from funcgrad.xla_bridge import ffi as _xffi
from funcgrad.xla_bridge.emitter import lowering_rules as _lowering_rules

__all__ = [
    "build_ffi_lowering_function",
    "ffi_call",
    "ffi_lowering",
    "include_dir",
    "pycapsule",
    "register_ffi_target",
    "register_ffi_target_as_batch_partitionable",
    "register_ffi_type",
    "register_ffi_type_id",
]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


# ----------------------------------------------------------------------------------------------
# Registration


def include_dir() -> str:
    """The folder of XLA's FFI headers shipped with jaxlib (``xla/ffi/api/ffi.h``): compile a
    handler with ``-I`` this folder.

    >>> import os
    >>> os.path.isfile(os.path.join(include_dir(), "xla", "ffi", "api", "ffi.h"))
    True
    """
    return _xffi.include_dir()


def pycapsule(funcptr) -> Any:
    """A PyCapsule wrapping a ``ctypes`` function pointer (``ctypes.cdll.LoadLibrary(...).Handler``),
    the form ``register_ffi_target`` takes.

    >>> import ctypes
    >>> type(pycapsule(ctypes.cast(ctypes.pythonapi.Py_IsInitialized, ctypes.c_void_p))).__name__
    'PyCapsule'
    """
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    make = ctypes.pythonapi.PyCapsule_New
    make.restype = ctypes.py_object
    make.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return make(ctypes.cast(funcptr, ctypes.c_void_p), None, destructor(0))


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1, **kwargs) -> None:
    """Register a handler as the FFI target ``name``: ``fn`` is a PyCapsule (``pycapsule``) or a
    dict of them by FFI stage (``{"execute": ..., "instantiate": ...}``); ``api_version`` 1 is
    the typed FFI, 0 the legacy custom call. Extra keywords go to jaxlib's
    ``register_custom_call_target``."""
    _xffi.register_target(name, fn, platform=platform, api_version=api_version, **kwargs)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Refused, as in JAX 0.10: jaxlib registers user types with ``register_ffi_type``."""
    raise ValueError(
        "register_ffi_type_id is not supported by this jaxlib (as in JAX after jaxlib 381): use "
        "funcgrad.ffi.register_ffi_type(name, {'type_id': capsule, 'type_info': capsule})"
    )


def register_ffi_type(name: str, type_registration: Mapping, platform: str = "cpu") -> None:
    """Register a user type for FFI handlers: ``type_registration`` is ``{"type_id": capsule}``,
    with an optional ``"type_info"`` capsule."""
    _xffi.register_type(name, type_registration, platform=platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Let XLA's partitioner call target ``name`` on each shard of operands sharded along their
    leading (batch) axis."""
    _xffi.register_batch_partitionable(name)


# ----------------------------------------------------------------------------------------------
# The primitive


def _declared(*avals, result_avals, **params):
    return list(result_avals)


def _impl(primitive):
    def impl(*args, **params):
        try:
            return _execute.eager_compiled(primitive, list(args), params)
        except Exception as e:
            # XLA reports what the handler could not decode (operand dtypes, missing attributes);
            # say which call it was.
            avals = [core.get_aval(a) for a in args]
            e.add_note(f"(in the FFI call to {params['target_name']!r} on operands {avals})")
            raise

    return impl


def _not_differentiable(primals, tangents, *, target_name, **params):
    raise ValueError(  # (JAX's words, then how)
        f"The FFI call to `{target_name}` cannot be differentiated. You can use `custom_jvp` or "
        "`custom_vjp` to add support: funcgrad cannot see inside the kernel (funcgrad.custom_vjp "
        "with a second kernel for the backward pass, or funcgrad.custom_jvp)."
    )


def _batch(primitive):
    def batch(axis_size, vals, dims, *, vmap_method, result_avals, **params):
        return _ffi_batch(primitive, axis_size, vals, dims, vmap_method, result_avals, params)

    return batch


def _shift_layout(layout):
    # A new leading (major-most) axis: the old axes keep their order, numbered one higher, and the
    # new axis 0 is the most major, i.e. last in minor-to-major order.
    return None if layout is None else (*(int(n) + 1 for n in layout), 0)


def _ffi_batch(primitive, axis_size, vals, dims, vmap_method, result_avals, params):
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            f"vmap of the FFI call to {params['target_name']!r} needs to know how the kernel handles a "
            f"batch: pass vmap_method= one of {list(VMAP_METHODS)} to ffi_call"
        )
    return _batch_by_method(primitive, axis_size, vals, dims, vmap_method, result_avals, params, _relaid)


def _relaid(params, dims, vmap_method) -> dict:
    """An FFI call's layouts for its batched call: a new major-most axis on every result, and on
    every operand (for ``legacy_vectorized``, on the batched ones)."""
    params = dict(params)
    params["output_layouts"] = tuple(_shift_layout(lay) for lay in params["output_layouts"])
    if vmap_method == "legacy_vectorized":
        params["input_layouts"] = tuple(
            lay if d is None else _shift_layout(lay) for lay, d in zip(params["input_layouts"], dims)
        )
    else:
        params["input_layouts"] = tuple(_shift_layout(lay) for lay in params["input_layouts"])
    return params


def _batch_by_method(primitive, axis_size, vals, dims, vmap_method, result_avals, params, relayout=None):
    """The batch rule of a call of foreign code with declared results (``ffi_call``, and
    ``buffer_callback`` in funcgrad/experimental/buffer_callback.py), ``vmap_method`` one of
    ``VMAP_METHODS``: ``"sequential"``/``"sequential_unrolled"`` bind it once per element in a
    ``scan``; the others once, on operands with a leading batch axis (an unbatched one given a
    size-1 axis, broadcast for ``"broadcast_all"``, left as it is for ``"legacy_vectorized"``),
    with the params ``relayout(params, dims, vmap_method)`` gives (default: the same)."""
    moved = [v if d is None else fnp.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    if vmap_method in ("sequential", "sequential_unrolled"):
        is_batched = [d is not None for d in dims]
        fixed = [v for v, b in zip(moved, is_batched) if not b]
        per_element = [v for v, b in zip(moved, is_batched) if b]

        def body(carry, xs):
            it_fixed, it_xs = iter(fixed), iter(xs)
            args = [next(it_xs) if b else next(it_fixed) for b in is_batched]
            out = primitive.bind(*args, vmap_method=vmap_method, result_avals=result_avals, **params)
            return carry, list(out)

        _, outs = lax.scan(body, (), per_element, unroll=vmap_method == "sequential_unrolled")
        return list(outs), [0] * len(result_avals)
    if relayout is not None:
        params = relayout(params, dims, vmap_method)
    if vmap_method == "legacy_vectorized":
        args = moved
    else:
        size = axis_size if vmap_method == "broadcast_all" else 1
        args = [
            fnp.broadcast_to(fnp.expand_dims(v, 0), (size, *np.shape(v))) if d is None else v
            for v, d in zip(moved, dims)
        ]
    batched_avals = tuple(ShapedArray((axis_size, *a.shape), a.dtype) for a in result_avals)
    outs = primitive.bind(*args, vmap_method=vmap_method, result_avals=batched_avals, **params)
    return list(outs), [0] * len(outs)


def _foreign_call_primitive(
    name: str, side_effect: bool, *, impl, jvp, batch, lowering, why: str
) -> Primitive:
    """A primitive calling code outside the catalog (an FFI target, a Python buffer callback): its
    results are the ``result_avals`` it declares, its ``jvp`` rule raises (nothing can see inside),
    it is kept when dead (a ``jvp`` of a jit whose call's result is unused refuses, as JAX's), and
    ``lowering`` is the bridge's rule for it (no rule module of the catalog owns it). ``impl`` and
    ``batch`` make the primitive's rules from it; ``side_effect`` marks the ``..._effect`` twin,
    never removed as dead code.

    >>> ffi_call_p.multiple_results, ffi_call_effect_p.traits.has_side_effects
    (True, True)
    """
    p = Primitive(name, multiple_results=True)
    p.def_impl(impl(p))
    p.def_abstract_eval(_declared)
    p.def_jvp(jvp)
    p.def_batch(batch(p))
    p.def_traits(has_side_effects=side_effect, kept_when_dead=True, taylor_from_jvp=why)
    _lowering_rules[p] = lowering
    return p


def _make_primitive(name: str, side_effect: bool) -> Primitive:
    # (NOTE: [FFI custom call form]: the bridge's text rule)
    return _foreign_call_primitive(
        name,
        side_effect,
        impl=_impl,
        jvp=_not_differentiable,
        batch=_batch,
        lowering=_xffi.lower_ffi_call,
        why="a foreign kernel: its JVP rule raises the error that says to use custom_vjp",
    )


# ``ffi_call_effect_p`` is the call with ``has_side_effect=True``: never removed as dead code
# (a trait of the primitive, so the flag picks the primitive rather than a parameter).
ffi_call_p = _make_primitive("ffi_call", side_effect=False)
ffi_call_effect_p = _make_primitive("ffi_call_effect", side_effect=True)


# ----------------------------------------------------------------------------------------------
# ffi_call


def _result_avals(results) -> tuple[ShapedArray, ...]:
    avals = []
    for i, r in enumerate(results):
        if isinstance(r, AbstractToken):  # (a token result, as JAX's ``core.abstract_token``)
            avals.append(r)
            continue
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise ValueError(
                "All elements of result_shape_dtypes must have 'shape' and 'dtype' attributes "
                f"(funcgrad.ShapeDtypeStruct(shape, dtype)). Got {r!r} at position {i}."
            )
        try:
            shape = tuple(int(d) for d in r.shape)
        except TypeError:
            raise ValueError(
                f"result_shape_dtypes[{i}] has a shape that is not a tuple of ints: {r.shape!r}"
            ) from None
        if any(d < 0 for d in shape):
            raise ValueError(f"result_shape_dtypes[{i}] has a negative dimension: {shape}")
        avals.append(ShapedArray(shape, np.dtype(r.dtype)))
    return tuple(avals)


def _row_major(aval) -> tuple[int, ...]:
    return () if isinstance(aval, AbstractToken) else tuple(reversed(range(len(aval.shape))))


def _layouts(avals, layouts, what: str) -> tuple:
    """Minor-to-major layouts from JAX's major-to-minor ones (None: row-major; a token: none)."""
    if layouts is None:
        return tuple(_row_major(a) for a in avals)
    if len(layouts) != len(avals):
        raise ValueError(
            f"The number of {what} ({len(avals)}) must equal the number of {what} layouts ({len(layouts)})."
        )
    out = []
    for a, lay in zip(avals, layouts):
        if lay is None or isinstance(a, AbstractToken):
            out.append(_row_major(a))
            continue
        major_to_minor = getattr(lay, "major_to_minor", lay)
        if getattr(lay, "tiling", None):
            raise ValueError("The FFI does not support layouts with tiling")
        m2m = tuple(int(d) for d in major_to_minor)
        if sorted(m2m) != list(range(len(a.shape))):
            raise ValueError(
                f"the layout {tuple(major_to_minor)} is not a permutation of the "
                f"{len(a.shape)} axes of an {what}"
            )
        out.append(m2m[::-1])
    return tuple(out)


def _hashable(v):
    if isinstance(v, np.ndarray | dict):
        return _xffi.HashableAttribute(v)
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"Non-hashable keyword argument to ffi_call: {v!r}") from None
    return v


def ffi_call(
    target_name: str,
    result_shape_dtypes,
    *,
    has_side_effect: bool = False,
    vmap_method: str | None = None,
    input_layouts: Sequence | None = None,
    output_layouts=None,
    input_output_aliases: dict[int, int] | None = None,
    custom_call_api_version: int = 4,
    legacy_backend_config: str | None = None,
) -> Callable:
    """A function calling the FFI target ``target_name`` (registered with ``register_ffi_target``)
    on its positional array arguments; its keyword arguments become the handler's attributes.

    ``result_shape_dtypes``: one object with ``shape`` and ``dtype`` (the call returns an array)
    or a sequence of them (it returns a list; a tuple for a tuple). ``vmap_method``: see the
    module docstring. Layouts are major-to-minor axis orders (None: row-major);
    ``input_output_aliases`` maps an input index to the output that reuses its buffer;
    ``custom_call_api_version`` < 4 calls a legacy custom call with ``legacy_backend_config``.

    A call of a target that is not registered lowers (as JAX's: a program can be read or exported
    before its handler exists); compiling it is XLA's error, a ``JaxRuntimeError``:

    >>> f = ffi_call("no_such_target", np.zeros(3), vmap_method="sequential")
    >>> import funcgrad
    >>> "custom_call @no_such_target" in funcgrad.jit(f).lower(np.ones(3)).as_text()
    True
    >>> f(np.ones(3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    funcgrad.xla_bridge.backends.XlaBridgeError: XLA failed to compile ...No FFI handler ... no_such_target...
    """
    if vmap_method not in (None, *VMAP_METHODS):
        raise ValueError(
            f"vmap_method must be one of the allowed methods {[*VMAP_METHODS, None]}, "
            f"but got: {vmap_method!r}"
        )
    if not isinstance(target_name, str) or not target_name:
        raise TypeError(f"ffi_call: the target name must be a non-empty str, got {target_name!r}")
    multiple = isinstance(result_shape_dtypes, Sequence) and not hasattr(result_shape_dtypes, "shape")
    result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
    if not multiple:
        output_layouts = [output_layouts]
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError(
            "The use of the legacy_backend_config parameter requires custom_call_api_version < 4; "
            f"got {custom_call_api_version}."
        )
    static_out_layouts = _layouts(result_avals, output_layouts, "output")
    primitive = ffi_call_effect_p if has_side_effect else ffi_call_p

    def call(*args, **kwargs):
        if kwargs and custom_call_api_version < 4:  # (JAX's words: a legacy target takes none)
            raise ValueError(
                "The use of ffi_call attributes requires a custom call API version of at least 4; "
                f"got api_version={custom_call_api_version}."
            )
        # (a typed PRNG key goes to the kernel as its key data, JAX's physical type of it)
        args = [getattr(x, "_base_array", x) if isinstance(x, ExtendedArray) else x for x in args]
        in_avals = [core.get_aval(x) for x in args]
        static_in_layouts = _layouts(in_avals, input_layouts, "input")
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if not 0 <= i < len(args):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with input index {i} "
                    f"outside the range [0, {len(args)})."
                )
            if not 0 <= o < len(result_avals):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with output index {o} "
                    f"outside the range [0, {len(result_avals)})."
                )
            a, r = in_avals[i], result_avals[o]
            if tuple(a.shape) != r.shape or np.dtype(a.dtype) != r.dtype:
                raise ValueError(  # (JAX's words)
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input with "
                    f"abstract value {ShapedArray(tuple(a.shape), np.dtype(a.dtype))} and an output "
                    f"with a different abstract value {r}."
                )
            if static_in_layouts[i] != static_out_layouts[o]:
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input with layout "
                    f"{static_in_layouts[i]} and an output with a different layout {static_out_layouts[o]}."
                )
            aliases.append((i, o))
        outs = primitive.bind(
            *args,
            result_avals=result_avals,
            vmap_method=vmap_method,
            target_name=target_name,
            has_side_effect=has_side_effect,
            input_layouts=static_in_layouts,
            output_layouts=static_out_layouts,
            input_output_aliases=tuple(aliases),
            custom_call_api_version=int(custom_call_api_version),
            legacy_backend_config=legacy_backend_config,
            attributes=tuple((k, _hashable(v)) for k, v in sorted(kwargs.items())),
        )
        if not multiple:
            return outs[0]
        return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)

    return call


# ----------------------------------------------------------------------------------------------
# Lowering rules for a library's own primitives (JAX's helpers; jaxlib's MLIR bindings)


def build_ffi_lowering_function(
    call_target_name: str,
    *,
    operand_layouts: Sequence | None = None,
    result_layouts: Sequence | None = None,
    backend_config=None,
    skip_ffi_layout_processing: bool = False,
    **lowering_args,
) -> Callable:
    """A function ``(ctx, *operands, **params) -> op`` building the ``stablehlo.custom_call`` of
    ``call_target_name`` with jaxlib's MLIR bindings (params become attributes); layouts are
    minor-to-major (XLA's order), row-major by default. For a rule registered with
    ``funcgrad.interpreters.mlir.register_lowering``."""

    def build(ctx, *operands, **params):
        from funcgrad.xla_bridge import user_custom_calls  # noqa: PLC0415 - import-time cost: jaxlib's MLIR bindings

        return user_custom_calls.ffi_custom_call(
            ctx,
            call_target_name,
            operands,
            {k: _xffi.plain(v) for k, v in params.items()},
            operand_layouts=None if skip_ffi_layout_processing else operand_layouts,
            result_layouts=None if skip_ffi_layout_processing else result_layouts,
            backend_config=backend_config,
            **lowering_args,
        )

    return build


def ffi_lowering(
    call_target_name: str,
    *,
    operand_layouts: Sequence | None = None,
    result_layouts: Sequence | None = None,
    backend_config=None,
    skip_ffi_layout_processing: bool = False,
    **lowering_args,
) -> Callable:
    """A lowering rule calling the FFI target ``call_target_name`` on the primitive's operands,
    its params as the handler's attributes:
    ``mlir.register_lowering(my_p, ffi.ffi_lowering("my_target"))``."""
    build = build_ffi_lowering_function(
        call_target_name,
        operand_layouts=operand_layouts,
        result_layouts=result_layouts,
        backend_config=backend_config,
        skip_ffi_layout_processing=skip_ffi_layout_processing,
        **lowering_args,
    )

    def rule(ctx, *operands, **params):
        return list(build(ctx, *operands, **params).results)

    rule.__name__ = f"ffi_lowering({call_target_name})"
    return rule
