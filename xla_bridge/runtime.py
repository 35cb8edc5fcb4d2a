"""XLA runtime: PJRT clients, device buffers, compiling and running StableHLO modules.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, ml_dtypes, jaxlib, and its
siblings ``dtypes``, ``plugins``, ``compile_cache``, ``dlpack``, ``lapack``. Never jax (jaxlib
lazily imports jax from a few C++ entry points; this module only uses the ones verified not to),
never funcgrad: the kernel calls this API, not the other way round. A module calling LAPACK
kernels gets them registered before it is compiled (``lapack.ensure_registered``).

Importing this module costs the jaxlib import (~0.1 s, mostly numpy + the C++ extension) but
creates no client; the CPU client is made on first use (``get_backend``).

# NOTE: [buffers are jaxlib ArrayImpl]
Device values are bare ``jaxlib._jax.ArrayImpl`` objects. Without jax they have ``.aval``,
``.block_until_ready()``, ``.delete()``, ``.is_deleted()`` and (on CPU) the buffer protocol, but
no ``.shape``/``.dtype``/arithmetic: wrap them (funcgrad.Array does), never monkeypatch.
``.aval`` is one of our interned ``Aval`` objects (see ``aval``).

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

# NOTE: [host transfers]
``device_put`` copies: it uses ``force_copy=True`` with ``IMMUTABLE_ONLY_DURING_CALL``, so
later writes to the NumPy array never show up on the device. (Zero-copy aliasing happens only
for 64-byte aligned arrays, so "sometimes aliased" would be the alternative.) ``to_numpy`` on
CPU returns a read-only zero-copy view for NumPy-native dtypes, and a copy for ml_dtypes
(bfloat16, float8) which have no buffer-protocol format; that copy goes through DLPack
because ``_single_device_array_to_np_array_did_copy`` imports jax. A buffer on another device
(a GPU) is first copied onto the CPU device (``host_copy``: a device-to-device copy between the
two clients, verified on an H100 not to import jax), then read like a CPU buffer.
"""

from __future__ import annotations

import os
import re
import threading
import warnings

import numpy as np
from jaxlib import _jax
from jaxlib import utils as _jaxlib_utils
from jaxlib import xla_client as xc

from . import compile_cache, lapack, plugins
from .dlpack import dlpack_to_numpy
from .dtypes import (
    SUB_BYTE_WIDE,
    SUPPORTED_DTYPES,
    Aval,
    aval,
    main_signature,
    mlir_tensor_type,
    widening_module,
)

# Mute absl INFO logs (e.g. "XLA service initialized") unless the user asked for a level.
if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
    _jaxlib_utils.absl_set_min_log_level(1)

__all__ = [
    "ArrayImpl",
    "Device",
    "Aval",
    "Backend",
    "Executable",
    "XlaBridgeError",
    "aval",
    "clear_compile_cache",
    "compile",
    "compile_cache_info",
    "backend_started",
    "configure_cpu_client",
    "cpu_async_dispatch",
    "default_device",
    "default_platform",
    "deleted_buffer_error",
    "device_put",
    "devices",
    "get_backend",
    "hlo_text",
    "resolve_device",
    "sharding",
    "to_numpy",
]

ArrayImpl = _jax.ArrayImpl
Device = _jax.Device  # the class of every device object (``funcgrad.Device``, ``jax.Device``)
_JaxRuntimeError = _jax.JaxRuntimeError  # == xc.XlaRuntimeError
_SUPPORTED = frozenset(SUPPORTED_DTYPES)


class XlaBridgeError(RuntimeError):
    """An XLA failure (backend start, compile, execute, transfer) with what failed and a hint.

    Attributes: ``phase`` ("backend", "compile", "execute", "transfer"), ``platform`` and, for
    compile errors, ``module_text``.
    """

    def __init__(self, message, *, phase=None, platform=None, module_text=None):
        super().__init__(message)
        self.phase = phase
        self.platform = platform
        self.module_text = module_text


def _as_aval(x) -> Aval:
    """An interned Aval from an Aval, any object with .shape/.dtype, or a (shape, dtype) pair."""
    if isinstance(x, Aval):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return aval(x.shape, x.dtype, getattr(x, "weak_type", False))
    shape, dtype = x
    return aval(shape, dtype)


