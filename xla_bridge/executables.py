"""Compiled programs on one device: compiling StableHLO text (cached in memory and on disk),
running it on device buffers, and XLA's errors made readable.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, jaxlib, its siblings ``backends``,
``dtypes``, ``compile_cache``, ``lapack``, ``plugins`` (and ``portable``, which loads jaxlib's MLIR
bindings, on first use), and the kernel's cache registry
(``funcgrad.kernel.caches``, standard library only). Never jax. A module calling LAPACK kernels
gets them registered before it is compiled (``lapack.ensure_registered``). ``xla_bridge.runtime``
re-exports the public names.

# NOTE: [input validation]
XLA checks only byte sizes: an i32[3] buffer passed for an f32[3] parameter runs and returns
garbage. ``Executable.__call__`` therefore compares the inputs' avals with the expected ones
on every call. Because avals are interned, the common case is one identity comparison per
argument inside a list compare (~0.5 us for 2 arguments, measured), so the check is on the
hot path rather than in an opt-in ``call_checked``; on a mismatch a slow path decides (equal
shape/dtype with another weak_type is accepted) and raises ``XlaBridgeError`` naming the
argument. ``call_checked`` additionally checks devices and deleted (donated) buffers up front.

# NOTE: [donation]
Donation is decided by the module text: the lowering marks a donated parameter with
``{tf.aliasing_output = K : i32}`` when it knows output K has the same type (XLA then reuses
the buffer for that output), or with ``{jax.buffer_donor = true}`` to let XLA pick the output.
``compile(..., donate_argnums=...)`` does not rewrite the text: it is part of the cache key,
is checked against the text (a donated argument needs one of the two markers) and is
published as ``Executable.donate_argnums`` so the caller knows which inputs the call consumes
(they become ``is_deleted()``; reusing one raises ``XlaBridgeError``). While a NumPy view of an
input (``to_numpy``) is alive, XLA silently skips donating it.
"""

from __future__ import annotations

import re
import threading

import numpy as np  # noqa: F401 - the examples use it
from jaxlib import _jax
from jaxlib import xla_client as xc

from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.environment import bool_env

from . import backends, compile_cache, lapack, plugins, runtime_tokens
from .backends import (
    DONATED,
    ArrayImpl,
    XlaBridgeError,
    _backend_of,
    _callback_error,
    _JaxRuntimeError,
    default_device,
    result_handler,
    sharding,
)
from .dtypes import Aval, aval, main_signature, mlir_tensor_type

__all__ = [
    "Executable",
    "clear_compile_cache",
    "compile",
    "compile_cache_info",
    "hlo_computation",
    "hlo_cost_analysis",
    "hlo_text",
    "mlir_module",
    "option_overrides",
]

_lock = threading.Lock()


def _as_aval(x) -> Aval:
    """An interned Aval from an Aval, any object with .shape/.dtype, or a (shape, dtype) pair."""
    if isinstance(x, Aval):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return aval(x.shape, x.dtype, getattr(x, "weak_type", False))
    shape, dtype = x
    return aval(shape, dtype)


