"""The layering contract (design.md): primitives import only the kernel, the kernel imports nothing
above it, xla_bridge never imports the surface. Stated in pyproject.toml for import-linter and
checked here, so a violating import fails the suite."""

from __future__ import annotations

import ast
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports") or str(pathlib.Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# ----------------------------------------------------------------------------------------------
# What import-linter cannot see


def _project_modules():
    for package in ("funcgrad", "primitives", "xla_bridge"):
        yield from sorted((ROOT / package).rglob("*.py"))


def _imported_names(node) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return []


def test_the_kernel_imports_only_itself_numpy_and_jaxlibs_pytrees():
    """funcgrad/kernel/ is the bottom layer: besides the standard library it may import numpy,
    ml_dtypes, jaxlib's standalone pytree extension and its own modules -- nothing else."""
    allowed_third_party = ("numpy", "ml_dtypes", "jaxlib._jax.pytree", "jaxlib._jax")
    offenders = []
    for path in sorted((ROOT / "funcgrad" / "kernel").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported_names(node):
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or name.startswith(("funcgrad.kernel", "__future__")):
                    continue
                if name == "funcgrad" and isinstance(node, ast.ImportFrom):
                    continue  # ``from funcgrad.kernel import x`` appears as module "funcgrad.kernel"
                if not name.startswith(allowed_third_party):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert not offenders, offenders


def test_no_function_local_import_of_project_modules():
    """A project module imported inside a function usually dodges an import cycle; the layers and
    the kernel's registration point (NOTE: [kernel registration]) make that unnecessary. The one
    exception is an import deferred for import-time cost, marked with a comment saying so."""
    offenders = []
    for path in _project_modules():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                names = _imported_names(inner)
                if not any(n.split(".")[0] in ("funcgrad", "primitives", "xla_bridge") for n in names):
                    continue
                if "import-time cost" in lines[inner.lineno - 1]:
                    continue
                offenders.append(
                    f"{path.relative_to(ROOT)}:{inner.lineno}: {lines[inner.lineno - 1].strip()}"
                )
    assert not offenders, offenders


def _dynamic_import_calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__"):
                yield node


def test_dynamic_imports_only_load_a_packages_own_submodules_lazily():
    # import-linter and the graph of imports see only import statements: an importlib call could
    # hide an arrow that runs back up the layers. Lazy loading is allowed only where a package's
    # __init__.py loads its own submodules on first attribute access (funcgrad's, for its
    # top-level names: the surface's top floor).
    offenders = []
    for path in _project_modules():
        tree = ast.parse(path.read_text(), str(path))
        for call in _dynamic_import_calls(tree):
            if path.name != "__init__.py":
                offenders.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert not offenders, f"dynamic imports outside a package's __init__.py: {offenders}"


def test_the_dynamic_import_check_sees_a_dodge():
    dodge = ast.parse("import importlib\nm = importlib.import_module('funcgrad.numpy')\n__import__('x')")
    assert len(list(_dynamic_import_calls(dodge))) == 2