# --------------------------------------------------------------------------------------------
# Backends, devices, shardings
# --------------------------------------------------------------------------------------------


class _Sharding(_jax.SingleDeviceSharding):
    """One device, as jaxlib's put and result handlers want it.

    A plain SingleDeviceSharding fails in batched_device_put: jaxlib reads these Python-level
    attributes (normally provided by jax's sharding classes).
    """

    def __init__(self, device):
        super().__init__(device)
        self._fg_device = device
        self._fg_device_list = xc.DeviceList((device,))
        # Host-readable through the buffer protocol (and np.asarray) without a transfer.
        self._fg_cpu = device.platform == "cpu"

    def _to_xla_hlo_sharding(self, ndim):
        return xc.HloSharding.replicate()

    memory_kind = property(lambda self: None)
    device_set = property(lambda self: {self._fg_device})
    _device_assignment = property(lambda self: (self._fg_device,))
    _fg_devs = _device_assignment  # as sharded.MeshSharding names its devices
    _internal_device_list = property(lambda self: self._fg_device_list)


_shardings: dict = {}


def sharding(device) -> _Sharding:
    """The cached single-device sharding of ``device``.

    Example:
        >>> sharding(default_device()) is sharding(default_device())
        True
    """
    s = _shardings.get(device)
    if s is None:
        with _lock:
            s = _shardings.get(device)
            if s is None:
                s = _shardings[device] = _Sharding(device)
    return s


def result_handler(aval, sharding):
    """jaxlib's handler that turns an output buffer into an ``ArrayImpl`` of ``aval``.

    jaxlib 0.10 takes ``_skip_checks`` (our avals are not jax's, so its checks do not apply);
    0.11 dropped the keyword and checks nothing.
    """
    if _RESULT_HANDLER_SKIPS_CHECKS:
        return _jax.array_result_handler(aval, sharding, True, _skip_checks=True)
    return _jax.array_result_handler(aval, sharding, True)


_RESULT_HANDLER_SKIPS_CHECKS = "_skip_checks" in (_jax.array_result_handler.__doc__ or "")


class Backend:
    """A PJRT client with its devices.

    Attributes: ``platform`` ("cpu", "cuda", or a plugin name), ``client``, ``devices`` (this
    process's jaxlib Devices), ``global_devices`` (every process's), ``default_device``.
    """

    __slots__ = ("client", "default_device", "devices", "global_devices", "platform")

    def __init__(self, platform, client):
        self.platform = platform
        self.client = client
        self.devices = list(client.local_devices())
        # Every process's devices (the same as ``devices`` without funcgrad.distributed).
        self.global_devices = list(client.devices())
        self.default_device = self.devices[0]

    def compile_options(self, device) -> xc.CompileOptions:
        """Fresh CompileOptions pinning the program to ``device``."""
        opts = xc.CompileOptions()
        # Without an explicit assignment XLA runs on the client's first device.
        opts.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
        if self.platform == "cuda":
            d = plugins.cuda_data_dir()
            if d:
                opts.executable_build_options.debug_options.xla_gpu_cuda_data_dir = d
        return opts

    def __repr__(self):
        return f"Backend(platform={self.platform!r}, devices={self.devices})"


_lock = threading.RLock()
_backends: dict[str, Backend] = {}
_default_platform: str | None = None
_PLATFORM_ALIASES = {"gpu": "cuda", "host": "cpu"}


def normalize_platform(p: str) -> str:
    """The backend name of a platform name: jaxlib's CUDA devices say ``"gpu"``, the backend (and
    the lowering rules) say ``"cuda"``.

    >>> normalize_platform("gpu"), normalize_platform(" CPU ")
    ('cuda', 'cpu')
    """
    p = p.strip().lower()
    return _PLATFORM_ALIASES.get(p, p)