class Executable:
    """A compiled program bound to one device: ``exe(buffers) -> list of ArrayImpl``.

    Build it with ``compile``. Attributes: ``in_avals``, ``out_avals`` (tuples of Aval),
    ``device``, ``platform``, ``donate_argnums``, and ``call``: a plain function equivalent to
    ``__call__`` but ~0.7 us faster, for dispatch caches. Both check the input avals (see NOTE:
    [input validation]); outputs stay on the device.

    Example:
        >>> from funcgrad.xla_bridge.transfers import device_put, to_numpy
        >>> exe = compile('''func.func public @main(%a: tensor<3xf32>) -> tensor<3xf32> {
        ...   %b = stablehlo.add %a, %a : tensor<3xf32>
        ...   return %b : tensor<3xf32>
        ... }''', [((3,), np.float32)], [((3,), np.float32)])
        >>> to_numpy(exe([device_put(np.ones(3, np.float32))])[0])
        array([2., 2., 2.], dtype=float32)
    """

    __slots__ = (
        "_execute",
        "_handlers",
        "_in_list",
        "_loaded",
        "_text",
        "call",
        "device",
        "donate_argnums",
        "effectful",
        "in_avals",
        "out_avals",
        "platform",
    )

    def __init__(self, loaded, module_text, in_avals, out_avals, device, donate_argnums=(), effectful=False):
        self._loaded = loaded
        # A program with host callbacks returns a runtime token (NOTE: [runtime tokens]).
        self.effectful = effectful
        self._execute = loaded.execute_sharded
        self._text = module_text
        self.in_avals = tuple(_as_aval(a) for a in in_avals)
        self.out_avals = tuple(_as_aval(a) for a in out_avals)
        self._in_list = list(self.in_avals)
        self.device = device
        self.platform = device.platform
        self.donate_argnums = tuple(donate_argnums)
        s = sharding(device)
        # Built once: a handler turns an output buffer into an ArrayImpl with our aval,
        # uncommitted (a call with committed arguments commits them: NOTE: [committed arrays]).
        self._handlers = [result_handler(a, s, committed=False) for a in self.out_avals]
        self.call = self._make_call()

    def _make_call(self):
        # A closure over locals avoids the attribute lookups and slot_tp_call of __call__:
        # ~0.7 us less per call (measured), which is most of our overhead over raw jaxlib.
        # No reference back to self: the executable must not sit in a reference cycle.
        execute, handlers, expected = self._execute, self._handlers, self._in_list
        in_avals, device = self.in_avals, self.device
        if self.effectful:
            return _effectful_call(execute, handlers, in_avals, device)

        def call(buffers):
            try:
                # Identity compares per argument: avals are interned.
                ok = [b.aval for b in buffers] == expected
            except AttributeError:
                ok = False
            if not ok:
                # Raises, or accepts e.g. a weak_type-only difference.
                _check_inputs(buffers, in_avals, device, False)
            try:
                return execute(buffers).consume_with_handlers(handlers)
            except _JaxRuntimeError as e:
                raise _execute_error(e, device) from None

        call.__doc__ = "Fast path of __call__ (same checks); keep a reference to it for dispatch."
        return call

    def __call__(self, buffers):
        """Run on device buffers (a list); returns the outputs as a list of ArrayImpl."""
        return self.call(buffers)

    def call_checked(self, buffers):
        """``__call__`` plus up-front device and deleted-buffer checks, with clearer errors."""
        _check_inputs(buffers, self.in_avals, self.device, True)
        return self.call(buffers)

    def as_text(self) -> str:
        """The StableHLO module text this executable was compiled from."""
        return self._text if isinstance(self._text, str) else "<bytecode module>"

    def as_hlo_text(self) -> str:
        """XLA's optimized HLO after compilation (for debugging and benchmarks)."""
        return "\n".join(m.to_string() for m in self._loaded.hlo_modules())

    def memory_analysis(self):
        """XLA's memory plan of this program (jaxlib's ``CompiledMemoryStats``: bytes of
        ``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes`` and
        ``temp_size_in_bytes``, the scratch memory its buffer assignment needs)."""
        return self._loaded.get_compiled_memory_stats()

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of this program (``flops``, ``transcendentals``, ``bytes
        accessed`` and per-operand byte counts), as jaxlib's ``cost_analysis`` reports it."""
        return dict(self._loaded.cost_analysis())

    def __repr__(self):
        ins = ", ".join(map(repr, self.in_avals))
        outs = ", ".join(map(repr, self.out_avals))
        return f"Executable(({ins}) -> ({outs}) on {self.device})"


def _effectful_call(execute, handlers, in_avals, device):
    """``Executable.call`` of a program with host callbacks: run with a runtime token, which is
    recorded for ``effects_barrier`` (NOTE: [runtime tokens])."""
    devices = (device,)

    def call(buffers):
        _check_inputs(buffers, in_avals, device, False)
        try:
            results = execute(buffers, with_tokens=True)
            runtime_tokens.record(results, devices)
            return results.consume_with_handlers(handlers)
        except _JaxRuntimeError as e:
            raise _execute_error(e, device) from None

    return call


