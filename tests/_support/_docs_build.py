"""The documentation site's one build per test run, started in the background as soon as the run
knows it will check the site (tests/integration/test_docs_site.py).

The build (``sphinx-build -W --keep-going -b html docs <out>/html``, the README's command) takes
about 35 s of CPU. Built inside the first test that needs it, it held that test's worker for the
whole build, and under pytest-xdist the other worker too when it reached a browser check meanwhile
(the second waits on the lock): about a minute of worker time spent waiting. Started right after
collection instead (``tests/conftest.py`` moves the site's tests to the end of the run), it runs
beside the other tests and is done by the time the site's tests ask for it.

One build per run, shared by xdist's workers: the folder above each worker's basetemp is common to
them, and a lock decides which worker starts the build; every worker waits for the same ``rc`` file.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MODULE = "test_docs_site.py"  # the tests that read the built site


def site_folder(basetemp: Path) -> Path:
    """The run's shared build folder (basetemp is pytest's ``tmp_path_factory.getbasetemp()``)."""
    out = (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "docs_site"
    out.mkdir(exist_ok=True)
    return out


def start(out: Path) -> None:
    """Start the build into ``out`` unless a worker of this run has started it already."""
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "started").exists():
            return
        command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html"]
        command += ["-d", str(out / "doctrees"), str(DOCS), str(out / "html")]
        # (the stored notebook outputs are rendered, not re-executed: conf.py reads this variable)
        env = {k: v for k, v in os.environ.items() if k != "FUNCGRAD_DOCS_EXECUTE_NOTEBOOKS"}
        # The exit status goes to a file written last, which every worker waits for; the shell
        # wrapper outlives no one (the build is bounded by sphinx's own execution timeout).
        script = f'"$@" > "{out}/log" 2>&1; echo $? > "{out}/rc.tmp" && mv "{out}/rc.tmp" "{out}/rc"'
        subprocess.Popen(
            ["sh", "-c", script, "sh", *command],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        (out / "started").touch()


def wait(out: Path, timeout: float = 900.0) -> Path:
    """Wait for the build into ``out`` (starting it if nobody has) and return the site's folder."""
    start(out)
    deadline = time.monotonic() + timeout
    while not (out / "rc").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the documentation site did not build in {timeout:.0f} s (log: {out / 'log'})"
            )
        time.sleep(0.2)
    status = (out / "rc").read_text().strip()
    log = (out / "log").read_text(errors="replace") if (out / "log").exists() else ""
    assert status == "0", f"the site does not build (exit status {status}):\n{log[-10000:]}"
    return out / "html"
