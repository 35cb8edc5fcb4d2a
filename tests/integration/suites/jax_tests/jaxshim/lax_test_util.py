"""``jax._src.internal_test_util.lax_test_util``: JAX's table of lax operators for its tests (which
ops, dtypes, input samplers, tolerances), read from the installed oracle jax (see
``_oracle_source``), its ``lax`` being funcgrad's (primitives funcgrad lacks read as None)."""

import sys
import types

import funcgrad.lax as _fg_lax

from . import _oracle_source


class _Lax(types.ModuleType):
    def __getattr__(self, name):
        value = getattr(_fg_lax, name, None)
        if value is None and not name.endswith("_p"):
            raise AttributeError(f"funcgrad.lax has no {name!r}")
        return value


sys.modules.setdefault("jaxshim._lax_for_tables", _Lax("jaxshim._lax_for_tables"))
_module = _oracle_source.load(
    "jax._src.internal_test_util.lax_test_util",
    "_src/internal_test_util/lax_test_util.py",
    {"from jax._src import lax\n": "import jaxshim._lax_for_tables as lax\n"},
)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
