"""``jax._src.config`` under the alias: each flag as JAX's state object, ``.value`` and a context
manager when called (JAX's export guide: ``with config.jax_export_calling_convention_version(10):``),
on funcgrad's flags (``funcgrad.config``)."""

import contextlib

from funcgrad._config import config


class _State:
    def __init__(self, name: str):
        self.name = name

    @property
    def value(self):
        return config.read(self.name)

    @contextlib.contextmanager
    def __call__(self, new_val):
        previous = config.read(self.name)
        config.update(self.name, new_val)
        try:
            yield
        finally:
            config.update(self.name, previous)


def __getattr__(name: str):
    if name.startswith("jax_"):
        config.read(name)  # (an unknown flag: funcgrad's AttributeError)
        return _State(name)
    if name in ("config", "update"):
        return config if name == "config" else config.update
    raise AttributeError(f"jax._src.config (funcgrad.as_jax) has no {name!r}: a JAX internal")
