"""pytest plugin of run_ecosystem_suites.py --sample N: keep at most N tests of each file, evenly
spread over its collection order (the same tests on both backends), so that a long upstream suite
is sampled in breadth on a small machine. Not part of the library; loaded with ``-p``."""

from __future__ import annotations

import os


def pytest_collection_modifyitems(session, config, items):
    keep_per_file = int(os.environ.get("ECOSYSTEM_SAMPLE", "0") or 0)
    if keep_per_file <= 0:
        return
    by_file: dict[str, list] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    kept = []
    for file_items in by_file.values():
        step = max(1, -(-len(file_items) // keep_per_file))
        kept += file_items[::step]
    chosen = set(map(id, kept))
    config.hook.pytest_deselected(items=[i for i in items if id(i) not in chosen])
    items[:] = kept