def default_platform() -> str:
    """The platform used when none is given.

    ``FUNCGRAD_PLATFORM`` (cpu/cuda) decides; unset, it is "cuda" when a CUDA plugin is
    installed and a GPU is visible (falling back to "cpu" with a warning if that GPU cannot be
    started), else "cpu".

    Example:
        >>> default_platform() in ("cpu", "cuda")
        True
    """
    global _default_platform
    if _default_platform is None:
        env = os.environ.get("FUNCGRAD_PLATFORM", "").strip()
        if env:
            _default_platform = normalize_platform(env)
        elif plugins.visible_nvidia_gpu() and plugins.find_cuda_plugin() is not None:
            try:
                _create_backend("cuda")
                _default_platform = "cuda"
            except XlaBridgeError as e:
                warnings.warn(f"{e}\nFalling back to the CPU.", RuntimeWarning, stacklevel=2)
                _default_platform = "cpu"
        else:
            _default_platform = "cpu"
    return _default_platform


def started_backends() -> dict[str, int]:
    """The backends created so far and their device counts (settings such as the CPU device count
    or the platform can change only before their backend starts).

    Example:
        >>> isinstance(started_backends(), dict)
        True
    """
    return {p: len(b.devices) for p, b in _backends.items()}


def chosen_default_platform() -> str | None:
    """The default platform if it has been decided (by a first computation), else None.

    Example:
        >>> chosen_default_platform() in (None, "cpu", "cuda")
        True
    """
    return _default_platform


def _create_backend(platform: str) -> Backend:
    with _lock:
        b = _backends.get(platform)
        if b is not None:
            return b
        try:
            if platform == "cpu":
                opts = dict(cpu_client_options)
                if opts.get("num_devices") is None:
                    n = os.environ.get("FUNCGRAD_NUM_CPU_DEVICES")
                    opts["num_devices"] = int(n) if n else None
                opts["asynchronous"] = cpu_async_dispatch()
                client = xc.make_cpu_client(**opts)
            elif platform == "cuda":
                client = plugins.make_cuda_client()
            else:
                path = plugins.plugins_from_env().get(platform)
                if path is None:
                    raise plugins.PluginError(
                        f"unknown platform {platform!r}: expected 'cpu' or 'cuda', or a PJRT "
                        f"plugin named in PJRT_NAMES_AND_LIBRARY_PATHS ('{platform}:/path.so')."
                    )
                client = plugins.make_plugin_client(platform, path)
        except plugins.PluginError as e:
            raise XlaBridgeError(str(e), phase="backend", platform=platform) from None
        except _JaxRuntimeError as e:
            raise XlaBridgeError(
                f"could not start the {platform} backend: {e}",
                phase="backend",
                platform=platform,
            ) from None
        b = _backends[platform] = Backend(platform, client)
        return b


# Options of the CPU client, given before it is created: the device count
# (funcgrad.config's jax_num_cpu_devices) and the distributed runtime's client, process id,
# process count and cross-process collectives (funcgrad.distributed.initialize).
cpu_client_options: dict = {}


# NOTE: [synchronous CPU dispatch]
# With one CPU device, the CPU client runs programs in the calling thread (``asynchronous=False``)
# unless ``jax_cpu_enable_async_dispatch`` (or FUNCGRAD_CPU_ASYNC_DISPATCH=1) asks for jax's
# default. PJRT's CPU client hands every program of 1000 or more estimated flops to a worker
# thread and the caller then waits for it: for the programs of a few microseconds that dominate
# notebooks (a jitted jet or gradient at a scalar) that hand-off costs about as much as the
# program (jit(jet) of order 8: 15 us asynchronous, 10 us synchronous). What asynchrony buys on a
# CPU is Python running ahead of a long program; a long program keeps the cores busy with XLA's
# own intra-op threads anyway, so that overlap is worth a few microseconds per call.
# With several devices (virtual CPU devices, or processes) dispatch stays asynchronous, and
# asking for synchronous dispatch there is refused: a synchronous execution holds its pool thread
# while its collectives wait for the other devices' executions, and on a machine with fewer cores
# than devices an 8-device all-reduce then waited for a participant that never started (XLA
# aborts the process after 40 s; seen once in the notebook of 8-device data parallelism).


