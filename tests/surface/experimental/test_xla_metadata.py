"""``set_xla_metadata`` and ``xla_metadata_call`` against jax 0.10.2: which operations of the
lowered StableHLO carry which frontend attributes (NOTE: [xla metadata] in xla_bridge/emitter.py),
the caching and nesting rules, and that every catalog entry's lowering under metadata parses."""

from __future__ import annotations

import collections
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.xla_metadata import set_xla_metadata as jax_set

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental.scheduling_groups import xla_metadata_call
from funcgrad.experimental.xla_metadata import set_xla_metadata as fg_set

_HLO_TAGGED = re.compile(r"= \S+ (\w+)\(.*frontend_attributes=(\{[^}]*\})")


def _tagged(lowered) -> collections.Counter:
    """(operation, attributes) of each annotated operation of a lowered module, walked in MLIR."""
    found: collections.Counter = collections.Counter()

    def walk(op):
        attrs = op.attributes
        if "mhlo.frontend_attributes" in attrs:
            found[(op.name.removeprefix("func."), str(attrs["mhlo.frontend_attributes"]))] += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    walk(lowered.compiler_ir().operation)
    return found


def _hlo_tagged(lowered) -> collections.Counter:
    text = lowered.as_text("hlo")
    return collections.Counter(m.groups() for m in map(_HLO_TAGGED.search, text.splitlines()) if m)


# Programs written once against a namespace ``np_`` (jnp or fnp), a ``jit`` and a ``set_xla_metadata``.
def _value_tagging(np_, api, tag):
    return lambda x: tag(np_.sin(x) * np_.cos(x), breakpoint=True)


def _context(np_, api, tag):
    def f(x):
        with tag(_xla_log=True):
            y = np_.sin(x)
            return y * np_.cos(y)

    return f


def _nested(np_, api, tag):
    def f(x):
        with tag(a="b"):
            z = x * 3.0

            @api.jit
            def g(z):
                with tag(c="d", n=10):
                    return np_.exp(z) + 1.0

            return g(z)

    return f


def _none_unsets_in_cond(np_, api, tag):
    def cos(x):
        with tag(a=None):
            return np_.cos(x)

    def f(x):
        with tag(a="b"):
            return api.lax.cond(x < 0.0, np_.sin, cos, x)

    return f


def _while(np_, api, tag):
    def f(x):
        with tag(a="b"):
            return api.lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)

    return f


def _grad_inside(np_, api, tag):
    def f(x):
        with tag(a="b"):
            return api.grad(lambda x: np_.sin(x) * x)(x)

    return f


def _grad_outside(np_, api, tag):
    def f(x):
        with tag(a="b"):
            return np_.sin(x) * np_.exp(x)

    return api.grad(f)


def _vmap(np_, api, tag):
    def f(x, y):
        with tag(a="b"):
            return x * y, y * 2.0

    return lambda x: api.vmap(f, in_axes=(0, None))(x * np_.ones(3, np_.float32), x)


def _custom_vjp_backward(np_, api, tag):
    def fn(x):
        return np_.sin(x) * np_.cos(x)

    @api.custom_vjp
    def wrapped(x):
        return fn(x)

    wrapped.defvjp(lambda x: api.vjp(fn, x), lambda vjp_fn, ct: tag(vjp_fn(ct), example="grad_tagging"))
    return api.grad(wrapped)


PROGRAMS = [
    _value_tagging,
    _context,
    _nested,
    _none_unsets_in_cond,
    _while,
    _grad_inside,
    _grad_outside,
    _vmap,
    _custom_vjp_backward,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_annotated_operations_as_jax(program):
    x = np.float32(0.7)
    want = jax.jit(program(jnp, jax, jax_set)).lower(x)
    got = funcgrad.jit(program(fnp, funcgrad, fg_set)).lower(x)
    assert _tagged(got) == _tagged(want)
    assert _hlo_tagged(got) == _hlo_tagged(want)


def test_decorator_merging_and_the_trace_cache():
    @fg_set(a="b")
    @funcgrad.jit
    def f(x, y):
        with fg_set(c="d"):
            return x + y

    assert 'mhlo.frontend_attributes = {a = "b", c = "d"}' in f.lower(1.0, 2.0).as_text()
    assert [e.ctx.xla_metadata for e in f.trace(1.0, 2.0).jaxpr.eqns] == [{"a": "b", "c": "d"}]
    g = funcgrad.jit(lambda x, y: x * y)
    with fg_set(k="v"):
        inner = g.lower(1.0, 2.0).as_text()
        with fg_set(k="w"):  # the inner value wins
            over = g.lower(1.0, 2.0).as_text()
    assert 'mhlo.frontend_attributes = {k = "v"}' in inner and '{k = "w"}' in over
    assert "frontend_attributes" not in g.lower(1.0, 2.0).as_text()  # traced again without
    with fg_set(k="v"):
        assert float(g(3.0, 2.0)) == 6.0
    assert float(g(3.0, 2.0)) == 6.0 and g.cache_info().misses == 3


def test_xla_metadata_call_as_jax():
    from jax.experimental.scheduling_groups import xla_metadata_call as jax_call

    def body(api, np_):
        return lambda x: (api.nn.gelu(x) * np_.float32(2.0)).sum()

    x = np.array([2.3, 4.5], np.float32)
    for call in (xla_metadata_call, jax_call):
        assert call is not None
    f = xla_metadata_call(funcgrad.jit(body(funcgrad, fnp)), inlineable="false")
    g = jax_call(jax.jit(body(jax, jnp)), inlineable="false")
    np.testing.assert_allclose(funcgrad.jit(funcgrad.grad(f))(x), jax.jit(jax.grad(g))(x), rtol=1e-6)
    np.testing.assert_allclose(funcgrad.vmap(f)(x[:, None]), jax.vmap(g)(x[:, None]), rtol=1e-6)
    got, want = _tagged(funcgrad.jit(f).lower(x)), _tagged(jax.jit(g).lower(x))
    assert got == want == {("call", '{inlineable = "false"}'): 1}


def test_every_catalog_lowering_parses_with_metadata():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2] / "primitives"))
    import op_db
    from funcgrad.xla_bridge.emitter import lowering_rules

    tagged, rules = 0, set()
    for entry in op_db.OPS:
        rule = lowering_rules.get(entry.primitive)
        if rule in rules:  # (one entry per lowering rule: the text of its operations)
            continue
        rules.add(rule)
        sample = op_db.sample_inputs(entry, entry.dtypes[0], np.random.default_rng(0))[0]

        def f(*args, entry=entry, sample=sample):
            with fg_set(tag="x y", quoted='say "a"'):
                return entry.op(*args, **sample.params)

        try:
            lowered = funcgrad.jit(f).lower(*sample.args)
        except Exception:  # (entries that need a named axis or a mesh to be lowered)
            continue
        lowered.compiler_ir()  # MLIR parses the annotated text
        tagged += "frontend_attributes" in lowered.as_text()
    assert tagged > 80
