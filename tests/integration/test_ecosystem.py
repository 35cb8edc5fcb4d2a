"""JAX's ecosystem on funcgrad through the opt-in alias ``funcgrad.as_jax`` (issue 28): the alias's
behaviour, and a bounded piece of what tests/integration/suites/ecosystem/ runs in full.

- the alias: ``import jax`` is funcgrad only when asked; JAX's version; the same module objects for
  every ``jax.X.Y``; the ``jax._src`` helpers libraries import; refused after the real jax; the
  ``python -m funcgrad.as_jax`` runner (script, ``-m``, ``-c``); its docstring examples;
- equinox + optax (float64 on both sides): a model trained on funcgrad gives jax's losses, and
  per-example gradients by ``vmap(grad)`` equal a loop;
- a handful of optax's own tests, from the installed optax package (its wheel ships them), run
  unchanged through the alias.

Each test starts processes (the alias changes what ``import jax`` means for a whole process, and
this process has the real jax imported as the oracle): slow tier. The scripts that compare the two
sides run in two processes, one on jax and one through the alias (``run_scripts``), not one
process per script and side: a process that imports jax, funcgrad or equinox costs about a second
of CPU (19 processes were 8).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ALIAS = [sys.executable, "-m", "funcgrad.as_jax"]


def run(command, timeout=600, cwd=None, input=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), FUNCGRAD_PLATFORM="cpu", JAX_PLATFORMS="cpu")
    env.pop("JAX_ENABLE_X64", None)  # each side in JAX's default mode unless a script sets one
    kw = dict(capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, input=input)
    return subprocess.run(command, **kw)


# Several scripts in one process, in order, each as ``python -c script *argv`` would run it after the
# ones before: a fresh ``__main__`` namespace, its own ``sys.argv``, its standard output captured.
_BATCH = textwrap.dedent(
    """
    import contextlib, io, json, sys, traceback
    results = []
    for script, argv in json.loads(sys.stdin.read()):
        sys.argv = ["-c", *argv]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(script, "<string>", "exec"), {"__name__": "__main__"})
            results.append([out.getvalue(), None])
        except BaseException:
            results.append([out.getvalue(), traceback.format_exc()])
    print(json.dumps(results))
    """
)


def run_scripts(scripts):
    """``{name: stdout}`` of the ``(name, script, argv)`` run in order in one fresh process (plain
    ``python``: a script that wants the alias imports ``funcgrad.as_jax``); a script that raised
    fails the test with its traceback."""
    proc = run([sys.executable, "-c", _BATCH], input=json.dumps([[code, argv] for _, code, argv in scripts]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (name, _, _), (_, error) in zip(scripts, results):
        assert error is None, f"{name}:\n{error}"
    return {name: out for (name, _, _), (out, _) in zip(scripts, results)}


ALIAS_BEHAVIOUR = textwrap.dedent(
    """
    import json, sys
    import funcgrad, funcgrad.numpy as fnp
    assert "jax" not in sys.modules
    import funcgrad.as_jax
    import jax
    # submodules reached as attributes (before any ``import jax.X``) are in sys.modules, as after
    # JAX's ``import jax``: treescope (penzai's printer) looks jax.tree_util.SequenceKey's module up there
    submodules = [
        sys.modules.get(n) is v
        for n, v in [("jax.tree_util", jax.tree_util), ("jax.lax", jax.lax)]
    ]
    import jax.numpy as jnp, jax.extend.core, jax.interpreters.ad, jax.tree_util, jax.api_util, jax.lib
    import jax._src.traceback_util as tb
    from jax._src.tree_util import _registry
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import hlo
    out = {
        "version": jax.__version__, "info": list(jax.__version_info__),
        "version_module": jax.version.__version__, "lib": jax.lib.__version__,
        "same": [jax.numpy is funcgrad.numpy, jax.extend.core is funcgrad.extend.core,
                 jax.interpreters.ad is funcgrad.interpreters.ad, jax.grad is funcgrad.grad,
                 jax.api_util is funcgrad.api_util,
                 sys.modules["jax.tree_util"] is funcgrad.tree_util],
        "grad": float(jax.grad(jnp.sin)(0.0)),
        "registry": [tuple in _registry, dict in _registry, int in _registry],
        # (JAX's entries: one level of flattening and its inverse; jaxlie walks trees with them)
        "entries": [_registry[dict].to_iter({"b": 1, "a": 2}), _registry[dict].from_iter(("a", "b"), [5, 6]),
                    _registry[tuple].to_iter((1, 2)), _registry[list].from_iter(None, [3])],
        "mlir": [ir.__name__, hlo.__name__],
        "installed": funcgrad.as_jax.installed(),
        "x64": [jax.config.jax_enable_x64, str(jnp.zeros(1).dtype), str(jnp.asarray(1.0).dtype)],
        "submodules": submodules,
        # importing jax.numpy after funcgrad.numpy was imported does not load funcgrad.numpy a second time
        "numpy_once": sys.modules["funcgrad.numpy"] is fnp,
    }
    tb.register_exclusion("/nowhere")
    out["exclusion"] = "/nowhere" in tb._exclude_paths
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (JAX warns about no retraces: optimistix tests so)
        f = jax.jit(lambda x: x + 1)
        out["retraces"] = sum(int(f(jnp.zeros(n)).shape[0]) for n in range(1, 13))
    import jax._src.xla_bridge as xb, jax._src.test_util as jtu  # (flax guides; jit started the client)
    out["doc_helpers"] = [xb.backends_are_initialized(), jtu.is_cuda_compute_capability_at_least("9.0"),
                          jtu.device_under_test()]
    # (autodidax's and the export guide's imports: jaxlib's modules and JAX's state objects)
    from jax.extend.mlir.dialects import func, stablehlo
    from jax._src.lib import xla_client as xc
    from jax._src.interpreters import mlir
    from jax._src import config
    with config.jax_export_calling_convention_version(9):
        version = config.jax_export_calling_convention_version.value
    import threading  # (JAX's spelling config.enable_x64: a thread-local state, as JAX's)
    with config.enable_x64(True):
        seen = []
        t = threading.Thread(target=lambda: seen.append(config.enable_x64.value))
        t.start(), t.join()
        out["config_states"] = [config.enable_x64.value, seen, config.enable_x64.get_global()]
    out["internals"] = [func.__name__, stablehlo.__name__, xc.__name__, callable(mlir.custom_call), version]
    import numpy as np
    from jax._src import typing  # (JAX's annotation types, imported by libraries and JAX's typing_test)
    out["typing"] = [isinstance(jnp.zeros(2), typing.Array), isinstance(jnp.float32, typing.SupportsDType),
                     isinstance(2.0, typing.Array), typing.DType is np.dtype,
                     typing.ArrayLike == jax.typing.ArrayLike, len(typing.DTypeLike.__args__)]
    for name in ("jax._src.cudnn", "jax.no_such_module"):
        try:
            __import__(name)
            out[name] = "imported"
        except ModuleNotFoundError as e:
            out[name] = str(e)
    print(json.dumps(out))
    """
)


def _check_alias_behaviour(out):
    assert out["submodules"] == [True, True] and out["numpy_once"]
    assert out["version"] == "0.10.2" and out["info"] == [0, 10, 2] and out["version_module"] == "0.10.2"
    assert out["lib"] == "0.10.2"
    assert all(out["same"]) and out["installed"] and out["exclusion"]
    assert out["grad"] == 1.0 and out["retraces"] == 78
    assert out["x64"] == [False, "float32", "float32"]  # JAX's default mode under the alias
    assert out["config_states"] == [True, [False], False]
    assert out["registry"] == [True, True, False]
    assert out["entries"] == [[[2, 1], ["a", "b"]], {"a": 5, "b": 6}, [[1, 2], None], [3]]  # jax's
    assert out["doc_helpers"] == [True, False, "cpu"]  # jax 0.10.2's answers on a CPU after a computation
    assert out["mlir"] == ["jaxlib.mlir.ir", "jaxlib.mlir.dialects.stablehlo"]
    assert out["internals"] == [
        "jaxlib.mlir.dialects.func",
        "jaxlib.mlir.dialects.stablehlo",
        "jaxlib.xla_client",
        True,
        9,
    ]
    assert out["typing"] == [True, True, False, True, True, 4]  # jax 0.10.2's answers
    assert "a JAX internal that funcgrad does not provide" in out["jax._src.cudnn"]
    assert "funcgrad has no funcgrad.no_such_module" in out["jax.no_such_module"]


# (jax's side of ALIAS_BEHAVIOUR's "submodules": the first script of its process after OPT_IN)
SUBMODULES = (
    "import sys, jax; m = jax.tree_util; lax = jax.lax; "
    "print([sys.modules.get(n) is v for n, v in [('jax.tree_util', m), ('jax.lax', lax)]])"
)


PUBLIC_NAMES = textwrap.dedent(
    """
    import pickle, sys
    import jax, jax.numpy as jnp, treescope
    from treescope import canonical_aliases as ca
    objs = [jax.vmap, jax.jit, jax.ShapeDtypeStruct, jax.nn.relu, jax.nn.softmax, jnp.sum, jnp.zeros,
            jnp.where, jax.lax.add, jax.lax.scan, jax.lax.Precision, jax.random.normal,
            jax.scipy.special.logsumexp, jax.tree_util.tree_map, jax.sharding.PartitionSpec]
    treescope.render_to_text(objs)  # (sets treescope's jax support up: its aliases of jax's API)
    print([str(ca.lookup_alias(o)) for o in objs], treescope.render_to_text(jax.lax.Precision.HIGHEST))
    print(jax.numpy is sys.modules["jax.numpy"])
    # (export takes jax's public functions as they are: funcgrad's by their module)
    print(jax.export.export(jnp.sin)(jax.ShapeDtypeStruct((2,), jnp.float32)).call(jnp.zeros(2)))
    if "funcgrad.as_jax" in sys.modules:  # (jax's relu, a custom_jvp wrapper, does not pickle)
        assert all(pickle.loads(pickle.dumps(o)) is o for o in objs)
    """
)


# treescope (penzai's printer) turns an object into the path its __module__ and __qualname__ name
# (jax's: aliases it walks from jax's public modules): under the alias funcgrad's objects read as
# jax's public paths (they printed funcgrad._vmap.vmap), and still pickle by name.
def _check_public_names(jax_side, alias_side):
    assert alias_side == jax_side
    assert "'jax.vmap', 'jax.jit', 'jax.ShapeDtypeStruct', 'jax.nn.relu'" in jax_side


# e3nn-jax (jax-md's neural networks) imports it from jax._src.api_util
INFER_ARGNUMS = textwrap.dedent(
    """
    import inspect
    from jax._src.api_util import infer_argnums_and_argnames as f
    sig = inspect.signature(lambda a, b, /, c, d=1, *e, g, **h: a)
    print([f(sig, n, s) for n, s in [(None, None), (None, "c"), (None, ("d", "g")), (2, None),
           ((0, 3), None), (1, "zz"), ([2], ["c"])]])
    """
)

# import funcgrad alone leaves `import jax` alone (the first script of jax's side)
OPT_IN = "import funcgrad, funcgrad.numpy, jax; print(jax.__file__)"


def test_alias_is_refused_after_real_jax():
    # the alias after the real jax: a clear ImportError, not two jax modules
    proc = run([sys.executable, "-c", "import jax; import funcgrad.as_jax"])
    assert proc.returncode != 0
    assert "the real jax is already imported" in proc.stderr and "python -m funcgrad.as_jax" in proc.stderr


def test_runner_script_module_and_command(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, jax\nprint(jax.__version__, __name__, sys.argv[1:])\n")
    proc = run([*ALIAS, str(script), "a", "b"])
    assert proc.returncode == 0 and proc.stdout.split() == ["0.10.2", "__main__", "['a',", "'b']"], (
        proc.stderr
    )
    proc = run([*ALIAS, "-c", "import jax, funcgrad; print(jax.vmap is funcgrad.vmap)"])
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    (tmp_path / "mod_under_alias.py").write_text("import jax\nprint('module', jax.__version__)\n")
    proc = run([*ALIAS, "-m", "mod_under_alias"], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "module 0.10.2", proc.stderr
    assert run([*ALIAS]).returncode == 2  # no program: usage


ALIAS_DOCTESTS = textwrap.dedent(
    """
    import doctest, importlib, pkgutil, funcgrad.as_jax as a
    names = ["funcgrad.as_jax"] + [m.name for m in pkgutil.walk_packages(a.__path__, "funcgrad.as_jax.")
                                   if not m.name.endswith("__main__")]
    failed = attempted = 0
    for n in names:
        r = doctest.testmod(importlib.import_module(n), optionflags=doctest.ELLIPSIS)
        failed += r.failed; attempted += r.attempted
    print(failed, attempted)
    """
)


# equinox's documented training step (filter_jit, filter_value_and_grad, optax), float64 both sides
EQUINOX_OPTAX = textwrap.dedent(
    """
    import json, sys
    if sys.argv[1] == "funcgrad":
        import funcgrad.as_jax
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp, equinox as eqx, optax, numpy as np
    model = eqx.nn.MLP(in_size=4, out_size=1, width_size=16, depth=2, key=jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (32, 4)); y = jnp.sin(x.sum(1, keepdims=True))
    def loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
    state = opt.init(eqx.filter(model, eqx.is_array))
    @eqx.filter_jit
    def step(model, state):
        l, g = eqx.filter_value_and_grad(loss)(model, x, y)
        updates, state = opt.update(g, state, model)
        return eqx.apply_updates(model, updates), state, l
    losses = []
    for _ in range(15):
        model, state, l = step(model, state)
        losses.append(float(l))
    params, static = eqx.partition(model, eqx.is_array)
    ex = lambda p, xi, yi: loss(eqx.combine(p, static), xi[None], yi[None])
    per = jax.vmap(jax.grad(ex), in_axes=(None, 0, 0))(params, x, y)
    per0 = jax.grad(ex)(params, x[5], y[5])
    match = all(np.allclose(a[5], b, rtol=1e-10, atol=1e-13)
                for a, b in zip(jax.tree_util.tree_leaves(per), jax.tree_util.tree_leaves(per0)))
    print(json.dumps({"losses": losses, "per_example_matches_loop": match}))
    """
)


def _check_equinox_optax(on_jax, on_funcgrad):
    assert on_funcgrad["per_example_matches_loop"] and on_jax["per_example_matches_loop"]
    assert on_funcgrad["losses"][-1] < 0.5 * on_funcgrad["losses"][0]
    assert on_funcgrad["losses"] == pytest.approx(on_jax["losses"], rel=1e-9)


# optax's own tests from the installed package (its wheel ships optax/_src/*_test.py)
OPTAX_TESTS = ["optax._src.base_test", "optax._src.combine_test", "optax._src.update_test"]


def test_optax_own_tests_through_the_alias(tmp_path):
    pytest_args = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "--pyargs", *OPTAX_TESTS]
    proc = run([*ALIAS, "-m", "pytest", *pytest_args], cwd=tmp_path, timeout=900)
    tail = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in tail and "failed" not in tail, tail


# JAX's tutorial "Defining new JAX primitives" (multiply_add), written as the tutorial does: the
# rules go into jax.interpreters' tables, the lowering is built with jaxlib's MLIR `hlo` builders.
MULTIPLY_ADD = textwrap.dedent(
    """
    import json
    import numpy as np
    import jax
    from jax import numpy as jnp
    from jax.extend import core
    from jax.interpreters import ad, batching, mlir
    from jax._src.lib.mlir.dialects import hlo
    from jax._src import api; assert api.jit is jax.jit

    multiply_add_p = core.Primitive("multiply_add")
    def multiply_add_prim(x, y, z):
        return multiply_add_p.bind(x, y, z)
    def multiply_add_impl(x, y, z):
        return np.add(np.multiply(x, y), z)
    multiply_add_p.def_impl(multiply_add_impl)
    def multiply_add_abstract_eval(xs, ys, zs):
        assert xs.shape == ys.shape == zs.shape
        return core.ShapedArray(xs.shape, xs.dtype)
    multiply_add_p.def_abstract_eval(multiply_add_abstract_eval)
    def multiply_add_lowering(ctx, xc, yc, zc):
        return [hlo.AddOp(hlo.MulOp(xc, yc), zc).result]
    mlir.register_lowering(multiply_add_p, multiply_add_lowering, platform="cpu")
    def multiply_add_value_and_jvp(arg_values, arg_tangents):
        x, y, z = arg_values
        xt, yt, zt = arg_tangents
        primal_out = multiply_add_prim(x, y, z)
        def make_zero(tan):
            return jax.lax.zeros_like_array(x) if type(tan) is ad.Zero else tan
        inner = multiply_add_prim(x, make_zero(yt), make_zero(zt))
        output_tangent = multiply_add_prim(make_zero(xt), y, inner)
        return (primal_out, output_tangent)
    ad.primitive_jvps[multiply_add_p] = multiply_add_value_and_jvp
    def multiply_add_transpose(ct, x, y, z):
        if not ad.is_undefined_primal(x):
            assert ad.is_undefined_primal(y)
            zeros = jax.lax.zeros_like_array(x)
            ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else multiply_add_prim(x, ct, zeros)
            res = None, ct_y, ct
        else:
            assert ad.is_undefined_primal(x)
            zeros = jax.lax.zeros_like_array(y)
            ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else multiply_add_prim(ct, y, zeros)
            res = ct_x, None, ct
        return res
    ad.primitive_transposes[multiply_add_p] = multiply_add_transpose
    def multiply_add_batch(vector_arg_values, batch_axes):
        assert batch_axes[0] == batch_axes[1]
        assert batch_axes[0] == batch_axes[2]
        return multiply_add_prim(*vector_arg_values), batch_axes[0]
    batching.primitive_batchers[multiply_add_p] = multiply_add_batch
    def square_add_prim(a, b):
        return multiply_add_prim(a, a, b)
    x, y = np.array([2.0, 3.0]), np.array([10.0, 20.0])
    out = {
        "eager": float(square_add_prim(2.0, 10.0)),
        "jit": float(jax.jit(square_add_prim)(2.0, 10.0)),
        "jvp": [float(v) for v in jax.jvp(square_add_prim, (2.0, 10.0), (1.0, 1.0))],
        "grad": float(jax.grad(square_add_prim)(2.0, 10.0)),
        "jit_grad": float(jax.jit(jax.grad(square_add_prim))(2.0, 10.0)),
        "vmap": np.asarray(jax.vmap(square_add_prim)(x, y)).tolist(),
        "jit_vmap": np.asarray(jax.jit(jax.vmap(square_add_prim))(x, y)).tolist(),
    }
    print(json.dumps(out))
    """
)


def _check_primitive_tutorial(out):
    assert out == {
        "eager": 14.0, "jit": 14.0, "jvp": [14.0, 5.0], "grad": 4.0, "jit_grad": 4.0,
        "vmap": [14.0, 29.0], "jit_vmap": [14.0, 29.0],
    }  # fmt: skip


def test_scripts_on_jax_and_through_the_alias():
    # Jax's side, then funcgrad's through the alias, each in one process (``run_scripts``); the
    # alias's process starts with ALIAS_BEHAVIOUR (``import jax`` is not funcgrad before the alias is
    # imported), and the equinox training switches to 64-bit mode, so it comes last on each side.
    on_jax = run_scripts(
        [
            ("opt_in", OPT_IN, []),
            ("submodules", SUBMODULES, []),
            ("public_names", PUBLIC_NAMES, []),
            ("infer_argnums", INFER_ARGNUMS, []),
            ("equinox_optax", EQUINOX_OPTAX, ["jax"]),
        ]
    )
    alias = run_scripts(
        [
            ("alias_behaviour", ALIAS_BEHAVIOUR, []),
            ("public_names", PUBLIC_NAMES, []),
            ("infer_argnums", INFER_ARGNUMS, []),
            ("primitive_tutorial", MULTIPLY_ADD, []),
            ("doctests", ALIAS_DOCTESTS, []),
            ("equinox_optax", EQUINOX_OPTAX, ["funcgrad"]),
        ]
    )
    assert "site-packages" in on_jax["opt_in"]
    assert on_jax["submodules"].strip() == "[True, True]"  # jax's answer for ALIAS_BEHAVIOUR's "submodules"
    last = lambda out: json.loads(out.strip().splitlines()[-1])  # noqa: E731
    _check_alias_behaviour(last(alias["alias_behaviour"]))
    _check_public_names(on_jax["public_names"], alias["public_names"])
    assert alias["infer_argnums"] == on_jax["infer_argnums"] and on_jax["infer_argnums"].startswith("[(")
    _check_primitive_tutorial(last(alias["primitive_tutorial"]))
    failed, attempted = map(int, alias["doctests"].split()[-2:])
    assert failed == 0 and attempted >= 8, alias["doctests"][-3000:]
    _check_equinox_optax(last(on_jax["equinox_optax"]), last(alias["equinox_optax"]))
