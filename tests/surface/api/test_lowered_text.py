"""The compiler text a user reads, as JAX prints it (NOTE: [operation locations] in
xla_bridge/emitter.py): ``Lowered.as_text()`` (MLIR's printing, ``jax.result_info``), HLO
instruction names and ``op_name`` metadata from the operations' locations, argument names as
parameter locations, and ``Exported.mlir_module()``'s ``loc("x")``. jax is the oracle, in-process."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import export as fexport


def _scoped(lib, np_):
    def f(x, y):
        with lib.named_scope("blk"):
            z = np_.sin(x) * y
        return {"z": z, "w": np_.cos(z).sum()}

    return f


def _nested(lib, np_):
    @lib.jit
    def g(x):
        return np_.exp(x) + 1.0

    def f(x):
        return g(x) * 2.0

    return f


def _aot(lib, np_):
    def f(x, y):  # (JAX's ahead-of-time guide)
        return 2 * x + y

    return f


_CASES = {
    "named_scope": (_scoped, (np.ones(3, np.float32), np.ones(3, np.float32))),
    "nested_jit": (_nested, (np.ones(3, np.float32),)),
    "aot_guide": (_aot, (np.int32(3), np.int32(4))),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_lowered_text_and_hlo_names_are_jaxs(case):
    build, args = _CASES[case]
    ours = funcgrad.jit(build(funcgrad, fnp)).lower(*args)
    theirs = jax.jit(build(jax, jnp)).lower(*args)
    assert ours.as_text() == theirs.as_text()
    assert ours.as_text("hlo") == theirs.as_text("hlo")  # instruction names: sin.1, x.1, jit_g ...

    # debug_info: the same op_name metadata (JAX adds its Python stack frames beside it)
    # (of the instructions other than parameters: JAX names a region's block arguments without
    # the jit(f) prefix)
    def op_names(text):
        return [
            m
            for ln in text.splitlines()
            if "parameter(" not in ln
            for m in re.findall(r'op_name="[^"]*"', ln)
        ]

    assert op_names(ours.as_text("hlo", debug_info=True)) == op_names(theirs.as_text("hlo", debug_info=True))


def test_compiled_text_names_instructions_from_locations():
    def f(x, y):
        return fnp.sin(x) * y

    text = funcgrad.jit(f).lower(np.ones(3, np.float32), np.float32(2)).compile().as_text()
    assert '%x.1 = f32[3]{0} parameter(0), metadata={op_name="x"}' in text
    assert re.search(r'%sin\.\d+ = f32\[3\]\{0\} sine\(.*op_name="jit\(f\)/sin"', text)
    assert re.search(r"module @jit__lambda attributes", funcgrad.jit(lambda x: x).lower(1.0).as_text())


def test_exported_module_keeps_argument_locations():
    def f(x):
        return fnp.sin(x)

    exp = fexport.export(funcgrad.jit(f))(np.float32(1))
    main = re.search(r".*@main.*", exp.mlir_module()).group(0)
    want = re.search(
        r".*@main.*", jax.export.export(jax.jit(lambda x: jnp.sin(x)))(np.float32(1)).mlir_module()
    )
    assert main == want.group(0).replace("jit__lambda", "jit_f")
    assert 'loc("x")' in main and 'jax.result_info = "result"' in main
    # the artifact round-trips and runs
    back = fexport.deserialize(exp.serialize())
    np.testing.assert_allclose(back.call(np.float32(0.5)), np.sin(np.float32(0.5)), rtol=1e-6)


def test_cond_index_out_of_range_runs_the_last_branch_as_jaxs():
    # cond lowers without a clamp, as JAX's (its printed text is JAX's); an index out of range
    # runs the last branch, eagerly and under jit alike (XLA's case, JAX's cond)
    from funcgrad.primitives.control_flow import cond_p

    branches = tuple(funcgrad.make_jaxpr(g)(1.0) for g in (lambda y: y, lambda y: y * 2, lambda y: y + 10))

    def f(i, x):
        return cond_p.bind(i, x, branches=branches)[0]

    for i, want in {-1: 11.0, 0: 1.0, 1: 2.0, 5: 11.0}.items():
        assert float(f(np.int32(i), 1.0)) == float(funcgrad.jit(f)(np.int32(i), 1.0)) == want
    text = (
        funcgrad.jit(lambda x: funcgrad.lax.cond(x > 0, lambda y: y * 2, lambda y: y, x)).lower(1.0).as_text()
    )
    assert "stablehlo.clamp" not in text and "stablehlo.case" in text
