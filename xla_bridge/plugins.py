"""PJRT plugin discovery (CUDA first) without importing jax.

Layer: xla_bridge (runtime half). May import: stdlib at module level; jaxlib.xla_client inside
the functions that actually load a plugin (it is heavy, and discovery alone must stay cheap).
Never jax, never funcgrad.

How a CUDA client is made (the same steps jax's ``jax_plugins/cuda`` performs, minus jax):

1. Find the plugin library. ``PJRT_NAMES_AND_LIBRARY_PATHS="cuda:/path/lib.so,..."`` wins;
   otherwise look for the ``jax-cuda13-pjrt`` / ``jax-cuda12-pjrt`` wheels, i.e. the packages
   ``jax_plugins.xla_cuda13`` / ``jax_plugins.xla_cuda12``. We use ``importlib.util.find_spec``
   and never import them: their ``__init__`` imports jax.
2. Check that an NVIDIA GPU is visible (``/dev/nvidia0``, ``/dev/nvidiactl`` or WSL's
   ``/dev/dxg``), so "plugin installed, no GPU" gets its own message instead of a C++ error.
3. Preload the pip ``nvidia.*`` libraries (cudart, cublas, cudnn, ...) with ctypes, so the
   plugin's later ``dlopen`` by soname finds those copies rather than a system CUDA.
4. ``xc.load_pjrt_plugin_dynamically`` + ``xc.initialize_pjrt_plugin`` (once per process), then
   ``xc.make_c_api_client("cuda", xc.generate_pjrt_gpu_plugin_options())``.

Every failure raises ``PluginError`` whose message names what is missing and how to fix it; the
runtime re-raises it as ``XlaBridgeError``. The plugin must match the installed jaxlib version
(the PJRT C API only tolerates small skews), so the install hint pins it.

Not done: ROCm, TPU and ``.json`` plugin configs in ``PJRT_NAMES_AND_LIBRARY_PATHS``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import os
import pathlib
import threading
import warnings

__all__ = [
    "CudaPlugin",
    "PluginError",
    "cuda_data_dir",
    "find_cuda_plugin",
    "make_cuda_client",
    "make_plugin_client",
    "plugins_from_env",
    "preload_nvidia_libraries",
    "register_cuda_extension",
    "register_cuda_solvers",
    "require_cuda_extension",
    "visible_nvidia_gpu",
]

# Newest first: a machine with both wheels uses CUDA 13.
_CUDA_PACKAGES = (("jax_plugins.xla_cuda13", "13"), ("jax_plugins.xla_cuda12", "12"))
_PLUGIN_LIBRARY = "xla_cuda_plugin.so"
_NVIDIA_DEVICE_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg")

# (pip module under nvidia.*, libraries), per CUDA major version, as jax preloads them.
_NVIDIA_LIBS = {
    "12": (
        ("cuda_runtime", ("libcudart.so.12",)),
        ("cuda_nvrtc", ("libnvrtc.so.12",)),
        ("cublas", ("libcublas.so.12", "libcublasLt.so.12")),
        ("nccl", ("libnccl.so.2",)),
        ("cuda_cupti", ("libcupti.so.12",)),
        ("cusparse", ("libcusparse.so.12",)),
        ("cusolver", ("libcusolver.so.11",)),
        ("cufft", ("libcufft.so.11",)),
        ("nvshmem", ("libnvshmem_host.so.3",)),
        ("cudnn", ("libcudnn.so.9",)),
    ),
    "13": (
        (
            "cu13",
            (
                "libcudart.so.13",
                "libnvrtc.so.13",
                "libcublas.so.13",
                "libcublasLt.so.13",
                "libcupti.so.13",
                "libcusparse.so.12",
                "libcusolver.so.12",
                "libcufft.so.12",
            ),
        ),
        ("nccl", ("libnccl.so.2",)),
        ("nvshmem", ("libnvshmem_host.so.3",)),
        ("cudnn", ("libcudnn.so.9",)),
    ),
}

_lock = threading.Lock()
# Plugin name -> library path, once loaded in this process (PJRT allows one load per name).
_loaded_plugins: dict[str, str] = {}
# Plugin name -> the PJRT C API capsule ``load_pjrt_plugin_dynamically`` returned.
_plugin_apis: dict = {}
# The companion wheel's cuSOLVER module once its extension is registered with XLA, or None when
# the wheel is missing (NOTE: [CUDA extension]); empty until a CUDA client is made.
_cuda_extension: list = []


class PluginError(RuntimeError):
    """A PJRT plugin could not be found or started; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class CudaPlugin:
    """Where a CUDA PJRT plugin was found."""

    library_path: str
    source: str  # "PJRT_NAMES_AND_LIBRARY_PATHS" or the package name
    cuda_major: str | None  # "12" / "13", None when given by the env var
    distribution: str | None  # pip distribution name, for version checks


