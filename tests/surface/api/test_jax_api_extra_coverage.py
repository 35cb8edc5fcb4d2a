"""How much of JAX's wider public API funcgrad has: every name of shared/jax-api-extra.txt (JAX
0.10.2's extension API and its other public namespaces -- ``ad_checkpoint``, ``test_util``,
``custom_derivatives``, ``experimental.jet``/``sparse``/``multihost_utils``, ``profiler``,
``stages``, ``errors``, ``export``, ``ffi``, ``monitoring``, ``extend.*``, ``interpreters.*``) is
looked up in funcgrad, and the count must stay at or above ``FLOOR``. The floor only goes up.

Run with ``pytest -s`` to print the count and the missing names per namespace; the names left out
on purpose are listed, with the reason, in docs/jax_api_coverage.md. The lookup itself (a namespace
is a module imported by its dotted name) is test_jax_api_coverage's.
"""

from __future__ import annotations

import importlib
import pathlib

from tests.surface.api.test_jax_api_coverage import _namespace
from tests.surface.api.test_jax_api_coverage import coverage as _coverage

# Raised as names arrive; never lowered.
FLOOR = 406

# A copy of shared/jax-api-extra.txt lives beside the tests, so a clean checkout counts the same
# names; test_the_copy_is_current compares it with the shared original where one is next to the repo.
_LIST = pathlib.Path(__file__).resolve().parent / "data" / "jax-api-extra.txt"
_SHARED = pathlib.Path(__file__).resolve().parents[5] / "shared" / "jax-api-extra.txt"


def _api() -> dict[str, list[str]]:
    namespaces: dict[str, list[str]] = {}
    for line in _LIST.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            namespace, names = line.split(":", 1)
            namespaces[namespace.strip()] = names.split()
    return namespaces


def coverage() -> tuple[int, int, dict[str, list[str]]]:
    """``(present, total, {namespace: missing names})`` of jax-api-extra.txt (the lookup of
    test_jax_api_coverage)."""
    return _coverage(_api())


def test_jax_api_extra_coverage_floor():
    present, total, missing = coverage()
    print(f"\nfuncgrad has {present} of the {total} names of shared/jax-api-extra.txt")
    for namespace, names in missing.items():
        print(f"  {namespace}: {len(names)} missing: {' '.join(names)}")
    assert present >= FLOOR, f"{present} names present, below the floor of {FLOOR}"


def test_the_copy_is_current():
    if _SHARED.exists():  # next to a development checkout; a CI clone has only the copy
        assert _LIST.read_text() == _SHARED.read_text(), (
            "tests/surface/api/data/jax-api-extra.txt differs from shared/jax-api-extra.txt"
        )
    assert sum(len(v) for v in _api().values()) == 406


def test_every_namespace_imports_as_a_module():
    # ``import funcgrad.experimental.jet`` etc. must work where jax's does (a namespace that is
    # only reachable as an attribute would break ``from funcgrad.X import name`` in user code).
    for namespace in _api():
        module = _namespace(namespace)
        if module is not None:
            assert importlib.import_module(namespace) is module
