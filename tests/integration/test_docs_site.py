"""The documentation site (issue 32): it builds with warnings as errors, documents every public name
and nothing else, has no broken internal link, and works in a real browser.

One build per test run, into a temporary folder: ``sphinx-build -W --keep-going -b html docs
<tmp>/html``, the command of the README's ``## Documentation``, with the notebooks rendered from
their stored outputs and the guides' code cells executed (about 35 s of CPU), started in the
background after collection while these tests wait at the end of the run (tests/_support/_docs_build.py);
``FUNCGRAD_DOCS_SITE=docs/_build/html`` checks a site built already instead.
The browser is Debian's ``chromium`` in headless mode, driven through the DevTools protocol over a
pipe (``--remote-debugging-pipe``); no browser is downloaded. Without the ``docs`` extra or without
``chromium`` the tests that need them skip and say so.
"""

from __future__ import annotations

import base64
import functools
import html.parser
import http.server
import importlib
import importlib.util
import json
import os
import posixpath
import re
import select
import shutil
import subprocess
import threading
import time
import types
import urllib.parse
from pathlib import Path

import _docs_build
import pytest

# every test here builds the whole site or starts a browser: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_nb", reason="the docs extra is not installed (pip install -e '.[docs]')")


def _extension():
    spec = importlib.util.spec_from_file_location("funcgrad_api", DOCS / "_ext" / "funcgrad_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if os.environ.get("FUNCGRAD_DOCS_SITE"):  # a site built already (by the README's command): check it
        return Path(os.environ["FUNCGRAD_DOCS_SITE"]).resolve()
    # One build per run, started in the background right after collection (tests/conftest.py) and
    # shared by pytest-xdist's workers: tests/_support/_docs_build.py.
    return _docs_build.wait(_docs_build.site_folder(tmp_path_factory.getbasetemp()))


# --- the API reference ---------------------------------------------------------------------------


def _public_namespaces() -> dict[str, list[str]]:
    """funcgrad and every module reachable from it through ``__all__`` (written here independently of
    the docs extension, which has its own copy of the rule)."""
    found, stack = {}, ["funcgrad"]
    while stack:
        name = stack.pop()
        if name not in found:
            module = importlib.import_module(name)
            found[name] = list(module.__all__)
            stack += [
                f"{name}.{a}"
                for a in module.__all__
                if isinstance(getattr(module, a), types.ModuleType)
                and getattr(module, a).__name__.startswith("funcgrad.")
            ]
    return found


def _inventory(site: Path) -> dict[str, dict]:
    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", posixpath.join)
    return {typ: dict(entries) for typ, entries in inventory.items() if typ.startswith("py:")}


def test_inventory_is_the_public_api(site):
    namespaces = _extension().namespaces()
    reachable = _public_namespaces()
    assert set(reachable) <= set(namespaces), "a namespace reachable through __all__ has no page"
    # The namespace list that tests/surface/api/test_namespaces.py checks is documented too.
    spec = importlib.util.spec_from_file_location(
        "_namespaces_test", ROOT / "tests" / "surface" / "api" / "test_namespaces.py"
    )
    listed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(listed)
    assert not set(listed.NAMESPACES) - set(namespaces), set(listed.NAMESPACES) - set(namespaces)

    expected = set(namespaces) | {f"{ns}.{name}" for ns, names in namespaces.items() for name in names}
    documented = {
        name
        for entries in _inventory(site).values()
        for name in entries
        if name in namespaces or name.rpartition(".")[0] in namespaces
    }
    missing, extra = sorted(expected - documented), sorted(documented - expected)
    assert not missing, f"{len(missing)} public names have no entry: {missing[:30]}"
    assert not extra, f"{len(extra)} documented names are not public: {extra[:30]}"
    assert len(expected) > 1000  # the reference really is the whole API


class _Page(html.parser.HTMLParser):
    """The ids, links and doctest blocks of one HTML page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.doctests = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if attrs.get("name") and tag == "a":
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) and tag in ("a", "link", "script", "img"):
                self.links.append(attrs[key])
        if tag == "div" and "doctest" in (attrs.get("class") or "").split():
            self.doctests += 1


@functools.cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_every_entry_has_signature_docstring_and_example(site):
    namespaces = _extension().namespaces()
    without_anchor, examples_expected, examples_shown = [], 0, 0
    for ns, names in namespaces.items():
        page = _parse(site / "api" / "generated" / f"{ns}.html")
        module = importlib.import_module(ns)
        for name in names:
            value = getattr(module, name)
            if f"{ns}.{name}" not in page.ids and not isinstance(value, types.ModuleType):
                without_anchor.append(f"{ns}.{name}")
        examples_expected += sum(
            ">>>" in (getattr(module, n).__doc__ or "")
            for n in names
            if callable(getattr(module, n)) and not isinstance(getattr(module, n), types.ModuleType)
        )
        examples_shown += page.doctests
    assert not without_anchor, without_anchor[:20]
    assert examples_shown >= examples_expected > 800, (examples_shown, examples_expected)
    # a signature and a docstring: the entry of value_and_grad shows both
    text = (site / "api" / "generated" / "funcgrad.html").read_text(encoding="utf-8")
    entry = text[text.index('id="funcgrad.value_and_grad"') :][:6000]
    assert "argnums" in entry and "has_aux" in entry and "&gt;&gt;&gt;" in entry


def test_search_index_has_the_names(site):
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    objects = {(prefix, entry[4]) for prefix, entries in index["objects"].items() for entry in entries}
    for prefix, name in [
        ("funcgrad", "value_and_grad"),
        ("funcgrad", "vmap"),
        ("funcgrad.numpy.linalg", "solve"),
    ]:
        assert (prefix, name) in objects, f"{prefix}.{name} is not in the search index"
    assert "value_and_grad" in index["terms"] or "value_and_grad" in text


def test_notebooks_in_teaching_order_with_outputs(site):
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    index = (site / "notebooks.html").read_text(encoding="utf-8")
    article = index[index.index("<article") :]
    positions = [article.index(f"notebooks/{n}.html") for n in notebooks]
    assert positions == sorted(positions), "the notebooks are not listed in their order"
    first = (site / "notebooks" / f"{notebooks[0]}.html").read_text(encoding="utf-8")
    assert "cell_output" in first and "<img" in first, "the first notebook is shown without its outputs"


def test_guides_ran_their_code(site):
    text = (site / "guides" / "from_pytorch.html").read_text(encoding="utf-8")
    for concept in ("grad_fn", "retain_graph", "create_graph", "no_grad", "requires_grad", "register_hook"):
        assert concept in text, concept
    for concept in ("save_for_backward", "detect_anomaly", "torch.func", "torch.compile"):
        assert concept in text, concept
    assert text.count("cell_output") >= 10, "the guide's code cells have no outputs"
    assert "TracerBoolConversionError" in text and "NonFiniteError" in text


def test_no_broken_internal_link(site):
    broken = []
    pages = [p for p in sorted(site.rglob("*.html")) if "_static" not in p.relative_to(site).parts]
    assert len(pages) > 80
    for path in pages:  # (not the theme's Jinja templates that it copies to _static/)
        for link in _parse(path).links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or url.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / urllib.parse.unquote(url.path)).resolve() if url.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)} -> {link}")
            elif url.fragment and target.suffix == ".html" and url.fragment not in _parse(target).ids:
                broken.append(f"{path.relative_to(site)} -> {link} (no such anchor)")
    assert not broken, f"{len(broken)} broken links: {broken[:30]}"


# --- a real browser ------------------------------------------------------------------------------


class _Chromium:
    """Headless chromium driven through the DevTools protocol over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, profile: Path):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def fds():  # the protocol's fixed descriptors: the browser reads 3 and writes 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
        flags += ["--remote-debugging-pipe", f"--user-data-dir={profile}", "--window-size=1280,1000"]
        self.proc = subprocess.Popen(
            [binary, *flags, "about:blank"],
            preexec_fn=fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=self.session)

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "chromium did not answer in time"
            if select.select([self._read], [], [], left)[0]:
                chunk = os.read(self._read, 1 << 16)
                assert chunk, "chromium closed its DevTools pipe"
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: str | None = None, timeout: float = 30, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            event = self._message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def load(self, url: str) -> list[str]:
        """Open ``url`` and return the console errors and uncaught exceptions seen while loading."""
        self.events.clear()
        self.send("Page.navigate", session=self.session, url=url)
        self.wait_for("Page.loadEventFired")
        self.evaluate("new Promise(r => setTimeout(r, 500))")  # late scripts (theme, search)
        return self.errors()

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"{params['entry'].get('text')} {params['entry'].get('url', '')}")
        return found

    def evaluate(self, expression: str):
        result = self.send(
            "Runtime.evaluate",
            session=self.session,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self, path: Path) -> int:
        data = base64.b64decode(
            self.send("Page.captureScreenshot", session=self.session, format="png")["data"]
        )
        path.write_bytes(data)
        return len(data)

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write)
        os.close(self._read)


