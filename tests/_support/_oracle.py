"""jax as the tests' oracle: the compile options its programs get in the test processes.

NOTE: [oracle compile options]
jax, where a test runs it as an oracle, is there for its numbers, not for the speed of the code
XLA makes of them: its programs compile without XLA CPU's fusion emitters and with LLVM's
cheapest pipeline, about a quarter of the compile time of XLA's defaults (jax's compiles were the
largest cost of the oracle tests: test_image, test_sparse, test_random, the jet, scipy and nn
files, the differential fuzzer). The numbers are XLA's either way, but the legacy emitters round
some results differently from the fusion emitters: a float32 transcendental in the last place,
``reduce_precision`` on some values; every oracle comparison with a tolerance allows that. A
test that compares a compiled funcgrad program with jax's bit for bit compiles jax's side with
``XLA_DEFAULT_OPTIONS`` (``jax.jit(f, compiler_options=...)``), the options funcgrad's program
gets too. funcgrad's own compiles keep XLA's defaults (the code users run);
tests/bridge/test_lowering.py opts its check programs into the cheap options, as what it checks
is the lowering's numbers against the NumPy impls. tests/conftest.py applies this in every test
process once jax is imported (it does not import jax itself: a test run that never needs jax does
not pay for its import); a test that runs jax in a subprocess of its own calls
``cheapen_jax_compiles()`` there.
"""

from __future__ import annotations

import sys

ORACLE_COMPILE_OPTIONS = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_parallel_codegen_split_count": 1,
}


# The same options at XLA's defaults (what jax and funcgrad compile with outside the tests).
XLA_DEFAULT_OPTIONS = {
    "xla_cpu_use_fusion_emitters": True,
    "xla_backend_optimization_level": 3,
    "xla_llvm_disable_expensive_passes": False,
    "xla_cpu_parallel_codegen_split_count": 32,
}


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
