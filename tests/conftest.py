"""Test configuration: the default platform, hypothesis profiles, the helpers' import path and
shared fixtures.

The folders mirror the code (design.md): ``kernel/``, ``primitives/`` (the operator table
``primitives/op_db/`` and its generic checks), ``bridge/``, ``surface/<namespace>/`` and
``integration/`` (subprocesses, notebooks, external suites, several processes). Helpers shared
across folders live in ``_support/``.

The ``ci`` profile is deterministic and bounded: derandomized examples, no deadline (2 shared
cores), and a small example budget so the suite fits the CI time budget. It is the default
everywhere, so that ``python -m pytest`` on a laptop runs what CI runs; ``HYPOTHESIS_PROFILE=dev``
explores more (random draws, 60 examples).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# The suite's default device is the CPU on every machine: its tolerances, virtual CPU devices and
# doctest outputs are the CPU's. On a GPU machine tests/bridge/test_gpu.py still runs on the GPU (it asks
# for funcgrad.devices("cuda")); FUNCGRAD_PLATFORM=cuda runs the whole suite there (docs/gpu.md).
# Subprocesses started by tests inherit this.
os.environ.setdefault("FUNCGRAD_PLATFORM", "cpu")

# pytest imports test files in "prepend" mode with no __init__.py under tests/, so a test's own folder
# is on sys.path but its neighbours' are not. The shared helpers (``from _checks import ...``,
# ``from _numpy_harness import ...``) and the operator table (``import op_db``) are importable from
# every folder, and from processes that a test starts with this conftest (tests/surface/spmd/).
_TESTS = Path(__file__).resolve().parent
for _folder in (_TESTS / "primitives", _TESTS / "_support"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import _docs_build  # noqa: E402 - tests/_support is on sys.path from here
from _oracle import cheapen_funcgrad_compiles, cheapen_jax_compiles  # noqa: E402

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=8,  # (12 until session 22: the suite ran past its 10-minute budget; ``dev`` explores)
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one test process per core, at most 4 -- each process
    compiles XLA programs with threads of its own and holds its own compiled-program caches, so
    more workers than that cost memory without saving time."""
    return max(1, min(4, os.cpu_count() or 1))


# The external-suite harnesses (an ``autograd`` import shim, the example runner) are run by
# tests/integration/test_external_suites.py in subprocesses; collecting them here would put the shim's
# ``autograd`` package on sys.path for the whole session.
collect_ignore = ["integration/suites"]