def _wait_for_a_background_install(timeout: float = 900.0) -> None:
    """.ci/run installs Chromium in the background while the other tests run, and names in
    ``FUNCGRAD_CHROMIUM_INSTALLING`` the file it writes when the install has ended (either way)."""
    ended = os.environ.get("FUNCGRAD_CHROMIUM_INSTALLING")
    deadline = time.monotonic() + timeout
    while ended and not os.path.exists(ended) and time.monotonic() < deadline:
        time.sleep(1.0)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    _wait_for_a_background_install()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium): no browser check")
    chromium = _Chromium(binary, tmp_path_factory.mktemp("chromium_profile"))
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def server(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


PAGES = {
    "index": "index.html",
    "api": "api/generated/funcgrad.html",
    "notebook": "notebooks/01_how_backward_works.html",
    "guide": "guides/from_pytorch.html",
}


@pytest.mark.parametrize("kind", list(PAGES))
def test_page_in_a_browser(site, server, browser, tmp_path, kind):
    shots = []
    for base in (server, site.as_uri()):  # from python -m http.server and from the file system
        errors = browser.load(f"{base}/{PAGES[kind]}")
        assert not errors, f"{PAGES[kind]} from {base}: console errors {errors}"
        title = browser.evaluate("document.title")
        assert "funcgrad" in title, title
        shots.append(tmp_path / f"{kind}_{'http' if base == server else 'file'}.png")
        assert browser.screenshot(shots[-1]) > 10_000, "the screenshot is (nearly) empty"
        height = browser.evaluate("document.body.scrollHeight")
        assert height > 500, f"{PAGES[kind]} is (nearly) empty: {height}px"
    print("screenshots:", *shots)


@pytest.mark.parametrize("query", ["value_and_grad", "vmap"])
def test_search_finds(site, server, browser, query):
    errors = browser.load(f"{server}/search.html?q={query}")
    assert not errors, errors
    results: list[str] = []
    for _ in range(100):  # the search runs in the page after the index has loaded
        results = browser.evaluate(
            "Array.from(document.querySelectorAll('#search-results li a')).map(a => a.textContent)"
        )
        if results:
            break
        time.sleep(0.1)
    assert any(query in r for r in results), f"search for {query!r} found {results[:10]}"
    assert not browser.errors(), browser.errors()


def test_the_readme_section_shows_the_build_command():
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    text = readme[readme.index("\n## Documentation\n") :]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    assert 'pip install -e ".[docs]"' in block and "sphinx-build -W" in block and "docs/_build/html" in block
