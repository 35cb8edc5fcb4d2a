"""``funcgrad.ad_checkpoint``: ``checkpoint_name``, every policy of ``checkpoint_policies`` and
``print_saved_residuals``, against jax 0.10.2 (the oracle, slow) and closed forms.

What each policy saves is compared line by line with ``jax.ad_checkpoint.print_saved_residuals`` on
the same function (the source location aside: JAX adds a column and the qualified function name);
gradients equal the gradients without a checkpoint; under ``jit`` the policy's effect shows in the
compiled program's temporary memory and in the backward program's inputs. The JAX tutorial
"Gradient checkpointing with jax.checkpoint" runs on both, cell by cell.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import re

import numpy as np
import pytest
from funcgrad.primitives.remat import name_p

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import ad_checkpoint
from funcgrad.ad_checkpoint import checkpoint_name, checkpoint_policies, print_saved_residuals

cp = checkpoint_policies


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _printed(fn, *args) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    # JAX's source: "file:line:column (qualified.name)"; funcgrad's: "file:line (name)".
    lines = []
    for line in out.getvalue().splitlines():
        line = re.sub(r"(:\d+):\d+ \(", r"\1 (", line)
        lines.append(re.sub(r"\((?:[\w<>]+\.)+([\w<>]+)\)$", r"(\1)", line))
    return lines


# ----------------------------------------------------------------------------------------------
# The policies: the same residuals as jax, the same gradients as no checkpoint


def _model(np_, name):
    """A two-layer network with a batched contraction, named values and a final reduction."""

    def f(W1, W2, A, x):
        h = name(np_.sin(np_.dot(W1, x)), "h1")
        h = name(np_.exp(np_.dot(W2, h) * 0.1), "h2")
        b = np_.einsum("bij,bj->bi", A, np_.reshape(np_.concatenate([h, h * 2.0]), (2, 5)))
        return (np_.cos(b) * b).sum() + (h * h).sum()

    return f


def _args(np_):
    rng = np.random.default_rng(0)
    return (
        np_.asarray(rng.standard_normal((5, 4))),
        np_.asarray(rng.standard_normal((5, 5))),
        np_.asarray(rng.standard_normal((2, 3, 5))),
        np_.asarray(rng.standard_normal(4)),
    )


def _policies(ns):
    return {
        "nothing_saveable": ns.nothing_saveable,
        "everything_saveable": ns.everything_saveable,
        "dots_saveable": ns.dots_saveable,
        "checkpoint_dots": ns.checkpoint_dots,
        "dots_with_no_batch_dims_saveable": ns.dots_with_no_batch_dims_saveable,
        "checkpoint_dots_with_no_batch_dims": ns.checkpoint_dots_with_no_batch_dims,
        "save_only_these_names(h1)": ns.save_only_these_names("h1"),
        "save_only_these_names(h1,h2)": ns.save_only_these_names("h1", "h2"),
        "save_any_names_but_these(h2)": ns.save_any_names_but_these("h2"),
        "save_any_names_but_these()": ns.save_any_names_but_these(),
        "save_anything_except_these_names(h1)": ns.save_anything_except_these_names("h1"),
        "save_from_both_policies(dots_no_batch, h2)": ns.save_from_both_policies(
            ns.dots_with_no_batch_dims_saveable, ns.save_only_these_names("h2")
        ),
        "save_and_offload_only_these_names": ns.save_and_offload_only_these_names(
            names_which_can_be_saved=["h1"],
            names_which_can_be_offloaded=[],
            offload_src="device",
            offload_dst="pinned_host",
        ),
        "None": None,
    }


POLICY_NAMES = list(_policies(cp))


def test_checkpoint_policies_have_jaxs_names():
    jax = _jax()
    ours = {n for n in vars(cp) if not n.startswith("_")}
    assert ours == {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
    assert funcgrad.checkpoint_policies is cp
    assert {
        "checkpoint",
        "remat",
        "checkpoint_name",
        "print_saved_residuals",
        "Saveable",
        "Recompute",
    } <= set(ad_checkpoint.__all__)
    assert ad_checkpoint.checkpoint is funcgrad.checkpoint and ad_checkpoint.remat is funcgrad.remat


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_each_policy_saves_what_jax_saves(policy):
    jax = _jax()
    from jax.ad_checkpoint import checkpoint_name as jax_name
    from jax.ad_checkpoint import print_saved_residuals as jax_print

    theirs = _printed(
        jax_print,
        jax.checkpoint(_model(jax.numpy, jax_name), policy=_policies(jax.checkpoint_policies)[policy]),
        *_args(jax.numpy),
    )
    f = _model(fnp, checkpoint_name)
    ours = _printed(print_saved_residuals, funcgrad.checkpoint(f, policy=_policies(cp)[policy]), *_args(fnp))
    assert ours == theirs
    # The gradients are those without a checkpoint, eagerly and under jit, and jax's.
    args = _args(fnp)
    g = funcgrad.grad(funcgrad.checkpoint(f, policy=_policies(cp)[policy]), argnums=(0, 1, 2, 3))
    want = funcgrad.grad(f, argnums=(0, 1, 2, 3))(*args)
    jax_g = jax.grad(_model(jax.numpy, jax_name), argnums=(0, 1, 2, 3))(*_args(jax.numpy))
    for got, jitted, w, j in zip(g(*args), funcgrad.jit(g)(*args), want, jax_g):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(w), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(got), np.asarray(j), rtol=1e-12, atol=1e-13)


def test_a_policy_sees_jaxs_signature_and_named_values():
    seen = []

    def policy(prim, *avals, **params):
        seen.append((prim.name, tuple(a.shape for a in avals), params.get("name")))
        return prim is name_p

    f = _model(fnp, checkpoint_name)
    rows = ad_checkpoint.saved_residuals(funcgrad.checkpoint(f, policy=policy), *_args(fnp))
    assert ("name", ((5,),), "h1") in seen and ("dot_general", ((5, 4), (4,)), None) in seen
    assert [d for _, d in rows if d.startswith("named")] == [
        d for _, d in rows if "named 'h1'" in d or "named 'h2'" in d
    ]
    assert {re.match(r"named '(\w+)'", d).group(1) for _, d in rows if d.startswith("named")} == {"h1", "h2"}


def test_policy_answers_and_errors():
    assert cp.save_only_these_names("a")(name_p, name="a") is True
    assert cp.save_any_names_but_these("a")(name_p, name="a") is False
    both = cp.save_from_both_policies(cp.dots_saveable, lambda *_, **__: ad_checkpoint.Saveable)
    with pytest.raises(ValueError, match="should be a boolean"):
        both(name_p, name="a")
    with pytest.raises(ValueError, match="should not intersect"):
        cp.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a"], offload_src="device",
            offload_dst="pinned_host",
        )  # fmt: skip
    # Policies are values: equal policies give equal jit cache keys.
    assert cp.save_only_these_names("a", "b") == cp.save_only_these_names("b", "a")
    assert hash(cp.offload_dot_with_no_batch_dims("device", "pinned_host")) == hash(
        cp.offload_dot_with_no_batch_dims("device", "pinned_host")
    )


@pytest.mark.slow
def test_a_scans_offloaded_residuals_are_typed_in_host_memory_as_jax():
    # JAX's host-offloading tutorial: a scan over a remat'd layer whose named input is offloaded
    # stacks its residuals in host memory, f64<host>[10,8,8] (funcgrad typed the stack f64[10,8,8]
    # though each step's residual was f64<host>[8,8]); the gradient unchanged.
    jax = _jax()

    def program(lib, lnp, names, policies):
        policy = policies.save_and_offload_only_these_names(
            names_which_can_be_saved=[], names_which_can_be_offloaded=["x"], offload_src="device",
            offload_dst="pinned_host",
        )  # fmt: skip

        def layer(x, w):
            x = names(x, "x")
            return lnp.sin(x @ w[0]) @ w[1], None

        return lambda w, x: lnp.sum(lib.lax.scan(lib.checkpoint(layer, policy=policy), x, w)[0])

    x = np.linspace(0.1, 0.9, 64).reshape(8, 8)
    w = (np.full((10, 8, 16), 0.1), np.full((10, 16, 8), 0.1))
    ours = program(funcgrad, fnp, checkpoint_name, cp)
    theirs = program(
        jax, jax.numpy, importlib.import_module("jax.ad_checkpoint").checkpoint_name, jax.checkpoint_policies
    )

    def stacked_types(lib, f):
        jaxpr = lib.make_jaxpr(lib.grad(f))(w, x)
        return [str(v.aval) for e in jaxpr.eqns if e.primitive.name == "scan" for v in e.outvars]

    assert stacked_types(funcgrad, ours) == stacked_types(jax, theirs)
    assert "float64<host>[10,8,8]" in stacked_types(funcgrad, ours)
    for a, b in zip(funcgrad.jit(funcgrad.grad(ours))(w, x), jax.grad(theirs)(w, x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_offload_policies_move_residuals_to_host():
    # NOTE: [offloaded residuals]: as jax, an offloaded value leaves the forward pass through a
    # device_put to host memory (f64<host>[4,4] output of device_put), the gradients unchanged.
    jax = _jax()

    def body(np_):
        def f(x):
            x = np_.einsum("ij,jk->ik", x, x)
            x = np_.sin(x)
            x = np_.einsum("ij,jk->ik", x, x)
            return np_.sin(x).sum()

        return f

    x = np.linspace(0.1, 0.9, 16).reshape(4, 4)
    theirs = _printed(
        jax.ad_checkpoint.print_saved_residuals,
        jax.checkpoint(
            body(jax.numpy),
            policy=jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host"),
        ),
        x,
    )
    f = funcgrad.checkpoint(body(fnp), policy=cp.offload_dot_with_no_batch_dims("device", "pinned_host"))
    ours = _printed(print_saved_residuals, f, x)
    assert ours == theirs
    assert sum("<host>" in o and "output of device_put" in o for o in ours) == 2
    np.testing.assert_allclose(
        np.asarray(funcgrad.jit(funcgrad.grad(f))(x)), np.asarray(jax.grad(body(jax.numpy))(x)), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.asarray(funcgrad.grad(f)(x)), np.asarray(jax.grad(body(jax.numpy))(x)), rtol=1e-12
    )
    # save_and_offload_only_these_names: "y" saved, "z" offloaded (moved to host), "w" recomputed.
    policy = cp.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"], names_which_can_be_offloaded=["z"], offload_src="device",
        offload_dst="pinned_host",
    )  # fmt: skip

    def g(x):
        y = checkpoint_name(fnp.sin(x), "y")
        z = checkpoint_name(fnp.sin(y), "z")
        w = checkpoint_name(fnp.sin(z.T), "w")
        return fnp.sin(w).sum()

    # Offloaded inside a scan body: moved stacked, after the scan (types as jax's; jax names the
    # scan's residuals "output of closed_call").
    def scanned(np_, lax, name):
        def body(c, _):
            y = name(np_.sin(c), "y")
            z = name(np_.sin(y), "z")
            return np_.sin(z.T).T, None

        return lambda v: lax.scan(body, v, None, length=3)[0].sum()

    jpolicy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"], names_which_can_be_offloaded=["z"], offload_src="device",
        offload_dst="pinned_host",
    )  # fmt: skip
    theirs = _printed(
        jax.ad_checkpoint.print_saved_residuals,
        jax.checkpoint(scanned(jax.numpy, jax.lax, jax.ad_checkpoint.checkpoint_name), policy=jpolicy),
        x,
    )
    ours = _printed(
        print_saved_residuals,
        funcgrad.checkpoint(scanned(fnp, funcgrad.lax, checkpoint_name), policy=policy),
        x,
    )
    assert [o.split(" ")[0] for o in ours] == [t.split(" ")[0] for t in theirs]
    assert "f64<host>[3,4,4]" in [o.split(" ")[0] for o in ours]
    printed = _printed(print_saved_residuals, funcgrad.checkpoint(g, policy=policy), x)
    named = [line for line in printed if "named" in line]
    assert [re.search(r"named '(\w)'", line).group(1) for line in named] == ["y"]
    assert [line for line in printed if "device_put" in line] == ["f64<host>[4,4] output of device_put from "]


# ----------------------------------------------------------------------------------------------
# Under jit: the compiled program keeps what the policy saves


def _deep(policy, n=6, width=256, batch=512):
    rng = np.random.default_rng(1)
    Ws = [rng.standard_normal((width, width)).astype(np.float32) / 16 for _ in range(n)]
    x = rng.standard_normal((batch, width)).astype(np.float32)

    def layer(W, h):
        return fnp.sin(fnp.tanh(h @ W) * 1.5)

    lay = funcgrad.checkpoint(layer, policy=policy)

    def loss(Ws, x):
        for W in Ws:
            x = lay(W, x)
        return (x**2).sum()

    return loss, Ws, x


@pytest.mark.slow
def test_under_jit_each_policy_changes_what_the_compiled_program_keeps():
    temp, grads = {}, {}
    for name, policy in [
        ("nothing", cp.nothing_saveable),
        ("dots", cp.dots_with_no_batch_dims_saveable),
        ("everything", cp.everything_saveable),
    ]:
        loss, Ws, x = _deep(policy)
        g = funcgrad.jit(funcgrad.grad(loss))
        compiled = g.lower(Ws, x).compile()
        temp[name] = compiled.memory_analysis().temp_size_in_bytes
        grads[name] = g(Ws, x)
    act = 512 * 256 * 4
    # Saving everything keeps three activations per layer (the dot, tanh and the sin's argument
    # feed the derivatives), saving the dots one more than saving nothing.
    assert temp["nothing"] < temp["dots"] < temp["everything"], temp
    assert temp["everything"] - temp["nothing"] >= 6 * act, temp
    plain = funcgrad.grad(_deep(None)[0])
    loss, Ws, x = _deep(None)
    want = plain(Ws, x)
    for got in grads.values():
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-3)  # float32


def _backward_inputs(fun, *args) -> int:
    """The number of values the backward program of ``fun`` reads from the forward pass."""
    return len(ad_checkpoint.saved_residuals(fun, *args))


def test_saved_values_are_the_backward_programs_inputs_under_jit():
    loss, Ws, x = _deep(None, n=3, width=8, batch=4)
    counts = {}
    for name, policy in [("nothing", cp.nothing_saveable), ("everything", cp.everything_saveable)]:
        loss, Ws, x = _deep(policy, n=3, width=8, batch=4)
        counts[name] = _backward_inputs(funcgrad.jit(loss), Ws, x)
        jaxpr = funcgrad.make_jaxpr(funcgrad.grad(loss))(Ws, x)
        assert "differentiated=True" in str(jaxpr)
    # Nothing saveable: the 3 weights, the input, the 2 inner layer outputs and the loss's 2x.
    assert counts["nothing"] == 7 and counts["everything"] > counts["nothing"]


# ----------------------------------------------------------------------------------------------
# checkpoint_name under the transformations


def test_checkpoint_name_is_the_identity_under_every_transformation():
    x = fnp.asarray(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    tree = {"a": x, "b": (x * 2.0,)}
    named = checkpoint_name(tree, "t")
    assert funcgrad.tree_util.tree_structure(named) == funcgrad.tree_util.tree_structure(tree)
    np.testing.assert_array_equal(np.asarray(named["b"][0]), np.asarray(x * 2.0))

    def f(x):
        return fnp.sin(checkpoint_name(x * x, "sq")).sum()

    np.testing.assert_allclose(
        np.asarray(funcgrad.grad(f)(x)), 2 * np.asarray(x) * np.cos(np.asarray(x) ** 2)
    )
    np.testing.assert_allclose(np.asarray(funcgrad.jit(funcgrad.grad(f))(x)), np.asarray(funcgrad.grad(f)(x)))
    batched = funcgrad.vmap(funcgrad.grad(f))(x)
    np.testing.assert_allclose(np.asarray(batched), 2 * np.asarray(x) * np.cos(np.asarray(x) ** 2))
    assert "name[name=sq]" in str(funcgrad.make_jaxpr(funcgrad.vmap(f))(x))
    # The tangent passes through unnamed: one ``name`` equation, on the primal.
    jvp_jaxpr = str(funcgrad.make_jaxpr(lambda x, t: funcgrad.jvp(f, (x,), (t,)))(x, x))
    assert jvp_jaxpr.count("name[") == 1
    # Second order and jit of the whole.
    h = funcgrad.grad(lambda s: funcgrad.grad(lambda y: fnp.sin(checkpoint_name(y * y, "q")))(s))(0.7)
    assert float(h) == pytest.approx(2 * np.cos(0.49) - 4 * 0.49 * np.sin(0.49), rel=1e-13)
    assert float(funcgrad.jit(lambda y: checkpoint_name(y, "z") + 1.0)(1.0)) == 2.0
    # A linear function with a name transposes.
    (ct,) = funcgrad.linear_transpose(lambda v: checkpoint_name(v, "n") * 3.0, x)(fnp.ones_like(x))
    np.testing.assert_array_equal(np.asarray(ct), np.full((2, 3), 3.0))


def test_print_saved_residuals_lines():
    def g(W, x):
        return fnp.sin(checkpoint_name(fnp.dot(W, x), "a"))

    W, x = fnp.ones((5, 4)), fnp.ones(4)
    lines = _printed(
        print_saved_residuals, funcgrad.checkpoint(g, policy=cp.save_only_these_names("a")), W, x
    )
    assert lines[:2] == ["f64[5,4] from the argument W", "f64[4] from the argument x"]
    assert re.fullmatch(r"f64\[5\] named 'a' from .*test_ad_checkpoint\.py:\d+ \(g\)", lines[2])
    lines = _printed(print_saved_residuals, funcgrad.jit(g), W, x)
    assert any("output of jitted function 'g'" in line for line in lines), lines


def test_a_jitted_calls_input_residual_is_forwarded_not_returned_as_jax():
    # NOTE: [residuals forwarded from a call's inputs]: api_test's
    # test_remat_of_jit_input_to_output_forwarding (funcgrad saved y twice: once as itself, once as
    # the first jitted call's output), and grad(jit(f))'s known program returns no copy of y
    jax = _jax()
    from jax._src.ad_checkpoint import saved_residuals as jax_saved_residuals  # (the oracle's)

    def make(lib, np_):
        def f(x):
            y = np_.ones(2, "float32")
            x = lib.jit(lambda: x * y)()
            return lib.jit(lambda: x * y)()

        return lib.checkpoint(f, policy=lambda *_, **__: True)

    ours = ad_checkpoint.saved_residuals(make(funcgrad, fnp), np.float32(3.0))
    theirs = jax_saved_residuals(make(jax, jax.numpy), np.float32(3.0))
    assert (
        [(a.shape, a.dtype) for a, _ in ours]
        == [(a.shape, a.dtype) for a, _ in theirs]
        == [((2,), np.float32)]
    )

    def g(lib, np_):
        inner = lib.jit(lambda x, y: np_.sin(x) * y)
        return lib.grad(lambda x, y: inner(x, y).sum())

    x, y = np.linspace(0.1, 1.0, 3), np.linspace(1.0, 2.0, 3)
    jaxprs = [lib.make_jaxpr(g(lib, np_))(x, y).jaxpr for lib, np_ in ((funcgrad, fnp), (jax, jax.numpy))]
    # the known call returns its primal output and cos(x); y reaches the backward call as itself
    assert [len(j.eqns[0].outvars) for j in jaxprs] == [2, 2]
    assert [j.eqns[-1].invars[1] is j.invars[1] for j in jaxprs] == [True, True]
    np.testing.assert_allclose(g(funcgrad, fnp)(x, y), g(jax, jax.numpy)(x, y), rtol=1e-15)


def test_the_log_of_saved_values_is_jaxs(caplog):
    # api_test's test_remat_residual_logging: each split of a checkpoint logs what it saves, in
    # JAX's words (DEBUG; WARNING under jax_log_checkpoint_residuals)
    import logging

    jax = _jax()

    def logged(lib, np_, policy, level=logging.DEBUG, first="sin"):
        def f(x):
            x = getattr(np_, first)(x)
            return np_.cos(x.sum())

        caplog.clear()
        with caplog.at_level(level):
            lib.grad(lib.checkpoint(f, policy=policy))(np.arange(3.0))
        lines = []
        for r in caplog.records:
            if r.getMessage().startswith("remat-decorated"):
                for line in r.getMessage().splitlines():
                    line = re.sub(r"(:\d+):\d+ \(", r"\1 (", line)
                    lines.append(re.sub(r"\((?:[\w<>]+\.)+([\w<>]+)\)$", r"(\1)", line))
        return lines

    for policy in (None, lambda *_, **__: True, lambda p, *_, **__: str(p) == "cos"):
        ours, theirs = logged(funcgrad, fnp, policy), logged(jax, jax.numpy, policy)
        assert ours == theirs and ours[0].startswith("remat-decorated function saving")
    # (another program each time: eager grad reuses the program it made for the same one, unlogged)
    assert logged(funcgrad, fnp, None, logging.WARNING, "tan") == []
    funcgrad.config.update("jax_log_checkpoint_residuals", True)
    try:
        assert logged(funcgrad, fnp, None, logging.WARNING, "tanh") == [
            "remat-decorated function saving inputs with shapes:",
            "  float64[3]",
        ]
    finally:
        funcgrad.config.update("jax_log_checkpoint_residuals", False)


# ----------------------------------------------------------------------------------------------
# JAX's tutorial "Gradient checkpointing with jax.checkpoint", on both


def _tutorial(jax, jnp, print_saved_residuals, checkpoint_name) -> list:
    """The tutorial's code cells (printing what is saved) and its numbers; returns the outputs."""
    out = []

    def show(f, *args):
        out.append(_printed(print_saved_residuals, f, *args))

    def g(W, x):
        y = jnp.dot(W, x)
        return jnp.sin(y)

    def f(W1, W2, W3, x):
        x = g(W1, x)
        x = g(W2, x)
        x = g(W3, x)
        return x

    W1, W2, W3, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4)
    show(f, W1, W2, W3, x)

    def f2(W1, W2, W3, x):
        x = jax.checkpoint(g)(W1, x)
        x = jax.checkpoint(g)(W2, x)
        x = jax.checkpoint(g)(W3, x)
        return x

    show(f2, W1, W2, W3, x)
    f3 = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    show(f3, W1, W2, W3, x)

    def f4(W1, W2, W3, x):
        x = checkpoint_name(g(W1, x), name="a")
        x = checkpoint_name(g(W2, x), name="b")
        x = checkpoint_name(g(W3, x), name="c")
        return x

    f4 = jax.checkpoint(f4, policy=jax.checkpoint_policies.save_only_these_names("a"))
    show(f4, W1, W2, W3, x)
    for fun in (f, f2, f3, f4):
        out.append(
            np.asarray(jax.jacrev(lambda *a, fun=fun: fun(*a).sum(), argnums=(0, 1, 2, 3))(W1, W2, W3, x)[0])
        )

    def layer(W, x):
        return jnp.sin(jnp.dot(W, x))

    def make_loss(named):
        def predict(params, x):
            *Ws, Wlast = params
            for i, W in enumerate(Ws):
                x = layer(W, x)
                if named:
                    x = checkpoint_name(x, name=f"layer{i}_output")
            return jnp.dot(Wlast, x)

        def loss(params, x, y):
            return jnp.sum((predict(params, x) - y) ** 2)

        return loss

    W1 = W2 = W3 = jnp.ones((4, 4))
    params, x, y = [W1, W2, W3], jnp.ones(4), jnp.ones(4)
    show(make_loss(False), params, x, y)
    dots = jax.checkpoint(make_loss(False), policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    show(dots, params, x, y)
    show(make_loss(True), params, x, y)
    names = jax.checkpoint(
        make_loss(True), policy=jax.checkpoint_policies.save_any_names_but_these("layer1_output")
    )
    show(names, params, x, y)
    out.append([np.asarray(v) for v in jax.grad(names)(params, x, y)])

    def chain_compose(funs):
        def f(x):
            for fun in funs:
                x = fun(x)
            return x

        return f

    def recursive_checkpoint(funs):
        if len(funs) == 1:
            return funs[0]
        elif len(funs) == 2:
            f1, f2 = funs
            return lambda x: f1(f2(x))
        else:
            f1 = recursive_checkpoint(funs[: len(funs) // 2])
            f2 = recursive_checkpoint(funs[len(funs) // 2 :])
            return lambda x: f1(jax.checkpoint(f2)(x))

    for n in (8, 16):
        show(chain_compose([jnp.sin] * n), 3.0)
        show(recursive_checkpoint([jnp.sin] * n), 3.0)
        out.append(float(jax.grad(recursive_checkpoint([jnp.sin] * n))(3.0)))

    # Practical notes: a scan over layers with a checkpointed body.
    params = [(jnp.array([[0.5, 0.5], [1.0, 1.0]]), jnp.array([0.5, 0.5]))] * 2
    all_weights = jnp.stack([W for W, _ in params])
    all_biases = jnp.stack([b for _, b in params])

    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    def scan_layer(x, W_b_pair):
        W, b = W_b_pair
        return jnp.maximum(jnp.dot(x, W) + b, 0.0), None

    def net(all_weights, all_biases, x):
        x, _ = jax.lax.scan(scan_layer, x, (all_weights, all_biases))
        return x

    x2 = jnp.array([0.3, -0.2])
    out.append(np.asarray(net(all_weights, all_biases, x2)))
    out.append(
        [
            np.asarray(v)
            for v in jax.grad(lambda *a: net(*a).sum(), argnums=(0, 1, 2))(all_weights, all_biases, x2)
        ]
    )
    return out


@pytest.mark.slow
def test_the_jax_gradient_checkpointing_tutorial_gives_jaxs_output():
    jax = _jax()
    import jax.ad_checkpoint as jac

    theirs = _tutorial(jax, jax.numpy, jac.print_saved_residuals, jac.checkpoint_name)
    ours = _tutorial(funcgrad, fnp, print_saved_residuals, checkpoint_name)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        if isinstance(t, list) and t and isinstance(t[0], str):
            assert o == t
        elif isinstance(t, list):
            for a, b in zip(o, t):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# checkpoint traces once per argument types (NOTE: [checkpoint trace cache])


def test_checkpoint_traces_its_function_once_per_argument_types():
    calls = []

    def f(x, *, scale):
        calls.append(scale)
        return fnp.sin(x) * scale

    g = funcgrad.checkpoint(f, static_argnames="scale")
    assert float(g(1.0, scale=2.0)) == pytest.approx(2 * np.sin(1.0), rel=1e-15)
    g(2.0, scale=2.0)
    assert float(funcgrad.grad(lambda x: g(x, scale=2.0))(1.0)) == pytest.approx(2 * np.cos(1.0), rel=1e-15)
    assert calls == [2.0]
    g(fnp.ones(3), scale=2.0)  # other types: traced again
    g(1.0, scale=3.0)  # another static argument: traced again
    assert calls == [2.0, 2.0, 3.0]

    # A function closing over a tracer of an enclosing transformation is traced on every call.
    def outer(a):
        return funcgrad.checkpoint(lambda x: fnp.sin(a * x))(2.0)

    assert float(funcgrad.grad(outer)(0.5)) == pytest.approx(2 * np.cos(1.0), rel=1e-15)
    assert float(funcgrad.grad(outer)(0.25)) == pytest.approx(2 * np.cos(0.5), rel=1e-15)
    h = funcgrad.checkpoint(lambda x, n: x**n, static_argnums=1)
    assert float(funcgrad.grad(h)(2.0, 3)) == 12.0


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["h", "y", "any names", "dots", "nothing"])
def test_a_policy_applies_inside_a_scan_as_in_jax(policy):
    # A named value inside a checkpointed scan is saved per iteration (stacked), the rest recomputed
    # by a scan over the saved values. (JAX lists them as outputs of ``closed_call``, the call it
    # wraps its scan's known part in; funcgrad as outputs of ``scan``. everything_saveable is left
    # out: it saves what the scan saves without a checkpoint, where funcgrad's scan keeps one
    # stacked value fewer than jax's.)
    jax = _jax()
    from jax.ad_checkpoint import checkpoint_name as jax_name

    def model(np_, lax, name):
        def f(W, c0, xs):
            def g(c, x):
                h = name(np_.tanh(np_.dot(W, c) + x), "h")
                y = name(np_.sin(h) * x, "y")
                return h * 0.5 + y, np_.sum(y * y)

            c, ys = lax.scan(g, c0, xs, reverse=True)
            return (c * c).sum() + ys.sum()

        return f

    def pick(ns):
        return {
            "h": ns.save_only_these_names("h"),
            "y": ns.save_only_these_names("y"),
            "any names": ns.save_any_names_but_these(),
            "dots": ns.dots_saveable,
            "nothing": ns.nothing_saveable,
        }[policy]

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal((4, 3)))
    theirs_f = jax.checkpoint(model(jax.numpy, jax.lax, jax_name), policy=pick(jax.checkpoint_policies))
    ours_f = funcgrad.checkpoint(model(fnp, funcgrad.lax, checkpoint_name), policy=pick(cp))
    theirs = [
        t.replace("closed_call", "scan")
        for t in _printed(jax.ad_checkpoint.print_saved_residuals, theirs_f, *args)
    ]
    assert _printed(print_saved_residuals, ours_f, *args) == theirs
    want = jax.grad(theirs_f, argnums=(0, 1, 2))(*args)
    g = funcgrad.grad(ours_f, argnums=(0, 1, 2))
    for got, jitted, w in zip(g(*args), funcgrad.jit(g)(*args), want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(w), rtol=1e-12, atol=1e-13)


def _print_fwd_bwd(jax, tree_flatten, tree_unflatten, f, *args):
    """The tutorial's ``print_fwd_bwd`` (without ``rich``): the forward program of ``vjp`` and the
    backward program made from the vjp function's leaves (its residuals)."""
    args, in_tree = tree_flatten((args, {}))

    def f_(*args):
        args, kwargs = tree_unflatten(in_tree, args)
        return f(*args, **kwargs)

    fwd = jax.make_jaxpr(lambda *args: jax.vjp(f_, *args))(*args).jaxpr
    y, f_vjp = jax.vjp(f_, *args)
    res, res_tree = tree_flatten(f_vjp)

    def g_(*args):
        *res, y = args
        return tree_unflatten(res_tree, res)(y)

    bwd = jax.make_jaxpr(g_)(*res, y).jaxpr
    return fwd, bwd, len(res), g_(*res, y)


@pytest.mark.slow
def test_the_tutorials_print_fwd_bwd_runs():
    # The vjp function is a pytree of its residuals, as JAX's: recursive checkpointing recomputes
    # (more sin equations in the backward program than without it) and keeps fewer residuals.
    jax = _jax()
    from funcgrad.tree_util import tree_flatten, tree_unflatten

    def chain(n, remat):
        def rec(funs):
            if len(funs) == 1:
                return funs[0]
            if len(funs) == 2:
                return lambda x: funs[0](funs[1](x))
            f1, f2 = rec(funs[: len(funs) // 2]), rec(funs[len(funs) // 2 :])
            return lambda x: f1(remat(f2)(x))

        return rec

    x = fnp.ones(3) * 3.0
    out = {}
    for label, n_remat in (("plain", lambda f: f), ("recursive", funcgrad.checkpoint)):
        f = chain(8, n_remat)([fnp.sin] * 8)
        fwd, bwd, n_res, ct = _print_fwd_bwd(funcgrad, tree_flatten, tree_unflatten, f, x)
        out[label] = (str(bwd).count("sin"), n_res)
        jf = chain(8, (lambda f: f) if label == "plain" else jax.checkpoint)([jax.numpy.sin] * 8)
        y, jf_vjp = jax.vjp(jf, np.ones(3) * 3.0)
        want = jf_vjp(y)  # (the tutorial's cotangent is the output)
        np.testing.assert_allclose(np.asarray(ct[0]), np.asarray(want[0]), rtol=1e-13)
    assert out["plain"][0] == 0 and out["recursive"][0] > 0
    assert out["recursive"][1] < out["plain"][1]


@pytest.mark.slow
@pytest.mark.parametrize("pred", [True, False])
@pytest.mark.parametrize("policy", ["q", "dots", "nothing"])
def test_a_policy_applies_inside_a_conds_branches_as_in_jax(policy, pred):
    jax = _jax()
    from jax.ad_checkpoint import checkpoint_name as jax_name

    def model(np_, lax, name):
        def h(x, p):
            def yes(x):
                return np_.sin(name(np_.dot(x, x) * x, "q"))

            def no(x):
                return np_.cos(name(x * x, "r")) * x

            return lax.cond(p, yes, no, x).sum()

        return h

    def pick(ns):
        return {"q": ns.save_only_these_names("q"), "dots": ns.dots_saveable, "nothing": ns.nothing_saveable}[
            policy
        ]

    x = np.array([0.3, -0.2, 0.5])
    theirs_f = jax.checkpoint(model(jax.numpy, jax.lax, jax_name), policy=pick(jax.checkpoint_policies))
    ours_f = funcgrad.checkpoint(model(fnp, funcgrad.lax, checkpoint_name), policy=pick(cp))
    theirs = _printed(jax.ad_checkpoint.print_saved_residuals, theirs_f, x, pred)
    assert _printed(print_saved_residuals, ours_f, x, pred) == theirs
    want = jax.grad(theirs_f)(x, pred)
    g = funcgrad.grad(ours_f)
    np.testing.assert_allclose(np.asarray(g(x, pred)), np.asarray(want), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(funcgrad.jit(g)(x, pred)), np.asarray(want), rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Nested checkpoints print as JAX's (gradient-checkpointing.md's recursive_checkpoint)


def _fwd_bwd_text(api, np_, tree_util):
    def recursive(funs):
        if len(funs) == 2:
            f1, f2 = funs
            return lambda x: f1(f2(x))
        f1, f2 = recursive(funs[: len(funs) // 2]), recursive(funs[len(funs) // 2 :])
        return lambda x: f1(api.checkpoint(f2)(x))

    f = recursive([np_.sin] * 8)
    fwd = str(api.make_jaxpr(lambda x: api.vjp(f, x))(3.0).jaxpr)
    y, f_vjp = api.vjp(f, 3.0)  # (at a Python float: its backward program reads 3.0 as a literal)
    res, tree = tree_util.tree_flatten(f_vjp)
    bwd = str(api.make_jaxpr(lambda *a: tree_util.tree_unflatten(tree, a[:-1])(a[-1]))(*res, y).jaxpr)
    return fwd, bwd, float(f_vjp(1.0)[0])


def test_nested_checkpoints_print_as_jax():
    # The known part of a checkpoint inside one being split stays one undifferentiated
    # checkpoint in the forward program and is recomputed inline, as JAX's.
    jax = _jax()
    ours = _fwd_bwd_text(funcgrad, fnp, funcgrad.tree_util)
    theirs = _fwd_bwd_text(jax, jax.numpy, jax.tree_util)
    assert ours[:2] == theirs[:2] and ours[2] == pytest.approx(theirs[2], rel=1e-14)