def _several_cpu_devices(opts: dict) -> bool:
    """Whether the CPU client about to start (or started) has more than one device or process."""
    if "cpu" in _backends:
        return len(_backends["cpu"].devices) > 1 or (opts.get("num_nodes") or 1) > 1
    if (opts.get("num_nodes") or 1) > 1:
        return True
    n = opts.get("num_devices") or os.environ.get("FUNCGRAD_NUM_CPU_DEVICES")
    if n:
        return int(n) > 1
    flag = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return bool(flag) and int(flag.group(1)) > 1


def _requested_async() -> bool | None:
    """The dispatch asked for: jax_cpu_enable_async_dispatch, else FUNCGRAD_CPU_ASYNC_DISPATCH, else
    None (funcgrad's choice)."""
    chosen = cpu_client_options.get("asynchronous")
    if chosen is not None:
        return bool(chosen)
    env = os.environ.get("FUNCGRAD_CPU_ASYNC_DISPATCH", "")
    return None if env == "" else env not in ("0", "false", "False")


def cpu_async_dispatch() -> bool:
    """Whether the CPU client dispatches asynchronously (a worker thread runs each program that
    is not trivially cheap, as in jax) or runs programs in the calling thread (funcgrad's
    default with one CPU device; NOTE: [synchronous CPU dispatch]).

    Example:
        >>> cpu_async_dispatch() in (True, False)
        True
    """
    several = _several_cpu_devices(cpu_client_options)
    requested = _requested_async()
    if requested is False and several:
        raise XlaBridgeError(
            "synchronous CPU dispatch (jax_cpu_enable_async_dispatch=False or "
            "FUNCGRAD_CPU_ASYNC_DISPATCH=0) works with one CPU device only: with several, an "
            "execution waiting in a collective can hold the thread another device needs. Leave "
            "the setting unset (funcgrad then dispatches asynchronously with several devices).",
            phase="backend",
            platform="cpu",
        )
    return several if requested is None else requested


def configure_cpu_client(**options) -> None:
    """Set options of ``xc.make_cpu_client`` for the CPU client, before it exists."""
    with _lock:
        if "cpu" in _backends:
            raise RuntimeError(
                "the CPU backend has already started (something ran or listed devices), so its options "
                "can no "
                "longer change; set them at the start of the program, before any computation"
            )
        cpu_client_options.update(options)


def backend_started(platform: str = "cpu") -> bool:
    """Whether the backend of ``platform`` has been created."""
    return platform in _backends


def get_backend(platform: str | None = None) -> Backend:
    """The backend for ``platform`` (default: ``default_platform()``), created on first use.

    Example:
        >>> b = get_backend("cpu"); b.platform, b.default_device
        ('cpu', CpuDevice(id=0))
    """
    p = default_platform() if platform is None else normalize_platform(platform)
    b = _backends.get(p)
    return b if b is not None else _create_backend(p)


def devices(platform: str | None = None) -> list:
    """The devices of a backend.

    Example:
        >>> devices("cpu")[0].platform
        'cpu'
    """
    return list(get_backend(platform).devices)


_default_dev = None


def default_device():
    """The default backend's first device.

    Example:
        >>> default_device().id
        0
    """
    global _default_dev
    if _default_dev is None:
        _default_dev = get_backend().default_device
    return _default_dev


def resolve_device(device=None, backend: str | None = None):
    """The device a computation is placed on: ``device`` (one of ``devices()``), or the default
    device of ``backend`` ("cpu", "cuda", a plugin name); ``None`` when neither is given (the
    default device, decided on first use). Errors name the parameter.

    Example:
        >>> resolve_device(backend="cpu").platform
        'cpu'
        >>> resolve_device(device="cpu")
        Traceback (most recent call last):
        ...
        TypeError: device= must be a Device (an element of devices()), got the str 'cpu'; ...
    """
    if device is not None:
        if backend is not None:
            raise ValueError(f"give device= or backend=, not both (got device={device}, backend={backend!r})")
        if not isinstance(device, xc.Device):
            hint = f"; for a platform name use backend={device!r}" if isinstance(device, str) else ""
            raise TypeError(
                f"device= must be a Device (an element of devices()), got the "
                f"{type(device).__name__} {device!r}{hint}"
            )
        try:
            _backend_of(device)
        except (ValueError, XlaBridgeError) as e:
            raise ValueError(f"device={device} is not usable: {e}") from None
        return device
    if backend is None:
        return None
    if not isinstance(backend, str):
        raise TypeError(f"backend= must be a platform name such as 'cpu', got the {type(backend).__name__}")
    try:
        return get_backend(backend).default_device
    except XlaBridgeError as e:
        raise ValueError(f"backend={backend!r} is not available: {e}") from None


