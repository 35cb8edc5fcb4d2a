"""``funcgrad.config`` and the configuration context managers (``jax.config`` and ``jax.disable_jit``,
``jax.debug_nans``, ``jax.numpy_rank_promotion``, ...).

Layer: surface. Imports ``funcgrad._config_flags`` (the flags: each one's default, validation and
what applies it), funcgrad._jit_route (jit's flags), funcgrad._disable_jit, funcgrad._transfer_guard and
funcgrad.numpy (``_core``, ``_dtypes``: the thread-local contexts hand their values to them) and
the kernel. This module holds ``config`` (reading and setting the flags) and the context managers.

Every flag is honoured, or refuses a value it cannot honour with an error naming the flag, the
value and what to do instead:

==============================  ======================================================================
``jax_enable_x64``              True (funcgrad's default): NumPy's 64-bit defaults (float64, int64).
                                False: JAX's 32-bit mode (JAX's own default, and the default under
                                ``funcgrad.as_jax``): float64/int64/uint64/complex128 values from
                                NumPy enter as float32/int32/uint32/complex64, Python scalars are
                                weak float32/int32, creation/random/index results default to
                                32 bits, and an explicit 64-bit dtype request is truncated with
                                JAX's UserWarning. Switching retraces (every trace and compile
                                cache is emptied); Arrays made before keep their dtype. Also
                                ``enable_x64(False)`` and JAX_ENABLE_X64=0 (read when the kernel is imported).
                                NOTE: [x64 mode] in funcgrad/kernel/dtypes.py.
``jax_disable_jit``             ``jit`` runs the Python function op by op.
``jax_debug_nans``              every primitive's output is checked for NaN (FloatingPointError).
``jax_debug_infs``              every primitive's output is checked for Inf.
``jax_log_compiles``            each trace-and-compile of a ``jit`` is logged (logger "funcgrad").
``jax_explain_cache_misses``    each ``jit`` cache miss is logged with what changed.
``jax_enable_checks``           every jaxpr ``jit`` stages is type-checked.
``jax_no_tracing``              a ``jit`` that must trace raises.
``jax_no_execution``            calling a compiled ``jit`` raises.
``jax_numpy_rank_promotion``    "allow" | "warn" | "raise" on implicit rank promotion.
``jax_numpy_dtype_promotion``   "standard" | "strict" (TypePromotionError on implicit promotion).
``jax_check_static_indices``    True: a static integer index out of bounds raises IndexError
                                (default False: it is clamped, JAX's rule).
``jax_default_matmul_precision``  any of JAX's precision names: the CPU computes every product at
                                full precision, which satisfies each of them.
``jax_num_cpu_devices``         the CPU client's device count; before the first computation.
``jax_cpu_enable_async_dispatch``  None (funcgrad's default): with one CPU device each program runs
                                in the calling thread, which saves the hand-off to a worker thread
                                (about 5 us per call); with several, dispatch is asynchronous.
                                True: jax's asynchronous dispatch always; False: synchronous (one
                                device only). Before the first computation (or
                                FUNCGRAD_CPU_ASYNC_DISPATCH=1/0).
``jax_platforms``/``jax_platform_name``  "cpu" or "cuda"; before the first computation.
``jax_default_prng_impl``       "threefry2x32", "threefry4x32", "philox2x32", "philox4x32", "rbg" or
                                "unsafe_rbg": keys made without ``impl=`` and raw key data.
``jax_legacy_prng_key``         "allow" (default), "warn" or "error": what a raw ``uint32`` key (``PRNGKey``'s
                                data) passed to a funcgrad.random function does (JAX's UserWarning or
                                ValueError, in JAX's words).
``jax_random_seed_offset``      an int added to every seed (``random.key``, ``PRNGKey``); part of
                                ``jit``'s cache key, as in JAX.
``jax_threefry_partitionable``  True (JAX's default) or False: JAX's original bit streams, as JAX
                                draws them in that mode (NOTE: [threefry bit streams]).
``jax_disable_most_optimizations``  True: XLA compiles with its backend optimizations off (JAX's
                                debug options; JAX_DISABLE_MOST_OPTIMIZATIONS=1 at start).
``jax_check_tracer_leaks``      True or False: True raises JAX's "Leaked trace" Exception for a
                                tracer that outlives its transformation (NOTE: [leak checking]);
                                either way a leaked tracer raises UnexpectedTracerError when used.
``jax_disable_bwd_checks``      False (default) or True: a custom_vjp ``bwd``'s cotangents are not
                                checked against the primal inputs' shapes (JAX's flag).
``jax_log_checkpoint_residuals`` False (default) or True: what a differentiated checkpoint saves is
                                logged at WARNING (``remat-decorated function saving ...``, logger
                                ``funcgrad.checkpoint``) instead of DEBUG (JAX's flag).
``jax_allow_f16_reductions``    True (default) or False: False refuses ``lax.reduce_sum`` of float16/bfloat16
                                values over an axis longer than 1 (JAX's flag; ``jnp.sum`` sums them in
                                float32 and is not refused).
``jax_disable_vmap_shmap_error`` False (default) or True: ``vmap(spmd_axis_name=names)`` of a
                                shard_map whose specs name those axes is not refused (JAX's flag).
``jax_remove_size_one_mesh_axis_from_type`` False (default) or True: explicit mesh axes of size 1
                                are left out of values' types (``P('x', 'y')`` on a (2, 1) mesh is
                                typed ``P('x', None)``; JAX's flag).
``jax_softmax_custom_jvp``      False (JAX's default): ``nn.softmax`` is differentiated through its
                                formula; True: through the rule ``y * (t - sum(y * t))`` (JAX's flag).
``jax_traceback_filtering``     how a traceback boundary (jit's call, grad, vmap, jvp, vjp, the
                                control flow functions, ``traceback_util.api_boundary``) hides
                                funcgrad's and registered libraries' frames: "auto" (default),
                                "off", "tracebackhide", "remove_frames", "quiet_remove_frames", as
                                JAX's (NOTE: [traceback boundaries]).
``jax_debug_key_reuse``         False; True checks PRNG keys for reuse (``KeyReuseError``), eagerly,
                                in traced functions and at jitted calls (NOTE: [key reuse]).
``jax_default_device``          None or the default device (others: use jit(device=) / device_put).
``jax_transfer_guard*``         None (unset: "allow"), "allow", "log", "disallow", "log_explicit",
                                "disallow_explicit": JAX's transfer guards, per direction
                                (``_host_to_device``, ``_device_to_device``, ``_device_to_host``) or
                                all three; NOTE: [transfer guard] in funcgrad/_transfer_guard.py.
``jax_explicit_x64_dtypes``     "warn" (JAX's default): in 32-bit mode an explicit 64-bit dtype is
                                truncated with JAX's UserWarning; "error": a ValueError instead;
                                "allow": kept (``zeros(2, float64)``, ``astype``, random draws), and
                                promotion with a 64-bit operand keeps its answer; default types
                                and NumPy data stay 32-bit (64-bit mode: no effect).
``jax_compilation_cache_dir``   the persistent compilation cache's directory (None: off).
``funcgrad_malloc_tuning``      False (default): funcgrad leaves malloc alone. True: on Linux with
                                glibc, large blocks stay in the heap instead of fresh mmap pages
                                (``mallopt``), which speeds up eager temporaries but is
                                process-wide and keeps freed memory resident (NOTE: [eager
                                allocations]); refused where malloc is not glibc's. (XLA's own
                                buffers of 128 KiB and more are kept between calls by default:
                                NOTE: [XLA's buffers kept between calls].)
``jax_cpu_collectives_implementation``  "gloo" (funcgrad.distributed's CPU collectives).
``funcgrad_eager_program_cache``  True (default): eager ``grad`` records the function each call and
                                reuses the derivative program of an equal recording (NOTE: [eager
                                grad program cache]); False: every eager ``grad`` linearizes and
                                transposes anew (FUNCGRAD_EAGER_PROGRAM_CACHE=0; =first caches
                                from the first call instead of the second, to test the cache).
``jax_persistent_cache_min_compile_time_secs``  programs compiled faster are not written to the
                                persistent cache; 0 by default (JAX's default is 1 s: funcgrad
                                writes every program, as before the flag existed).
``jax_persistent_cache_min_entry_size_bytes``  entries smaller are not written (0 or -1: any size).
``jax_persistent_cache_enable_xla_caches``  XLA's GPU caches beside the persistent cache: no effect
                                on a CPU.
``jax_mock_gpu_topology``       JAX's fake multi-node GPU cluster ("4x8x1"): accepted, no effect
                                (funcgrad mocks no GPU topology).
``jax_export_calling_convention_version``  the calling convention ``export`` writes (9 or 10;
                                10 by default, as JAX's).
``jax_export_ignore_forward_compatibility``  JAX's permission to export with lowerings newer
                                than its forward-compatibility window: accepted, no effect
                                (funcgrad's lowerings have no such window).
``jax_logging_level``           the level of the "funcgrad" logger ("NOTSET", "DEBUG", ...; None:
                                left as it is), JAX's level of its own loggers.
``jax_debug_log_modules``       "" (default) or logger names, comma-separated: each logs at DEBUG to
                                stderr, as JAX's; a name of JAX's (``jax``, ``jax._src.dispatch``)
                                enables the "funcgrad" logger, where funcgrad logs jit's tracing
                                and compilation.
==============================  ======================================================================

>>> import funcgrad
>>> funcgrad.config.jax_enable_x64
True
>>> with funcgrad.numpy_rank_promotion("raise"):
...     funcgrad.config.jax_numpy_rank_promotion
'raise'
"""

