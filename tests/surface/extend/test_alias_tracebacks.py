"""Traceback boundaries under the alias (jax._src.traceback_util.api_boundary, which flax's entry
points use): funcgrad's frames hidden as JAX hides its internals, in each jax_traceback_filtering
mode. Run in a subprocess: the alias is process-wide."""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, traceback
    import funcgrad.as_jax
    import jax, jax.numpy as jnp
    from jax._src import traceback_util as tu

    def user(x):
        raise ValueError("here")

    entry = tu.api_boundary(lambda x: jax.jit(user)(x))
    out = {}
    for mode in ("off", "tracebackhide", "remove_frames", "quiet_remove_frames"):
        jax.config.update("jax_traceback_filtering", mode)
        try:
            entry(jnp.ones(2))
        except ValueError as e:
            frames = [f for f, _ in traceback.walk_tb(e.__traceback__)]
            shown = [f for f in frames if "__tracebackhide__" not in f.f_locals]
            out[mode] = {
                "funcgrad_shown": sum("funcgrad" in f.f_code.co_filename for f in shown),
                "funcgrad_frames": sum("funcgrad" in f.f_code.co_filename for f in frames),
                "cause": type(e.__cause__).__name__,
                "notes": len(getattr(e, "__notes__", [])),
            }
    print(json.dumps(out))
    """
)


def test_boundary_hides_funcgrad_frames_as_each_mode_says():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["off"]["funcgrad_shown"] > 0 and out["off"]["cause"] == "NoneType"
    assert out["tracebackhide"]["funcgrad_frames"] > 0 and out["tracebackhide"]["funcgrad_shown"] == 0
    assert (
        out["remove_frames"]["funcgrad_frames"] == 0
        and out["remove_frames"]["cause"] == "UnfilteredStackTrace"
    )
    assert out["quiet_remove_frames"]["funcgrad_frames"] == 0 and out["quiet_remove_frames"]["notes"] == 1