def _jaxlib_version() -> str:
    from jaxlib import version  # light: a constants module

    return version.__version__


def install_hint() -> str:
    """The pip command that installs a CUDA plugin matching this jaxlib.

    Example:
        >>> "jax-cuda12-pjrt" in install_hint()
        True
    """
    v = _jaxlib_version()
    return (
        f'pip install "jax-cuda12-pjrt=={v}" "jax-cuda12-plugin[with-cuda]=={v}"'
        f'  (or the cuda13 variants: "jax-cuda13-pjrt=={v}" "jax-cuda13-plugin[with-cuda]=={v}")'
    )


def plugins_from_env(value: str | None = None) -> dict[str, str]:
    """Parse ``PJRT_NAMES_AND_LIBRARY_PATHS`` ("name:path,name2:path2") into a dict.

    Example:
        >>> plugins_from_env("cuda:/opt/x.so, foo:/y.so")
        {'cuda': '/opt/x.so', 'foo': '/y.so'}
    """
    if value is None:
        value = os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "")
    out: dict[str, str] = {}
    sep = ";" if os.name == "nt" else ":"
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, s, path = item.partition(sep)
        if not s or not name or not path:
            warnings.warn(
                f"ignoring malformed entry {item!r} in PJRT_NAMES_AND_LIBRARY_PATHS "
                f"(expected 'name{sep}/path/to/plugin.so')",
                stacklevel=2,
            )
            continue
        out[name.strip()] = path.strip()
    return out