def _check_inputs(buffers, in_avals, device, strict):
    """Validate inputs against in_avals; raise XlaBridgeError naming the bad argument."""

    def fail(msg):
        raise XlaBridgeError(
            f"executable compiled for {device}: {msg}",
            phase="execute",
            platform=device.platform,
        )

    if len(buffers) != len(in_avals):
        fail(f"takes {len(in_avals)} arguments, got {len(buffers)}")
    for i, (b, want) in enumerate(zip(buffers, in_avals)):
        if type(b) is not ArrayImpl:
            fail(f"argument {i} is a {type(b).__name__}, not a device buffer; use device_put")
        got = b.aval
        if got.shape != want.shape or got.dtype != want.dtype:
            fail(
                f"argument {i} should be {want!r} but is {aval(got.shape, got.dtype)!r}. XLA "
                "only checks byte sizes, so running this would produce garbage. Hint: convert "
                "the input (astype/reshape) or recompile for these input types."
            )
        if strict and b.is_deleted():
            fail(f"argument {i}: {DONATED}")
        if strict and getattr(b._sharding, "_fg_device", None) is not device:
            fail(f"argument {i} lives on another device; move it with device_put(x, device)")


def _execute_error(e, device) -> XlaBridgeError:
    msg = str(e)
    # A donated buffer is "deleted or donated"; one deleted by Array.delete() has no shards left.
    if "deleted or donated" in msg or "shards, got: [0]" in msg:
        hint = DONATED
    elif "is on device" in msg or "assigned to device" in msg:
        hint = "all inputs must live on the executable's device; use device_put(x, device)."
    elif "Callback error calling callback" in msg:
        return _callback_error(msg, device)
    else:
        hint = "this is an XLA runtime failure; call_checked(...) validates inputs more strictly."
    return XlaBridgeError(
        f"XLA execution failed on {device.platform} ({device}): {msg}\nHint: {hint}",
        phase="execute",
        platform=device.platform,
    )


# --------------------------------------------------------------------------------------------
# Compilation
# --------------------------------------------------------------------------------------------


def _check_signature(text, in_avals, out_avals, platform):
    sig = main_signature(text)
    if sig is None:
        return
    for what, declared, avals in (
        ("argument", sig[0], in_avals),
        ("result", sig[1], out_avals),
    ):
        expected = [mlir_tensor_type(a.shape, a.dtype) for a in avals]
        if [t.replace(" ", "") for t in declared] != expected:
            raise XlaBridgeError(
                f"the module's @main {what} types {declared} do not match the given "
                f"{what} avals {expected}. Hint: the lowering must declare exactly the avals it "
                "passes to compile (XLA would not notice and would misread the buffers).",
                phase="compile",
                platform=platform,
                module_text=text,
            )


_LOC_RE = re.compile(r"(?:-|<unknown>|loc\(\"?[^:]*\"?):(\d+):(\d+)")
_NO_FFI_RE = re.compile(r"No FFI handler registered for (\S+) on a platform")


def _compile_error(e, text, platform, device) -> XlaBridgeError:
    msg = str(e).strip()
    context = ""
    m = _LOC_RE.search(msg) if isinstance(text, str) else None
    if m is not None:
        lines = text.splitlines()
        ln = int(m.group(1))
        if 1 <= ln <= len(lines):
            context = f"\n  line {ln}: {lines[ln - 1].strip()}"
    m = _NO_FFI_RE.search(msg)
    hint = (
        "funcgrad checks shapes before lowering, so this points at a lowering rule; "
        "the module text is in this error's .module_text."
        if m is None
        else f"register the handler first with funcgrad.ffi.register_ffi_target({m.group(1)!r}, "
        f"funcgrad.ffi.pycapsule(lib.Handler), platform={platform!r})."
    )
    return XlaBridgeError(
        f"XLA failed to compile a StableHLO module for {platform} ({device}):\n  {msg}{context}\n"
        f"Hint: {hint}",
        phase="compile",
        platform=platform,
        module_text=text,
    )


_exe_cache: dict = register_cache("xla_bridge.executables", {})  # NOTE: [caches have an owner]
_EXE_CACHE_SIZE = 4096
_mem_stats = {"hits": 0, "misses": 0}


