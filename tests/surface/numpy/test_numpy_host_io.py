"""funcgrad.numpy's host I/O and printing (``numpy/host_io.py``): save/load, the buffer functions
and printing under NumPy's print options, against NumPy."""

from __future__ import annotations

import io

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def test_save_load_and_buffers(tmp_path):
    x = fnp.arange(6.0).reshape(2, 3)
    buf = io.BytesIO()
    fnp.save(buf, x)
    buf.seek(0)
    loaded = fnp.load(buf)
    assert isinstance(loaded, funcgrad.Array) and loaded.tolist() == x.tolist()
    fnp.savez(tmp_path / "a.npz", x=x)
    assert fnp.asarray(fnp.load(tmp_path / "a.npz")["x"]).tolist() == x.tolist()
    np.arange(4, dtype=np.int16).tofile(tmp_path / "b.bin")
    assert fnp.fromfile(tmp_path / "b.bin", dtype=np.int16).tolist() == [0, 1, 2, 3]
    assert fnp.frombuffer(np.arange(3.0).tobytes()).tolist() == [0.0, 1.0, 2.0]
    assert fnp.fromstring("1 2 3", dtype=int, sep=" ").tolist() == [1, 2, 3]
    assert fnp.fromiter(iter([1.5, 2.5]), dtype=float).tolist() == [1.5, 2.5]
    assert fnp.from_dlpack(np.arange(3)).tolist() == [0, 1, 2]
    assert fnp.from_dlpack(x).tolist() == x.tolist()
    with pytest.raises(ValueError, match="copy=False"):
        fnp.from_dlpack(x, copy=False)
    with pytest.raises(ValueError, match="frombuffer"):
        fnp.fromstring("abc", sep="")
    assert fnp.iterable([1]) and not fnp.iterable(1)


def test_printing_follows_numpy_print_options():
    x = fnp.array([1 / 3, 2 / 3])
    with fnp.printoptions(precision=2):
        assert str(x) == "[0.33 0.67]" and fnp.array_str(x) == "[0.33 0.67]"
        assert fnp.get_printoptions()["precision"] == 2
    assert fnp.array_repr(fnp.arange(2)) == np.array_repr(np.arange(2)).replace("array", "Array")