def _package_dir(name: str) -> pathlib.Path | None:
    """Directory of a package, found without executing its __init__ (or its parent's, if any)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # parent package missing, or a broken entry
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def _distribution_version(dist: str) -> str | None:
    try:
        from importlib import metadata

        return metadata.version(dist)
    # Not installed via pip, or broken metadata: nothing to compare against.
    except Exception:  # noqa: BLE001
        return None


def find_cuda_plugin() -> CudaPlugin | None:
    """Locate a CUDA PJRT plugin library, or None. Does not load it.

    Example:
        >>> find_cuda_plugin() is None or find_cuda_plugin().library_path.endswith(".so")
        True
    """
    env_path = plugins_from_env().get("cuda")
    if env_path:
        return CudaPlugin(env_path, "PJRT_NAMES_AND_LIBRARY_PATHS", None, None)
    for pkg, major in _CUDA_PACKAGES:
        d = _package_dir(pkg)
        if d is not None and (d / _PLUGIN_LIBRARY).exists():
            return CudaPlugin(str(d / _PLUGIN_LIBRARY), pkg, major, f"jax-cuda{major}-pjrt")
    return None


def visible_nvidia_gpu() -> bool:
    """True if the NVIDIA driver exposes a device node (the check jax uses too).

    Example:
        >>> isinstance(visible_nvidia_gpu(), bool)
        True
    """
    return any(os.path.exists(p) for p in _NVIDIA_DEVICE_NODES)


def preload_nvidia_libraries(cuda_major: str | None) -> list[str]:
    """ctypes-load the pip ``nvidia.*`` CUDA libraries that exist; returns the loaded paths.

    Missing ones are skipped: the plugin then falls back to the system's (LD_LIBRARY_PATH).

    Example:
        >>> paths = preload_nvidia_libraries("12")  # those of the nvidia-* wheels installed here
        >>> all(os.path.isfile(p) for p in paths)
        True
    """
    loaded = []
    majors = [cuda_major] if cuda_major else ["13", "12"]
    for major in majors:
        for module, libs in _NVIDIA_LIBS[major]:
            d = _package_dir(f"nvidia.{module}")
            if d is None:
                continue
            for lib in libs:
                path = d / "lib" / lib
                if not path.exists():
                    continue
                try:
                    ctypes.cdll.LoadLibrary(str(path))
                    loaded.append(str(path))
                # A broken wheel: say so, and let the plugin try the system's copy.
                except OSError as e:
                    warnings.warn(f"could not preload {path}: {e}", stacklevel=2)
    return loaded


def cuda_data_dir() -> str | None:
    """Directory with ``bin/ptxas`` and ``nvvm/libdevice`` for XLA:GPU, or None.

    ``CUDA_ROOT`` wins, then the pip ``nvidia.cu13`` / ``nvidia.cuda_nvcc`` packages. The runtime
    puts it in ``debug_options.xla_gpu_cuda_data_dir``.

    Example:
        >>> cuda_data_dir() is None or isinstance(cuda_data_dir(), str)
        True
    """
    root = os.environ.get("CUDA_ROOT")
    if root:
        return root
    for pkg in ("nvidia.cu13", "nvidia.cuda_nvcc"):
        d = _package_dir(pkg)
        if d is not None and (d / "bin" / "ptxas").exists():
            return str(d)
    return None


def make_plugin_client(name: str, library_path: str, options: dict | None = None):
    """Load (once) and initialize a PJRT plugin, then create a client for it.

    Example (needs a plugin library):
        >>> client = make_plugin_client("cuda", "/path/xla_cuda_plugin.so")  # doctest: +SKIP
    """
    from jaxlib import xla_client as xc

    with _lock:
        prior = _loaded_plugins.get(name)
        if prior is None:
            if not os.path.exists(library_path):
                raise PluginError(
                    f"PJRT plugin {name!r}: library {library_path} does not exist "
                    "(check PJRT_NAMES_AND_LIBRARY_PATHS)."
                )
            try:
                _plugin_apis[name] = xc.load_pjrt_plugin_dynamically(name, library_path)
                if not xc.pjrt_plugin_initialized(name):
                    xc.initialize_pjrt_plugin(name)
            # dlopen failure, missing CUDA libraries, ABI skew: all become a PluginError.
            except Exception as e:  # noqa: BLE001
                raise PluginError(f"PJRT plugin {name!r}: loading {library_path} failed: {e}") from None
            _loaded_plugins[name] = library_path
        elif prior != library_path:
            raise PluginError(
                f"PJRT plugin {name!r} is already loaded from {prior}; "
                f"cannot load {library_path} too in the same process."
            )
    try:
        return xc.make_c_api_client(name, options, None)
    except Exception as e:  # noqa: BLE001 -- reported to the user as PluginError
        raise PluginError(f"PJRT plugin {name!r}: creating a client failed: {e}") from None


def make_cuda_client():
    """Create a PJRT client for NVIDIA GPUs through the CUDA plugin, or raise ``PluginError``.

    Example (on a machine without the plugin):
        >>> make_cuda_client()  # doctest: +SKIP
        Traceback (most recent call last):
        PluginError: CUDA backend unavailable: no CUDA PJRT plugin is installed. ...
    """
    plugin = find_cuda_plugin()
    if plugin is None:
        raise PluginError(
            "CUDA backend unavailable: no CUDA PJRT plugin is installed (looked for the Python "
            "packages jax_plugins.xla_cuda13 and jax_plugins.xla_cuda12, and for a 'cuda' entry "
            "in PJRT_NAMES_AND_LIBRARY_PATHS). Install one matching jaxlib "
            f"{_jaxlib_version()}:\n    {install_hint()}\n"
            "(jax itself is not needed), or run on the CPU: FUNCGRAD_PLATFORM=cpu."
        )
    if not visible_nvidia_gpu():
        raise PluginError(
            f"CUDA backend unavailable: the CUDA PJRT plugin is installed ({plugin.library_path}, "
            f"from {plugin.source}) but no NVIDIA GPU is visible (none of "
            f"{', '.join(_NVIDIA_DEVICE_NODES)} exists). Check the NVIDIA driver (nvidia-smi), "
            "that the container was started with GPU access, and CUDA_VISIBLE_DEVICES; or run "
            "on the CPU: FUNCGRAD_PLATFORM=cpu."
        )
    if plugin.distribution:
        have, want = _distribution_version(plugin.distribution), _jaxlib_version()
        if have and have != want:
            warnings.warn(
                f"{plugin.distribution} {have} does not match jaxlib {want}; if the CUDA "
                f"backend misbehaves: {install_hint()}",
                stacklevel=2,
            )
    preload_nvidia_libraries(plugin.cuda_major)
    from jaxlib import xla_client as xc

    # Honours the XLA_PYTHON_CLIENT_* env vars (memory fraction, preallocation, ...).
    try:
        options = xc.generate_pjrt_gpu_plugin_options()
    # A jaxlib without it: the plugin's defaults are fine.
    except Exception:  # noqa: BLE001
        options = None
    try:
        client = make_plugin_client("cuda", plugin.library_path, options)
        register_cuda_extension(plugin.cuda_major)
        return client
    except PluginError as e:
        msg = str(e)
        if "visible" in msg.lower() or "no gpu" in msg.lower() or "no cuda" in msg.lower():
            msg += "\nThe plugin loaded but found no usable GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES."
        else:
            msg += f"\nIf a CUDA library is missing, install the pip CUDA libraries with {install_hint()}"
        raise PluginError(msg) from None


# NOTE: [CUDA extension]
# The CUDA PJRT plugin runs programs; what a program may call beyond XLA's own ops lives in its
# companion wheel ``jax-cudaNN-plugin`` (package ``jax_cudaNN_plugin``, no jax inside): the
# ``cuda_plugin_extension`` module holds the GPU host-callback handlers
# (``xla_ffi_python_gpu_callback``) and the function that hands a custom-call target to the
# plugin; ``_solver`` holds the cuSOLVER kernels (``cusolver_<routine>_ffi``). jax's
# ``jax_plugins/cuda`` registers them right after loading the plugin; ``register_cuda_extension``
# does the same (custom-call and type handlers for "CUDA" bound to the plugin's C API, then the
# callback handlers), and ``register_cuda_solvers`` adds the cuSOLVER targets the first time a
# module calls one (``xla_bridge/lapack.py``). A missing companion wheel is not an error until a
# module needs it; the compile error then names the pip command.


def _cuda_extension_modules(cuda_major: str | None):
    """``(cuda_plugin_extension, _solver)`` of the companion wheel for ``cuda_major`` (either,
    newest first, when the plugin came from PJRT_NAMES_AND_LIBRARY_PATHS), or None."""
    if cuda_major in ("13", None):
        try:
            from jax_cuda13_plugin import _solver, cuda_plugin_extension

            return cuda_plugin_extension, _solver
        except ImportError:
            pass
    if cuda_major in ("12", None):
        try:
            from jax_cuda12_plugin import _solver, cuda_plugin_extension

            return cuda_plugin_extension, _solver
        except ImportError:
            pass
    return None


def register_cuda_extension(cuda_major: str | None) -> bool:
    """Register the CUDA companion extension with XLA once (NOTE: [CUDA extension]); False when
    the ``jax-cudaNN-plugin`` wheel is not installed.

    Example (needs the CUDA plugin):
        >>> register_cuda_extension("13")  # doctest: +SKIP
        True
    """
    import functools

    from jaxlib import xla_client as xc

    with _lock:
        if _cuda_extension:
            return _cuda_extension[0] is not None
        modules = _cuda_extension_modules(cuda_major)
        api = _plugin_apis.get("cuda")
        if modules is None or api is None:
            _cuda_extension.append(None)
            return False
        ext, solver = modules
        xc.register_custom_type_handler("CUDA", functools.partial(ext.register_custom_type, api))
        xc.register_custom_call_handler("CUDA", functools.partial(ext.register_custom_call_target, api))
        for name, value in ext.ffi_types().items():
            xc.register_custom_type(name, value, platform="CUDA")
        for name, value in ext.ffi_handlers().items():
            xc.register_custom_call_target(name, value, platform="CUDA", api_version=1)
        _cuda_extension.append(solver)
        return True


_solvers_registered: list = []


def require_cuda_extension(what: str) -> None:
    """Raise ``PluginError`` unless the CUDA companion extension is registered; ``what`` starts
    the message.

    Example (a CUDA client made without the companion wheel):
        >>> require_cuda_extension("host callbacks on the GPU call handlers that")  # doctest: +SKIP
        Traceback (most recent call last):
        PluginError: host callbacks on the GPU call handlers that come with the CUDA plugin's ...
    """
    if _cuda_extension and _cuda_extension[0] is not None:
        return
    major = (find_cuda_plugin() or CudaPlugin("", "", None, None)).cuda_major or "13"
    raise PluginError(
        f"{what} come with the CUDA plugin's companion wheel, which is not installed; install it: "
        f"pip install jax-cuda{major}-plugin=={_jaxlib_version()} (or run on the CPU device)"
    )


def register_cuda_solvers() -> None:
    """Register jaxlib's cuSOLVER kernels (``cusolver_<routine>_ffi``) for the CUDA platform
    once, or raise ``PluginError`` naming the wheel to install (NOTE: [CUDA extension]).

    Example (needs the CUDA plugin):
        >>> register_cuda_solvers()  # doctest: +SKIP
    """
    from jaxlib import xla_client as xc

    with _lock:
        if _solvers_registered:
            return
        require_cuda_extension("linear algebra on the GPU calls jaxlib's cuSOLVER kernels, which")
        for name, capsule in _cuda_extension[0].registrations().items():
            api_version = int(name.endswith("_ffi"))  # the older targets are not typed FFI
            xc.register_custom_call_target(name, capsule, platform="CUDA", api_version=api_version)
        _solvers_registered.append(True)
