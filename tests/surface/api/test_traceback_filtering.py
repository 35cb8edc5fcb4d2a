"""Traceback filtering as JAX's (NOTE: [traceback boundaries]): an error raised in user code under
jit/grad/vmap/jvp/vjp/control flow/custom_jvp shows the user's own frames, in each
``jax_traceback_filtering`` mode, the same frames jax shows (jax in-process as the oracle)."""

from __future__ import annotations

import traceback

import jax
import jax.numpy as jnp
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import traceback_util


def _programs(api, np_):
    def err(*_):
        raise ValueError("user")

    @api.jit
    def inner(x):
        return err(x)

    @api.jit
    def outer(x):
        return 1 + api.vmap(inner)(x)

    @api.custom_jvp
    def cj(x):
        return x

    @cj.defjvp
    def cj_jvp(p, t):
        return err(p), t

    return {
        "nested jit and vmap": lambda: outer(np_.ones(2)),
        "grad under jit": lambda: api.jit(api.grad(err))(1.0),
        "cond": lambda: api.lax.cond(True, err, lambda _: 0.0, 1.0),
        "scan": lambda: api.lax.scan(lambda c, x: err(c), 0.0, np_.ones(3)),
        "custom_jvp rule": lambda: api.jvp(cj, (1.0,), (1.0,)),
        "vjp": lambda: api.vjp(err, 1.0),
        "jit of a bad argument": lambda: api.jit(lambda a: a + 1)(object()),
    }


def _seen(api, program, mode):
    """What the user sees: the frames left (function, source line), the cause's type, the notes."""
    before = api.config.jax_traceback_filtering
    api.config.update("jax_traceback_filtering", mode)
    try:
        program()
    except (ValueError, TypeError) as e:
        frames = [
            (f.f_code.co_name, traceback.extract_tb(tb, limit=1)[0].line)
            for tb in _walk(e.__traceback__)
            for f in [tb.tb_frame]
            if not (mode == "tracebackhide" and "__tracebackhide__" in f.f_locals)
        ]
        return frames, type(e.__cause__).__name__, len(getattr(e, "__notes__", []))
    finally:
        api.config.update("jax_traceback_filtering", before)
    raise AssertionError("no error")


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


@pytest.mark.parametrize("mode", ["remove_frames", "quiet_remove_frames", "tracebackhide"])
def test_user_frames_as_jax(mode):
    ours, theirs = _programs(funcgrad, fnp), _programs(jax, jnp)
    for name in ours:
        got, want = _seen(funcgrad, ours[name], mode), _seen(jax, theirs[name], mode)
        # (frames from this file only on jax's side: jax's C++ jit adds none of its own)
        assert got == want, name


def test_off_keeps_internal_frames_and_boundaries_compose():
    program = _programs(funcgrad, fnp)["nested jit and vmap"]
    frames, cause, notes = _seen(funcgrad, program, "off")
    assert len(frames) > 6 and cause == "NoneType" and notes == 0
    assert not traceback_util.include_filename(funcgrad.__file__)
    assert traceback_util.include_filename(__file__)
