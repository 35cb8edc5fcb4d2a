"""XLA's large CPU buffers come from funcgrad's cache and are kept between calls (NOTE: [XLA's
buffers kept between calls] in xla_bridge/buffer_cache.py): results stay right while their blocks
are reused, kept blocks are never handed out while alive, concurrent calls from several threads
agree, and the environment variable sizes it. That glibc's own settings and NumPy's memory are
untouched is tests/integration/test_import_side_effects.py's."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from funcgrad.xla_bridge import buffer_cache

import funcgrad
import funcgrad.numpy as fnp


def _installed() -> bool:
    funcgrad.devices()  # the CPU backend exists (the cache installs then)
    return bool(buffer_cache.stats()["installed"])


needs_cache = pytest.mark.skipif(
    not _installed(), reason="no buffer cache here (not Linux x86-64/aarch64, no C modules, or turned off)"
)

# 2 MiB per float32 output: above the cache's 128 KiB floor.
X = (np.arange(512 * 1024, dtype=np.float32).reshape(512, 1024) % 977) / 977.0
# 160 kB: above the floor, below its former 1 MiB (blocks of this size, freed together, made glibc trim
# an arena and fault it in again on every call in some processes).
X_SMALL = X[:200, :200].copy()


@needs_cache
@pytest.mark.parametrize("x", [X, X_SMALL], ids=["2MiB", "160kB"])
def test_jitted_outputs_reuse_kept_blocks_and_stay_right(x):
    f = funcgrad.jit(lambda a, k: (a * k, fnp.sin(a) + k))
    before = buffer_cache.stats()["hits"]
    for k in (1.0, 2.0, 3.0):  # each call's outputs dropped: the next call's come from them
        y, z = f(x, k)
        np.testing.assert_array_equal(y, x * np.float32(k))
        np.testing.assert_allclose(z, np.sin(x) + np.float32(k), rtol=1e-6)
        del y, z
    assert buffer_cache.stats()["hits"] - before >= 2
    # Results kept alive keep their blocks: later calls must not write into them.
    held = [f(x, float(k)) for k in range(4)]
    for k, (y, z) in enumerate(held):
        np.testing.assert_array_equal(y, x * np.float32(k))
        np.testing.assert_allclose(z, np.sin(x) + np.float32(k), rtol=1e-6)


@needs_cache
def test_concurrent_calls_from_threads_agree():
    f = funcgrad.jit(lambda a, k: fnp.cos(a) * k)
    want = {k: np.cos(X) * np.float32(k) for k in range(4)}
    errors = []

    def work(k):
        try:
            for _ in range(3):
                np.testing.assert_allclose(f(X, float(k)), want[k], rtol=1e-6)
        except Exception as e:  # noqa: BLE001 (reported below, in the test's thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize(("raw", "want"), [("", 256 << 20), ("0", 0), ("64", 64 << 20), ("0.5", 1 << 19)])
def test_cap_is_read_from_the_environment(monkeypatch, raw, want):
    monkeypatch.setenv("FUNCGRAD_CPU_BUFFER_CACHE_MB", raw)
    assert buffer_cache.cap_bytes() == want


def test_a_cap_that_is_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CPU_BUFFER_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="FUNCGRAD_CPU_BUFFER_CACHE_MB must be a number"):
        buffer_cache.cap_bytes()


@needs_cache
def test_clear_caches_gives_kept_blocks_back():
    f = funcgrad.jit(lambda a: a + 1.0)
    for _ in range(2):
        f(X).block_until_ready()
    assert buffer_cache.stats()["kept"] > 0
    funcgrad.clear_caches()
    assert buffer_cache.stats()["kept"] == buffer_cache.stats()["kept_bytes"] == 0
    np.testing.assert_array_equal(f(X), X + np.float32(1))