def compile(
    module_text,
    in_avals,
    out_avals,
    *,
    device=None,
    donate_argnums=(),
    host_callbacks=(),
    compiler_options=None,
) -> Executable:
    """Compile a StableHLO module (MLIR text) for one device; cached in memory and on disk.

    ``in_avals``/``out_avals``: the types of @main's parameters/results, as Avals, objects with
    ``.shape``/``.dtype`` (and optionally ``.weak_type``), or (shape, dtype) pairs. They are
    checked against the text's signature. See NOTE: [donation] for ``donate_argnums``.
    ``host_callbacks``: the Python functions of the module's host-callback custom calls (by
    their ``index``); such a module is cached in memory only, per functions, never on disk.
    ``compiler_options``: XLA's options by name (``{"xla_cpu_enable_fast_math": True}``), as
    JAX's ``Lowered.compile(compiler_options=)``: set as the compile options' environment
    overrides; XLA refuses an unknown name or a bad value (``XlaBridgeError``, phase "compile").

    Example:
        >>> from funcgrad.xla_bridge.transfers import device_put, to_numpy
        >>> exe = compile('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   %b = stablehlo.multiply %a, %a : tensor<f64>
        ...   return %b : tensor<f64>
        ... }''', [((), np.float64)], [((), np.float64)])
        >>> float(to_numpy(exe([device_put(3.0)])[0]))
        9.0
    """
    if device is None:
        device = backends._default_dev or default_device()
    backend = _backend_of(device)
    ins = tuple(_as_aval(a) for a in in_avals)
    outs = tuple(_as_aval(a) for a in out_avals)
    donate = tuple(sorted({int(i) for i in donate_argnums}))
    host_callbacks = tuple(host_callbacks)
    overrides = option_overrides(compiler_options)
    key = (module_text, backend.platform, device.id, donate, ins, outs, host_callbacks, overrides)
    exe = _exe_cache.get(key)
    if exe is not None:
        _mem_stats["hits"] += 1
        return exe
    _mem_stats["misses"] += 1
    if not isinstance(module_text, (str, bytes)):
        raise TypeError(f"module_text must be MLIR text (str) or bytecode, got {type(module_text)}")
    if isinstance(module_text, str):
        _check_signature(module_text, ins, outs, backend.platform)
    for i in donate:
        if not 0 <= i < len(ins):
            raise ValueError(f"donate_argnums has {i}, but there are {len(ins)} arguments")
    if (
        donate
        and isinstance(module_text, str)
        and "tf.aliasing_output" not in module_text
        and "jax.buffer_donor" not in module_text
    ):
        raise ValueError(
            f"donate_argnums={donate} but the module marks no argument as donated; the "
            "lowering must emit {tf.aliasing_output = K : i32} or {jax.buffer_donor = true} "
            "on donated parameters"
        )
    if lapack.needs_lapack(module_text):
        try:
            lapack.ensure_registered(backend.platform, module_text)
        except ValueError as e:
            raise XlaBridgeError(str(e), phase="compile", platform=backend.platform) from None
    if host_callbacks and backend.platform == "cuda":
        try:
            plugins.require_cuda_extension("host callbacks on the GPU call handlers that")
        except plugins.PluginError as e:
            raise XlaBridgeError(str(e), phase="compile", platform=backend.platform) from None
    opts = backend.compile_options(device)
    if overrides:
        backends.set_compiler_options(opts, overrides)
    device_list = xc.DeviceList((device,))
    try:
        loaded = load_compiled(backend.client, module_text, device_list, opts, (device,), host_callbacks)
    except _JaxRuntimeError as e:
        raise _compile_error(e, module_text, backend.platform, device) from None
    exe = Executable(
        loaded,
        module_text,
        ins,
        outs,
        device,
        donate,
        effectful=runtime_tokens.has_effects(module_text, host_callbacks),
    )
    with _lock:
        if len(_exe_cache) >= _EXE_CACHE_SIZE:
            _exe_cache.pop(next(iter(_exe_cache)))  # oldest first: dicts keep insertion order
        _exe_cache[key] = exe
    return exe


# ``jax_disable_most_optimizations`` (funcgrad.config; JAX_DISABLE_MOST_OPTIMIZATIONS=1 at start, as JAX's)
_most_optimizations_disabled = [bool_env("JAX_DISABLE_MOST_OPTIMIZATIONS", False)]


def set_disable_most_optimizations(on: bool) -> None:
    """``jax_disable_most_optimizations``: compile with XLA's backend optimizations off, as JAX's
    ``get_compile_options`` sets them (the caller empties the compiled-program caches)."""
    _most_optimizations_disabled[0] = bool(on)