from __future__ import annotations

import contextlib
import functools
import operator
import sys
import threading
from collections.abc import Callable

from funcgrad import _disable_jit, _jit_route, _transfer_guard, kernel
from funcgrad._config_flags import _FLAGS, _Flag, set_flag
from funcgrad._user_contexts import make_user_context
from funcgrad.kernel import caches as _caches
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.thread_modes import ThreadOverride
from funcgrad.numpy import _core as _numpy_core
from funcgrad.numpy import _dtypes as _numpy_dtypes

__all__ = [
    "allow_f16_reductions",
    "auto_pcast",
    "check_tracer_leaks",
    "checking_leaks",
    "config",
    "debug_infs",
    "debug_key_reuse",
    "default_prng_impl",
    "enable_custom_prng",
    "default_device",
    "default_matmul_precision",
    "disable_jit",
    "enable_checks",
    "enable_x64",
    "explain_cache_misses",
    "legacy_prng_key",
    "log_compiles",
    "make_user_context",
    "no_execution",
    "no_tracing",
    "numpy_dtype_promotion",
    "numpy_rank_promotion",
    "remove_size_one_mesh_axis_from_type",
    "softmax_custom_jvp",
    "threefry_partitionable",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)


class Config:
    """funcgrad's configuration: ``config.update(name, value)``, ``config.<name>`` or
    ``config.read(name)`` to read a flag, ``config.values`` for all of them. Names are JAX's
    (``jax_enable_x64``, ``jax_disable_jit``, ...); see the module docstring for what each does.

    >>> config.update("jax_numpy_rank_promotion", "warn")
    >>> config.jax_numpy_rank_promotion
    'warn'
    >>> config.update("jax_numpy_rank_promotion", "allow")
    """

    def update(self, name: str, value) -> None:
        """Set flag ``name`` to ``value`` (validated; refused with an error if it cannot be honoured)."""
        set_flag(_flag(name), value)
        if name in _THREAD_LOCAL:
            _modes_route()

    def read(self, name: str):
        """The value of flag ``name`` (this thread's, inside one of the thread-local contexts)."""
        return _current(_flag(name))

    # JAX's spelling (``jax.config._read``): JAX's own tests and some libraries read flags with it.
    _read = read

    @property
    def x64_enabled(self) -> bool:
        """``jax_enable_x64``'s value (JAX's ``config.x64_enabled``; jaxopt's test utilities read it).

        >>> config.x64_enabled == config.jax_enable_x64
        True
        """
        return _current(_flag("jax_enable_x64"))

    @property
    def values(self) -> dict:
        """Every flag and its value."""
        return {name: _current(f) for name, f in _FLAGS.items()}

    def __getattr__(self, name):
        if name.startswith("jax_") and name in _FLAGS:
            return _current(_FLAGS[name])
        raise AttributeError(f"funcgrad.config has no flag {name!r}")

    def __dir__(self):
        return sorted(
            [*_FLAGS, "update", "read", "values", "x64_enabled", "parse_flags_with_absl", "config_with_absl"]
        )

    def parse_flags_with_absl(self) -> None:
        """Apply ``--jax_<flag>=<value>`` command-line arguments (``sys.argv``) to the flags; where
        absl is installed, also mark absl's flags parsed (with the program name only), as JAX's
        call does: absltest cases that read ``--test_tmpdir`` rely on it."""
        try:
            import absl.flags as absl_flags
        except ImportError:
            absl_flags = None
        if absl_flags is not None and not absl_flags.FLAGS.is_parsed():
            absl_flags.FLAGS(sys.argv[:1], known_only=True)
        for arg in sys.argv[1:]:
            if arg.startswith("--jax_") and "=" in arg:
                name, text = arg[2:].split("=", 1)
                if name in _FLAGS:
                    self.update(name, _parse(text))

    config_with_absl = parse_flags_with_absl

    def __repr__(self):
        return "funcgrad.config"


