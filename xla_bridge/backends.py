"""PJRT clients (backends), their devices and single-device shardings, and the bridge's error type.

Layer: xla_bridge (runtime half). May import: stdlib, numpy, jaxlib and its sibling ``plugins``.
Never jax, never funcgrad. ``xla_bridge.runtime`` re-exports this module's public names; the
transfers (``transfers``) and compiled programs (``executables``) build on it.

No client exists until first use (``get_backend``): importing this module starts nothing and
sets nothing outside it (NOTE: [jaxlib's log level]).

# NOTE: [jaxlib's log level]
# Without a minimum log level, jaxlib's C++ logging (absl, linked statically into jaxlib: its
# symbols are not exported, so no other library's absl shares the setting) prints INFO lines
# such as "PjRt-IFRT device count" to stderr when a client starts. jax sets
# ``TF_CPP_MIN_LOG_LEVEL=1`` in the environment when it is imported; funcgrad changes neither the
# environment nor anything at import: it sets jaxlib's level to WARNING just before it creates
# its first client, and only when the user has not chosen one with ``TF_CPP_MIN_LOG_LEVEL``. A
# process that uses jaxlib without funcgrad's clients keeps jaxlib's default
# (tests/integration/test_import_side_effects.py checks both).
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

from . import buffer_cache, plugins

__all__ = [
    "ArrayImpl",
    "Backend",
    "approx_top_k_output_size",
    "DONATED",
    "Device",
    "JaxRuntimeError",
    "XlaBridgeError",
    "backend_started",
    "chosen_default_platform",
    "compile_options",
    "configure_cpu_client",
    "cpu_async_dispatch",
    "cpu_client_options",
    "default_device",
    "default_platform",
    "devices",
    "get_backend",
    "ifrt_programs",
    "normalize_platform",
    "resolve_device",
    "result_handler",
    "sharding",
    "started_backends",
]

ArrayImpl = _jax.ArrayImpl
Device = _jax.Device  # the class of every device object (``funcgrad.Device``, ``jax.Device``)
# jaxlib's IFRT program builders (Pathways plugin and colocated-Python programs), which JAX publishes
# as ``jax.extend.ifrt_programs``; ``funcgrad.extend.ifrt_programs`` names this same module.
ifrt_programs = _jax.ifrt_programs
_JaxRuntimeError = _jax.JaxRuntimeError  # == xc.XlaRuntimeError
# jaxlib's runtime error class, the one ``jax.errors.JaxRuntimeError`` names (funcgrad.errors too).
JaxRuntimeError = _jax.JaxRuntimeError


class XlaBridgeError(_JaxRuntimeError):
    """An XLA failure (backend start, compile, execute, transfer) with what failed and a hint.

    A ``RuntimeError`` and, as in JAX, a ``JaxRuntimeError`` (jaxlib's class, the one
    ``funcgrad.errors.JaxRuntimeError`` names), so code written for JAX that catches
    ``jax.errors.JaxRuntimeError`` around a jitted call catches funcgrad's runtime failures too.

    Attributes: ``phase`` ("backend", "compile", "execute", "transfer"), ``platform`` and, for
    compile errors, ``module_text``.
    """

    def __init__(self, message, *, phase=None, platform=None, module_text=None):
        super().__init__(message)
        self.phase = phase
        self.platform = platform
        self.module_text = module_text


DONATED = (
    "this array was deleted or donated to an earlier jitted call (donate_argnums/donate_argnames), "
    "which consumed its device buffer. Use that call's output instead; to keep the value, donate a "
    "host copy (numpy.array(x)) or don't donate it."
)


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


# --------------------------------------------------------------------------------------------
# Backends, devices, shardings
# --------------------------------------------------------------------------------------------


class _Sharding(_jax.SingleDeviceSharding):
    """One device, as jaxlib's put and result handlers want it.

    A plain SingleDeviceSharding fails in batched_device_put: jaxlib reads these Python-level
    attributes (normally provided by jax's sharding classes).
    """

    def __init__(self, device, memory_kind=None):
        super().__init__(device, memory_kind=memory_kind)
        # ``None``: the device's own memory; "pinned_host"/"unpinned_host": host memory the device
        # addresses (jaxlib's CPU client lists both), where a buffer put with this sharding lives.
        self._fg_kind = memory_kind
        self._fg_device = device
        self._fg_device_list = xc.DeviceList((device,))
        # Host-readable through the buffer protocol (and np.asarray) without a transfer.
        self._fg_cpu = device.platform == "cpu"

    def _to_xla_hlo_sharding(self, ndim):
        return xc.HloSharding.replicate()

    memory_kind = property(lambda self: self._fg_kind)
    device_set = property(lambda self: {self._fg_device})
    _device_assignment = property(lambda self: (self._fg_device,))
    _fg_devs = _device_assignment  # as sharded.MeshSharding names its devices
    _internal_device_list = property(lambda self: self._fg_device_list)


_shardings: dict = {}


def sharding(device, memory_kind=None) -> _Sharding:
    """The cached single-device sharding of ``device`` (in its memory ``memory_kind``: ``None``
    for the device's own, else one of ``device.addressable_memories()``' kinds).

    Example:
        >>> sharding(default_device()) is sharding(default_device())
        True
    """
    if memory_kind is not None:
        key = (device, memory_kind)
        s = _shardings.get(key)
        if s is None:
            with _lock:
                s = _shardings.setdefault(key, _Sharding(device, memory_kind))
        return s
    s = _shardings.get(device)
    if s is None:
        with _lock:
            s = _shardings.get(device)
            if s is None:
                s = _shardings[device] = _Sharding(device)
    return s


def result_handler(aval, sharding, committed: bool = True):
    """jaxlib's handler that turns an output buffer into an ``ArrayImpl`` of ``aval``
    (``committed``: its committed flag, NOTE: [committed arrays] in xla_bridge/committed.py).

    jaxlib 0.10 takes ``_skip_checks`` (our avals are not jax's, so its checks do not apply);
    0.11 dropped the keyword and checks nothing.
    """
    if _RESULT_HANDLER_SKIPS_CHECKS:
        return _jax.array_result_handler(aval, sharding, committed, _skip_checks=True)
    return _jax.array_result_handler(aval, sharding, committed)


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
        _quiet_jaxlib_once()
        try:
            if platform == "cpu":
                opts = dict(cpu_client_options)
                if opts.get("num_devices") is None:
                    n = os.environ.get("FUNCGRAD_NUM_CPU_DEVICES")
                    opts["num_devices"] = int(n) if n else None
                opts["asynchronous"] = cpu_async_dispatch()
                buffer_cache.install()  # NOTE: [XLA's buffers kept between calls]
                nproc = _collective_thread_headroom(opts)  # NOTE: [synchronous CPU dispatch]
                previous = os.environ.get("PJRT_NPROC")
                if nproc is not None:
                    os.environ["PJRT_NPROC"] = str(nproc)
                try:
                    client = xc.make_cpu_client(**opts)
                finally:
                    if nproc is not None and previous is None:
                        os.environ.pop("PJRT_NPROC", None)
                    elif nproc is not None:
                        os.environ["PJRT_NPROC"] = previous  # (an empty one, as it was)
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
        # (the messages begin as JAX's do, "Unknown backend" / "failed to initialize": test
        # utilities match them, chex's assert_devices_available)
        except plugins.PluginError as e:
            raise XlaBridgeError(
                f"Unknown backend {platform!r}: {e}", phase="backend", platform=platform
            ) from None
        except _JaxRuntimeError as e:
            raise XlaBridgeError(
                f"Backend {platform!r} failed to initialize: could not start the {platform} backend: {e}",
                phase="backend",
                platform=platform,
            ) from None
        b = _backends[platform] = Backend(platform, client)
        return b


_log_level_set = False


def _quiet_jaxlib_once() -> None:
    """NOTE: [jaxlib's log level]: WARNING for jaxlib's own logging, once, before the first client
    starts, unless ``TF_CPP_MIN_LOG_LEVEL`` chose a level."""
    global _log_level_set
    if not _log_level_set:
        _log_level_set = True
        if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
            _jaxlib_utils.absl_set_min_log_level(1)


# Options of the CPU client, given before it is created: the device count
# (funcgrad.config's jax_num_cpu_devices) and the distributed runtime's client, process id,
# process count and cross-process collectives (funcgrad.distributed.initialize).
cpu_client_options: dict = {}


# NOTE: [synchronous CPU dispatch]
# The decision: with one CPU device (and ``cpu_async_dispatch()`` False) a jitted call returns
# after its computation ends -- its time includes the work, its errors are raised by the call, and
# a NumPy argument may be changed as soon as it returns. With several devices, with
# ``jax_cpu_enable_async_dispatch`` (or FUNCGRAD_CPU_ASYNC_DISPATCH=1), or on a GPU, dispatch is
# JAX's: a call may return first, and ``block_until_ready()`` or reading the value waits.
# The CPU client runs a program in the calling thread (``asynchronous=False``) only when its inputs
# are ready; PJRT copies a large NumPy argument in the background and runs a program waiting for
# it in a worker thread, so the native route waits for the outputs of a call that passed a large
# NumPy array (``xla_bridge.dispatch._WAIT_BYTES``); the other routes copy arguments before they
# run (tests/bridge/test_dispatch_routes.py).
# Why synchronous by default: unless asked, the CPU client runs programs in the calling thread
# instead of jax's default. PJRT's CPU client hands every program of 1000 or more estimated flops to a worker
# thread and the caller then waits for it: for the programs of a few microseconds that dominate
# notebooks (a jitted jet or gradient at a scalar) that hand-off costs about as much as the
# program (jit(jet) of order 8: 15 us asynchronous, 10 us synchronous). What asynchrony buys on a
# CPU is Python running ahead of a long program; a long program keeps the cores busy with XLA's
# own intra-op threads anyway, so that overlap is worth a few microseconds per call.
# On one core (GradBench pins every tool; `taskset -c 1`, jit(grad(logsumexp)) of 5000 float64
# elements, load 11-15): synchronous, 9-10 us of CPU a call and no context switch; asynchronous,
# 17 us of CPU, one voluntary and one involuntary switch a call (the caller sleeps in
# block_until_ready, the worker runs, wakes it) and 43 us of wall, the two threads taking turns
# (tests/bridge/test_dispatch_routes.py counts the calling thread's switches). What is left of a
# small call's wall time is not the dispatch: the first call after a compilation finds jaxlib's
# call path evicted from the caches by the tracing (35-45 us more, jax's as well; the next call is
# back at 11-15 us), and a new output buffer made while the last result is alive is page-faulted
# in (1.2-1.9 us per 4 KiB page on this machine, PyTorch's too).
# With several devices (virtual CPU devices, or processes) dispatch stays asynchronous, and
# asking for synchronous dispatch there is refused: a synchronous execution holds its pool thread
# while its collectives wait for the other devices' executions, and on a machine with fewer cores
# than devices an 8-device all-reduce then waited for a participant that never started (XLA
# aborts the process after 40 s; seen once in the notebook of 8-device data parallelism).
# Asynchronous dispatch alone did not end it: XLA runs a device's program in a thread of the
# client's pool and continues it, after an asynchronous Eigen dot, in a thread of its intra-op pool,
# so the all-reduce waits for the other devices inside an intra-op thread; both pools have
# max(cores, devices) threads (jaxlib's sizing), and with 8 devices on 2 busy cores the notebook's
# training loop aborted with 2 and with 6 of 8 participants arrived (4 busy loops beside it, twice in
# two runs, the process idle meanwhile). A CPU client of several virtual devices therefore gets at
# least two threads per device in both pools (``PJRT_NPROC``, which jaxlib reads when it makes the
# client, set for that moment only; a user's PJRT_NPROC/NPROC wins): 15 runs of the loop (about
# 3,000 steps) under the same load, none aborted. Machines with as many cores as that are unchanged.


def _collective_thread_headroom(opts: dict) -> int | None:
    """The thread count the CPU client about to start should size its pools for (jaxlib reads
    ``PJRT_NPROC`` when it makes them), or None to leave them as jaxlib sizes them: with several
    virtual devices, at least two threads per device (NOTE: [synchronous CPU dispatch])."""
    if os.environ.get("PJRT_NPROC") or os.environ.get("NPROC") or (opts.get("num_nodes") or 1) > 1:
        return None  # (set by the user; or devices of other processes: not this pool's participants)
    n = _requested_device_count(opts)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * n if n > 1 and cores < 2 * n else None


def _several_cpu_devices(opts: dict) -> bool:
    """Whether the CPU client about to start (or started) has more than one device or process."""
    if "cpu" in _backends:
        return len(_backends["cpu"].devices) > 1 or (opts.get("num_nodes") or 1) > 1
    if (opts.get("num_nodes") or 1) > 1:
        return True
    return _requested_device_count(opts) > 1


def _requested_device_count(opts: dict) -> int:
    """The number of devices the CPU client about to start is asked for: its options, else
    FUNCGRAD_NUM_CPU_DEVICES, else XLA_FLAGS' --xla_force_host_platform_device_count, else 1."""
    n = opts.get("num_devices") or os.environ.get("FUNCGRAD_NUM_CPU_DEVICES")
    if n:
        return int(n)
    flag = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(flag.group(1)) if flag else 1


def _requested_async() -> bool | None:
    """The dispatch asked for: jax_cpu_enable_async_dispatch, else FUNCGRAD_CPU_ASYNC_DISPATCH, else
    None (funcgrad's choice)."""
    chosen = cpu_client_options.get("asynchronous")
    if chosen is not None:
        return bool(chosen)
    env = os.environ.get("FUNCGRAD_CPU_ASYNC_DISPATCH", "")
    return None if env == "" else env not in ("0", "false", "False")


def cpu_async_dispatch() -> bool:
    """Whether jitted calls on the CPU may return before their computation ends (a worker thread
    runs each program that is not trivially cheap, as in jax), or return after it (funcgrad's
    default with one CPU device: programs run in the calling thread; NOTE: [synchronous CPU
    dispatch]).

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


def compile_options(
    num_replicas: int,
    num_partitions: int,
    device_assignment=None,
    env_options_overrides=None,
    fdo_profile: bytes | None = None,
):
    """XLA's ``CompileOptions`` for ``num_replicas`` x ``num_partitions`` devices (JAX's
    ``get_compile_options``, behind ``funcgrad.extend.backend`` and ``funcgrad.interpreters.pxla``):
    SPMD partitioning with Shardy when there are several partitions; ``device_assignment`` an array
    of device ids of shape ``(num_replicas, num_partitions)``; ``env_options_overrides`` XLA debug
    options by name; ``fdo_profile`` the build options' profile.

    >>> o = compile_options(1, 2, np.array([[0, 1]]))
    >>> o.num_partitions, o.device_assignment.computation_count()
    (2, 2)
    """
    opts = xc.CompileOptions()
    opts.num_replicas = num_replicas
    opts.num_partitions = num_partitions
    build = opts.executable_build_options
    if num_partitions > 1:
        build.use_spmd_partitioning = True
        build.use_shardy_partitioner = True
    if device_assignment is not None:
        ids = np.asarray([getattr(d, "id", d) for d in np.ravel(device_assignment)], np.int64)
        opts.device_assignment = xc.DeviceAssignment.create(ids.reshape(num_replicas, num_partitions))
    if env_options_overrides:
        set_compiler_options(opts, [(k, str(v)) for k, v in env_options_overrides.items()])
    if fdo_profile is not None:
        build.fdo_profile = fdo_profile
    return opts


# The compiler options that are fields of XLA's ExecutableBuildOptions rather than debug options
# (JAX's ``get_compile_options`` sets these on the build options; XLA's option parser, which
# takes the others, calls them "No such compile option").
_BUILD_OPTIONS = (
    "exec_time_optimization_effort",
    "memory_fitting_effort",
    "optimization_level",
    "memory_fitting_level",
)


def set_compiler_options(opts, pairs) -> None:
    """Set ``compiler_options`` (``(name, value)`` pairs) on ``opts`` (a ``CompileOptions``) as JAX
    does: the build options' own fields directly, the others as environment overrides, which XLA
    parses when it compiles (an unknown name or a bad value is its error then).

    >>> o = xc.CompileOptions()
    >>> set_compiler_options(o, [("optimization_level", 1), ("xla_dump_max_hlo_modules", 200)])
    >>> o.executable_build_options.optimization_level, o.env_option_overrides
    (1, [('xla_dump_max_hlo_modules', 200)])
    """
    rest = []
    for name, value in pairs:
        if name in _BUILD_OPTIONS:
            field = float(value) if name.endswith("effort") else int(value)
            setattr(opts.executable_build_options, name, field)
        else:
            rest.append((name, value))
    if rest:
        opts.env_option_overrides = rest


def approx_top_k_output_size(
    input_size: int, rank: int, k: int, recall_target: float, reduction_input_size_override: int
) -> int:
    """How many entries ``approx_max_k(..., aggregate_to_topk=False)`` keeps along its axis: XLA's
    window count for ``recall_target`` (the CPU keeps them sorted, as JAX's fallback does)."""
    return int(
        _jax.approx_top_k_reduction_output_size(
            input_size, rank, k, recall_target, False, reduction_input_size_override
        )[0]
    )


def _backend_of(device) -> Backend:
    # Devices report "gpu" where the client says "cuda": go through the aliases.
    b = _backends.get(normalize_platform(device.platform))
    if b is None or device.client is not b.client:
        b = get_backend(device.platform)
        if device.client is not b.client:
            raise ValueError(f"device {device} does not belong to the funcgrad {b.platform} client")
    return b
