"""jax as the tests' oracle: the compile options its programs get in the test processes.

NOTE: [oracle compile options]
The tests check the numbers of the programs funcgrad and jax build, not the speed of the code XLA
makes of them: in the test processes both compile without XLA CPU's fusion emitters and with LLVM's
cheapest pipeline (``ORACLE_COMPILE_OPTIONS``), about a quarter of the compile time of XLA's
defaults (the fusion emitters are that cost: with them on, the other options save nothing).
funcgrad's programs over sub-byte types (int2, int4, float4) keep the fusion emitters: the legacy
ones abort the process on some of them (a pad of int2). Compiles were the largest cost of the
suite: jax's in the oracle tests (test_image, test_sparse, test_random, the jet, scipy and nn
files, the differential fuzzer), funcgrad's wherever a test compiles (eager control flow runs
compiled: ~90% of test_control_flow's CPU time was XLA compiling). The program each side hands XLA
(the StableHLO, what funcgrad's lowering makes) is the same either way; XLA's HLO passes run either
way. The legacy emitters round some results differently from the fusion emitters: a float32
transcendental in the last place, ``reduce_precision`` on some values; every comparison with a
tolerance allows that, and a funcgrad-vs-jax comparison bit for bit holds as both sides get the
same options. A test that checks XLA's default code bit for bit (float32 loops equal to jax's at
its defaults, XLA's random bits) compiles funcgrad's side in ``xla_default_compiles()`` and jax's
with ``XLA_DEFAULT_OPTIONS`` (``jax.jit(f, compiler_options=...)``). The options reach XLA as each
compile's environment overrides, so options a caller passes still win. The notebooks' kernels
(tests/integration/test_notebooks.py) get the same options as ``XLA_FLAGS`` (``oracle_xla_flags``),
for every program of the kernel's process (no notebook compiles a sub-byte type); that took the
seven notebooks from 47.3 to 37.2 s of CPU. The documentation build keeps XLA's defaults: its guides
compile little (the same options saved nothing: 49.6 and 49.8 s of CPU), and its page of timings
shows XLA's default code. Code outside the tests (users, bench/) keeps XLA's defaults.
tests/conftest.py applies this in every test process, to jax once a test module has imported it (it
does not import jax itself: a test run that never needs jax does not pay for its import) and to
funcgrad once its compiler is imported; a test that runs jax in a subprocess of its own calls
``cheapen_jax_compiles()`` there.
"""

from __future__ import annotations

import contextlib
import re
import sys

ORACLE_COMPILE_OPTIONS = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_parallel_codegen_split_count": 1,
}


# A funcgrad program over sub-byte types keeps XLA CPU's fusion emitters: the legacy ones abort the
# process on some of them (a pad of int2: test_narrow_dtypes), which jax's tests never compile.
_SUB_BYTE = re.compile(r"[x<](?:u?i[24]|f4E2M1FN|f6E[23]M[23]FN)>")


# The same options at XLA's defaults (what jax and funcgrad compile with outside the tests).
XLA_DEFAULT_OPTIONS = {
    "xla_cpu_use_fusion_emitters": True,
    "xla_backend_optimization_level": 3,
    "xla_llvm_disable_expensive_passes": False,
    "xla_cpu_parallel_codegen_split_count": 32,
}


def oracle_xla_flags(flags: str = "") -> str:
    """``XLA_FLAGS`` for a process of its own (a notebook's kernel) that compiles with
    ``ORACLE_COMPILE_OPTIONS``: ``flags`` with each option that it does not set already.

    Example:
        >>> oracle_xla_flags("--xla_force_host_platform_device_count=8").split()[:2]
        ['--xla_force_host_platform_device_count=8', '--xla_cpu_use_fusion_emitters=false']
        >>> "--xla_backend_optimization_level=0" in oracle_xla_flags("--xla_backend_optimization_level=2")
        False
    """
    given = set(re.findall(r"--(\w+)=", flags))
    extra = [f"--{k}={str(v).lower()}" for k, v in ORACLE_COMPILE_OPTIONS.items() if k not in given]
    return " ".join([*flags.split(), *extra])