def _parse(text: str):
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        return text


def _flag(name: str) -> _Flag:
    flag = _FLAGS.get(name)
    if flag is None:
        raise AttributeError(
            f"funcgrad.config: unknown flag {name!r}; known flags: {', '.join(sorted(_FLAGS))}"
        )
    return flag


config = Config()


# NOTE: [x64 mode per thread]: JAX's contexts for these flags are thread-local: entered in one
# thread, they leave every other thread's value alone (the process-wide value is
# ``config.update``'s). ``_thread_scoped`` keeps the thread's value here (what ``config.read``
# answers in that thread) and hands it to the module that owns the behaviour, per thread: the
# kernel's dtype mode, funcgrad.numpy's promotion flags. ``jit`` keys its traces on them
# (``kernel.hooks.mode_key``) and takes the staged route while any thread has its own.
class _ThreadValues(threading.local):
    def __init__(self):
        self.values = {}


_thread_values = _ThreadValues()


def _current(flag: _Flag):
    values = _thread_values.values
    return values[flag.name] if flag.name in values else flag.value


_route_lock = threading.Lock()


def _modes_route() -> None:
    # The staged route (whose key holds the modes) while a thread has its own or the process-wide
    # promotion rules or precision are not the defaults (NOTE: [x64 mode per thread]). Under one
    # lock: two threads leaving different contexts at once must not write stale answers last.
    with _route_lock:
        _route_modes()


