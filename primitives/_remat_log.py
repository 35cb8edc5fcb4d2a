"""What a differentiated checkpoint saves, logged as JAX's checkpoint logs it: one record per split
of a checkpoint into its forward and recomputing parts (``remat-decorated function saving inputs
with shapes: ...`` and ``saving these intermediates: <type> from output of <primitive> from
<line>``), at DEBUG, or at WARNING when ``jax_log_checkpoint_residuals`` is set
(``funcgrad._config_flags`` sets ``log_checkpoint_residuals``). Eager ``grad`` logs when it makes
a program, not when it reuses one.

Layer: primitives. Imports the kernel only; ``primitives.remat``'s partial evaluation calls
``log_saved`` with the values its plan saves.
"""

from __future__ import annotations

import logging

_logger = logging.getLogger("funcgrad.checkpoint")  # (under "funcgrad": jax_logging_level sets it)

log_checkpoint_residuals = [False]  # config jax_log_checkpoint_residuals


def _where(eqn) -> str:
    info = eqn.source_info
    src = "" if info is None else str(info._replace(name_stack=""))
    if eqn.primitive.name == "name":
        return f"named '{eqn.params['name']}' from {src}"
    return f"output of {eqn.primitive.name} from {src}"


def log_saved(inputs, eqns, saved) -> None:
    """Log which of the checkpoint's inputs the recomputation reads (``inputs``) and which values
    computed by ``eqns`` the forward pass saves (``saved``), in JAX's words, if the logger takes
    the record's level.

    >>> import sys, funcgrad, funcgrad.numpy as fnp
    >>> handler = logging.StreamHandler(sys.stdout)
    >>> _logger.addHandler(handler); _logger.setLevel(logging.DEBUG)
    >>> _ = funcgrad.grad(funcgrad.checkpoint(lambda x: fnp.sin(fnp.sin(x)) * 3.0))(1.0)
    remat-decorated function saving inputs with shapes:
      float64[]
    <BLANKLINE>
    >>> _logger.removeHandler(handler); _logger.setLevel(logging.NOTSET)
    """
    level = logging.WARNING if log_checkpoint_residuals[0] else logging.DEBUG
    if not _logger.isEnabledFor(level):
        return
    producers = {v: e for e in eqns for v in e.outvars}
    ins = [v.aval.str_short(short_dtypes=False) for v in inputs]
    body = [
        f"{v.aval.str_short(short_dtypes=False)} from {_where(producers[v])}" for v in saved if v in producers
    ]
    text = "remat-decorated function "
    if ins:
        text += "saving inputs with shapes:\n" + "".join(f"  {s}\n" for s in ins)
    if ins and body:
        text += "and "
    if body:
        text += "saving these intermediates:\n" + "".join(f"  {s}\n" for s in body)
    _logger.log(level, text)
