"""``jax._src.internal_test_util.export_back_compat_test_util`` (JAX's harness for its serialized
exports, ``export_back_compat_test``): read from the installed oracle jax (``_oracle_source``) with
its JAX-internal imports pointed at funcgrad's public equivalents, so that the test runs JAX's own
serialized modules (``export_back_compat_test_data``, read as they are from the oracle) through
funcgrad's ``jax.export``: the serialized module deserialized and called, and the function lowered
and run again, each compared with the outputs JAX stored."""

from __future__ import annotations

import sys
import types

import funcgrad

from . import _oracle_source

_xb = types.SimpleNamespace(
    default_backend=funcgrad.default_backend,
    canonicalize_platform=lambda p: {"gpu": "cuda"}.get(p, p),
)


sys.modules["jaxshim._bctu_xb"] = _xb  # (a module-like namespace the harness imports as xb)
_module = _oracle_source.load(
    "jax._src.internal_test_util.export_back_compat_test_util",
    "_src/internal_test_util/export_back_compat_test_util.py",
    {
        "from jax._src import api\n": "import jax as api\n",
        "from jax._src import pjit\n": "",
        "pjit.pjit(exported.call)": "api.jit(exported.call)",
        "from jax._src import stages\n": "from jax import stages\n",
        "from jax._src import tree_util\n": "from jax import tree_util\n",
        "from jax._src import xla_bridge as xb\n": "import jaxshim._bctu_xb as xb\n",
        "from jax._src.typing import Array\n": "from jax import Array\n",
    },
)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