def pytest_sessionfinish(session, exitstatus):
    """The layers import only as ``funcgrad.primitives``/``funcgrad.xla_bridge`` (design.md, one
    namespace). The repository root is on sys.path while testing, so a stray ``import primitives``
    in a test or a docstring example would load a second copy of a layer (with its own registries);
    this makes such an import fail the run instead of passing by accident."""
    strays = sorted(m for m in sys.modules if m.split(".")[0] in ("primitives", "xla_bridge"))
    if strays:
        print(f"\nA layer was imported under its folder name instead of funcgrad.*: {strays[:5]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_PREVIOUS = ["(collection)"]
_JAX_X64_SEEN = [False]  # (jax's 64-bit mode was on at a test's start in this process)


def _check_process_state(item) -> None:
    """Process-wide switches that a test or an import may leave set, silently changing every later
    test in this worker: the ``funcgrad.as_jax`` alias (``import jax`` giving funcgrad would turn
    jax-oracle tests into funcgrad-against-itself), funcgrad's 32-bit mode (NOTE: [x64 mode]) and
    jax's, once it was 64-bit."""
    jax = sys.modules.get("jax")
    if jax is not None and type(jax).__name__ == "_JaxModule":
        pytest.fail(f"the funcgrad.as_jax alias is installed in the test process (after {_PREVIOUS[0]})")
    from funcgrad.kernel import dtypes

    # A module that runs its tests in 32-bit mode says so (``RUNS_IN_X32 = True``, test_x32.py).
    in_x32_module = getattr(item.module, "RUNS_IN_X32", False) if hasattr(item, "module") else False
    if not dtypes.x64_enabled and "JAX_ENABLE_X64" not in os.environ and not in_x32_module:
        pytest.fail(f"jax_enable_x64=False was left set (after {_PREVIOUS[0]}); restore it in that test")
    # jax, the oracle, runs in 64-bit mode as funcgrad's default: the oracle modules turn it on for
    # the process at their import (collection), so a test that runs jax in 32-bit mode must scope it
    # (``jax._src.config.enable_x64(False)``) or restore it, else every later jax oracle in this worker
    # computes in another mode than when its file runs alone.
    if jax is not None and "JAX_ENABLE_X64" not in os.environ and not in_x32_module:
        if getattr(jax.config, "jax_enable_x64", False):
            _JAX_X64_SEEN[0] = True
        elif _JAX_X64_SEEN[0]:
            pytest.fail(
                f"jax's jax_enable_x64=False was left set (after {_PREVIOUS[0]}); restore it in that test"
            )
    _PREVIOUS[0] = item.nodeid


def _warm_assertion_rewrites(config) -> None:
    """Rewrite the test modules' asserts once, in the controller of an ``-n`` run, into pytest's
    cache of rewritten modules (``__pycache__/*-pytest-*.pyc``), so each worker loads them instead
    of rewriting them all itself: rewriting took 6 s of CPU in every process's collection (16.5 s
    with it, 10.7 s with ``--assert=plain``). The workers still rewrite whatever is not cached yet
    (the cache is written atomically, as pytest does); with ``PYTHONDONTWRITEBYTECODE`` nothing is
    written. It reads pytest's own rewriting functions (private ones): where those differ, it does
    nothing."""
    try:
        from _pytest.assertion import assertstate_key, rewrite

        state = config.stash[assertstate_key]
        paths = []
        for arg in config.args or [str(_TESTS)]:  # (what this run collects: a file or a folder)
            root = Path(arg.split("::")[0]).resolve()
            paths += [root] if root.is_file() else [*root.rglob("conftest.py"), *root.rglob("test_*.py")]
        for path in sorted(p for p in paths if p.is_relative_to(_TESTS) and p.suffix == ".py"):
            if path.relative_to(_TESTS).parts[:2] == ("integration", "suites"):  # (collect_ignore)
                continue
            pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(path, pyc, state.trace) is not None or not rewrite.try_makedirs(pyc.parent):
                continue
            source_hash, co = rewrite._rewrite_test(path, config)
            rewrite._write_pyc(state, co, source_hash, pyc)
    except Exception:  # (an optimisation only: the workers rewrite for themselves)
        return


def pytest_configure(config):
    """In the controller of a run with workers (``-n``), the asserts are rewritten once, in a
    thread, while the workers start (``_warm_assertion_rewrites``)."""
    workers = getattr(config.option, "numprocesses", None)
    if (
        workers
        and not hasattr(config, "workerinput")
        and config.getoption("assertmode") == "rewrite"
        and not sys.dont_write_bytecode
    ):
        threading.Thread(target=_warm_assertion_rewrites, args=(config,), daemon=True).start()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The documentation site's tests go last, and its build starts now in the background
    (tests/_support/_docs_build.py): the other tests run while it builds, instead of a worker (two,
    under xdist) waiting a minute for it. The order is the same in every worker, as xdist requires."""
    site = [item for item in items if item.path.name == _docs_build.MODULE]
    if not site:
        return
    items[:] = [item for item in items if item.path.name != _docs_build.MODULE] + site
    if not os.environ.get("FUNCGRAD_DOCS_SITE") and not config.getoption("collectonly"):
        try:  # (the same skip as the module's: without the docs extra nothing is built)
            import myst_nb  # noqa: F401
            import sphinx  # noqa: F401
        except ImportError:
            return
        # (``tmp_path_factory``'s own object: the fixture's basetemp, before any test asks for it)
        _docs_build.start(_docs_build.site_folder(config._tmp_path_factory.getbasetemp()))


def pytest_runtest_setup(item):
    """jax, once a test module has imported it, and funcgrad compile their programs cheaply (NOTE:
    [oracle compile options] in tests/_support/_oracle.py); the process is in the state every test
    assumes (``_check_process_state``)."""
    _check_process_state(item)
    cheapen_jax_compiles()
    cheapen_funcgrad_compiles()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="module")
def x32():
    """funcgrad in 32-bit mode for a module's tests (the module says ``RUNS_IN_X32 = True``; the
    previous mode restored after them: one switch each way, since a switch empties every trace and
    compile cache)."""
    import funcgrad

    previous = funcgrad.config.jax_enable_x64
    funcgrad.config.update("jax_enable_x64", False)
    try:
        yield
    finally:
        funcgrad.config.update("jax_enable_x64", previous)


@pytest.fixture
def uncached():
    """A context in which eager ``grad`` records nothing and caches nothing (the reference path of
    NOTE: [eager grad program cache]: the JVP trace and the ordinary transpose)."""
    import funcgrad

    class Switch:
        def __enter__(self):
            funcgrad.config.update("funcgrad_eager_program_cache", False)

        def __exit__(self, *exc):
            funcgrad.config.update("funcgrad_eager_program_cache", True)

    return Switch()
