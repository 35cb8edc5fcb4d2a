"""Lowering: a closed jaxpr becomes a StableHLO module (MLIR text), one rule per primitive.

Layer: xla_bridge (compiler half). May import: stdlib, numpy, the funcgrad kernel (``ir``), the
siblings ``xla_bridge.emitter`` (the builders and the rule registry), ``xla_bridge.rules``
(importing it registers every rule) and ``xla_bridge.dtypes``. It never imports jaxlib: producing
text needs no XLA, so lowering can be tested and timed without a client. Never the surface, never
jax. Imports point one way -- emitter <- rules <- lowering -- so there is no import cycle.

This module assembles ``@main`` (``lower_jaxpr``: hoisted constants, donation attributes, the
private functions of nested calls); the builders and the rule signature (NOTE: [lowering rule
signature]) live in ``xla_bridge/emitter.py``, the rules in ``xla_bridge/rules/<family>.py``.

Decisions (and why):

- **Hand-emitted text, not the MLIR Python builder.** The bridge facts measured a 201-op module:
  building it with ``jaxlib.mlir`` bindings costs ~3 ms (context 1.8 ms + builder 0.7 ms +
  printing 0.7 ms) against ~0.07 ms for f-string text, while ``compile_and_load`` takes 90-170 ms
  whatever the input form, so the front end is < 1% of compile time either way. Text needs no
  MLIR context (no dialect registration, no thread-affinity rules), is what ``Lowered.as_text()``
  returns anyway, and doubles as the persistent cache key. Ops whose pretty syntax is short and
  verified use it; everything with regions or attributes uses MLIR's generic form
  (``"stablehlo.op"(%a) {attrs} : (types) -> types``), which never changes between StableHLO
  versions.
- **Nested jit -> ``func.call`` of a private function**, one per distinct inner jaxpr object
  (deduplicated by identity), as JAX does: a layer function called N times is lowered once, the
  module stays proportional to the *distinct* code, and XLA inlines calls anyway. The other call
  primitives (custom_jvp_call, custom_vjp_call, checkpoint) are inlined: they are one-off
  wrappers whose derivative machinery is irrelevant once staged.
- **Constants.** Literals and small constants are embedded as dense constants (deduplicated per
  function). Constants of the top-level jaxpr with more than ``HOIST_CONST_ELEMENTS`` elements are
  *passed as leading arguments* instead (JAX embeds them): the module text -- our compile and
  persistent-cache key -- stays small, XLA does not spend time folding megabyte literals, and the
  values are transferred once per executable (``Lowered.const_args``). Inside private functions
  every constant is embedded.
- **Operands broadcast explicitly.** Jaxprs let n-ary elementwise operands be scalars or have
  size-1 dimensions (NOTE: [elementwise operand contract]); StableHLO elementwise ops need equal
  shapes, so rules broadcast such operands with ``broadcast_in_dim`` first
  (``LoweringContext.operands``).
- **64-bit types everywhere; weak types do not exist in HLO** (an aval's weak_type only rides
  along in the executable's avals so host wrappers keep it).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import funcgrad.xla_bridge.rules  # noqa: F401 - registers every lowering rule with the emitter
import numpy as np
from funcgrad.xla_bridge.dtypes import aval as _interned_aval
from funcgrad.xla_bridge.emitter import (
    FunctionBuilder,
    LoweringError,
    ModuleBuilder,
    aval_type,
    const_value,
    create_token,
    escaped,
    lower_jaxpr_body,
    lowering_rules,
    register,
    return_line,
    rule_modules,
    xla_dtype,
)

from funcgrad.kernel import monitoring
from funcgrad.kernel.ir import ClosedJaxpr, abstract_token

__all__ = [
    "HOIST_CONST_ELEMENTS",
    "LoweredModule",
    "LoweringError",
    "lower_jaxpr",
    "lowering_rules",
    "register",
    "rule_modules",
    "xla_dtype",
]

# Constants of the top-level jaxpr larger than this are passed as arguments (see module docs).
HOIST_CONST_ELEMENTS = 4096


class LoweredModule:
    """The result of ``lower_jaxpr``.

    Attributes: ``text`` (the module), ``in_avals``/``out_avals`` of ``@main`` as
    interned ``xla_bridge.dtypes.Aval`` objects -- the first ``len(const_args)`` inputs are hoisted
    constants, then the jaxpr's inputs --, ``const_args`` (NumPy values to pass first),
    ``donate_argnums`` (indices into ``@main``'s parameters) and ``host_callbacks`` (the Python
    functions the module's callback custom calls run, passed to the compiler with it).
    """

    __slots__ = ("text", "in_avals", "out_avals", "const_args", "donate_argnums", "host_callbacks")

    def __init__(self, text, in_avals, out_avals, const_args, donate_argnums, host_callbacks=()):
        self.text = text
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.const_args = const_args
        self.donate_argnums = donate_argnums
        self.host_callbacks = tuple(host_callbacks)


def lower_jaxpr(
    closed: ClosedJaxpr,
    name: str = "main",
    donated_invars: Sequence[bool] | None = None,
    spmd=None,
    arg_shardings: Sequence | None = None,
    result_shardings: Sequence | None = None,
    platform: str = "cpu",
    arg_names: Sequence[str] | None = None,
    result_names: Sequence[str] | None = None,
) -> LoweredModule:
    """Lower a closed jaxpr to a StableHLO module.

    For a program on several devices, ``spmd`` is its ``xla_bridge.meshes.SpmdLowering`` and
    ``arg_shardings``/``result_shardings`` give, per jaxpr input/output, ``(mesh, spec)`` or
    ``None`` (results: the partitioner chooses); hoisted constants are replicated. ``platform``
    is the backend it is compiled for ("cpu", "cuda": ``runtime.normalize_platform`` of a device's).
    ``arg_names`` (one per jaxpr input, "" for none) become the locations of ``@main``'s
    parameters and ``result_names`` (one per output) their ``jax.result_info``, as JAX writes
    them (NOTE: [operation locations] in xla_bridge/emitter.py).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> cj = funcgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(np.ones(3, np.float32))
    >>> print(lower_jaxpr(cj, "f").text)  # doctest: +ELLIPSIS
    module @jit_f attributes {...} {
      func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>) {
        %v0 = stablehlo.sine %arg0 : tensor<3xf32> loc("jit(f)/sin")
    ...
    """
    jaxpr = closed.jaxpr
    mb = ModuleBuilder(name, spmd, platform)
    fb = FunctionBuilder(mb, embed_all_consts=False)
    fb.scope = f"jit({name})"
    hoisted_vals, hoisted_avals, consts = [], [], []
    for v, c in zip(jaxpr.constvars, closed.consts):
        if v.aval is abstract_token:  # a captured Token: a fresh one, as JAX's constant handler
            consts.append(create_token(fb))
            continue
        val = const_value(c)
        if val.size > HOIST_CONST_ELEMENTS:
            consts.append(f"%arg{len(hoisted_vals)}")
            hoisted_vals.append(np.asarray(val, dtype=xla_dtype(v.aval.dtype)))
            hoisted_avals.append(v.aval)
        else:
            consts.append(fb.const(val, v.aval.dtype, v.aval.shape))
    n_h = len(hoisted_vals)
    args = [f"%arg{n_h + i}" for i in range(len(jaxpr.invars))]
    # Emitting the body is the lowering's work; JAX times it as this event (NOTE: [monitoring events]).
    with monitoring.timed_event(monitoring.JAXPR_TO_MLIR_MODULE_EVENT, fun_name=f"jit_{name}"):
        outs = lower_jaxpr_body(fb, jaxpr, consts, args)

    in_avals = [*hoisted_avals, *jaxpr.in_avals]
    out_avals = jaxpr.out_avals
    out_types = [aval_type(a) for a in out_avals]
    outs = _distinct_tokens(fb, outs, out_avals)
    # Donation as JAX decides it (NOTE: [donated arrays] in xla_bridge/execute.py): a donated
    # input is aliased to an unclaimed output of the same type (XLA writes the result in place);
    # else, on one device, donated to XLA (jax.buffer_donor) when an unclaimed output has as many
    # elements; else it is not donated at all (the call leaves it alive) and JAX's warning says
    # so. A program over several devices donates every such input to XLA, as JAX does when the
    # result shardings are left to the partitioner.
    attrs = [""] * len(in_avals)

    def _same_layout(k, j) -> bool:
        # Over several devices an input is aliased to an output only when both are laid out
        # alike (the same global type may be split differently: a block of the input is then not
        # the output's); otherwise it is donated to XLA, which pairs the buffers it can.
        if spmd is None:
            return True
        a = None if arg_shardings is None or k < n_h else arg_shardings[k - n_h]
        r = None if result_shardings is None else result_shardings[j]
        return a is not None and a == r

    donate = []
    unused = []  # donated inputs no output of one device's program can reuse
    if donated_invars is not None and any(donated_invars):
        claimed = set()
        loose = []
        for i, d in enumerate(donated_invars):
            if not d:
                continue
            k = n_h + i
            t = aval_type(in_avals[k])
            match = next(
                (j for j, ot in enumerate(out_types) if ot == t and j not in claimed and _same_layout(k, j)),
                None,
            )
            if match is None:
                loose.append(k)
            else:
                claimed.add(match)
                donate.append(k)
                attrs[k] = f" {{tf.aliasing_output = {match} : i32}}"
        sizes = [
            None if j in claimed or not hasattr(a, "shape") else int(np.prod(a.shape))
            for j, a in enumerate(out_avals)
        ]
        for k in loose:
            size = int(np.prod(in_avals[k].shape))
            j = next((j for j, n in enumerate(sizes) if n == size), None)
            if j is None and spmd is None:
                unused.append(str(in_avals[k]))
                continue
            if j is not None:
                sizes[j] = None
            donate.append(k)
            attrs[k] = " {jax.buffer_donor = true}"
        donate.sort()
    if unused:
        # JAX's warning; those inputs stay alive.
        warnings.warn(
            f"Some donated buffers were not usable: {', '.join(unused)}.\n"
            "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
            stacklevel=2,
        )
    results = list(out_types)
    if spmd is not None:
        attrs, results = _sharding_attrs(spmd, attrs, results, in_avals, n_h, arg_shardings, result_shardings)
    if result_names is not None and len(result_names) == len(results):
        results = [_with_result_info(t, r) if r else t for t, r in zip(results, result_names)]
    locs = [""] * len(in_avals)
    if arg_names is not None and len(arg_names) == len(jaxpr.invars):
        locs[n_h:] = [f' loc("{escaped(a)}")' if a else "" for a in arg_names]
    params = [f"%arg{i}" for i in range(len(in_avals))]
    sig = ", ".join(f"{a}: {aval_type(av)}{at}{lc}" for a, av, at, lc in zip(params, in_avals, attrs, locs))
    # JAX's module name (jit(<lambda>) is jit__lambda), quoted where it is no bare identifier
    sym = re.sub(r"[^\w.-]", "_", f"jit({name})", flags=re.ASCII).rstrip("_")
    if "-" in sym:
        sym = f'"{sym}"'
    partitions = 1 if spmd is None else spmd.num_partitions
    lines = [
        f"module @{sym} attributes {{mhlo.num_partitions = {partitions} : i32, "
        "mhlo.num_replicas = 1 : i32} {",
        *([] if spmd is None else spmd.declarations()),
        f"  func.func public @main({sig}) -> ({', '.join(results)}) {{",
        *fb.lines,
        return_line(outs, out_types),
        "  }",
    ]
    for f in mb.functions:
        lines.extend(f)
    lines.append("}")
    return LoweredModule(
        "\n".join(lines) + "\n",
        [_interned_aval(a.shape, xla_dtype(a.dtype), a.weak_type) for a in in_avals],
        [_interned_aval(a.shape, xla_dtype(a.dtype), a.weak_type) for a in out_avals],
        hoisted_vals,
        tuple(donate),
        mb.host_callbacks,
    )


def _with_result_info(result: str, info: str) -> str:
    """A result type of ``@main`` (with its attribute dictionary, if any) with JAX's
    ``jax.result_info`` first in the dictionary.

    >>> _with_result_info("tensor<f32>", "result"), _with_result_info("tensor<f32> {a = 1}", "result[0]")
    ('tensor<f32> {jax.result_info = "result"}', 'tensor<f32> {jax.result_info = "result[0]", a = 1}')
    """
    attr = f'jax.result_info = "{escaped(info)}"'
    head, brace, rest = result.partition(" {")
    return f"{head} {{{attr}, {rest}" if brace else f"{result} {{{attr}}}"


def _distinct_tokens(fb, outs, out_avals) -> list:
    """``@main``'s results with a token returned twice made a fresh token the second time
    (``after_all`` of it): XLA's CPU runtime aborts the process on two token results that are the
    same value ("Unexpected duplicate"; jax 0.10.2 does), where arrays are copied."""
    seen = set()
    outs = list(outs)
    for j, (o, a) in enumerate(zip(outs, out_avals)):
        if a is abstract_token:
            if o in seen:
                outs[j] = fb.emit(f"stablehlo.after_all {o} : !stablehlo.token")
            seen.add(outs[j])
    return outs


def _sharding_attrs(spmd, attrs, results, in_avals, n_hoisted, arg_shardings, result_shardings):
    """``sdy.sharding`` attributes of @main's parameters and results (merged with donation's)."""
    new_attrs = []
    for i, at in enumerate(attrs):
        if i < n_hoisted:  # hoisted constants: a whole copy on every device
            s = (spmd.mesh, ((),) * len(in_avals[i].shape)) if spmd.mesh is not None else None
        else:
            s = None if arg_shardings is None else arg_shardings[i - n_hoisted]
        if s is None:
            new_attrs.append(at)
            continue
        sh = _placed_attr(spmd, s)
        new_attrs.append(f" {{{at.strip()[1:-1]}, {sh}}}" if at else f" {{{sh}}}")
    new_results = []
    for j, t in enumerate(results):
        s = None if result_shardings is None else result_shardings[j]
        new_results.append(t if s is None else f"{t} {{{_placed_attr(spmd, s)}}}")
    return new_attrs, new_results


class Placed:
    """A parameter's or result's sharding entry (``None``, XLA's text or ``(mesh, spec)``) in a
    memory ``kind`` of its devices other than their own ("pinned_host"): lowered with JAX's
    ``mhlo.memory_kind`` attribute beside the sharding."""

    __slots__ = ("kind", "spec")

    def __init__(self, spec, kind: str):
        self.spec, self.kind = spec, kind


def _placed_attr(spmd, s) -> str:
    if type(s) is Placed:
        kind = f'mhlo.memory_kind = "{s.kind}"'
        return kind if s.spec is None else f"{_sharding_attr(spmd, s.spec)}, {kind}"
    return _sharding_attr(spmd, s)


def _sharding_attr(spmd, s) -> str:
    """``(mesh, spec)`` or ``(mesh, spec, unreduced axes)``: a Shardy sharding; a string: XLA's
    HloSharding text (where no mesh says it: NOTE: [Shardy reads sdy shardings only])."""
    if isinstance(s, str):
        return f'mhlo.sharding = "{s}"'
    unreduced = s[2] if len(s) > 2 else ()
    return f"sdy.sharding = #sdy.sharding{spmd.sharding(s[0], s[1], unreduced=unreduced)}"