def _route_modes() -> None:
    precision = _FLAGS["jax_default_matmul_precision"].value is not None or _thread_precision.active()
    if _numpy_core.matmul_precision_set[0] != precision:
        _numpy_core.matmul_precision_set[0] = precision
        _numpy_core._templates_follow_flags()
    _jit_route.set_jit_flags(
        modes=_dt.thread_modes()
        or _numpy_dtypes.thread_flags()
        or _FLAGS["jax_numpy_dtype_promotion"].value != "standard"
        or _FLAGS["jax_numpy_rank_promotion"].value != "allow"
        or precision
    )


# The flags whose values change what a trace makes: jit's and control flow's trace caches key on
# their values in the calling thread (registered below; NOTE: [x64 mode per thread]), and jit's
# cache-miss explanation names them.
_MODE_FLAGS = tuple(
    _FLAGS[name]
    for name in (
        "jax_enable_x64",
        "jax_numpy_dtype_promotion",
        "jax_numpy_rank_promotion",
        "jax_default_matmul_precision",
    )
)


def _mode_key() -> tuple:
    values = _thread_values.values
    if not values:  # (no thread-local context in this thread: the process-wide values, read in C)
        return tuple(map(_value_of, _MODE_FLAGS))
    return tuple(values[f.name] if f.name in values else f.value for f in _MODE_FLAGS)


