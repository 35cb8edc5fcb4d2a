"""Sphinx extension: the API reference, generated from the namespaces' ``__all__`` at build time.

The public namespaces are not listed here: they are ``funcgrad`` and every module reachable from it
through ``__all__`` (a name in a namespace's ``__all__`` whose value is a funcgrad module is a
namespace of its own), plus the public submodules of a namespace package that declare names of
their own (``funcgrad.lax.linalg``: a submodule whose ``__all__`` is not already re-exported by its
package). Each namespace gets one page, ``api/generated/<namespace>.rst``: the module docstring, a
summary table, and one autodoc entry (signature, docstring, example) per public name. The same
function, :func:`namespaces`, is what ``tests/integration/test_docs_site.py`` compares the built
inventory (``objects.inv``) with.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import types


def namespaces() -> dict[str, list[str]]:
    """Every public namespace of funcgrad and its ``__all__``, in a stable order."""
    found: dict[str, list[str]] = {}
    stack = ["funcgrad"]
    while stack:
        name = stack.pop()
        if name in found:
            continue
        module = importlib.import_module(name)
        found[name] = list(module.__all__)
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, types.ModuleType) and value.__name__.startswith("funcgrad."):
                stack.append(f"{name}.{attr}")
        if hasattr(module, "__path__") and name != "funcgrad":  # a package: submodules of its own
            for info in pkgutil.iter_modules(module.__path__):
                sub = f"{name}.{info.name}"
                if info.name.startswith("_") or info.name in module.__all__ or sub in found:
                    continue
                submodule = importlib.import_module(sub)
                declared = getattr(submodule, "__all__", None)
                if declared and not set(declared) <= set(module.__all__):
                    stack.append(sub)
    return dict(sorted(found.items()))


def _directive(value) -> str:
    if isinstance(value, types.ModuleType):
        return ""
    if getattr(value, "__origin__", None) is not None:  # a type alias (``dict[str, Any]``): data
        return "autodata"
    if inspect.isclass(value):
        return "autoclass"
    if callable(value):
        return "autofunction"
    return "autodata"


def _page(name: str, names: list[str]) -> str:
    module = importlib.import_module(name)
    title = f"``{name}``"
    lines = [f".. _api-{name}:", "", title, "=" * len(title), "", f".. automodule:: {name}", ""]
    if names:
        lines += [".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in sorted(names, key=str.lower)]
        lines.append("")
    for n in sorted(names, key=str.lower):
        value = getattr(module, n)
        directive = _directive(value)
        if directive:
            lines += [f".. {directive}:: {n}"]
            # A class of funcgrad's own shows its public methods and properties (those with a
            # docstring), under the class's public name: ``funcgrad.Array.sum``, ``.at``, ``.shape``.
            if directive == "autoclass" and getattr(value, "__module__", "").startswith(_OURS):
                lines += ["   :members:"]
            lines.append("")
    return "\n".join(lines)


def write_pages(srcdir: str) -> list[str]:
    """Write one page per namespace under ``srcdir/api/generated`` (only files that changed)."""
    folder = os.path.join(srcdir, "api", "generated")
    os.makedirs(folder, exist_ok=True)
    table = namespaces()
    wanted = set()
    for name, names in table.items():
        path = os.path.join(folder, f"{name}.rst")
        wanted.add(os.path.basename(path))
        text = _page(name, names)
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for stale in set(os.listdir(folder)) - wanted:
        os.remove(os.path.join(folder, stale))
    return list(table)


# --- docstring hygiene ---------------------------------------------------------------------------
# Names re-exported from NumPy (``printoptions``, the dtype ``float0``) carry NumPy's docstrings, whose
# ``:ref:`` labels live in NumPy's own site: they are shown as literal text here. A data object
# (a dict, a dtype) has no docstring of its own; autodoc would show its type's, which says nothing
# about the name, so it is dropped.
_REF = re.compile(r":ref:`([^`<]*?)\s*(?:<([^`>]*)>)?`")
_OURS = ("funcgrad", "primitives", "xla_bridge")


def _process_docstring(app, what, name, obj, options, lines):
    if what in ("data", "attribute"):
        # (A type alias such as ``dict[str, Any]`` forwards its origin's docstring: dropped too.)
        origin = getattr(obj, "__origin__", None)
        for doc in (getattr(type(obj), "__doc__", None), getattr(origin, "__doc__", None)):
            if (
                doc
                and inspect.cleandoc(doc).splitlines() == [line for line in lines if line]
                or (doc and lines and lines[0].strip() == inspect.cleandoc(doc).splitlines()[0].strip())
            ):
                lines[:] = []
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith(_OURS):
        lines[:] = [_REF.sub(lambda m: f"``{(m.group(1) or m.group(2)).strip()}``", line) for line in lines]


def _safe_summary(original):
    """autosummary's first sentence, where cutting at a period broke no markup (autosummary checks
    the whole docstring rather than the cut sentence); else the first paragraph, else the first
    sentence as plain text."""
    from docutils import nodes
    from sphinx.ext.autosummary import NullReporter, RSTStateMachine, new_document, state_classes

    def clean(text, settings):
        machine = RSTStateMachine(state_classes, "Body")
        document = new_document("", settings)
        document.reporter = NullReporter()
        machine.run([text], document)
        return not any(document.findall(nodes.system_message))

    def extract_summary(doc, document):
        summary = original(list(doc), document)
        if clean(summary, document.settings):
            return summary
        lines = [line.strip() for line in doc]
        while lines and not lines[0]:
            lines.pop(0)
        paragraph = " ".join(lines[: lines.index("")] if "" in lines else lines)
        if clean(paragraph, document.settings):
            return paragraph
        text = paragraph.split(". ")[0].rstrip(".")
        return re.sub(r"([\\`*|_<>])", r"\\\1", text) + "." if text else ""

    return extract_summary


def setup(app):
    from sphinx.ext import autosummary
    from sphinx.ext.autodoc import ClassDocumenter

    # A class exported by several namespaces is documented under each public name, not under the
    # private module that defines it (no ``:canonical:`` entry: the inventory is the public API).
    ClassDocumenter.get_canonical_fullname = lambda self: None
    autosummary.extract_summary = _safe_summary(autosummary.extract_summary)
    app.connect("autodoc-process-docstring", _process_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