def load_compiled(client, module_text, device_list, opts, devices, host_callbacks=()):
    """``module_text`` compiled for ``device_list`` (``devices``, in order) and loaded: the one
    compile step of the single-device and the SPMD routes. Through the persistent compile cache
    (``compile_cache.compile_or_load``), except a module with host callbacks (Python functions,
    which no cache can store), which is parsed to MLIR and compiled afresh, timed.

    Example:
        >>> device = default_device()
        >>> opts = _backend_of(device).compile_options(device)
        >>> loaded = load_compiled(device.client, '''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   return %a : tensor<f64>
        ... }''', xc.DeviceList((device,)), opts, (device,))
        >>> len(loaded.local_devices())
        1
    """
    if _most_optimizations_disabled[0]:
        debug = opts.executable_build_options.debug_options
        debug.xla_backend_optimization_level = 0
        debug.xla_llvm_disable_expensive_passes = True
        debug.xla_test_all_input_layouts = False
    if host_callbacks:
        module = _mlir_module(module_text)
        return compile_cache.timed_compile(
            module_text, lambda: compile_and_load(client, module, device_list, opts, host_callbacks)
        )
    return compile_cache.compile_or_load(
        module_text,
        client,
        device_list,
        opts,
        [(d.device_kind, d.id) for d in devices],
        lambda: compile_and_load(client, module_text, device_list, opts),
    )


def option_overrides(options) -> tuple:
    """``compiler_options`` as sorted (name, value) pairs (a cache key part); a bool, int, float
    or str value each, as XLA's option parser takes them."""
    if not options:
        return ()
    if not isinstance(options, dict):
        raise TypeError(f"compiler_options must be a dict of XLA option names to values, got {options!r}")
    pairs = []
    for name, value in options.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f"compiler_options: {name!r}: {value!r} is not an option name (str) with a bool, "
                "int, float or str value"
            )
        pairs.append((name, value))
    return tuple(sorted(pairs, key=lambda p: p[0]))


def mlir_module(module_text: str):
    """The StableHLO text parsed into jaxlib's MLIR ``ir.Module`` (in a fresh context with the
    stablehlo, chlo, mhlo and sdy dialects), what JAX's ``Lowered.compiler_ir("stablehlo")``
    returns; ``str()`` of it prints the module.

    Example:
        >>> m = mlir_module('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   return %a : tensor<f64>
        ... }''')
        >>> "func.func public @main" in str(m)
        True
    """
    return _mlir_module(module_text)


# A replacement for ``compile_and_load`` below, or None (set with ``set_compile_hook``).
_compile_hook = None


def set_compile_hook(hook) -> None:
    """Route every compilation through ``hook(client, module, device_list, opts, host_callbacks)``
    instead of the client's ``compile_and_load`` (``None`` restores the direct call). The alias
    points it at ``jax._src.compiler.backend_compile_and_load``, so that a library patching that
    function (chex's ``restrict_backends``) sees every compilation, as it does on JAX.

    Returns the hook it replaces, so a caller can put it back.

    Example:
        >>> previous = set_compile_hook(None)  # compile directly for a while
        >>> set_compile_hook(previous) is None
        True
    """
    global _compile_hook
    previous, _compile_hook = _compile_hook, hook
    return previous


def compile_and_load(client, module, device_list, opts, host_callbacks=()):
    """Compile ``module`` with the PJRT ``client`` and load it onto ``device_list``: every
    compilation goes through here (or the hook ``set_compile_hook`` set)."""
    if _compile_hook is not None:
        return _compile_hook(client, module, device_list, opts, tuple(host_callbacks))
    if host_callbacks:
        return client.compile_and_load(module, device_list, opts, list(host_callbacks))
    return client.compile_and_load(module, device_list, opts)


def _mlir_module(module_text: str):
    """The text parsed into an MLIR module in a fresh context with the dialects loaded (the
    compiler takes host callbacks only with one): ``portable``'s context, the one MLIR setup."""
    portable = _portable()
    return portable.parse(module_text, portable.make_context())