_value_of = operator.attrgetter("value")


_thread_precision = ThreadOverride()  # (the threads inside default_matmul_precision: a count)


def _enter_x64(value):
    before = _dt.x64_enabled
    token = _dt.enter_thread_x64(value)
    _numpy_core._templates_follow_flags()
    _modes_route()
    if before != value:  # (a trace or program made in the other mode is not reused: NOTE: [x64 mode])
        _caches.clear_all()
    return token, before != value


def _exit_x64(entered):
    token, changed = entered
    _dt.exit_thread_x64(token)
    _numpy_core._templates_follow_flags()
    _modes_route()
    if changed:
        _caches.clear_all()


def _enter_promotion(key):
    def enter(value):
        token = _numpy_dtypes.enter_thread_flags(**{key: value})
        _numpy_core._templates_follow_flags()
        _modes_route()
        return token

    return enter


def _exit_promotion(token):
    _numpy_dtypes.exit_thread_flags(token)
    _numpy_core._templates_follow_flags()
    _modes_route()


def _enter_precision(value):
    token = _thread_precision.enter(True)  # (the value itself: _thread_values, as every flag's)
    _modes_route()
    return token


def _exit_precision(token):
    _thread_precision.exit(token)
    _modes_route()


def _matmul_precision():
    return _current(_FLAGS["jax_default_matmul_precision"])


_THREAD_LOCAL = {
    "jax_enable_x64": (_enter_x64, _exit_x64),
    "jax_numpy_dtype_promotion": (_enter_promotion("dtype_promotion"), _exit_promotion),
    "jax_numpy_rank_promotion": (_enter_promotion("rank_promotion"), _exit_promotion),
    "jax_default_matmul_precision": (_enter_precision, _exit_precision),
    "jax_default_device": (None, None),
    "jax_disable_jit": (_disable_jit.enter, _disable_jit.leave),
}


@contextlib.contextmanager
def _thread_scoped(name, value):
    flag = _flag(name)
    value = flag.check(value)
    enter, leave = _THREAD_LOCAL[name]
    values = _thread_values.values
    had, previous = name in values, values.get(name)
    token = enter(value) if enter is not None else None
    values[name] = value
    try:
        yield
    finally:
        if had:
            values[name] = previous
        else:
            values.pop(name, None)
        if leave is not None:
            leave(token)


kernel.register(mode_key=(tuple(f.name for f in _MODE_FLAGS), _mode_key), default_precision=_matmul_precision)


@contextlib.contextmanager
def _scoped(name, value):
    previous = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, previous)


def allow_f16_reductions(new_val: bool = True):
    """Context manager: whether ``lax.reduce_sum`` may sum float16/bfloat16 values over an axis
    longer than 1 (``jax_allow_f16_reductions``; default True).

    >>> import funcgrad.numpy as fnp, funcgrad.lax as lax
    >>> with allow_f16_reductions(False):
    ...     lax.reduce_sum(fnp.ones(3, "bfloat16"), [0])
    Traceback (most recent call last):
    ...
    ValueError: reduce_sum on operand bf16[3] is not allowed when jax_allow_f16_reductions=False.
    """
    return _scoped("jax_allow_f16_reductions", new_val)


def disable_jit(disable: bool = True):
    """Context manager: ``jit`` runs the Python function op by op inside (for debugging with prints).

    >>> import funcgrad
    >>> with disable_jit():
    ...     funcgrad.jit(lambda x: print("called with", x) or x)(1.0)
    called with 1.0
    1.0
    """
    return _thread_scoped("jax_disable_jit", disable)