def cheapen_jax_compiles() -> bool:
    """Give every program jax compiles from now on ``ORACLE_COMPILE_OPTIONS`` (options a caller
    passes, ``jit(..., compiler_options=)``, still win). A no-op until jax is imported, and once
    done. Returns whether jax's compiles are cheapened.

    Example:
        >>> import jax
        >>> cheapen_jax_compiles()
        True
        >>> from jax._src import compiler
        >>> dict(compiler.get_compile_options(num_replicas=1, num_partitions=1).env_option_overrides)[
        ...     "xla_cpu_use_fusion_emitters"]
        False
    """
    compiler = sys.modules.get("jax._src.compiler")
    if compiler is None:
        return False
    if getattr(compiler.get_compile_options, "oracle_options", None) is not None:
        return True
    default = compiler.get_compile_options

    def get_compile_options(*args, env_options_overrides=None, **kwargs):
        overrides = {**ORACLE_COMPILE_OPTIONS, **(env_options_overrides or {})}
        return default(*args, env_options_overrides=overrides, **kwargs)

    get_compile_options.oracle_options = ORACLE_COMPILE_OPTIONS
    compiler.get_compile_options = get_compile_options
    return True


_FUNCGRAD_CHEAP = [True]  # False inside xla_default_compiles()


def cheapen_funcgrad_compiles() -> bool:
    """Give every program funcgrad compiles from now on ``ORACLE_COMPILE_OPTIONS`` as environment
    overrides (options a caller passes, ``.compile(compiler_options=)``, still win), except inside
    ``xla_default_compiles()``. A no-op until funcgrad's compiler (``funcgrad.xla_bridge.executables``)
    is imported, and once done. Returns whether funcgrad's compiles are cheapened.

    Example:
        >>> import funcgrad, funcgrad.numpy as jnp, funcgrad.xla_bridge.executables
        >>> cheapen_funcgrad_compiles()
        True
        >>> float(funcgrad.lax.fori_loop(0, 3, lambda i, x: 2 * x, jnp.float32(1)))
        8.0
    """
    executables = sys.modules.get("funcgrad.xla_bridge.executables")
    if executables is None:
        return False
    if getattr(executables.compile_and_load, "oracle_options", None) is not None:
        return True
    default = executables.compile_and_load

    # Every compile (single-device and SPMD) goes through compile_and_load with fresh options.
    def compile_and_load(client, module, device_list, opts, host_callbacks=()):
        if _FUNCGRAD_CHEAP[0]:
            given = {name for name, _ in opts.env_option_overrides}
            options = ORACLE_COMPILE_OPTIONS
            if not isinstance(module, str) or _SUB_BYTE.search(module):
                options = {k: v for k, v in options.items() if k != "xla_cpu_use_fusion_emitters"}
            extra = [(k, v) for k, v in options.items() if k not in given]
            opts.env_option_overrides = list(opts.env_option_overrides) + extra
        return default(client, module, device_list, opts, host_callbacks)

    compile_and_load.oracle_options = ORACLE_COMPILE_OPTIONS
    # (both routes compile through executables.load_compiled, which calls this module's name)
    executables.compile_and_load = compile_and_load
    return True


@contextlib.contextmanager
def xla_default_compiles():
    """Within: funcgrad compiles with XLA's default options, as outside the tests. Its caches are
    emptied on entry, so no program compiled cheaply before is reused.

    Example:
        >>> import funcgrad, funcgrad.numpy as jnp
        >>> with xla_default_compiles():
        ...     float(funcgrad.jit(jnp.sin)(jnp.float32(1)))
        0.84147...
    """
    import funcgrad  # noqa: PLC0415 - only the tests that need XLA's defaults import it here

    funcgrad.clear_caches()
    _FUNCGRAD_CHEAP[0] = False
    try:
        yield
    finally:
        _FUNCGRAD_CHEAP[0] = True
