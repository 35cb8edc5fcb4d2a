"""Sphinx configuration of funcgrad's documentation site.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (README, ``## Documentation``).

- The API reference is generated at build time from the namespaces' ``__all__``
  (``_ext/funcgrad_api.py``), never from a hand-kept list.
- The notebooks (``notebooks/*.ipynb``, committed with their outputs) are copied into
  ``docs/notebooks/`` and rendered from their stored outputs, in the order of their file names
  (the order they teach). Set ``FUNCGRAD_DOCS_EXECUTE_NOTEBOOKS=1`` to re-execute them at build time
  (that needs the ``notebooks`` extra too, and several minutes).
- The guides (``guides/*.md``) are MyST-NB pages whose ``{code-cell}`` blocks run at build time: a
  failing example fails the build.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))

import funcgrad_api  # noqa: E402

import funcgrad  # noqa: E402

project = "funcgrad"
author = "the funcgrad authors"
copyright = "2026, the funcgrad authors"
release = version = funcgrad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "mathml_math",
    "myst_nb",
    "funcgrad_api",
]

# --- the generated API pages and the copied notebooks --------------------------------------------
funcgrad_api.write_pages(HERE)

_NOTEBOOKS = os.path.join(HERE, "notebooks")
os.makedirs(_NOTEBOOKS, exist_ok=True)
for _source in sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))):
    _target = os.path.join(_NOTEBOOKS, os.path.basename(_source))
    if not os.path.exists(_target) or open(_source, "rb").read() != open(_target, "rb").read():
        shutil.copyfile(_source, _target)

exclude_patterns = ["_build", "_ext", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# --- autodoc -------------------------------------------------------------------------------------
autodoc_default_options = {"members": False}
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False
autosummary_generate = False
add_module_names = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# --- MyST / MyST-NB ------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
if os.environ.get("FUNCGRAD_DOCS_EXECUTE_NOTEBOOKS") != "1":
    nb_execution_excludepatterns = ["notebooks/*"]

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"funcgrad {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["funcgrad.css"]
html_favicon = "_static/favicon.svg"
html_context = {"default_mode": "auto"}  # (the theme logs an error for an unset mode)

# --- math: MathML written at build time (_ext/mathml_math.py), so no page needs a CDN or a script -----
html_math_renderer = "mathml"


# --- links that leave the site -------------------------------------------------------------------
# The pages under docs/ are also read on the repository's web view, where a link to ``../README.md``
# works; on the site the README is not a page, so such a link is shown as its text (and the README's
# name) rather than as a broken reference.
_OUTSIDE = re.compile(r"\[([^\]]+)\]\(\.\./README\.md(?:#[^)]*)?\)")


def _source_read(app, docname, source):
    source[0] = _OUTSIDE.sub(r"\1 (in the README)", source[0])


def setup(app):
    app.connect("source-read", _source_read)