def debug_infs(new_val: bool = True):
    """Context manager: raise ``FloatingPointError`` at the first primitive that produces an Inf.

    >>> import funcgrad.numpy as fnp
    >>> with debug_infs():
    ...     fnp.exp(1000.0)
    Traceback (most recent call last):
    ...
    FloatingPointError: invalid value (inf) encountered in exp
    """
    return _scoped("jax_debug_infs", new_val)


def log_compiles(enable: bool = True):
    """Context manager: log every ``jit`` trace-and-compile (logger ``"funcgrad"``, WARNING)."""
    return _scoped("jax_log_compiles", enable)


def explain_cache_misses(enable: bool = True):
    """Context manager: log each ``jit`` cache miss with what changed since the previous trace."""
    return _scoped("jax_explain_cache_misses", enable)


def enable_checks(enable: bool = True):
    """Context manager: type-check every jaxpr ``jit`` stages (catches malformed programs early)."""
    return _scoped("jax_enable_checks", enable)


def no_tracing(enable: bool = True):
    """Context manager: a ``jit`` that would have to trace raises (its cache must already hold the
    signature).

    >>> import funcgrad
    >>> f = funcgrad.jit(lambda x: x + 1)
    >>> _ = f(1.0)
    >>> with no_tracing():
    ...     float(f(2.0))
    3.0
    """
    return _scoped("jax_no_tracing", enable)


def enable_custom_prng(new_val: bool = True):
    """Context manager (or decorator) setting ``jax_enable_custom_prng``, JAX's switch for
    user-defined PRNG implementations; funcgrad's random functions behave the same either way
    (numpyro decorates tests with it).

    >>> with enable_custom_prng():
    ...     config.read("jax_enable_custom_prng")
    True
    """
    return _scoped("jax_enable_custom_prng", new_val)


def default_prng_impl(new_val: str):
    """Context manager (or decorator) for ``jax_default_prng_impl``: the generator of keys made
    without ``impl=`` inside (JAX's ``jax.default_prng_impl``).

    >>> import funcgrad
    >>> with default_prng_impl("philox4x32"):
    ...     funcgrad.random.key(0).dtype
    key<phx4>
    """
    return _scoped("jax_default_prng_impl", new_val)


def legacy_prng_key(new_val: str):
    """Context manager (or decorator) for ``jax_legacy_prng_key``: ``"allow"``, ``"warn"`` or
    ``"error"`` when a raw ``uint32`` key reaches a funcgrad.random function (JAX's
    ``jax.legacy_prng_key``).

    >>> import funcgrad
    >>> with legacy_prng_key("error"):
    ...     funcgrad.random.uniform(funcgrad.random.PRNGKey(0))
    Traceback (most recent call last):
    ...
    ValueError: Legacy uint32 key array passed as key to jax.random function. ...
    """
    return _scoped("jax_legacy_prng_key", new_val)


def debug_key_reuse(new_val: bool = True):
    """Context manager for JAX's key-reuse checker (``jax_debug_key_reuse``): inside
    ``debug_key_reuse(True)``, a PRNG key consumed twice raises ``KeyReuseError`` (NOTE: [key
    reuse] in funcgrad/_key_reuse.py; ``jax.experimental.key_reuse``).

    >>> import funcgrad
    >>> from funcgrad.errors import KeyReuseError
    >>> with debug_key_reuse(True):
    ...     key = funcgrad.random.key(0)
    ...     x = funcgrad.random.uniform(key)
    ...     try:
    ...         funcgrad.random.uniform(key)
    ...     except KeyReuseError as e:
    ...         print(e)
    Previously-consumed key passed to jit-compiled function at index 0
    """
    return _scoped("jax_debug_key_reuse", new_val)


def no_execution(enable: bool = True):
    """Context manager: calling a compiled ``jit`` raises (eager NumPy evaluation still runs)."""
    return _scoped("jax_no_execution", enable)


