"""``jax._src.internal_test_util.test_harnesses``: JAX's table of primitive harnesses (each
primitive with its argument shapes, dtypes and parameters), read from the installed oracle jax
(see ``_oracle_source``), its imports pointed at funcgrad's public modules (``lax``' primitives
that funcgrad lacks read as None)."""

import sys
import types

from funcgrad.primitives import elementwise as _ew

import funcgrad.lax as _fg_lax

from . import _oracle_source


class _ByName:
    """A primitive of JAX's that funcgrad writes as a function of lax (``igamma_p``): ``bind`` calls
    ``lax.<name>`` with the parameters as keywords."""

    def __init__(self, name, module=_fg_lax):
        self.name = name
        self.module = module

    def bind(self, *args, **params):
        return getattr(self.module, self.name)(*args, **params)

    def __repr__(self):
        return self.name


class _Lax(types.ModuleType):
    def __init__(self, name, module=_fg_lax):
        super().__init__(name)
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name, None)
        if value is None:
            if not name.endswith("_p"):
                raise AttributeError(f"{self._module.__name__} has no {name!r}")
            return _ByName(name[:-2], self._module)
        if isinstance(value, types.ModuleType) and value.__name__.startswith("funcgrad.lax."):
            return _Lax(f"{self.__name__}.{name}", value)
        return value


sys.modules.setdefault("jaxshim._lax_for_harnesses", _Lax("jaxshim._lax_for_harnesses"))

_ad_util = types.ModuleType("jaxshim._ad_util_for_tables")
_ad_util.add_any_p = _ad_util.add_jaxvals_p = _ew.add_any_p
_ad_util.stop_gradient_p = _ew.stop_gradient_p
sys.modules[_ad_util.__name__] = _ad_util
_module = _oracle_source.load(
    "jax._src.internal_test_util.test_harnesses",
    "_src/internal_test_util/test_harnesses.py",
    {
        "from jax._src import ad_util\n": "import jaxshim._ad_util_for_tables as ad_util\n",
        "from jax._src import lax\n": "import jaxshim._lax_for_harnesses as lax\n",
        "from jax._src import numpy as jnp\n": "import jax.numpy as jnp\n",
        "from jax._src import random\n": "from jax import random\n",
        "from jax._src import typing\n": "from jax import typing\n",
        "from jax._src.numpy import linalg as jnp_linalg\n": "from jax.numpy import linalg as jnp_linalg\n",
        "from jax._src import random as jax_random\n": "from jax import random as jax_random\n",
    },
)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
sys.modules[__name__] = _module