def _backend_of(device) -> Backend:
    # Devices report "gpu" where the client says "cuda": go through the aliases.
    b = _backends.get(normalize_platform(device.platform))
    if b is None or device.client is not b.client:
        b = get_backend(device.platform)
        if device.client is not b.client:
            raise ValueError(f"device {device} does not belong to the funcgrad {b.platform} client")
    return b


# --------------------------------------------------------------------------------------------
# Host <-> device
# --------------------------------------------------------------------------------------------

_COPY = _jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
_put = _jax.batched_device_put


def device_put(x, device=None, *, weak_type: bool = False):
    """Copy a NumPy array or scalar to a device; returns a jaxlib ``ArrayImpl``.

    The data is copied during the call, so later changes to ``x`` are not seen. An
    ``ArrayImpl`` already on ``device`` is returned as is; one on another device goes through
    the host.

    Example:
        >>> buf = device_put(np.arange(3.0)); buf.aval
        float64[3]
        >>> to_numpy(buf)
        array([0., 1., 2.])
    """
    if device is None:
        device = _default_dev or default_device()
    if type(x) is ArrayImpl:
        s = x._sharding
        if getattr(s, "_fg_device", None) is device:
            return x
        x = to_numpy(x)
    a = np.asarray(x)
    dt = a.dtype
    if dt.byteorder == ">":  # XLA would read big-endian bytes as little-endian
        a = a.astype(dt.newbyteorder("="))
        dt = a.dtype
    if dt not in _SUPPORTED:
        raise TypeError(f"device_put: dtype {dt} is not supported by XLA (value of type {type(x).__name__})")
    try:
        return _put(
            aval(a.shape, dt, weak_type),
            sharding(device),
            [a],
            [device],
            True,
            True,
            _COPY,
            True,
        )
    except _JaxRuntimeError as e:
        raise XlaBridgeError(
            f"copying a {dt}{list(a.shape)} array to {device} failed: {e}",
            phase="transfer",
            platform=device.platform,
        ) from None


def to_numpy(buf) -> np.ndarray:
    """The value of a device buffer as a NumPy array (blocks until it is computed).

    On CPU, NumPy-native dtypes give a read-only zero-copy view; bfloat16/float8 and non-CPU
    devices give a copy.

    Example:
        >>> to_numpy(device_put(np.float32(2.5)))
        array(2.5, dtype=float32)
    """
    try:
        dt = buf.aval.dtype
        cpu = buf._sharding._fg_cpu
    except AttributeError:
        raise TypeError(
            f"to_numpy expects a device buffer from xla_bridge, got {type(buf).__name__}"
        ) from None
    if cpu and dt.kind != "V":  # kind "V": ml_dtypes, which the buffer protocol lacks
        try:
            # Through the C buffer protocol, not ArrayImpl.__array__, which jax patches globally
            # when it is imported in the same process (then it would call into jax).
            out = np.asarray(memoryview(buf))
        except (BufferError, _JaxRuntimeError):  # e.g. a failed async computation
            out = None
        # A deleted buffer turns into an object array instead of raising.
        if out is not None and out.dtype == dt:
            return out
    return _to_numpy_slow(buf, dt, cpu)


DONATED = (
    "this array was deleted or donated to an earlier jitted call (donate_argnums/donate_argnames), "
    "which consumed its device buffer. Use that call's output instead; to keep the value, donate a "
    "host copy (numpy.array(x)) or don't donate it."
)


def deleted_buffer_error(buf, what: str = "") -> XlaBridgeError:
    """The error for using a donated (deleted) buffer; ``what`` says where (an argument name)."""
    platform = buf._sharding._fg_device.platform
    return XlaBridgeError(f"{what}{DONATED}", phase="transfer", platform=platform)