def numpy_rank_promotion(new_val: str):
    """Context manager: ``"allow"``, ``"warn"`` or ``"raise"`` on implicit rank promotion in
    ``funcgrad.numpy`` (``ones(3) + ones((2, 3))``).

    >>> import funcgrad.numpy as fnp
    >>> with numpy_rank_promotion("raise"):
    ...     fnp.ones(3) + fnp.ones((2, 3))
    Traceback (most recent call last):
    ...
    ValueError: Operands could not be broadcast together for add on shapes (3,) (2, 3) ...
    """
    return _thread_scoped("jax_numpy_rank_promotion", new_val)


def threefry_partitionable(new_val: bool = True):
    """Context manager (or decorator) for ``jax_threefry_partitionable``: ``False`` draws JAX's
    original threefry bit streams inside (NOTE: [threefry bit streams]).

    >>> import funcgrad.random as fr
    >>> with threefry_partitionable(False):
    ...     fr.bits(fr.PRNGKey(0), (2,), "uint32").tolist()  # jax: the same words
    [928981903, 3453687069]
    """
    return _scoped("jax_threefry_partitionable", new_val)


def numpy_dtype_promotion(new_val: str):
    """Context manager: ``"standard"`` or ``"strict"`` (implicit promotion between different dtypes
    raises ``TypePromotionError``; Python scalars still promote weakly).

    >>> import numpy as np, funcgrad.numpy as fnp
    >>> with numpy_dtype_promotion("strict"):
    ...     fnp.ones(2, np.float32) + fnp.ones(2, np.float64)
    Traceback (most recent call last):
    ...
    funcgrad.numpy._dtypes.TypePromotionError: Input dtypes ('float32', 'float64') have no available ...
    """
    return _thread_scoped("jax_numpy_dtype_promotion", new_val)


def softmax_custom_jvp(new_val: bool = True):
    """Context manager for ``jax_softmax_custom_jvp``: ``True`` differentiates ``nn.softmax``
    through its custom JVP rule (one residual, the result), ``False`` (the default) through its
    formula, as JAX's.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> x = fnp.array([5.5, 1.3, -4.2, 0.9])
    >>> with softmax_custom_jvp(True):
    ...     [r.shape for r, _ in funcgrad.ad_checkpoint.saved_residuals(funcgrad.nn.softmax, x)]
    [(4,)]
    """
    return _scoped("jax_softmax_custom_jvp", new_val)


def remove_size_one_mesh_axis_from_type(new_val: bool = True):
    """Context manager for ``jax_remove_size_one_mesh_axis_from_type``: explicit mesh axes of size 1
    are left out of values' types inside (JAX's flag)."""
    return _scoped("jax_remove_size_one_mesh_axis_from_type", new_val)


def auto_pcast(new_val: bool = True):
    """Context manager for ``jax_auto_pcast`` (default True): whether simple operations in a
    checked ``shard_map`` body insert the ``pvary`` casts that match their operands' varying axes
    (JAX's flag)."""
    return _scoped("jax_auto_pcast", new_val)


def default_matmul_precision(precision):
    """Context manager for ``jax_default_matmul_precision`` (on the CPU every precision is full)."""
    return _thread_scoped("jax_default_matmul_precision", precision)


def enable_x64(new_val: bool = True):
    """Context manager for ``jax_enable_x64``: ``enable_x64(False)`` computes in JAX's 32-bit mode
    inside (NOTE: [x64 mode]: NumPy's 64-bit values enter as 32-bit ones, Python scalars are weak
    float32/int32, creation defaults are 32-bit).

    >>> import numpy as np, funcgrad.numpy as fnp
    >>> with enable_x64(False):
    ...     fnp.asarray(np.ones(2)).dtype, (fnp.arange(3) + 1.5).dtype
    (dtype('float32'), dtype('float32'))
    >>> fnp.asarray(np.ones(2)).dtype
    dtype('float64')
    """
    return _thread_scoped("jax_enable_x64", new_val)


