"""How much of JAX's public API funcgrad has: every name of shared/jax-api.txt (JAX 0.10.2's
user-facing namespaces, ``funcgrad.X`` for ``jax.X``) is looked up in funcgrad, and the count must
stay at or above ``FLOOR``. The floor only goes up: raise it when names are added, never lower it.

``NAMESPACE: name name ...`` lines name a module (``funcgrad.scipy.stats.norm`` is a module, as
in JAX: ``from funcgrad.scipy.stats import norm`` must work). The test prints the count and the
missing names per namespace (``pytest -s``); the names left out on purpose are listed, with the
reason, in docs/jax_api_coverage.md.
"""

from __future__ import annotations

import importlib
import pathlib
import types

# Raised as names arrive; never lowered.
FLOOR = 1172  # raise it as names are added; never lower it

# A copy of the project's shared/jax-api.txt (JAX 0.10.2's user-facing names) lives beside the
# tests, so a clean checkout counts the same names; test_the_copy_is_current compares it with the
# shared original where one sits next to the repository.
_LIST = pathlib.Path(__file__).resolve().parent / "data" / "jax-api.txt"
_SHARED = pathlib.Path(__file__).resolve().parents[5] / "shared" / "jax-api.txt"
_CANDIDATES = [_LIST]


def _api() -> dict[str, list[str]]:
    for path in _CANDIDATES:
        if path.exists():
            namespaces: dict[str, list[str]] = {}
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                namespace, names = line.split(":", 1)
                namespaces[namespace.strip()] = names.split()
            return namespaces
    raise FileNotFoundError(f"{_LIST} is missing: copy shared/jax-api.txt there")


_ROOT = pathlib.Path(__file__).resolve().parents[3]


def _ours(module) -> bool:
    """Whether ``module`` comes from this checkout (an editable install of another checkout can
    otherwise supply submodules this one does not have)."""
    file = getattr(module, "__file__", None)
    return file is None or _ROOT in pathlib.Path(file).resolve().parents


def _namespace(dotted: str):
    """The module ``dotted`` (imported as a module first, else reached by attributes), or None."""
    try:
        module = importlib.import_module(dotted)
        return module if _ours(module) else None
    except ImportError:
        pass
    parts = dotted.split(".")
    try:
        obj = importlib.import_module(parts[0])
        for part in parts[1:]:
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def coverage(api: dict[str, list[str]] | None = None) -> tuple[int, int, dict[str, list[str]]]:
    """``(present, total, {namespace: missing names})`` of ``api`` (``{namespace: names}``; by
    default shared/jax-api.txt's)."""
    present = total = 0
    missing: dict[str, list[str]] = {}
    for namespace, names in (_api() if api is None else api).items():
        module = _namespace(namespace)
        absent = [n for n in names if module is None or not hasattr(module, n)]
        total += len(names)
        present += len(names) - len(absent)
        if absent:
            missing[namespace] = absent
    return present, total, missing


def test_jax_api_coverage_floor():
    present, total, missing = coverage()
    print(f"\nfuncgrad has {present} of the {total} names of shared/jax-api.txt")
    for namespace, names in missing.items():
        print(f"  {namespace}: {len(names)} missing: {' '.join(names)}")
    assert present >= FLOOR, f"{present} names present, below the floor of {FLOOR}"


def test_module_namespaces_are_modules():
    # ``stats.norm`` and friends are modules in JAX: importable with ``import funcgrad.scipy.stats.norm``.
    for namespace in _api():
        module = _namespace(namespace)
        if module is not None and namespace.count(".") >= 1:
            kind = type(module).__name__
            assert isinstance(module, types.ModuleType), f"{namespace} is a {kind}, not a module"


def test_the_copy_is_current():
    if _SHARED.exists():  # next to a development checkout; a CI clone has only the copy
        assert _LIST.read_text() == _SHARED.read_text(), (
            "tests/surface/api/data/jax-api.txt differs from shared/jax-api.txt"
        )
    assert len(_api()) > 10


def test_no_function_is_shadowed_by_a_module():
    # A submodule of the same name as a function replaces it as a package attribute once imported
    # (funcgrad.remat was the module funcgrad/remat.py, so funcgrad.remat(f) failed): a name that
    # is a module here must be a module in jax too.
    import pytest  # noqa: PLC0415

    jax = pytest.importorskip("jax")
    importlib.import_module("funcgrad.api")  # imports the submodules that could shadow a name
    for namespace, names in _api().items():
        module = _namespace(namespace)
        if module is None:
            continue
        theirs = _namespace("jax" + namespace[len("funcgrad") :])
        for n in names:
            ours = getattr(module, n, None)
            if isinstance(ours, types.ModuleType) and theirs is not None and hasattr(theirs, n):
                assert isinstance(getattr(theirs, n), types.ModuleType), (
                    f"{namespace}.{n} is a module here but a {type(getattr(theirs, n)).__name__} in jax"
                )
    assert jax is not None
