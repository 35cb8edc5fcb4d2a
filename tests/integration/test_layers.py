"""The layering contract (design.md): primitives import only the kernel, the kernel imports nothing
above it, xla_bridge never imports the surface. Stated in pyproject.toml for import-linter and
checked here, so a violating import fails the suite."""

from __future__ import annotations

import ast
import functools
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]


def installed_layout(dest: pathlib.Path) -> pathlib.Path:
    """The source tree as a wheel installs it: ``primitives/`` and ``xla_bridge/`` become the
    subpackages ``funcgrad.primitives`` and ``funcgrad.xla_bridge`` (setup.py maps the folders).
    import-linter reads packages from the file system, so it checks this copy."""
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.c")
    shutil.copytree(ROOT / "funcgrad", dest / "funcgrad", ignore=skip)
    for folder in ("primitives", "xla_bridge"):
        shutil.copytree(ROOT / folder, dest / "funcgrad" / folder, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


# Each layer and the layers it may import; every other module of funcgrad is forbidden to it.
LAYERS = {
    "funcgrad.kernel": (),
    "funcgrad.primitives": ("funcgrad.kernel",),
    "funcgrad.xla_bridge": ("funcgrad.kernel", "funcgrad.primitives"),
}


def lint_imports(tree: pathlib.Path) -> subprocess.CompletedProcess:
    """Runs import-linter over ``tree`` with one forbidden contract per layer; the forbidden
    modules are every top-level module of funcgrad that the layer may not import, so a new surface
    module is covered without an edit here."""
    package = tree / "funcgrad"
    children = sorted(
        f"funcgrad.{p.stem}" for p in package.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    )
    children = [c for c in children if c != "funcgrad.__init__"]
    lines = ["[importlinter]", "root_package = funcgrad", "include_external_packages = False", ""]
    for i, (layer, allowed) in enumerate(LAYERS.items()):
        forbidden = [c for c in children if c != layer and c not in allowed]
        lines += [
            f"[importlinter:contract:{i}]",
            f"name = {layer} imports only {', '.join(allowed) or 'itself'}",
            "type = forbidden",
            f"source_modules = {layer}",
            "forbidden_modules =",
            *(f"    {f}" for f in forbidden),
            "allow_indirect_imports = True",
            "",
        ]
    (tree / ".importlinter").write_text("\n".join(lines))
    exe = shutil.which("lint-imports") or str(pathlib.Path(sys.executable).parent / "lint-imports")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)}
    return subprocess.run([exe], cwd=tree, capture_output=True, text=True, timeout=300, env=env)


def test_import_contracts_are_kept(tmp_path):
    result = lint_imports(installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and f"{len(LAYERS)} kept" in result.stdout, result.stdout


@pytest.mark.parametrize(
    "module, bad_import",
    [
        ("primitives/dot.py", "funcgrad.api"),
        ("primitives/dot.py", "funcgrad.xla_bridge.runtime"),
        ("kernel/ir.py", "funcgrad.primitives.dot"),
        ("xla_bridge/runtime.py", "funcgrad.numpy"),
    ],
)
def test_a_broken_layer_is_caught(tmp_path, module, bad_import):
    tree = installed_layout(tmp_path)
    path = tree / "funcgrad" / module
    path.write_text(path.read_text() + f"\nimport {bad_import}  # noqa\n")
    result = lint_imports(tree)
    assert result.returncode != 0 and "1 broken" in result.stdout, result.stdout


# ----------------------------------------------------------------------------------------------
# What import-linter cannot see


def _project_modules():
    for package in ("funcgrad", "primitives", "xla_bridge"):  # the folders; all import as funcgrad.*
        yield from sorted((ROOT / package).rglob("*.py"))


@functools.cache
def _parsed(path):
    """A module's source lines and syntax tree, parsed once for the tests below."""
    text = path.read_text()
    return text.splitlines(), ast.parse(text, str(path))


def _function_local_imports(tree):
    """The import statements in function bodies, each once however deep the functions nest."""
    stack = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            stack.append((child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)))


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
        for node in ast.walk(_parsed(path)[1]):
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
        lines, tree = _parsed(path)
        for inner in _function_local_imports(tree):
            names = _imported_names(inner)
            if not any(n.split(".")[0] == "funcgrad" for n in names):
                continue
            if "import-time cost" in lines[inner.lineno - 1]:
                continue
            offenders.append(f"{path.relative_to(ROOT)}:{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    assert not offenders, offenders


def test_the_function_local_import_check_sees_one():
    tree = ast.parse("import funcgrad\ndef f():\n    def g():\n        import funcgrad.numpy\n    return g\n")
    assert [n.lineno for n in _function_local_imports(tree)] == [4]


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
        for call in _dynamic_import_calls(_parsed(path)[1]):
            if path.name != "__init__.py":
                offenders.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert not offenders, f"dynamic imports outside a package's __init__.py: {offenders}"


def test_the_dynamic_import_check_sees_a_dodge():
    dodge = ast.parse("import importlib\nm = importlib.import_module('funcgrad.numpy')\n__import__('x')")
    assert len(list(_dynamic_import_calls(dodge))) == 2


# Each public module imported first, in a process of its own: a circle of module-level imports
# through a partially initialised module fails only for the module a user happened to load first
# (``import funcgrad.sharding`` failed while every test that imported ``funcgrad.numpy`` first
# passed). The parent loads the dependencies and the three layers below the surface (no surface
# module can sit in their circles: test_import_contracts_are_kept); each forked child imports one
# surface module, so a child costs funcgrad's surface and nothing else.
_IMPORT_FIRST = """
import importlib, os, pkgutil, sys
import numpy, scipy, jaxlib._jax, ml_dtypes, opt_einsum
import funcgrad.kernel, funcgrad.primitives, funcgrad.xla_bridge
folder = os.path.dirname(funcgrad.__file__)
modules = sorted(m.name for m in pkgutil.iter_modules([folder]) if not m.name.startswith("_"))
failed = []
for name in modules:
    if name == "as_jax":  # installs the ``import jax`` alias; imported first by its own tests
        continue
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module("funcgrad." + name)
        except BaseException as e:
            print(f"funcgrad.{name}: {type(e).__name__}: {e}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        failed.append(name)
print(len(modules), failed)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_every_public_module_imports_first():
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_FIRST], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    count, failed = proc.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) > 30 and failed == "[]", proc.stderr
