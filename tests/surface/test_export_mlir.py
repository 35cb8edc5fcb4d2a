"""funcgrad.extend.mlir: jaxlib's MLIR modules and StableHLO portable-artifact helpers, checked on
funcgrad's exported modules and against jax.extend.mlir (the oracle) where it reads the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import export
from funcgrad.extend import mlir
from funcgrad.kernel.ir import ShapedArray

ABS = """module @m {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.abs %arg0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}"""

POLY = """module @p {
  func.func public @main(%arg0: tensor<5x3xf32>) -> tensor<?xf32> {
    %0 = stablehlo.convert %arg0 : (tensor<5x3xf32>) -> tensor<?x3xf32>
    %1 = call @inner(%0) : (tensor<?x3xf32>) -> tensor<?xf32>
    return %1 : tensor<?xf32>
  }
  func.func private @inner(%arg0: tensor<?x3xf32>) -> tensor<?xf32> {
    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across dimensions = [1]
        : (tensor<?x3xf32>, tensor<f32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }
}"""


def test_names_of_jax_extend_mlir_are_present():
    for name in (
        "deserialize_portable_artifact",
        "serialize_portable_artifact",
        "hlo_to_stablehlo",
        "refine_polymorphic_shapes",
        "lower_with_sharding_in_types",
        "ir",
        "passmanager",
        "dialects",
    ):
        assert hasattr(mlir, name), name


def test_portable_artifact_roundtrip_and_exported_module():
    blob = mlir.serialize_portable_artifact(ABS, mlir.portable.target_version())
    module = mlir.deserialize_portable_artifact(blob)
    assert isinstance(module, mlir.ir.Module) and "stablehlo.abs" in str(module)
    exp = export.export(funcgrad.jit(lambda x: fnp.tanh(x) * 3))(np.ones(4, np.float32))
    text = str(mlir.deserialize_portable_artifact(exp.mlir_module_serialized))
    assert "stablehlo.tanh" in text and "@main" in text
    # an ir.Module goes in as well as text
    again = mlir.serialize_portable_artifact(module, mlir.portable.target_version())
    assert "stablehlo.abs" in str(mlir.deserialize_portable_artifact(again))


def test_refine_polymorphic_shapes_makes_every_shape_static():
    refined = mlir.refine_polymorphic_shapes(POLY)
    ctx = mlir.portable.make_context()
    with ctx:
        text = str(mlir.ir.Module.parse(refined))
    assert "?" not in text and "tensor<5xf32>" in text
    # a @main with a dynamic parameter cannot be refined: jaxlib says so
    dynamic_main = POLY.replace("(%arg0: tensor<5x3xf32>)", "(%arg0: tensor<?x3xf32>)")
    dynamic_main = dynamic_main.replace(
        "convert %arg0 : (tensor<5x3xf32>)", "convert %arg0 : (tensor<?x3xf32>)"
    )
    with pytest.raises(Exception, match="dynamic shapes"):
        mlir.refine_polymorphic_shapes(dynamic_main)


def test_hlo_to_stablehlo_of_a_compiled_computation():
    from jaxlib import _jax  # (the test builds an HloModuleProto with jaxlib's own converter)

    proto = _jax.mlir.mlir_module_to_xla_computation(ABS, use_tuple_args=False, return_tuple=False)
    out = mlir.hlo_to_stablehlo(proto.as_serialized_hlo_module_proto())
    ctx = mlir.portable.make_context()
    with ctx:
        text = str(mlir.ir.Module.parse(out))
    assert "stablehlo.abs" in text and "tensor<2xf32>" in text


def test_passmanager_runs_a_pass():
    # symbol-dce removes the private function nothing calls
    unused = ABS.replace("\n}", "\n  func.func private @unused() {\n    return\n  }\n}", 1)
    ctx = mlir.portable.make_context()
    with ctx:
        module = mlir.ir.Module.parse(unused)
        assert "@unused" in str(module)
        mlir.passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)
        assert "@unused" not in str(module) and "stablehlo.abs" in str(module)


def test_lower_with_sharding_in_types_without_a_sharding_is_the_value():
    assert mlir.lower_with_sharding_in_types(None, "%v3", ShapedArray((2, 2), np.float32)) == "%v3"


def test_jax_reads_the_same_artifacts():
    jax_mlir = pytest.importorskip("jax.extend.mlir")
    blob = mlir.serialize_portable_artifact(ABS, mlir.portable.target_version())
    ctx = mlir.portable.make_context()
    with ctx:
        theirs = str(jax_mlir.deserialize_portable_artifact(blob, ctx))
        ours = str(mlir.deserialize_portable_artifact(blob, ctx))
    assert theirs == ours
    assert jax_mlir.refine_polymorphic_shapes(POLY.encode()) == mlir.refine_polymorphic_shapes(POLY)