def _portable():
    """``xla_bridge.portable``, which loads jaxlib's MLIR, imported when first needed."""
    from funcgrad.xla_bridge import portable  # noqa: PLC0415 - import-time cost: only modules with callbacks need MLIR

    return portable


def forget_executables(executables) -> None:
    """Drop ``executables`` from the in-memory executable cache (``jit(f).clear_cache()``: the
    programs of a function whose traces are forgotten are freed, as JAX's are, once nothing else
    holds them; another function's program of the same text keeps its own reference)."""
    ids = {id(e) for e in executables}
    with _lock:
        for key in [k for k, e in _exe_cache.items() if id(e) in ids]:
            del _exe_cache[key]


def clear_compile_cache() -> None:
    """Forget in-memory executables (the on-disk cache is untouched).

    Example:
        >>> clear_compile_cache(); compile_cache_info()["size"]
        0
    """
    with _lock:
        _exe_cache.clear()


def compile_cache_info() -> dict:
    """In-memory cache size and hit/miss counts, plus the persistent cache's counters.

    Example:
        >>> sorted(compile_cache_info())
        ['hits', 'misses', 'persistent', 'size']
    """
    return {
        "size": len(_exe_cache),
        "hits": _mem_stats["hits"],
        "misses": _mem_stats["misses"],
        "persistent": compile_cache.stats(),
    }


def mlir_text(module_text: str, debug_info: bool = False) -> str:
    """The module as MLIR prints it (JAX's ``Lowered.as_text()``: values numbered ``%0``,
    constants ``%c``/``%cst``, attributes in MLIR's forms), with its locations when
    ``debug_info`` (JAX's ``as_text(debug_info=True)``).

    Example:
        >>> print(mlir_text('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   %v7 = stablehlo.negate %a : tensor<f64> loc("jit(f)/neg")
        ...   return %v7 : tensor<f64>
        ... }''').splitlines()[2].strip())
        %0 = stablehlo.negate %arg0 : tensor<f64>
    """
    return _portable().text(_mlir_module(module_text), debug_info)


def hlo_text(module_text: str, debug_info: bool = False) -> str:
    """XLA's HLO text of a StableHLO module, before XLA's optimisations (jaxlib converts it),
    printed as JAX's ``Lowered.as_text("hlo")`` (XLA's short parsable form; with each
    instruction's metadata when ``debug_info``).

    Example:
        >>> print(hlo_text('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   %b = stablehlo.negate %a : tensor<f64>
        ...   return %b : tensor<f64>
        ... }''').strip().splitlines()[0])
        HloModule ...
    """
    from jaxlib import _hlo  # noqa: PLC0415 - (only printing needs XLA's print options)

    options = _hlo.HloPrintOptions.short_parsable()
    options.print_metadata = debug_info
    return hlo_computation(module_text).as_hlo_module().to_string(options)


def hlo_cost_analysis(module_text: str, platform: str | None = None) -> dict:
    """XLA's cost estimate of a StableHLO module before optimisation (what JAX's
    ``Lowered.cost_analysis`` reports): ``flops``, ``bytes accessed``, per-operand byte counts.

    Example:
        >>> cost = hlo_cost_analysis('''func.func public @main(%a: tensor<4xf64>) -> tensor<4xf64> {
        ...   %b = stablehlo.multiply %a, %a : tensor<4xf64>
        ...   return %b : tensor<4xf64>
        ... }''')
        >>> cost["flops"]
        4.0
    """
    module = hlo_computation(module_text).as_hlo_module()
    return dict(_jax.hlo_module_cost_analysis(backends.get_backend(platform).client, module))


def hlo_computation(module_text: str):
    """jaxlib's ``XlaComputation`` of a StableHLO module (what JAX's
    ``Lowered.compiler_ir("hlo")`` returns): ``.as_hlo_text()``, ``.as_serialized_hlo_module_proto()``,
    ``.program_shape()``, ...

    Example:
        >>> c = hlo_computation('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   return %a : tensor<f64>
        ... }''')
        >>> c.as_hlo_text().startswith("HloModule")
        True
    """
    try:
        return _jax.mlir.mlir_module_to_xla_computation(module_text, False, False)
    except _JaxRuntimeError as e:
        raise XlaBridgeError(f"converting a StableHLO module to HLO failed: {e}", phase="compile") from None
