"""Sphinx extension: math rendered to MathML when the site is built (no JavaScript, no CDN).

MathJax loads from a CDN by default, which fails offline and logs console errors; its wheel-shipped
copies probe fonts in ways Chromium reports as errors. Browsers render MathML Core natively, so the
LaTeX of ``$...$``, ``$$...$$`` and the ``math`` role/directive is converted once, at build time, by
``latex2mathml``. A formula it cannot convert is a build warning (an error with ``-W``).
"""

from __future__ import annotations

import html

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _mathml(latex: str, display: str, node) -> str:
    try:
        return convert(latex.strip(), display=display)
    except Exception as e:  # noqa: BLE001 -- any failure of the converter is the author's to fix
        logger.warning("cannot convert this formula to MathML (%s): %s", e, latex, location=node)
        return f'<code class="math">{html.escape(latex)}</code>'


def visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_mathml(node.astext(), "inline", node))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node):
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node.get("number"):
        number = self.builder.env.get_domain("math").get_equation_number_for(node["label"])
        self.body.append(f'<span class="eqno">({number})</span>')
    self.body.append(_mathml(node.astext(), "block", node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
