"""``debug.breakpoint`` (NOTE: [breakpoint through a host callback]): scripted through
``sys.stdin``, eagerly and under ``jit``/``vmap``/``grad``, with JAX's ``cli`` debugger output
as the oracle."""

from __future__ import annotations

import functools
import inspect
import io
import sys

import pytest

import funcgrad
import funcgrad.numpy as fnp


def _scripted(monkeypatch, capsys, commands: str, thunk):
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    out = thunk()
    return out, capsys.readouterr().out


def _f(lib, np_mod):
    def f(x):
        y = np_mod.sin(x)
        z = y * 2
        lib.debug.breakpoint()
        return z

    return f


def test_eager_breakpoint_sees_the_values(monkeypatch, capsys):
    f = _f(funcgrad, fnp)
    out, text = _scripted(monkeypatch, capsys, "p y\np float(z) + 1\nw\nc\n", lambda: f(0.0))
    assert float(out) == 0.0
    lines = text.splitlines()
    assert lines[0] == "Entering jdb:"
    assert lines[1] == "(jdb) Array(0., dtype=float64, weak_type=True)"
    assert lines[2] == "(jdb) 1.0"
    assert "lib.debug.breakpoint()" in text and "Traceback:" in text


def test_jit_vmap_and_grad_breakpoints_stop_with_concrete_values(monkeypatch, capsys):
    f = _f(funcgrad, fnp)
    _, text = _scripted(monkeypatch, capsys, "p y\nc\n", lambda: funcgrad.jit(f)(0.0))
    assert text.splitlines()[1] == "(jdb) Array(0., dtype=float64)"
    _, text = _scripted(
        monkeypatch, capsys, "p float(y)\nc\np float(y)\nc\n", lambda: funcgrad.vmap(f)(fnp.zeros(2))
    )
    assert text.count("(jdb) 0.0") == 2  # once per element
    _, text = _scripted(monkeypatch, capsys, "p float(x)\nc\n", lambda: funcgrad.grad(f)(0.5))
    assert "(jdb) 0.5" in text


def test_commands_list_move_and_quit(monkeypatch, capsys):
    def outer(a):
        b = a + 1.0
        return inner(b)

    def inner(c):
        funcgrad.debug.breakpoint()
        return c

    _, text = _scripted(
        monkeypatch, capsys, "l\nu\np float(b)\nd\np float(c)\nq\n", lambda: funcgrad.jit(outer)(1.0)
    )
    assert "->          funcgrad.debug.breakpoint()" in text
    assert "(jdb) 2.0" in text and text.count("2.0") >= 2
    # after ``q`` this breakpoint no longer stops
    _, text = _scripted(monkeypatch, capsys, "", lambda: funcgrad.jit(outer)(3.0))
    assert text == ""


def test_signature_and_arguments():
    params = inspect.signature(funcgrad.debug.breakpoint).parameters
    assert list(params) == ["backend", "filter_frames", "num_frames", "ordered", "token", "kwargs"]
    with pytest.raises(ValueError, match="backend"):
        funcgrad.debug.breakpoint(backend="web")


@pytest.mark.slow
@pytest.mark.parametrize("jitted", [False, True])
def test_output_matches_jax(monkeypatch, capsys, jitted):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    script = "p y\np float(z) + 1\nc\n"
    theirs_f, ours_f = _f(jax, jnp), _f(funcgrad, fnp)
    if jitted:
        theirs_f, ours_f = jax.jit(theirs_f), funcgrad.jit(ours_f)
    theirs = _scripted(monkeypatch, capsys, script, lambda: theirs_f(0.3))[1]
    ours = _scripted(monkeypatch, capsys, script, lambda: ours_f(0.3))[1]
    assert ours.splitlines() == theirs.splitlines()


def test_cli_streams_as_jax():
    """The CLI debugger's ``stdin``/``stdout`` keyword arguments, as JAX's debugger_test passes
    them: commands read from and output written to the given files, eagerly and under jit."""
    jax = pytest.importorskip("jax")

    def run(lib, np_mod, jitted):
        stdin, stdout = io.StringIO("p y\nl\nu\nc\n"), io.StringIO()  # (l, u: the source as jax's)

        def f(x):
            y = np_mod.sin(x)
            lib.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
            return y

        @functools.partial(lib.jit if jitted else (lambda g: g))
        def g(x):
            return f(x)

        g(np_mod.float32(2.0))
        lib.effects_barrier()
        return stdout.getvalue()

    for jitted in (False, True):
        assert run(funcgrad, fnp, jitted) == run(jax, jax.numpy, jitted)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['stdim'\\]"):
        funcgrad.debug.breakpoint(stdim=None)