def host_copy(buf):
    """A copy of a one-device buffer on the CPU device, so the host can read it.

    jaxlib's own read-back of an accelerator buffer (``_single_device_array_to_np_array_did_copy``)
    imports jax (NOTE: [host transfers]); a device-to-device copy onto the CPU client does not.

    Example:
        >>> to_numpy(host_copy(device_put(np.arange(2.0))))
        array([0., 1.])
    """
    cpu = get_backend("cpu").default_device
    (out,) = _jax.batched_copy_array_to_devices_with_sharding(
        [buf], [xc.DeviceList((cpu,))], [sharding(cpu)], [_jax.ArrayCopySemantics.ALWAYS_COPY]
    )
    return out


def _to_numpy_slow(buf, dt, cpu) -> np.ndarray:
    read = getattr(buf._sharding, "_fg_read", None)
    if read is not None:  # a value over several devices: xla_bridge.sharded assembles its shards
        return read(buf)
    platform = buf._sharding._fg_device.platform
    if buf.is_deleted():
        raise deleted_buffer_error(buf)
    try:
        if dt in SUB_BYTE_WIDE:  # no host format: widen on the device, narrow on the host
            wide = SUB_BYTE_WIDE[dt]
            shape = buf.aval.shape
            exe = compile(
                widening_module(shape, dt), [(shape, dt)], [(shape, wide)], device=buf._sharding._fg_device
            )
            return to_numpy(exe([buf])[0]).astype(dt)
        if cpu:
            return dlpack_to_numpy(buf, dt)
        return to_numpy(host_copy(buf))
    except _JaxRuntimeError as e:
        if "Callback error calling callback" in str(e):
            raise _callback_error(str(e), buf._sharding._fg_device) from None
        raise XlaBridgeError(
            f"reading an array back from {platform} failed: {e}\n"
            "Hint: errors raised while a program runs asynchronously surface here.",
            phase="execute",
            platform=platform,
        ) from None


# --------------------------------------------------------------------------------------------
# Executables
# --------------------------------------------------------------------------------------------