@contextlib.contextmanager
def check_tracer_leaks(enable: bool = True):
    """Context manager for ``jax_check_tracer_leaks``: a tracer that outlives its transformation
    (stored in a list by a jitted function) raises JAX's ``Exception("Leaked trace ...")`` when
    the next transformation starts or the block exits (NOTE: [leak checking]); without it, a
    leaked tracer raises ``UnexpectedTracerError`` where it is used.

    >>> import funcgrad
    >>> outs = []
    >>> with check_tracer_leaks():
    ...     _ = funcgrad.jit(lambda x: outs.append(x + 1))(1.0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    Exception: Leaked trace StagingTrace. ...
    """
    previous = config.read("jax_check_tracer_leaks")
    config.update("jax_check_tracer_leaks", enable)
    try:
        yield
        if enable:
            core.check_leaks()
    finally:
        config.update("jax_check_tracer_leaks", previous)


checking_leaks = check_tracer_leaks


def default_device(device):
    """Context manager for ``jax_default_device`` (``None`` or the default device)."""
    return _thread_scoped("jax_default_device", device)


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """Context manager: the transfer guard level of every direction (NOTE: [transfer guard]);
    each direction's own setting comes back on exit.

    >>> import funcgrad, numpy as np
    >>> with transfer_guard("disallow"):
    ...     try:
    ...         funcgrad.jit(lambda x: x)(np.ones(2))
    ...     except funcgrad.errors.JaxRuntimeError as e:  # (jaxlib's class)
    ...         print(str(e).split(": aval")[0])
    INVALID_ARGUMENT: Disallowed host-to-device transfer
    """
    flag = _flag("jax_transfer_guard")
    previous, value = flag.value, flag.check(new_val)
    with contextlib.ExitStack() as stack:
        for direction in _transfer_guard.DIRECTIONS:
            stack.enter_context(_scoped(f"jax_transfer_guard_{direction}", value))
        flag.value = value  # (the directions are set above; JAX's reads them, not this one)
        stack.callback(setattr, flag, "value", previous)
        yield


def transfer_guard_host_to_device(new_val: str):
    """Context manager for ``jax_transfer_guard_host_to_device`` (NOTE: [transfer guard])."""
    return _scoped("jax_transfer_guard_host_to_device", new_val)


def transfer_guard_device_to_host(new_val: str):
    """Context manager for ``jax_transfer_guard_device_to_host`` (never guarded on CPU devices)."""
    return _scoped("jax_transfer_guard_device_to_host", new_val)


def transfer_guard_device_to_device(new_val: str):
    """Context manager for ``jax_transfer_guard_device_to_device`` (NOTE: [transfer guard])."""
    return _scoped("jax_transfer_guard_device_to_device", new_val)


# ----------------------------------------------------------------------------------------------
# JAX's config states for the thread-local contexts (``jax.numpy_rank_promotion.get_global()``)


# Each thread-local context's state by flag name (the ``jax._src.config`` alias hands them out).
_CONTEXT_STATES: dict = {}


class _ContextState:
    """A thread-local context of flag ``name`` as JAX's config ``State``: called, the context
    manager (or decorator) setting the flag in this thread; ``.value`` is this thread's value,
    ``get_global()`` the process-wide one (NOTE: [x64 mode per thread]).

    >>> with numpy_rank_promotion("raise"):
    ...     numpy_rank_promotion.value, numpy_rank_promotion.get_global()
    ('raise', 'allow')
    """

    def __init__(self, name: str, fn: Callable):
        self._name = name
        self._fn = fn
        functools.update_wrapper(self, fn)
        _CONTEXT_STATES[name] = self

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def value(self):
        return config.read(self._name)

    def get_global(self):
        return _FLAGS[self._name].value

    def __repr__(self):
        return f"<config state {self._name}>"


enable_x64 = _ContextState("jax_enable_x64", enable_x64)
numpy_rank_promotion = _ContextState("jax_numpy_rank_promotion", numpy_rank_promotion)
numpy_dtype_promotion = _ContextState("jax_numpy_dtype_promotion", numpy_dtype_promotion)
default_matmul_precision = _ContextState("jax_default_matmul_precision", default_matmul_precision)
default_device = _ContextState("jax_default_device", default_device)
disable_jit = _ContextState("jax_disable_jit", disable_jit)
