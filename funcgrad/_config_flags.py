"""funcgrad's configuration flags: each flag of ``funcgrad.config`` (JAX's names), its default,
its validation and what applies it -- the table ``_FLAGS`` -- and the user contexts that three of
them set (``jax_threefry_partitionable``, ``jax_default_prng_impl``, ``jax_random_seed_offset``).
What each flag does is said in ``funcgrad._config``'s docstring, which holds ``config`` and the
context managers.

Layer: surface, below ``funcgrad._config``. Imports funcgrad._jit_route (jit's flags), funcgrad._disable_jit,
funcgrad._transfer_guard, funcgrad.debug, funcgrad.numpy (``_core``, ``_dtypes``, ``indexing``),
funcgrad._user_contexts, the kernel, xla_bridge and funcgrad.primitives._eager_memory -- the
modules that own the behaviour each flag switches (they keep their own state; this module
validates values and hands them over).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from funcgrad import _disable_jit, _jit_route, _key_reuse, _sharding_types, _transfer_guard, debug, xla_bridge
from funcgrad._user_contexts import make_user_context
from funcgrad._vma import set_auto_pcast
from funcgrad.kernel import caches as _caches
from funcgrad.kernel import core
from funcgrad.kernel import custom_rule_args as _custom_rule_args
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import recording as _recording
from funcgrad.kernel import traceback_util as _traceback_util
from funcgrad.kernel.environment import bool_env, truth_value
from funcgrad.numpy import _core as _numpy_core
from funcgrad.numpy import _dtypes as _numpy_dtypes
from funcgrad.numpy import indexing as _numpy_indexing
from funcgrad.primitives import _eager_memory, _remat_log
from funcgrad.primitives import reductions as _reductions
from funcgrad.primitives import sharding as _sharding_prims
from funcgrad.xla_bridge import compile_cache as _compile_cache
from funcgrad.xla_bridge import executables as _executables
from funcgrad.xla_bridge import runtime as _runtime

__all__ = [
    "default_prng_impl_context",
    "random_seed_offset_context",
    "set_flag",
    "threefry_partitionable_context",
    "use_jax_dtype_rules",
]


# ----------------------------------------------------------------------------------------------
# User contexts (``jax.make_user_context``): funcgrad._user_contexts

# jax_threefry_partitionable's value, part of jit's cache key as JAX's trace context holds it
# (funcgrad/random reads it while tracing: NOTE: [threefry bit streams]).
threefry_partitionable_context = make_user_context(True)

# jax_default_prng_impl's value: the generator of keys made without impl= and of raw key data
# (funcgrad/random reads it while tracing, so it is part of jit's cache key as well).
default_prng_impl_context = make_user_context("threefry2x32")

# jax_random_seed_offset's value, added to seeds while tracing: part of jit's cache key, as JAX's.
random_seed_offset_context = make_user_context(0)


# JAX's PRNG implementations by name (funcgrad/random registers them under these names)
_PRNG_NAMES = ("threefry2x32", "threefry4x32", "philox2x32", "philox4x32", "rbg", "unsafe_rbg")

_PRECISIONS = (
    None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "fastest", "bfloat16_3x",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
    "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64",
)  # fmt: skip


class _Flag:
    def __init__(
        self, name, default, check: Callable[[Any], Any], apply: Callable[[Any], None] | None = None
    ):
        self.name, self.value, self.check, self.apply = name, default, check, apply


def _bool(name):
    def check(v):
        if not isinstance(v, bool | int) or v not in (0, 1):
            raise TypeError(f"funcgrad.config: {name} must be a bool, got {v!r}")
        return bool(v)

    return check


def _choice(name, choices):
    def check(v):
        if v not in choices:
            raise ValueError(f"funcgrad.config: {name} must be one of {list(choices)}, got {v!r}")
        return v

    return check


def _number(name, kind):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int | float) or (kind is int and v != int(v)):
            raise ValueError(  # (JAX's type of error for a flag's bad value)
                f"funcgrad.config: {name} must be a{'n int' if kind is int else ' float'}, got {v!r}"
            )
        return kind(v)

    return check


_LOG_LEVELS = ("NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _only(name, allowed, why):
    def check(v):
        if v not in allowed:
            raise ValueError(f"funcgrad.config: {name}={v!r} cannot be honoured: {why}")
        return v

    return check


def _before_first_use(name, env, normalize):
    def apply(v):
        if v is None:
            return
        value = normalize(v)
        if name in ("jax_platforms", "jax_platform_name"):
            current = _runtime.chosen_default_platform()
            started = current is not None
        else:
            current = _runtime.started_backends().get("cpu")
            started = current is not None
        if started and str(current) != str(value):
            jax_words = (  # (JAX's message for the device count, then funcgrad's)
                "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
                "before any JAX operation is executed. You should initialize this config immediately "
                "after `import jax`. "
                if name == "jax_num_cpu_devices"
                else ""
            )
            raise RuntimeError(
                f"{jax_words}funcgrad.config: {name} must be set before the first computation (it is "
                f"already {current!r}); set it at the start of the program or with the environment "
                f"variable {env}"
            )
        os.environ[env] = str(value)

    return apply


def _cpu_async_dispatch(v: bool | None) -> None:
    if v is None:
        v = _runtime.cpu_async_dispatch() if _runtime.backend_started("cpu") else None
    if _runtime.backend_started("cpu"):
        if _runtime.cpu_async_dispatch() != v:
            raise RuntimeError(
                f"funcgrad.config: jax_cpu_enable_async_dispatch must be set before the first "
                f"computation (the CPU backend already runs with {_runtime.cpu_async_dispatch()}); set "
                "it at the start of the program or with the environment variable "
                "FUNCGRAD_CPU_ASYNC_DISPATCH=1"
            )
        return
    _runtime.configure_cpu_client(asynchronous=v)


def _malloc_tuning(on: bool) -> None:
    # NOTE: [eager allocations]: an explicit opt-in, never done at import.
    if on and not _eager_memory.tune():
        raise ValueError(
            "funcgrad.config: funcgrad_malloc_tuning=True cannot be honoured: this process's malloc is "
            "not glibc's (mallopt); leave it False"
        )
    if not on and _FLAGS["funcgrad_malloc_tuning"].value:
        _eager_memory.restore()


def _num_devices(v):
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"funcgrad.config: jax_num_cpu_devices must be a positive int, got {v!r}")
    return v


def _platform(v):
    if v is None:
        return None
    first = str(v).split(",")[0].strip().lower()
    first = {"gpu": "cuda", "host": "cpu"}.get(first, first)
    if first not in ("cpu", "cuda"):
        raise ValueError(f"funcgrad.config: the platform must be 'cpu' or 'cuda', got {v!r}")
    return first


class _DebugState:
    """The global ``debug_nans``/``debug_infs`` contexts entered by the config flags."""

    def __init__(self):
        self.active: dict[str, Any] = {}

    def set(self, kind: str, on: bool, cls) -> None:
        ctx = self.active.pop(kind, None)
        if ctx is not None:
            ctx.__exit__(None, None, None)
        if on:
            ctx = cls(True)
            ctx.__enter__()
            self.active[kind] = ctx


_debug_state = _DebugState()


def _default_device_check(v):
    if v is None:
        return None
    if v == _runtime.default_device() or (
        isinstance(v, str) and _platform(v) == xla_bridge.default_platform()
    ):
        return v
    raise ValueError(
        f"funcgrad.config: jax_default_device={v!r} cannot be honoured: computations run on the default "
        f"device {_runtime.default_device()}; place them with jit(f, device=...) or device_put(x, device)"
    )


def _jit_flag(name, key):
    return _Flag(name, False, _bool(name), lambda v: _jit_route.set_jit_flags(**{key: v}))


def _set_x64(on: bool) -> None:
    # NOTE: [x64 mode] (funcgrad/kernel/dtypes.py): the mode is one kernel bool; every trace and
    # compile cache is emptied on a change (JAX keys them on the mode: a function traced under
    # one mode is traced again under the other), and jaxlib's x64 state follows the mode, so the
    # native route canonicalises jit's NumPy arguments while 64-bit types are off.
    if on == _dt.__dict__["x64_enabled"]:  # (the process-wide mode: NOTE: [x64 mode per thread])
        return
    _dt.set_x64(on)
    _caches.clear_all()
    _jit_route.set_jit_flags(x32=not on)


def _set_explicit_x64_dtypes(mode: str) -> None:
    # (NOTE: [x64 mode]: under 'allow' a traced program keeps the 64-bit types it asks for, so the
    # traces and programs of another value are not reused, as JAX keys its caches on the flag)
    allowed = _dt.explicit_x64_allowed
    _numpy_dtypes.set_explicit_x64_dtypes(str(mode))
    if allowed != _dt.explicit_x64_allowed:
        _caches.clear_all()


def _set_disable_most_optimizations(on: bool) -> None:
    # (XLA's backend optimizations off in every compile from now on; the programs compiled
    # before are compiled again, as JAX keys its caches on its compile options)
    if on != _executables._most_optimizations_disabled[0]:
        _executables.set_disable_most_optimizations(on)
        _caches.clear_all()


def _set_allow_f16_reductions(on: bool) -> None:
    # (checked where reduce_sum is typed: the traces and programs made under the other value are
    # not reused, as JAX keys its caches on the flag)
    if on != _reductions.allow_f16_reductions[0]:
        _reductions.allow_f16_reductions[0] = on
        _caches.clear_all()


def _set_transfer_guard(direction: str, level: str | None) -> None:
    # NOTE: [transfer guard] (funcgrad/_transfer_guard.py): the level, and jit's calls take the
    # staged route (which asks the guard about their arguments) while host-to-device or
    # device-to-device transfers are guarded.
    _transfer_guard.set_level(direction, level)
    _jit_route.set_jit_flags(
        transfer_guard=_transfer_guard.guarding("host_to_device")
        or _transfer_guard.guarding("device_to_device")
    )


# jax_legacy_prng_key's value, read by funcgrad.random where a raw key enters (one global read)
legacy_prng_key_level = "allow"


_DEBUG_FORMAT = logging.Formatter("{levelname}:{asctime}:{name}:{lineno}: {message}", style="{")
_debug_handler = logging.StreamHandler()  # (stderr, as JAX's)
_debug_handler.setLevel(logging.DEBUG)
_debug_handler.setFormatter(_DEBUG_FORMAT)
_debug_enabled: list[tuple[logging.Logger, int]] = []


def _set_debug_log_modules(names: str | None) -> None:
    """``jax_debug_log_modules`` ("a,b,..."): each named logger logs everything at DEBUG to stderr
    (JAX's ``update_debug_log_modules``; the loggers of a previous value are restored first). A
    name of JAX's (``jax``, ``jax._src.dispatch``) enables the "funcgrad" logger too, where
    funcgrad logs what JAX's modules do (compilation, tracing, cache misses)."""
    for logger, level in _debug_enabled:
        logger.removeHandler(_debug_handler)
        logger.setLevel(level)
    _debug_enabled.clear()
    _debug_handler.setStream(sys.stderr)  # (the stderr of now: a test's capture, a redirection)
    wanted = [n for n in (names or "").split(",") if n]
    if any(n == "jax" or n.startswith("jax.") for n in wanted) and "funcgrad" not in wanted:
        wanted.append("funcgrad")
    for name in wanted:
        logger = logging.getLogger(name)
        _debug_enabled.append((logger, logger.level))
        logger.addHandler(_debug_handler)
        logger.setLevel(logging.DEBUG)


def _set_legacy_prng_key(v: str) -> None:
    global legacy_prng_key_level
    legacy_prng_key_level = v


def use_jax_dtype_rules(on: bool) -> None:
    """JAX's dtype rules in 64-bit mode as well as in 32-bit mode (``funcgrad.as_jax`` turns them
    on; NOTE: [JAX's dtype rules in 64-bit mode] in funcgrad/kernel/dtypes.py). Every trace and
    compile cache is emptied on a change, as for ``jax_enable_x64``.

    >>> use_jax_dtype_rules(True); import funcgrad.numpy as fnp; fnp.sin(fnp.arange(2, dtype="int32")).dtype
    dtype('float32')
    >>> use_jax_dtype_rules(False); fnp.sin(fnp.arange(2, dtype="int32")).dtype
    dtype('float64')
    """
    if bool(on) == _dt.jax_rules_in_x64:
        return
    _dt.set_jax_dtype_rules(on)
    _caches.clear_all()


_FLAG_LIST = [
    # (its value at import: the kernel's mode, which JAX_ENABLE_X64 sets: NOTE: [x64 mode])
    _Flag("jax_enable_x64", _dt.x64_enabled, _bool("jax_enable_x64"), _set_x64),
    _Flag("jax_disable_jit", False, _bool("jax_disable_jit"), _disable_jit.set_process_wide),
    _Flag(
        "jax_debug_nans",
        False,
        _bool("jax_debug_nans"),
        lambda v: _debug_state.set("nans", v, debug.debug_nans),
    ),
    _Flag(
        "jax_debug_infs",
        False,
        _bool("jax_debug_infs"),
        lambda v: _debug_state.set("infs", v, debug.debug_infs),
    ),
    _jit_flag("jax_log_compiles", "log_compiles"),
    _jit_flag("jax_explain_cache_misses", "explain_cache_misses"),
    _jit_flag("jax_enable_checks", "enable_checks"),
    _jit_flag("jax_no_tracing", "no_tracing"),
    _jit_flag("jax_no_execution", "no_execution"),
    _Flag(
        "jax_numpy_rank_promotion",
        "allow",
        _choice("jax_numpy_rank_promotion", ("allow", "warn", "raise")),
        lambda v: _numpy_core.set_promotion_flags(rank_promotion=v),
    ),
    _Flag(
        "jax_numpy_dtype_promotion",
        "standard",
        _choice("jax_numpy_dtype_promotion", ("standard", "strict")),
        lambda v: _numpy_core.set_promotion_flags(dtype_promotion=v),
    ),
    _Flag(
        "jax_check_static_indices",
        False,
        _bool("jax_check_static_indices"),
        lambda v: setattr(_numpy_indexing, "check_static_indices", v),
    ),
    _Flag("jax_default_matmul_precision", None, _choice("jax_default_matmul_precision", _PRECISIONS)),
    _Flag(
        "jax_num_cpu_devices",
        None,
        lambda v: v if v is None else _num_devices(v),
        _before_first_use("jax_num_cpu_devices", "FUNCGRAD_NUM_CPU_DEVICES", int),
    ),
    _Flag(
        "jax_cpu_enable_async_dispatch",
        None,
        lambda v: v if v is None else _bool("jax_cpu_enable_async_dispatch")(v),
        _cpu_async_dispatch,
    ),
    *[
        _Flag(
            name,
            None,
            lambda v: v if v is None else (_platform(v) and v),
            _before_first_use(name, "FUNCGRAD_PLATFORM", _platform),
        )
        for name in ("jax_platforms", "jax_platform_name")
    ],
    _Flag(
        "jax_default_prng_impl",
        "threefry2x32",
        _choice("jax_default_prng_impl", _PRNG_NAMES),
        lambda v: default_prng_impl_context.set_global(v),
    ),
    _Flag(
        "jax_legacy_prng_key",
        "allow",
        lambda v: _choice("jax_legacy_prng_key", ("allow", "warn", "error"))(str(v)),
        _set_legacy_prng_key,
    ),
    _Flag(
        "jax_random_seed_offset",
        0,
        _number("jax_random_seed_offset", int),
        lambda v: random_seed_offset_context.set_global(v),
    ),
    _Flag(
        "jax_threefry_partitionable",
        True,
        _bool("jax_threefry_partitionable"),
        lambda v: threefry_partitionable_context.set_global(v),
    ),
    _Flag(
        "jax_check_tracer_leaks",
        core._leaks["on"],  # (the kernel read JAX_CHECK_TRACER_LEAKS)
        _bool("jax_check_tracer_leaks"),
        core.set_leak_checking,
    ),
    _Flag(
        "jax_disable_bwd_checks",
        False,
        _bool("jax_disable_bwd_checks"),
        _custom_rule_args.set_bwd_checks_disabled,
    ),
    _Flag(
        "jax_log_checkpoint_residuals",
        False,
        _bool("jax_log_checkpoint_residuals"),
        lambda v: _remat_log.log_checkpoint_residuals.__setitem__(0, v),
    ),
    _Flag(
        "jax_allow_f16_reductions",
        True,
        _bool("jax_allow_f16_reductions"),
        _set_allow_f16_reductions,
    ),
    _Flag(
        "jax_disable_vmap_shmap_error",
        False,
        _bool("jax_disable_vmap_shmap_error"),
        _sharding_prims.set_vmap_shmap_error_disabled,
    ),
    _Flag("jax_auto_pcast", True, _bool("jax_auto_pcast"), set_auto_pcast),
    _Flag(
        "jax_remove_size_one_mesh_axis_from_type",
        False,
        _bool("jax_remove_size_one_mesh_axis_from_type"),
        _sharding_types.set_remove_size_one_axes,
    ),
    _Flag(
        "jax_softmax_custom_jvp",
        False,
        _bool("jax_softmax_custom_jvp"),
        _custom_rule_args.set_softmax_custom_jvp,
    ),
    _Flag(
        "jax_disable_most_optimizations",
        bool_env("JAX_DISABLE_MOST_OPTIMIZATIONS", False),  # (as executables)
        _bool("jax_disable_most_optimizations"),
        _set_disable_most_optimizations,
    ),
    _Flag(
        "jax_traceback_filtering",
        _traceback_util._mode_setting[0],  # (the kernel read JAX_TRACEBACK_FILTERING)
        _choice("jax_traceback_filtering", _traceback_util._MODES),
        _traceback_util.set_filtering_mode,  # NOTE: [traceback boundaries]
    ),
    # (JAX's switch for user-defined PRNG implementations; funcgrad's typed keys need none)
    _Flag("jax_enable_custom_prng", False, _bool("jax_enable_custom_prng")),
    # (NOTE: [key reuse]: checked calls of jitted functions take the staged route)
    _Flag(
        "jax_debug_key_reuse",
        False,
        _bool("jax_debug_key_reuse"),
        lambda v: (_key_reuse.set_flag(v), _jit_route.set_jit_flags(key_reuse=v)),
    ),
    _Flag(
        "funcgrad_eager_program_cache",
        _recording.enabled,  # (FUNCGRAD_EAGER_PROGRAM_CACHE, read where the cache lives)
        _bool("funcgrad_eager_program_cache"),
        lambda v: setattr(_recording, "enabled", v),
    ),
    _Flag("funcgrad_malloc_tuning", False, _bool("funcgrad_malloc_tuning"), _malloc_tuning),
    _Flag(
        "jax_compilation_cache_dir",
        None,
        lambda v: v if v is None else os.fspath(v),
        xla_bridge.set_cache_dir,
    ),
    _Flag(
        "jax_persistent_cache_min_compile_time_secs",
        0.0,
        _number("jax_persistent_cache_min_compile_time_secs", float),
        lambda v: _compile_cache.set_thresholds(min_compile_time_secs=v),
    ),
    _Flag(
        "jax_persistent_cache_min_entry_size_bytes",
        0,
        _number("jax_persistent_cache_min_entry_size_bytes", int),
        lambda v: _compile_cache.set_thresholds(min_entry_size_bytes=v),
    ),
    # (JAX's switch for XLA's own GPU caches, its autotuning results, beside the persistent cache:
    # a CPU has none, so it is kept and has no effect)
    _Flag(
        "jax_persistent_cache_enable_xla_caches",
        "xla_gpu_per_fusion_autotune_cache_dir",
        lambda v: v if v is None else str(v),
    ),
    # (JAX's mock of a multi-node GPU cluster for pre-compiling its programs: kept for JAX's
    # persistent-cache guide, no effect (as in JAX on a CPU; funcgrad's CUDA client mocks none))
    _Flag("jax_mock_gpu_topology", "", lambda v: str(v)),
    _Flag(
        "jax_export_calling_convention_version",
        10,
        _number("jax_export_calling_convention_version", int),
    ),
    _Flag("jax_export_ignore_forward_compatibility", False, _bool("jax_export_ignore_forward_compatibility")),
    _Flag(
        "jax_logging_level",
        None,
        lambda v: v if v is None else _choice("jax_logging_level", _LOG_LEVELS)(str(v).upper()),
        lambda v: None if v is None else logging.getLogger("funcgrad").setLevel(v),
    ),
    _Flag(
        "jax_debug_log_modules",
        "",
        lambda v: "" if v is None else str(v),
        _set_debug_log_modules,
    ),
    _Flag(
        "jax_cpu_collectives_implementation",
        "gloo",
        _only(
            "jax_cpu_collectives_implementation",
            ("gloo",),
            "funcgrad.distributed's CPU collectives are Gloo's",
        ),
    ),
    _Flag("jax_default_device", None, _default_device_check),
    *[
        _Flag(
            f"jax_transfer_guard_{direction}",
            None,  # (unset: "allow"; JAX's default too, so that jax_transfer_guard is not overridden)
            _transfer_guard.check_enum(f"jax_transfer_guard_{direction}"),
            functools.partial(_set_transfer_guard, direction),
        )
        for direction in _transfer_guard.DIRECTIONS
    ],
    _Flag(
        "jax_transfer_guard",
        None,
        _transfer_guard.check_enum("jax_transfer_guard"),
        lambda v: [set_flag(_FLAGS[f"jax_transfer_guard_{d}"], v) for d in _transfer_guard.DIRECTIONS],
    ),
    _Flag(
        "jax_explicit_x64_dtypes",
        "warn",
        _choice("jax_explicit_x64_dtypes", ("warn", "error", "allow")),
        _set_explicit_x64_dtypes,
    ),
]
_FLAGS = {f.name: f for f in _FLAG_LIST}


def set_flag(flag: _Flag, value) -> None:
    """Set ``flag`` to ``value``: validated (refused with an error if it cannot be honoured), then
    handed to the module that owns what it switches (``config.update``'s work)."""
    value = flag.check(value)
    if flag.apply is not None:
        flag.apply(value)
    flag.value = value


# The flags whose environment variable is read where they live (JAX_ENABLE_X64 by the kernel, ...)
# or named otherwise (FUNCGRAD_PLATFORM, FUNCGRAD_NUM_CPU_DEVICES, FUNCGRAD_CPU_ASYNC_DISPATCH).
_ENV_READ_ELSEWHERE = frozenset(
    {
        "jax_enable_x64",
        "jax_traceback_filtering",
        "jax_check_tracer_leaks",
        "jax_disable_most_optimizations",
        "jax_num_cpu_devices",
        "jax_platforms",
        "jax_platform_name",
        "jax_cpu_enable_async_dispatch",
    }
)


def _environment_value(name: str, text: str, default):
    """``text``, the variable ``name.upper()``, as a value of the flag's type (JAX's ``bool_env``
    words for a bool: y/yes/t/true/on/1 and their opposites)."""
    if isinstance(default, bool):
        return truth_value(name.upper(), text)
    if isinstance(default, int | float):
        return type(default)(text)
    return text


def apply_environment() -> None:
    """Start each ``jax_*`` flag set in the environment with its value, as JAX reads its flags
    (``JAX_DEBUG_NANS=1``, ``JAX_DISABLE_JIT=true``, ``JAX_NUMPY_RANK_PROMOTION=raise``); called
    once, when this module is imported: at ``import jax`` under ``funcgrad.as_jax``, else on the
    first use of ``funcgrad.config`` (``import funcgrad`` stays lazy). A value the flag refuses is
    its error, as JAX's."""
    for name, flag in _FLAGS.items():
        text = os.environ.get(name.upper())
        if text is None or not name.startswith("jax_") or name in _ENV_READ_ELSEWHERE:
            continue
        set_flag(flag, _environment_value(name, text, flag.value))


apply_environment()