class Executable:
    """A compiled program bound to one device: ``exe(buffers) -> list of ArrayImpl``.

    Build it with ``compile``. Attributes: ``in_avals``, ``out_avals`` (tuples of Aval),
    ``device``, ``platform``, ``donate_argnums``, and ``call``: a plain function equivalent to
    ``__call__`` but ~0.7 us faster, for dispatch caches. Both check the input avals (see NOTE:
    [input validation]); outputs stay on the device.

    Example:
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
        "in_avals",
        "out_avals",
        "platform",
    )

    def __init__(self, loaded, module_text, in_avals, out_avals, device, donate_argnums=()):
        self._loaded = loaded
        self._execute = loaded.execute_sharded
        self._text = module_text
        self.in_avals = tuple(_as_aval(a) for a in in_avals)
        self.out_avals = tuple(_as_aval(a) for a in out_avals)
        self._in_list = list(self.in_avals)
        self.device = device
        self.platform = device.platform
        self.donate_argnums = tuple(donate_argnums)
        s = sharding(device)
        # Built once: a handler turns an output buffer into an ArrayImpl with our aval.
        self._handlers = [result_handler(a, s) for a in self.out_avals]
        self.call = self._make_call()

    def _make_call(self):
        # A closure over locals avoids the attribute lookups and slot_tp_call of __call__:
        # ~0.7 us less per call (measured), which is most of our overhead over raw jaxlib.
        # No reference back to self: the executable must not sit in a reference cycle.
        execute, handlers, expected = self._execute, self._handlers, self._in_list
        in_avals, device = self.in_avals, self.device

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


def _callback_error(msg: str, device) -> XlaBridgeError:
    # A Python host callback raised: its traceback is in the message; lead with its last line.
    # On the CPU it surfaces when the program runs, on a GPU (asynchronous) when it is read back.
    raised = msg.rstrip().splitlines()[-1]
    return XlaBridgeError(
        f"a host callback (pure_callback, debug.callback, debug.print) raised {raised}\n"
        f"while running on {device.platform} ({device}): {msg}",
        phase="execute",
        platform=device.platform,
    )


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


def _compile_error(e, text, platform, device) -> XlaBridgeError:
    msg = str(e).strip()
    context = ""
    m = _LOC_RE.search(msg) if isinstance(text, str) else None
    if m is not None:
        lines = text.splitlines()
        ln = int(m.group(1))
        if 1 <= ln <= len(lines):
            context = f"\n  line {ln}: {lines[ln - 1].strip()}"
    return XlaBridgeError(
        f"XLA failed to compile a StableHLO module for {platform} ({device}):\n  {msg}{context}\n"
        "Hint: funcgrad checks shapes before lowering, so this points at a lowering rule; "
        "the module text is in this error's .module_text.",
        phase="compile",
        platform=platform,
        module_text=text,
    )


_exe_cache: dict = {}
_EXE_CACHE_SIZE = 4096
_mem_stats = {"hits": 0, "misses": 0}


def compile(
    module_text, in_avals, out_avals, *, device=None, donate_argnums=(), host_callbacks=()
) -> Executable:
    """Compile a StableHLO module (MLIR text) for one device; cached in memory and on disk.

    ``in_avals``/``out_avals``: the types of @main's parameters/results, as Avals, objects with
    ``.shape``/``.dtype`` (and optionally ``.weak_type``), or (shape, dtype) pairs. They are
    checked against the text's signature. See NOTE: [donation] for ``donate_argnums``.
    ``host_callbacks``: the Python functions of the module's host-callback custom calls (by
    their ``index``); such a module is cached in memory only, per functions, never on disk.

    Example:
        >>> exe = compile('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   %b = stablehlo.multiply %a, %a : tensor<f64>
        ...   return %b : tensor<f64>
        ... }''', [((), np.float64)], [((), np.float64)])
        >>> float(to_numpy(exe([device_put(3.0)])[0]))
        9.0
    """
    if device is None:
        device = _default_dev or default_device()
    backend = _backend_of(device)
    ins = tuple(_as_aval(a) for a in in_avals)
    outs = tuple(_as_aval(a) for a in out_avals)
    donate = tuple(sorted({int(i) for i in donate_argnums}))
    host_callbacks = tuple(host_callbacks)
    key = (module_text, backend.platform, device.id, donate, ins, outs, host_callbacks)
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
    device_list = xc.DeviceList((device,))
    client = backend.client

    def compile_fn():
        return client.compile_and_load(module_text, device_list, opts)

    try:
        if host_callbacks:
            module = _mlir_module(module_text)
            loaded = client.compile_and_load(module, device_list, opts, list(host_callbacks))
        else:
            loaded = compile_cache.compile_or_load(
                module_text,
                client,
                device_list,
                opts,
                [(device.device_kind, device.id)],
                compile_fn,
            )
    except _JaxRuntimeError as e:
        raise _compile_error(e, module_text, backend.platform, device) from None
    exe = Executable(loaded, module_text, ins, outs, device, donate)
    with _lock:
        if len(_exe_cache) >= _EXE_CACHE_SIZE:
            _exe_cache.pop(next(iter(_exe_cache)))  # oldest first: dicts keep insertion order
        _exe_cache[key] = exe
    return exe


def _mlir_module(module_text: str):
    """The text parsed into an MLIR module (the compiler takes host callbacks only with one)."""
    from jaxlib.mlir import ir  # noqa: PLC0415 - import-time cost: only modules with callbacks need MLIR
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext  # noqa: PLC0415 - as above
    from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo  # noqa: PLC0415 - as above

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    stablehlo.register_dialect(context)
    chlo.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    sdy.register_dialect(context)
    with context:
        return ir.Module.parse(module_text)


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


def hlo_text(module_text: str) -> str:
    """XLA's HLO text of a StableHLO module, before XLA's optimisations (jaxlib converts it).

    Example:
        >>> print(hlo_text('''func.func public @main(%a: tensor<f64>) -> tensor<f64> {
        ...   %b = stablehlo.negate %a : tensor<f64>
        ...   return %b : tensor<f64>
        ... }''').strip().splitlines()[0])
        HloModule ...
    """
    try:
        computation = _jax.mlir.mlir_module_to_xla_computation(module_text, False, False)
    except _JaxRuntimeError as e:
        raise XlaBridgeError(f"converting a StableHLO module to HLO failed: {e}", phase="compile") from None
    return computation.as_hlo_text()
