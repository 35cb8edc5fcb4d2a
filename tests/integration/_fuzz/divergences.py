"""The ONE list of documented differences between funcgrad and jax that the fuzzer accepts.

Each entry names a deliberate difference (a rule funcgrad follows on purpose: NumPy 2's dtype rules, a
derivative convention), says why, gives an example, and carries the predicate that recognises it in a
fuzzer outcome. A difference not on this list fails the fuzzer; an entry is never a wider tolerance.
docs/differences_from_jax.md shows this list (``render_table()``, between its markers); a test keeps
the two equal, so ``python -m _fuzz.divergences`` (from tests/integration/) prints the table to paste.

>>> [entry.name for entry in DOCUMENTED][:1]
['numpy2-dtype-promotion']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Divergence:
    name: str
    what: str  # what differs, in one sentence
    why: str  # the reason funcgrad differs on purpose
    example: str  # a one-line illustration (funcgrad -> jax)
    matches: Callable  # Outcome -> bool


def _ops(outcome) -> set:
    names = {op.name for op in outcome.case.ops}
    # An op counts as the functions its expression calls too (the wide table's and the program
    # table's drawn expressions, the named forms such as np.searchsorted_sorted), so the
    # function-specific entries below see them.
    for name, expr in outcome.case.steps:
        names |= {f"np.{f}" for f in re.findall(r"\bnp\.([\w.]+)\(", expr)}  # (np.linalg.norm too)
        names |= {f"special.{f}" for f in re.findall(r"\bspecial\.(\w+)\(", expr)}
        if "**" in expr:  # (the operator: np.power's rules, for an exponent that is not a literal int)
            names |= {"np.power"}
        if name.startswith("wide.") and "initial=" in expr:
            names |= {"np.max_initial"}
    return names


def _kind(outcome) -> str | None:
    return outcome.mismatch.kind if outcome.mismatch is not None else None


# The float32 tolerance: a value computed in float32 on jax's side and in float64 on funcgrad's
# (numpy2-dtype-promotion upstream) agrees to float32's precision, not float64's.
_FLOAT32_RTOL = 2e-4


def _dtype_rule(outcome) -> bool:
    # (in JAX's 32-bit mode funcgrad follows JAX's dtype rules: nothing is excused there)
    if not outcome.case.mixes_dtypes or not outcome.case.x64:
        return False
    m = outcome.mismatch
    if outcome.status == "error":  # a strict function gets NumPy 2's dtype where jax's differs
        error = outcome.error or ""
        return (
            error.startswith("funcgrad raised TypeError: lax.")
            or (
                error.startswith("funcgrad raised TypeError: bitwise_")
                and "integer and boolean types" in error
            )
            # control flow's equal types: branches (cond/switch) or a loop's carry computed by NumPy 2's
            # rules from mixed dtypes, where jax's rules happen to agree
            or (error.startswith("funcgrad raised TypeError: ") and _CONTROL_FLOW_TYPES in error)
            or (error.startswith("funcgrad raised TypeError: ") and _CARRY_TYPES in error)
        )
    if m is None or m.kind not in ("dtype", "value", "nan", "inf"):
        return False
    if _small_int_accumulation(outcome):  # jax's wrapped 8/16-bit sums, NumPy's exact ones
        return True
    if m.kind in ("nan", "inf"):  # another precision: float32 overflows where float64 does not
        return m.fg.dtype != m.jax.dtype
    # a value computed in another precision upstream: agrees to float32's precision, or is of
    # another dtype itself (then an ill-conditioned step may magnify the precisions' difference)
    return m.kind == "dtype" or m.fg.dtype != m.jax.dtype or 0 < m.excess <= _FLOAT32_RTOL


_CONTROL_FLOW_TYPES = "branches must have equal output types"  # (JAX's words)
_CARRY_TYPES = "carry input and carry output must have equal types"

_CUMULATIVE = {"np.cumsum", "np.cumprod", "np.nancumsum", "np.nancumprod", "np.cumulative_prod",
               "np.cumsum_flat"}  # fmt: skip


def _small_int_accumulation(outcome) -> bool:
    """A cumulative sum or product of an 8/16-bit integer array: funcgrad accumulates in the default
    integer (NumPy), jax in the input's dtype, wrapping; values downstream differ by the wrap."""
    small = [(op, ds) for op, ds in zip(outcome.case.ops, _operand_dtypes(outcome))]
    return any(op.name in _CUMULATIVE and any(d in _SMALL_INTS for d in ds) for op, ds in small)


_SMALL_INTS = {"int8", "int16", "uint8", "uint16"}


def _operand_dtypes(outcome):
    return outcome.case.operand_dtypes or [()] * len(outcome.case.ops)


# (multigammaln: a sum of gammaln)
# (lgamma/digamma/polygamma at their poles and infinities are jax's values since session 18: their
# eager steps take the compiled program where an operand or the result is not finite)
_SCIPY_EDGE_OPS = {"special.expn", "special.expi"}


def _scipy_edges(outcome) -> bool:
    if not _ops(outcome) & _SCIPY_EDGE_OPS:
        return False
    if "special.expn" in _ops(outcome) and _kind(outcome) == "value":  # expn(n, 0): an input of 0, any dtype
        return any(
            np.any(np.asarray(x) == 0) for x in outcome.case.inputs if np.asarray(x).dtype.kind in "biuf"
        )
    if _kind(outcome) in ("nan", "inf"):
        return True
    # a later step may turn the edge value into a number (arctan2(0, -inf) = pi, arctan2(0, nan) = nan,
    # then where(v > 0, v, 2)): an input at a pole (0, a negative integer) or an infinity
    return _kind(outcome) == "value" and _has_input(
        outcome, lambda x: ~np.isfinite(x) | ((np.real(x) <= 0) & (np.real(x) == np.round(np.real(x))))
    )


_DERIVATIVE_CALLS = re.compile(r"\bT\.(grad|value_and_grad|jvp|vjp|jacfwd|jacrev|hessian|linearize)\(")


def _differentiates(outcome) -> bool:
    # (a derivative in the stack, or inside a step's expression: the program tables' wrappers)
    return any(kind not in ("jit", "vmap") for kind, _ in outcome.case.stack) or any(
        _DERIVATIVE_CALLS.search(expr) for _, expr in outcome.case.steps
    )


def _nan_subset(outcome, fewer: bool) -> bool:
    """A NaN mismatch where funcgrad's NaNs are a subset of jax's (``fewer``) or a superset."""
    m = outcome.mismatch
    if _kind(outcome) != "nan":
        return False
    fg, jx = np.isnan(np.asarray(m.fg)), np.isnan(np.asarray(m.jax))
    return bool(np.all(jx | ~fg) if fewer else np.all(fg | ~jx))


def _has_input(outcome, test) -> bool:
    # (a random program's intermediate values are not its inputs: clip, where, cumsum, ... make
    # zeros of any input, so there an input is not asked for)
    if any(
        op.name.startswith(("prog.", "progw.", "progx.", "progy.", "progz.", "progq.", "shard."))
        for op in outcome.case.ops
    ):
        return True
    return any(test(x).any() for x in map(np.asarray, outcome.case.inputs) if x.dtype.kind in "fc")


# (the 2-norms of ops_extra's ord= forms too: ord 2 / None is the case at zero)
_NORMS = {"np.linalg.norm", "np.vector_norm", "linalg.matrix_norm", "np.vector_norm_ord",
          "np.linalg.norm_vec", "np.linalg.norm_mat", "np.linalg.vector_norm",
          "np.linalg.matrix_norm",
          # (lstsq's residuals: jax's norm(b - a @ x) ** 2, NaN derivatives at a zero residual; funcgrad's
          # sum of squares has the derivative 0 there -- a square full-rank system's)
          "np.linalg.lstsq"}  # fmt: skip
_STDS = {"np.std", "np.std_ddof", "np.nanstd"}
_POWERS = {"np.power", "np.float_power", "lax.pow", "np.scalar_pow", "np.rpow", "np.vander"}  # (x ** k)


def _norm_at_zero(outcome) -> bool:
    ops = _ops(outcome)
    if "np.linalg.cond" in ops and any("'fro'" in expr for _, expr in outcome.case.steps):
        # (cond(x, 'fro') is norm(x) * norm(inv(x)): inv(x) is the zero matrix where x holds
        # infinities, and there the Frobenius norm's subgradient is 0)
        ops = ops | {"np.linalg.norm"}
    return _differentiates(outcome) and bool(ops & _NORMS) and _nan_subset(outcome, fewer=True)


def _std_at_zero_variance(outcome) -> bool:
    return _differentiates(outcome) and bool(_ops(outcome) & _STDS) and _nan_subset(outcome, fewer=True)


def _power_at_zero(outcome) -> bool:
    return _differentiates(outcome) and bool(_ops(outcome) & _POWERS) and _nan_subset(outcome, fewer=True)


def _lapack_dtype_traced(outcome) -> bool:
    # (jax computed: the decomposition's result was dead, or jax would have refused it compiling)
    return outcome.status == "error" and "which LAPACK does not support" in (outcome.error or "")


def _jax_checkpoint_tangent_weak_type(outcome) -> bool:
    # (a tangent of a weak primal: strong in jax's eager or vmapped checkpoint, weak elsewhere)
    m = outcome.mismatch
    if _kind(outcome) != "weak_type" or "vs jax False" not in m.detail:
        return False
    text = " ".join(expr for _, expr in outcome.case.steps)
    return "checkpoint(" in text and re.search(r"\bT\.(jvp|linearize)\(", text) is not None


_ARG_EXTREMA = {"np.argmin", "np.argmax", "np.nanargmin", "np.nanargmax"}


def _complex_arg_extremum_traced(outcome) -> bool:
    # (jax computed: the argmin/argmax of a complex value was dead, so its lowering never refused it)
    error = outcome.error or ""
    return (
        outcome.status == "error"
        and bool(_ops(outcome) & _ARG_EXTREMA)
        and re.search(r"\b[lg]t does not accept dtype complex", error) is not None
    )


# (jax.experimental.jet's rules written as compositions: pow through exp(y log x), sqrt/rsqrt/cbrt as
# powers, atanh/asinh/acosh through logs, rem as x - y floor(x / y); funcgrad's Taylor rules are the
# primitives' own derivatives, the values jax's nested jvp gives)
_JET_COMPOSITES = re.compile(
    r"np\.(sqrt|cbrt|power|float_power|arctanh|arccosh|arcsinh|fmod|remainder|log|log2|log10|hypot)\("
    r"|lax\.(rsqrt|pow|rem|sqrt|cbrt|atanh|acosh|asinh)\(|\*\*|special\.(xlogy|xlog1py|entr)\("
)


def _jax_jet_composites(outcome) -> bool:
    steps = " ".join(expr for _, expr in outcome.case.steps)
    if "_jet(" not in steps or not _JET_COMPOSITES.search(steps):
        return False
    if re.search(r"np\.(fmod|remainder)\(|lax\.rem\(", steps) and _kind(outcome) in ("value", "nan", "inf"):
        return True  # (jax's primal of rem under jet is Python's modulo)
    return _nan_subset(outcome, fewer=True) or _kind(outcome) == "inf"


def _jax_jet_constant_operand_weak_type(outcome) -> bool:
    # (jax's jet instantiates a constant operand's zero series strongly typed: the series of a weak
    # primal through a product or sum with a constant come out strong, its jvp's tangent weak)
    m = outcome.mismatch
    if _kind(outcome) != "weak_type" or "vs jax False" not in m.detail:
        return False
    return "_jet(" in " ".join(expr for _, expr in outcome.case.steps)


def _jax_closure_convert_forward_over_custom_vjp(outcome) -> bool:
    # (jax stages forward mode over a custom_vjp's linearization, then raises when the
    # closure-converted function runs it)
    steps = " ".join(expr for _, expr in outcome.case.steps)
    return (
        outcome.status == "unraised"
        and "can't apply forward-mode autodiff (jvp) to a custom_vjp function" in (outcome.error or "")
        and "closure_convert(" in steps
    )


def _jax_custom_vmap_reverse_mode(outcome) -> bool:
    # (jax's custom_vmap has a JVP but no linearization: grad/vjp/jacrev/linearize of a function that
    # traces one raise, even where its result does not reach the output)
    steps = " ".join(expr for _, expr in outcome.case.steps)
    return (
        outcome.status == "unraised"
        and "Linearization failed to produce known values" in (outcome.error or "")
        and re.search(r"_tc_cvmap\(|custom_vmap|sequential_vmap\(", steps) is not None
    )


def _jax_custom_lin_under_jvp(outcome) -> bool:
    # (jax linearizes a custom_vjp the differentiated input does not reach, then cannot push a
    # tangent through the linearization)
    return outcome.status == "unraised" and "Differentiation rule for 'custom_lin'" in (outcome.error or "")


_SET_FUNCTIONS = {
    "np.unique", "np.unique_values", "np.union1d", "np.intersect1d", "np.setdiff1d", "np.setxor1d",
}  # fmt: skip


def _jax_set_functions_constant(outcome) -> bool:
    # (jax's leaf all zeros where funcgrad's derivative is not; the set function called without size=)
    m = outcome.mismatch
    text = " ".join(expr for _, expr in outcome.case.steps)
    return (
        _differentiates(outcome)
        and bool(_ops(outcome) & _SET_FUNCTIONS)
        and "size=" not in text
        and _kind(outcome) == "value"
        and not np.any(np.asarray(m.jax))
    )


def _jax_window_extrema_negative_padding_reverse(outcome) -> bool:
    # (jax's select_and_scatter_add transpose pads the cotangent back with the window's padding and
    # slices past the operand where a pad is negative)
    text = " ".join(expr for _, expr in outcome.case.steps)
    return (
        outcome.status == "unraised"
        and "reduce_window(" in text
        and re.search(r"\(-\d+, -?\d+\)|\(-?\d+, -\d+\)", text) is not None
        and any(
            words in (outcome.error or "")
            for words in (
                "slice limit_indices must be less than or equal to operand shape",
                "slice start_indices must have every element be nonnegative",
            )
        )
    )


def _jax_irfft_empty_reverse(outcome) -> bool:
    # (an irfft of one coefficient has length 2 * (1 - 1) = 0; jax's transpose divides by it)
    text = " ".join(expr for _, expr in outcome.case.steps)
    return outcome.status == "unraised" and "irfft" in text and "ZeroDivisionError" in (outcome.error or "")


def _jax_gradient_edge_order(outcome) -> bool:
    return outcome.status == "unraised" and "'edge_order' argument to jnp.gradient is not supported" in (
        outcome.error or ""
    )


def _jax_scatter_apply_jvp(outcome) -> bool:
    return outcome.status == "unraised" and "scatter_apply JVP not implemented" in (outcome.error or "")


def _hypot_at_origin(outcome) -> bool:
    return (
        _differentiates(outcome)
        and "np.hypot" in _ops(outcome)
        and _kind(outcome) == "value"
        and _has_input(outcome, lambda x: x == 0)
    )


# (logsumexp itself is JAX's formula differentiated by the chain rule since session 12: jax's NaNs)
_LOG_SUM_EXPS = {"np.logaddexp", "np.logaddexp2", "lax.cumlogsumexp"}


def _logsumexp_at_minus_inf(outcome) -> bool:
    return (
        _differentiates(outcome)
        and bool(_ops(outcome) & _LOG_SUM_EXPS)
        and (_has_input(outcome, lambda x: np.real(x) == -np.inf))
        and _nan_subset(outcome, fewer=True)
    )


def _logaddexp_at_plus_inf(outcome) -> bool:
    return (
        _differentiates(outcome)
        and bool(_ops(outcome) & _LOG_SUM_EXPS)
        and _has_input(outcome, lambda x: np.real(x) == np.inf)
        and _kind(outcome) in ("value", "nan")
    )


def _trapezoid_of_inf(outcome) -> bool:
    return (
        "np.trapezoid" in _ops(outcome) and _has_input(outcome, np.isinf) and _nan_subset(outcome, fewer=True)
    )


def _derivative_order(outcome) -> int:
    orders = {"grad": 1, "value_and_grad": 1, "jvp": 1, "vjp": 1, "jacfwd": 1, "jacrev": 1, "hessian": 2}
    return sum(orders.get(kind, 0) for kind, _ in outcome.case.stack)


def _i0_curvature_at_zero(outcome) -> bool:
    if "np.i0" not in _ops(outcome) or not _has_input(outcome, lambda x: x == 0):
        return False
    if _kind(outcome) == "nan":  # a NaN tangent times i1(0) = 0, where jax selects 0
        return _derivative_order(outcome) >= 1 and _nan_subset(outcome, fewer=False)
    return _kind(outcome) == "value" and _derivative_order(outcome) >= 2


def _numpy_result_dtype(names):
    def matches(outcome) -> bool:
        m = outcome.mismatch
        if not _ops(outcome) & names or not outcome.case.x64:
            return False
        if outcome.status == "error":  # a strict lax function downstream refuses NumPy's dtype
            return (outcome.error or "").startswith("funcgrad raised TypeError: lax.")
        return _kind(outcome) in ("dtype", "value") and m.fg.dtype != m.jax.dtype

    return matches


def _python_int_out_of_range(outcome) -> bool:
    error = outcome.error or ""
    return (
        outcome.status == "error"
        and outcome.case.x64
        and (
            error.startswith("funcgrad raised OverflowError: Python integer")
            or (error.startswith("funcgrad raised OverflowError: lax.") and "out of range" in error)
        )
    )


def _integer_overflow_in_jax(outcome) -> bool:
    """An integer input at its dtype's extreme, into a float function of funcgrad.nn/scipy.special."""

    def extreme(x):
        if x.dtype.kind not in "iu":
            return False
        info = np.iinfo(x.dtype)
        return bool(np.any((x == info.max) | (x == info.min)))

    return (
        outcome.case.mixes_dtypes
        and any(name.startswith(("nn.", "special.")) for name in _ops(outcome))
        and any(extreme(x) for x in outcome.case.inputs if isinstance(x, np.ndarray))
        and _kind(outcome) in ("value", "nan", "inf")
    )


def _convolution_padding(outcome) -> bool:
    return (
        bool(_ops(outcome) & {"np.convolve", "np.correlate"})
        and _has_input(outcome, lambda x: ~np.isfinite(x))
        and _nan_subset(outcome, fewer=False)
    )


_INITIAL_OPS = {"np.max_initial", "np.min_where"}


def _initial_derivative(outcome) -> bool:
    return (
        _differentiates(outcome) and bool(_ops(outcome) & _INITIAL_OPS) and _nan_subset(outcome, fewer=True)
    )


def _custom_rule_of_a_linearized_scan(outcome) -> bool:
    # (a custom_jvp function of a scan's xs, differentiated twice: jax's second pass meets the primal
    # function where its first pass's value output came from)
    derivatives = sum(kind not in ("jit", "vmap") for kind, _ in outcome.case.stack)
    return _kind(outcome) == "value" and "wide.custom_in_loops" in _ops(outcome) and derivatives >= 2


def _ldexp_at_specials(outcome) -> bool:
    if _kind(outcome) not in ("value", "nan", "inf") or "np.ldexp" not in _ops(outcome):
        return False
    return _differentiates(outcome) and _has_input(outcome, lambda x: ~np.isfinite(x) | (x == 0))


def _fft_of_empty(outcome) -> bool:
    return outcome.status == "error" and "invalid number of data points" in (outcome.error or "")


def _subnormal_inputs(outcome) -> bool:
    def subnormal(x):
        if x.dtype.kind not in "fc":
            return False
        tiny = np.finfo(x.dtype).tiny
        return bool(np.any((np.abs(x) < tiny) & (x != 0)))

    return outcome.mismatch is not None and any(subnormal(np.asarray(x)) for x in outcome.case.inputs)


def _jax_complex_spmd_reduction(outcome) -> bool:
    # XLA's CPU runtime refuses the all-reduce of complex values that jax's partitioned program of
    # a sharded complex computation holds (seed 16003: grad of a jit with in_shardings over a
    # complex64 input); the shardings' own program, nothing the program asked for
    error = outcome.error or ""
    return (
        outcome.status == "unraised"
        and "Unsupported reduction computation" in error
        and re.search(r": c(64|128)\[", error) is not None
    )


def _jax_scatter_apply_of_another_dtype(outcome) -> bool:
    # jax's scatter_apply builds its update region from func's own output type: a func that
    # changes the dtype (sin of a boolean or integer array) gives StableHLO its verifier refuses
    # (seed 16010: b.at[...].apply(np.sin) of a boolean b under vjp o jit)
    return (
        outcome.status == "unraised"
        and "Cannot lower jaxpr with verifier errors" in (outcome.error or "")
        and any(".apply(" in expr for _, expr in outcome.case.steps)
    )


def _jax_symbolic_zero_leak(outcome) -> bool:
    # jax's own internal error: a symbolic Zero tangent reaching a jnp function (seed 13003:
    # jacfwd of a variadic lax.reduce whose integer output has a zero tangent), or reaching the
    # variadic reduce's own tree check as a Zero node (seeds 18004/18005: the lax-parameter table's
    # argmax-as-a-reduction under hessian/jvp, 'Operands must have the same tree structure as
    # init_values: PyTreeDef([*, *, *, CustomNode(Zero[...], [])])')
    error = outcome.error or ""
    return outcome.status == "unraised" and (
        "ad_util.Zero" in error
        or ("same tree structure as init_values" in error and "CustomNode(Zero[" in error)
    )


def _jax_dead_generic_window(outcome) -> bool:
    # jax's linearize refuses a generic reduce_window (a reducer it does not take for a monoid) as
    # soon as it traces it, used or not; funcgrad, as JAX's rule says, when a primal output it
    # returns is unknown (seeds 18004/18005: a dead reduce_window under grad o checkpoint o vjp;
    # 18011: a dead lax.mul window, and a max window with dilations in a dead cond's branch under
    # vjp o hessian, whose second derivative jax does not linearize: its cond linearizes every
    # branch whole)
    return (
        outcome.status == "unraised"
        and "Linearization failed to produce known values" in (outcome.error or "")
        and any(
            "lax.reduce_window(" in expr
            and ("(lambda x, y:" in expr or "lax.mul" in expr or "lax.cond(" in expr)
            for _, expr in outcome.case.steps
        )
    )


_JAX_DERIVATIVES = ("grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "linearize")


def _error_names(outcome) -> set:
    # the exception class names _err gave each side (its value: the name's bytes)
    m = outcome.mismatch
    names = set()
    for v in (m.fg, m.jax):
        a = np.asarray(v)
        if a.dtype.kind in "iuf" and a.ndim == 1 and a.size and np.all((a >= 65) & (a <= 122)):
            names.add(bytes(a.astype(np.uint8)).decode())
    return names


def _jax_reduce_error_by_trace(outcome) -> bool:
    # a lax.reduce over a dimension past the rank with a monoid and an init made by np.array inside
    # the program: jax raises ValueError eagerly (its monoid reducer) and IndexError under jit or
    # vmap (the init is a tracer, so the generic reducer's shape rule); funcgrad's np.array is a
    # constant there, so ValueError (the lax-parameter fuzzer's seed 18012)
    return (
        outcome.status == "mismatch"
        and _kind(outcome) == "value"
        and any("_err(" in e and "lax.reduce(" in e for _, e in outcome.case.steps)
        and _error_names(outcome) == {"ValueError", "IndexError"}
    )


def _jax_window_init_dtype_under_derivatives(outcome) -> bool:
    # a generic lax.reduce_window (a reducer jax does not take for a monoid with that init: lax.max
    # from 0) of a float operand with a Python int init: jax raises TypeError ('inconsistent dtypes
    # for operands and init_values') eagerly and under jit, ValueError ('reduce_window output must
    # have the same tree structure as the operands') under a derivative, whose rule pairs the
    # values and tangents first; funcgrad raises the TypeError everywhere (session 18's lax fuzzer,
    # seed 20015 32-bit: value_and_grad of a program holding such an _err step)
    derivative = any(k in _JAX_DERIVATIVES for k, _ in outcome.case.stack) or any(
        f"T.{d}(" in e for d in _JAX_DERIVATIVES for _, e in outcome.case.steps
    )
    return (
        outcome.status == "mismatch"
        and derivative
        and any(
            re.search(r"_err\(.*lax\.reduce_window\(_mat\(np, a, \([^)]*\), np\.b?float\d+\), -?\d+, ", e)
            for _, e in outcome.case.steps
        )
    )


def _jax_index_in_dim_at_batch_zero(outcome) -> bool:
    # dynamic_index_in_dim past a size-0 dimension under a vmap of size 0: jax raises its slice
    # TypeError (its wrapper's check), though the dynamic_slice it wraps computes the empty result
    # under the same vmap; funcgrad computes both (session 18's lax fuzzer, seed 20026 eager)
    return outcome.status == "mismatch" and any(
        "_err(" in e
        and "T.vmap(" in e
        and re.search(r"lax\.dynamic_(update_)?index_in_dim\(", e)
        and ".reshape((0, " in e
        for _, e in outcome.case.steps
    )


def _jax_scatter_derivative_into_an_empty_dimension(outcome) -> bool:
    # a derivative of .at[].set/min/max of an operand whose indexed dimension has size 0: jax's rule
    # gathers the scattered positions, a size-1 slice of that size-0 dimension, and raises its
    # gather TypeError, while the scatter itself computes the empty result (eagerly, under jit);
    # funcgrad differentiates it (the progq table's seed 23001, 32-bit)
    return (
        outcome.status == "unraised"
        and "in gather op is out of range, must be within [0, 0 + 1)" in (outcome.error or "")
        and any(re.search(r"\.at\[.*\]\.(set|min|max)\(", e) for _, e in outcome.case.steps)
        and any(0 in np.shape(x) for x in outcome.case.inputs)
    )


_RAGGED_LIMITS = (
    "ragged_dot vmap over any dim but 0 - NYI",
    "Unimplemented grad_x_dims for ragged dot general",
)


def _jax_ragged_dot_limits(outcome) -> bool:
    # jax's ragged_dot batch rule and its transpose in the ragged-contracting mode are not written
    # for every layout (NotImplementedError); funcgrad computes (the lax-parameter fuzzer's seeds
    # 18013/18015). Where the call is invalid anyway, jax's NotImplementedError comes first.
    if outcome.status == "unraised":
        return any(words in (outcome.error or "") for words in _RAGGED_LIMITS)
    return (
        outcome.status == "mismatch"
        and any("lax.ragged_dot(" in e for _, e in outcome.case.steps)
        and "NotImplementedError" in _error_names(outcome)
    )


def _jax_integer_tangent_of_a_product(outcome) -> bool:
    # jax's dot_general JVP of float operands with an integer preferred_element_type is the
    # bilinear rule in that type: an integer tangent; funcgrad's is float0, as for any integer
    # output, so a program packing only such tangents has nothing left (the eager pass, seed 18014)
    return (
        outcome.status == "error"
        and "at least one array or dtype is required" in (outcome.error or "")
        and any("preferred_element_type=np.int" in e or "preferred_element_type=np.uint" in e
                for _, e in outcome.case.steps)
    )  # fmt: skip


def _jax_integer_cumlogsumexp(outcome) -> bool:
    # jax's cumlogsumexp of an integer array fails converting -inf (its init) to the integer type,
    # except under a derivative, whose rule (an associative scan of logaddexp) computes (the
    # lax-parameter fuzzer's seed 18017: vmap o jit o linearize)
    return (
        outcome.status == "error"
        and "cannot convert float infinity to integer" in (outcome.error or "")
        and any("lax.cumlogsumexp(" in e for _, e in outcome.case.steps)
    )


def _jax_dead_betainc_derivative(outcome) -> bool:
    # jax runs betainc's refusing JVP rule wherever its tracing meets a tangent of a or b, used or
    # not (a dead betainc inside checkpoint/custom_jvp under a derivative); funcgrad only where the
    # derivative is computed (the lax-parameter fuzzer's seeds 18016/18017)
    error = outcome.error or ""
    return outcome.status == "unraised" and (
        "Betainc gradient with respect to a and b not supported" in error
        or "Differentiation rule for 'zeta' not implemented" in error  # (the same for zeta: 18020)
    )


def _jax_partial_ppermute_under_vmap(outcome) -> bool:
    # jax's ppermute batch rule asserts a permutation of every index ('Permutation doesn't match
    # the axis size!'); funcgrad gives the collective's zeros where nothing is sent, as on devices
    # (the lax-parameter fuzzer's seed 18017)
    if outcome.status == "unraised":
        return "Permutation doesn't match the axis size" in (outcome.error or "")
    return (
        outcome.status == "mismatch"
        and any("lax.ppermute(" in e for _, e in outcome.case.steps)
        and "AssertionError" in _error_names(outcome)
    )


def _jax_cumulative_negative_axis(outcome) -> bool:
    # jax refuses lax.cumprod/cummax/cummin/cumlogsumexp with a negative axis (its shape rule),
    # except under a derivative, whose rule (an associative scan) accepts it and computes (seed
    # 18009: linearize o jvp o linearize of an _err(cumprod(..., axis=-1)) step)
    steps = [expr for _, expr in outcome.case.steps]
    derivative = any(k in _JAX_DERIVATIVES for k, _ in outcome.case.stack) or any(
        f"T.{d}(" in e for d in _JAX_DERIVATIVES for e in steps
    )
    return (
        outcome.status in ("mismatch", "error")
        and derivative
        and any(re.search(r"_err\(.*lax\.cum(prod|max|min|logsumexp)\(.*axis=-", e) for e in steps)
    )


def _jax_float0_product(outcome) -> bool:
    # jax's own internal error: reverse mode over a jvp whose output is boolean multiplies the
    # float0 tangent (seed 13017: jacrev o value_and_grad o jvp of logical_not(clip(int8)))
    return (
        outcome.status == "unraised"
        and "Called multiply with a float0 array" in (outcome.error or "")
        and "jvp.float0" not in _ops(outcome)
        and any(k in ("jvp", "linearize") for k, _ in outcome.case.stack)
    )


def _jax_subset_by_index_on_cpu(outcome) -> bool:
    # jax's CPU lowerings of eigh/svd refuse subset_by_index (computed on TPU only); funcgrad
    # computes the subset (the progz fuzzer's seed 19102: lax.linalg.eigh(m, subset_by_index=(1, 3)))
    error = outcome.error or ""
    return (
        outcome.status == "unraised"
        and re.search(r"subset_by_index not (supported|implemented)", error) is not None
    )


def _stats_calls(outcome) -> set:
    # the scipy.stats functions a program's steps call (T.scipy.stats.truncnorm.cdf -> truncnorm.cdf)
    return {m for _, expr in outcome.case.steps for m in re.findall(r"\bstats\.(\w+\.\w+)\(", expr)}


def _jax_complex_stats(outcome) -> bool:
    # jax.scipy.stats takes complex values in some functions (norm.logpdf/pdf, cauchy.logpdf,
    # logistic.cdf, multivariate_normal.logpdf compute complex results) and refuses them in others
    # (norm.cdf/sf/ppf, t, gamma, beta, expon, uniform, laplace); funcgrad refuses them in all
    # (the progz fuzzer's seed 19102)
    error = outcome.error or ""
    return (
        outcome.status == "error"
        and re.search(r"scipy\.stats\.\S+ does not support complex", error) is not None
    )


def _jax_xlogy_of_an_integer(outcome) -> bool:
    # jax's xlogy/xlog1py are custom_jvp functions of the arguments as given (the promotion inside):
    # differentiated through one with an integer argument, its rule multiplies the integer's float0
    # tangent or takes lax.log of the integer (seed 15001: jit(xlogy(2, a)) under value_and_grad);
    # gumbel_r/gumbel_l call xlogy(-1, scale)
    error = outcome.error or ""
    names = _ops(outcome)
    return (
        outcome.status == "unraised"
        and (
            "Called multiply with a float0 array" in error
            or re.search(r"log1?p? does not accept dtype (u?int|bool)", error) is not None
        )
        and (bool(names & {"special.xlogy", "special.xlog1py"}) or any("gumbel" in n for n in names))
    )


def _jax_eigh_non_square(outcome) -> bool:
    return (
        outcome.status == "error"
        and "np.linalg.eigh" in _ops(outcome)
        and "must be square" in (outcome.error or "")
    )


def _jax_hyp2f1_reverse_mode(outcome) -> bool:
    return (
        outcome.status == "unraised"
        and "special.hyp2f1" in _ops(outcome)
        and "float0" in (outcome.error or "")
        and any(k in ("vjp", "grad", "value_and_grad", "jacrev", "hessian") for k, _ in outcome.case.stack)
    )


def _jax_complex_all_any(outcome) -> bool:
    # jax's all/any (and logical_and/logical_or.reduce) of complex values test the real parts only
    # (its _cast_to_bool); funcgrad tests both parts, as NumPy and jax's own astype(bool) (session
    # 22's nanred pool, seed 2203)
    exprs = " ".join(e for _, e in outcome.case.steps)
    return (
        outcome.status == "mismatch"
        and re.search(r"\bnp\.(all|any|alltrue|sometrue|logical_and\.reduce|logical_or\.reduce)\(", exprs)
        is not None
        and any(getattr(x, "dtype", np.dtype(None)).kind == "c" for x in outcome.case.inputs)
    )


def _jax_negative_integer_power_under_jit(outcome) -> bool:
    # jax's integer ** np.int32(-2) (a jnp scalar made inside the program) raises eagerly (its
    # integer_pow of a negative exponent) but under jit the exponent is traced and its general
    # integer power computes (0 for |x| > 1); funcgrad raises in both (session 22's chain pool, 2206)
    return (
        outcome.status == "error"
        and "Integers cannot be raised to negative powers" in (outcome.error or "")
        and any(t == "jit" for t, _ in outcome.case.stack)
    )


DOCUMENTED: list[Divergence] = [
    Divergence(
        "numpy2-dtype-promotion",
        "In 64-bit mode: result dtypes of integer or boolean inputs to inexact functions and of "
        "mixed-dtype operands, and values downstream of them (computed in float64 where jax computes in "
        "float32).",
        "funcgrad.numpy follows NumPy 2's promotion (NEP 50), jax its own type lattice: an int32 array "
        "with a float32 one gives float64 in NumPy (float32 in jax), `sin`/`mean`/`digamma` of int32 give "
        "float64 (jax: float32), int32 with complex64 gives complex128 (jax: complex64), `convolve` and "
        "`correlate` of integers stay integers (jax: float32), `cumsum`/`cumprod` (and their nan and "
        "`cumulative_prod` forms) of 8- and 16-bit integers accumulate in the default integer (jax: the "
        "input's dtype, wrapping), and so do `add.accumulate`/`multiply.accumulate` of 8- to 32-bit "
        "integers (jax: the input's dtype). The values agree to the precision of the "
        "narrower type (or overflow in it); a strict function downstream (`lax`'s equal dtypes, the "
        "bitwise functions' integers) may then refuse the NumPy dtype where it accepts jax's. In JAX's "
        "default 32-bit mode, and under the `funcgrad.as_jax` alias in either mode, funcgrad follows JAX's "
        "rules instead.",
        "`np.sin(np.int32(1)).dtype`: float64 (jax: float32)",
        _dtype_rule,
    ),
    Divergence(
        "scipy-special-edge-values",
        "`expn(n, 0)`, `expi(0)`.",
        "funcgrad.scipy.special takes SciPy's value where SciPy and jax disagree at the edge of the "
        "domain (NaN only where SciPy gives NaN); `lgamma`/`digamma`/`polygamma` at their poles and "
        "infinities are jax's values.",
        "`expn(3, 0.0)`: 0.5 = 1/(n-1) (SciPy: 0.5; jax: 1/3); `expi(0.0)`: -inf (SciPy: -inf; jax: nan)",
        _scipy_edges,
    ),
    Divergence(
        "norm-subgradient-at-zero",
        "Derivatives of vector and matrix 2-norms at the zero vector.",
        "funcgrad's norms take the subgradient 0 at the zero vector (NOTE: [no NaN gradients]) where "
        "jax's derivative is 0/0 = NaN.",
        "`grad(np.linalg.norm)(np.zeros(2))`: [0, 0] (jax: [nan, nan])",
        _norm_at_zero,
    ),
    Divergence(
        "hypot-derivative-at-the-origin",
        "Derivatives of `hypot(x, y)` at x = y = 0.",
        "funcgrad takes the 2-norm's subgradient 0 there, as for the norms (NOTE: [no NaN gradients]); "
        "jax's formula `max(|x|, |y|) * sqrt(1 + (min / max)**2)` splits the tie of its `max`: 0.5 for "
        "each argument (1 for `hypot(x, x)`).",
        "`grad(lambda x: np.hypot(x, 0.0))(0.0)`: 0.0 (jax: 0.5)",
        _hypot_at_origin,
    ),
    Divergence(
        "logsumexp-derivative-where-all-terms-are-minus-inf",
        "Derivatives of `logaddexp`/`logaddexp2` (and `cumlogsumexp`, made of them) where both terms "
        "are -inf.",
        "funcgrad's derivative is the softmax weights' limit, equal shares (0.5 each), as for a finite "
        "tie; jax computes `exp(-inf - -inf)` = NaN there. (`logsumexp` and `log_softmax` are JAX's "
        "formulas, with jax's NaNs.)",
        "`grad(lambda x: np.logaddexp(x, -inf))(-inf)`: 0.5 (jax: nan)",
        _logsumexp_at_minus_inf,
    ),
    Divergence(
        "jax-logaddexp-derivative-at-plus-inf",
        "Derivatives of `logaddexp`/`logaddexp2` (and `cumlogsumexp`) where a term is +inf.",
        "funcgrad's derivative is the softmax weights' limit: 1 for the infinite term, 0 for a finite "
        "one, 0.5 each for two; jax's rule replaces +inf by 0 in `exp(x - out)` for the term and the "
        "result alike, so a finite term's weight is `exp(x)` (e for x = 1) and two infinities weigh 1 "
        "each.",
        "`grad(np.logaddexp, argnums=(0, 1))(inf, 1.0)`: (1, 0) (jax: (1, 2.718)); at (inf, inf): "
        "(0.5, 0.5) (jax: (1, 1))",
        _logaddexp_at_plus_inf,
    ),
    Divergence(
        "trapezoid-of-infinities",
        "`trapezoid` of samples that hold an infinity.",
        "funcgrad.numpy gives NumPy's value, the sum of the trapezoids; jax's constant-spacing shortcut "
        "`sum(y) - (y[0] + y[-1]) / 2` gives inf - inf = NaN.",
        "`np.trapezoid(np.array([inf, 0.0]))`: inf (NumPy: inf; jax: nan)",
        _trapezoid_of_inf,
    ),
    Divergence(
        "std-derivative-at-zero-variance",
        "Derivatives of `std` and `nanstd` where the variance is 0 (or 0/0, with `ddof` = the count).",
        "funcgrad's `std` is `safe_sqrt(var)`, whose derivative is taken as 0 (a subgradient) where the "
        "variance is 0, like the norms'; jax's `sqrt` derivative there is 1/0 and the chain rule gives NaN.",
        "`grad(np.std)(np.ones(3))`: [0, 0, 0] (jax: [nan, nan, nan])",
        _std_at_zero_variance,
    ),
    Divergence(
        "power-derivatives-at-zero",
        "Derivatives of `x ** y` at x = 0 where jax's formulas give NaN.",
        "funcgrad's rules for `pow` never form `0 * inf`: d/dx at x = y = 0 is 0 (x**0 is constant) and "
        "d/dy at x = 0 is 0 (the limit for y > 0), by the double-where of NOTE: [no NaN gradients]; jax "
        "evaluates `y * x**(y-1)` and `log(x) * x**y` there, giving NaN at some orders.",
        "`grad(lambda x: x ** x)(0.0)`: 0.0 (jax: nan); third derivative of `x ** 2` at 0: 0.0 (jax: nan)",
        _power_at_zero,
    ),
    Divergence(
        "numpy-result-dtypes",
        "In 64-bit mode: `searchsorted`'s index dtype, `float_power`'s and `angle`'s result dtypes.",
        "funcgrad.numpy returns NumPy's dtypes: `searchsorted` gives int64 (NumPy's intp; jax: int32), "
        "`float_power` computes in float64 (complex128) whatever its inputs, as its NumPy definition says "
        "(jax keeps float32), `angle` of float32 stays float32 (jax: float64). Under the `funcgrad.as_jax` "
        "alias funcgrad gives jax's dtypes in either mode.",
        "`np.float_power(np.float32(2), 3).dtype`: float64 (jax: float32)",
        _numpy_result_dtype({"np.searchsorted", "np.float_power", "np.angle"}),
    ),
    Divergence(
        "i0-derivatives-at-zero",
        "Second and higher derivatives of `i0` at 0, and the first where the incoming tangent is NaN.",
        "funcgrad's `i0` is `exp(x * sign(x)) * i0e(x)`, whose derivatives are those of I0 everywhere: "
        "`i0''(0) = 1/2`, and `i0'(0) = i1(0) = 0` multiplies the incoming tangent (0 * NaN = NaN). "
        "jax's rule selects a tangent of 0 at 0 (`where(x == 0, 0, ...)`): 0 whatever comes in, and a "
        "second derivative of 0.",
        "`grad(grad(np.i0))(0.0)`: 0.5 (jax: 0.0); `grad(lambda x: np.arcsin(np.i0(x) + 1))(0.0)`: nan "
        "(jax: 0.0)",
        _i0_curvature_at_zero,
    ),
    Divergence(
        "ldexp-derivative-at-zero-and-specials",
        "The derivative of `ldexp(x, n)` with respect to x at 0, inf and NaN.",
        "funcgrad's `ldexp` is `x * 2**n`, whose derivative is `2**n` everywhere; jax's passes x through "
        "unchanged at 0, inf and NaN, so its derivative is 1 there.",
        "`grad(lambda x: np.ldexp(x, 2))(0.0)`: 4.0 (jax: 1.0)",
        _ldexp_at_specials,
    ),
    Divergence(
        "fft-of-empty-axis",
        "FFTs over an axis of length 0.",
        "funcgrad.numpy.fft raises ValueError as NumPy does (there is no transform of no points); jax "
        "returns an empty array.",
        "`np.fft.fftn(np.zeros((1, 0)))`: ValueError (NumPy: ValueError; jax: an empty array)",
        _fft_of_empty,
    ),
    Divergence(
        "python-int-out-of-range",
        "In 64-bit mode: a Python integer outside the range of the integer array it meets "
        "(`uint8_array + 300`, `np.maximum(u8, -1)`, `unique(u8, fill_value=-1)`).",
        "funcgrad.numpy follows NumPy 2 (NEP 50) and raises OverflowError naming the value and the "
        "dtype; jax converts the integer with wrap-around (300 -> 44 in uint8). `.at[]` updates wrap "
        "as jax's. In 32-bit mode, and under the `funcgrad.as_jax` alias in either mode, funcgrad wraps as "
        "jax does (an int32 first, or an int64 in 64-bit mode, as JAX parses it).",
        "`np.asarray(np.uint8([3])) + 300`: OverflowError (NumPy: OverflowError; jax: [47])",
        _python_int_out_of_range,
    ),
    Divergence(
        "integer-overflow-in-float-functions",
        "`nn`/`scipy.special` functions of integer arrays at their dtype's extremes.",
        "funcgrad converts an integer input to floating point first (NumPy's rule for inexact "
        "functions); jax evaluates some formulas in the integer dtype, where `abs(x) + 1` wraps around "
        "at the dtype's maximum.",
        "`nn.soft_sign(np.uint32([4294967295]))`: [1.0] (jax: [inf], from 1 + 4294967295 = 0)",
        _integer_overflow_in_jax,
    ),
    Divergence(
        "convolution-padding-times-nonfinite",
        "Convolutions (`convolve`, `correlate`, and their derivatives) with padding, of operands that "
        "hold NaN or inf.",
        "funcgrad computes a convolution of few input features as explicit padding and a matrix "
        "product of patches (NOTE: [convolution as patches], several times faster on CPU), eagerly by "
        "explicit padding too, so the padded zeros multiply the kernel: 0 * NaN is NaN in outputs whose "
        "window overlaps the padding; XLA's convolution (jax) skips padded positions.",
        "`vjp(lambda a: np.convolve(a, np.array([-1.0, nan]), mode='valid'), np.ones(2))[1](np.ones(1))`: "
        "[nan, nan] (jax: [nan, -1])",
        _convolution_padding,
    ),
    Divergence(
        "min-max-derivative-at-initial",
        "Derivatives of `max`/`min` with `initial=` over an empty slice (the result is the initial value).",
        "The result is then a constant, whose derivative funcgrad gives as 0; jax divides the tangent "
        "among the elements equal to the result, of which an empty slice has none: 0/0 = NaN.",
        "`jvp(lambda x: np.max(x, axis=0, initial=0.0), (zeros((0, 2)),), (zeros((0, 2)),))[1]`: [0, 0] "
        "(jax: [nan, nan])",
        _initial_derivative,
    ),
    Divergence(
        "custom-jvp-in-a-linearized-scan",
        "Derivatives of the value output of `value_and_grad`/`linearize`/`vjp` of a `scan` whose body "
        "applies a `custom_jvp` function to its `xs`.",
        "jax's partial evaluation of the scan computes that value with the primal function, so a second "
        "derivative through it is the primal function's derivative, not the custom rule's (a jax bug: "
        "its own `grad` of the same function uses the rule); funcgrad uses the rule on every path.",
        "`vjp(value_and_grad(lambda a: scan(lambda c, x: (c + g(x), None), a, a[None])[0]), 0.3)` with "
        "cotangent (1, 0), g(a) = sin(a) a with the rule 2 g'(a): 2.164 (jax: 1.582)",
        _custom_rule_of_a_linearized_scan,
    ),
    Divergence(
        "eager-subnormals",
        "Eager results on subnormal floating-point inputs.",
        "Eager funcgrad computes with NumPy, which keeps subnormal numbers; XLA's CPU backend (jax, and "
        "funcgrad under `jit`) flushes them to zero.",
        "`lax.rsqrt(np.float32(-7e-40))`: nan (jax: -inf, as of -0.0)",
        _subnormal_inputs,
    ),
    Divergence(
        "lapack-dtype-while-tracing",
        "A float16/bfloat16 matrix decomposition (`svd`, `pinv`, `eigh`, ...) whose result is unused "
        "inside `jit`, `checkpoint` or a derivative.",
        "funcgrad refuses a dtype LAPACK lacks when the operation is traced (UnsupportedDtypeError, a "
        "TypeError); jax refuses it when compiling, so a program that never uses the result compiles "
        "without it in jax.",
        "`jit(lambda x: (np.linalg.pinv(x), x)[1])(np.eye(2, dtype='float16'))`: raises (jax: the identity)",
        _lapack_dtype_traced,
    ),
    Divergence(
        "jax-checkpoint-tangent-weak-type",
        "The weak type of a `jvp` tangent of a weakly typed primal computed inside `checkpoint` "
        "(remat) that runs eagerly or under `vmap`.",
        "jax's own weak type there depends on how the checkpoint is run: `jvp(f, (a,), (t,))` of a "
        "weak `a` and a strong `t` gives a weak tangent eagerly, under `jit` and in a jitted "
        "`checkpoint`, but a strong one in an eager or vmapped `checkpoint` (its jaxpr re-run with the "
        "tangent's own type); funcgrad gives the weak tangent in every case.",
        "`checkpoint(lambda a: jvp(lambda a: a / a, (a,), (probe,))[1])(weak_a)`: weak (jax: strong; "
        "jax under `jit`: weak); the fuzzer's seed 17002",
        _jax_checkpoint_tangent_weak_type,
    ),
    Divergence(
        "complex-arg-extremum-while-tracing",
        "`argmin`/`argmax` (and their nan forms) of a complex array whose result is unused inside "
        "`jit`, `checkpoint` or a derivative.",
        "funcgrad refuses the complex operand when the operation is traced (jax's TypeError, 'lt does "
        "not accept dtype complex128'); jax's argmin primitive takes it and only its lowering refuses, "
        "so a program that never uses the result compiles without it in jax. Used, both refuse alike.",
        "`jit(lambda z: (np.argmin(z), 1.0)[1])(np.array([1j]))`: raises (jax: 1.0); the fuzzer's seed 17001",
        _complex_arg_extremum_traced,
    ),
    Divergence(
        "jax-internal-symbolic-zero",
        "A derivative (`jacfwd`, `jvp`, `grad`, `hessian`) of a variadic `lax.reduce` with an integer "
        "output (an argmax written as a reduction over (value, index) pairs).",
        "jax fails internally: its symbolic zero tangent of the integer output reaches a `jnp` function "
        "('Error interpreting argument to reshape as a JAX value ... ad_util.Zero') or the reduction's "
        "own tree check ('Operands must have the same tree structure as init_values: ... "
        "CustomNode(Zero[...])'), a bug of jax, not a refusal; funcgrad computes the derivative (zero "
        "for the integer output).",
        "`jacfwd(lambda x: lax.reduce((x, iota), (-inf, 0), argmax_pair, (0,))[1])(x)`: zeros (jax: "
        "TypeError)",
        _jax_symbolic_zero_leak,
    ),
    Divergence(
        "jax-complex-spmd-reduction",
        "Some programs over complex values run on several devices (a `jit` with `in_shardings`, "
        "differentiated): jax's partitioned program all-reduces complex values, which XLA's CPU "
        "runtime refuses.",
        "jax fails at run time ('UNIMPLEMENTED: Unsupported reduction computation ... c64'), a limit of "
        "XLA's CPU collectives, not a refusal of the program; funcgrad computes it.",
        "`grad` of a `jit(f, in_shardings=NamedSharding(mesh, P()))` of a complex64 `x` on 8 CPU "
        "devices (the sharded-program fuzzer's seed 16003): a value (jax: JaxRuntimeError)",
        _jax_complex_spmd_reduction,
    ),
    Divergence(
        "jax-scatter-apply-of-another-dtype",
        "`x.at[idx].apply(func)` where `func` changes the dtype (`np.sin` of a boolean or integer `x`).",
        "jax fails to lower its own program ('Cannot lower jaxpr with verifier errors: The type of "
        "reduction-region's parameter ... is different than the corresponding result type'): its "
        "scatter's update region returns func's dtype; funcgrad converts func's value back to `x`'s "
        "dtype, as the scatter's type requires (jax itself computes it under `jit(jacfwd(...))`).",
        "`jit(lambda b: np.isfinite(b).at[np.array([[0], [1]])].apply(np.sin, mode='fill'))(b)`: a "
        "boolean array (jax: ValueError); the fuzzer's seed 16010",
        _jax_scatter_apply_of_another_dtype,
    ),
    Divergence(
        "jax-dead-generic-reduce-window",
        "A reverse-mode derivative (`grad`, `vjp`, `linearize`) of a program holding a `lax.reduce_window` "
        "with a reducer jax does not take for a monoid (a `lambda x, y: ...`, `lax.mul`) whose result "
        "does not reach the differentiated output; also a max/min window with dilations in a branch of "
        "a `cond` under a second reverse-mode derivative, its result unused.",
        "jax refuses the reduction as soon as its linearization traces it ('Linearization failed to "
        "produce known values for all output primals'), whether or not its result is used (a `cond` "
        "linearizes each branch whole); funcgrad refuses it, with JAX's error, when the result is an "
        "output, and computes the derivative (without it) otherwise.",
        "`grad(lambda x: (lax.reduce_window(x, 0.0, lambda a, b: a + b, (2,), (1,), 'VALID'), "
        "np.sum(x))[1])(x)`: ones (jax: ValueError); the lax-parameter fuzzer's seeds 18004/18005/18011",
        _jax_dead_generic_window,
    ),
    Divergence(
        "jax-reduce-dimension-error-under-transformations",
        "`lax.reduce` of a monoid (`lax.add` with 0, ...) over a dimension past the operand's rank, "
        "its init value made by `np.array` inside a `jit`- or `vmap`-transformed function.",
        "jax is inconsistent: its monoid reducer refuses the dimension with a ValueError, but under "
        "`jit`/`vmap` its `jnp.array` init is a tracer, not concrete, so the generic reducer's shape "
        "rule raises IndexError instead; funcgrad's `np.array` of a constant stays concrete under a "
        "transformation, so it raises ValueError everywhere (IndexError for a generic computation, "
        "as jax).",
        "`jit(lambda x: lax.reduce(x, np.array(0.0), lax.add, (1,)))(np.ones(3))`: ValueError (jax: "
        "IndexError; eagerly both ValueError); the lax-parameter fuzzer's seed 18012",
        _jax_reduce_error_by_trace,
    ),
    Divergence(
        "jax-ragged-dot-limits",
        "`lax.ragged_dot` under `vmap` (or a derivative that batches it, `jacrev`/`jacfwd`), and some of "
        "its reverse-mode derivatives with respect to the right operand.",
        "jax's batching rule and its transpose in the ragged-contracting mode are not written for every "
        "layout ('ragged_dot vmap over any dim but 0 - NYI', 'Unimplemented grad_x_dims for ragged dot "
        "general in mode RAGGED_CONTRACTING': NotImplementedError, a limit, not a refusal of the "
        "program; for an invalid call it comes before the call's own error); funcgrad computes.",
        "`vmap(lambda l: lax.ragged_dot(l, r, g), in_axes=1)(lhs)`: the values (jax: "
        "NotImplementedError); the lax-parameter fuzzer's seeds 18013/18015",
        _jax_ragged_dot_limits,
    ),
    Divergence(
        "jax-integer-tangent-of-a-product",
        "The `jvp` tangent (and the `jacfwd` of a `jvp`) of `lax.dot_general` of floating-point "
        "operands with an integer `preferred_element_type`.",
        "jax is inconsistent: an integer output's tangent is float0 everywhere else, but its product "
        "rule applies the bilinear rule in the preferred type, an integer tangent (the truncated product "
        "of the tangents); funcgrad gives the float0 tangent of an integer output (its `jacfwd` of the "
        "product itself gives jax's integer Jacobian).",
        "`jvp(lambda a: lax.dot_general(a, b, (((), ()), ((0,), (0,))), preferred_element_type=np.int64), "
        "(a,), (a,))[1]`: float0 (jax: int64); the lax-parameter fuzzer's eager pass, seed 18014",
        _jax_integer_tangent_of_a_product,
    ),
    Divergence(
        "jax-dead-refused-derivative",
        "A derivative of a program holding a `lax.betainc` whose `a` or `b` (or a `lax.zeta` whose "
        "operand) depends on the differentiated input but whose result does not reach the output "
        "(inside `checkpoint`, `scan` or a `custom_jvp` function).",
        "jax runs the refusing rule ('Betainc gradient with respect to a and b not supported', "
        "'Differentiation rule for 'zeta' not implemented') as soon as its tracing meets such a "
        "tangent, used or not; funcgrad refuses it, with JAX's error, when the derivative is "
        "computed, and computes the rest otherwise.",
        "`jvp(checkpoint(f))` where f computes, unused, a `custom_jvp` function of "
        "`checkpoint(lambda x: lax.betainc(abs(x) + 1.5, abs(x) + 0.25, logistic(x)))`: the other "
        "outputs' tangents (jax: ValueError); the lax-parameter fuzzer's seeds 18016/18017/18020",
        _jax_dead_betainc_derivative,
    ),
    Divergence(
        "jax-partial-ppermute-under-vmap",
        "`lax.ppermute` under `vmap` with a named axis whose `perm` does not send from every index.",
        "jax's batching rule asserts a full permutation (AssertionError 'Permutation doesn't match the "
        "axis size!'), though the same collective on devices (`pmap`, `shard_map`) takes a partial one "
        "and gives zeros where nothing arrives; funcgrad gives those zeros under `vmap` too.",
        "`vmap(lambda r: lax.ppermute(r, 'i', perm=[(0, 1), (1, 0)]), axis_name='i')(np.arange(4.0))`: "
        "[1, 0, 0, 0] (jax: AssertionError); the lax-parameter fuzzer's seed 18017",
        _jax_partial_ppermute_under_vmap,
    ),
    Divergence(
        "jax-integer-cumlogsumexp-under-derivatives",
        "`lax.cumlogsumexp` of an integer (or unsigned) array, differentiated (`jvp`, `linearize`, ...).",
        "jax is inconsistent: eagerly and under `jit` it raises OverflowError ('cannot convert float "
        "infinity to integer', its -inf init in the integer type), but under a derivative its rule "
        "re-runs the reduction as an associative scan of `logaddexp`, which computes; funcgrad raises "
        "the OverflowError everywhere.",
        "`linearize(lambda x: lax.cumlogsumexp(x.astype(np.uint8), axis=0), x)`: OverflowError (jax: "
        "values; `lax.cumlogsumexp(np.ones(2, np.uint8))` alone raises in both); the lax-parameter "
        "fuzzer's seed 18017",
        _jax_integer_cumlogsumexp,
    ),
    Divergence(
        "jax-cumulative-negative-axis-under-derivatives",
        "`lax.cumprod`/`cummax`/`cummin`/`cumlogsumexp` with a negative `axis`, differentiated (`jvp`, "
        "`grad`, `linearize`, ...).",
        "jax is inconsistent: its shape rule refuses a negative axis ('XLA operations do not allow "
        "negative axes', eagerly and under `jit`, and for `cumsum` always), but these four's derivative "
        "rules re-run the reduction as an associative scan, which takes it, so under a derivative jax "
        "computes; funcgrad refuses it everywhere, as the shape rule says.",
        "`jvp(lambda x: lax.cumprod(x, axis=-1), (x,), (t,))`: ValueError (jax: the values; "
        "`lax.cumprod(x, axis=-1)` alone raises in both); the lax-parameter fuzzer's seed 18009",
        _jax_cumulative_negative_axis,
    ),
    Divergence(
        "jax-window-init-dtype-under-derivatives",
        "A `lax.reduce_window` of a floating operand with a Python int `init_value` and a reducer jax "
        "does not take for a monoid with it (`lax.max` from 0, a lambda), differentiated.",
        "jax is inconsistent: eagerly and under `jit` it raises TypeError ('reduce_window got "
        "inconsistent dtypes for operands and init_values'), under a derivative ValueError ('reduce_window "
        "output must have the same tree structure as the operands': its rule pairs values and tangents "
        "before the check); funcgrad raises the TypeError everywhere.",
        "`jvp(lambda a: lax.reduce_window(a, 0, lax.max, (3,), (2,), [(0, 1)]), (x,), (x,))` of a float32 "
        "`x`: TypeError (jax: ValueError; without `jvp` both TypeError); the lax-parameter fuzzer's seed "
        "20015 (32-bit)",
        _jax_window_init_dtype_under_derivatives,
    ),
    Divergence(
        "jax-custom-lin-under-forward-mode",
        "`jvp`/`jacfwd` (forward mode) over `grad` of a program holding a `custom_vjp` function whose "
        "inputs the `grad`'s argument does not reach, but the forward mode's does.",
        "jax is inconsistent: its `grad` linearizes the `custom_vjp` call anyway (a `custom_lin` in the "
        "linear program), and forward mode through that raises NotImplementedError ('Differentiation rule "
        "for 'custom_lin' not implemented'), where the same derivative without the unreached call computes; "
        "funcgrad's `grad` does not differentiate what its argument does not reach, and gives the "
        "derivative (zero from that call).",
        "the transformation-composition fuzzer's seed 19012 (64-bit): `jit` of `jvp` over `(a, b)` of "
        "`grad(grad(f, argnums=0), argnums=0)`, `f`'s `custom_vjp` call (nondiff_argnums) taking only "
        "values of `b`: zeros (jax: NotImplementedError)",
        _jax_custom_lin_under_jvp,
    ),
    Divergence(
        "jax-jet-composite-rules",
        "`jax.experimental.jet` of `pow`/`**`, `sqrt`/`rsqrt`/`cbrt`, `arctanh`/`arccosh`/`arcsinh`, `rem`/"
        "`fmod`/`remainder`, `log2`/`log10` (and the functions made of them) where the primitive's own "
        "derivative differs from jax's composition.",
        "jax is inconsistent: its jet rules for these are compositions (`x ** y` as `exp(y log x)`, "
        "`sqrt` as `x ** 0.5`, `atanh` as `log((1 + x) / (1 - x)) / 2`, `rem` as `x - y floor(x / y)`, "
        "Python's modulo; a quotient's rule multiplies by a constant divisor's zero terms, so `log2(x)` "
        "as `log(x) / log(2)` is NaN where `log(x)` is infinite), so its series are NaN for a base <= 0, "
        "outside a domain or at a pole where its "
        "`jvp` gives a number or an infinity, and its primal of `rem` of a negative operand is the modulo; "
        "funcgrad's Taylor rules are the primitives' derivatives (the values of jax's nested `jvp`).",
        "`jet(lambda x: x ** 3.0, (-1.2,), ((1.0,),))`: series [4.32] (jax: [nan]; `jvp` gives 4.32); "
        "`jet(lambda x: lax.rem(x, 0.7), (-1.2,), ((1.0,),))`: primal -0.5 (jax: 0.2; without `jet` -0.5); "
        "the transformation-composition fuzzer (`tcomp.*`, session 19)",
        _jax_jet_composites,
    ),
    Divergence(
        "jax-closure-convert-of-forward-over-custom-vjp",
        "Calling the function `closure_convert` returns for a function that pushes a `jvp` through the "
        "backward pass of a `custom_vjp` function (`jvp` of a `vjp`/`grad` of it).",
        "jax is inconsistent: the same function computes under `jit` (its trace differentiates the "
        "`bwd` rule's operations) and `closure_convert` traces it, but calling the converted function "
        "raises TypeError ('can't apply forward-mode autodiff (jvp) to a custom_vjp function'); eagerly "
        "both libraries raise that; funcgrad's converted function computes what `jit` computes.",
        "`f = lambda a: jvp(lambda a: vjp(g, a)[1](1.0), (a,), (1.0,))` of a `custom_vjp` `g = sin` "
        "with `bwd = ct * cos(a)`: `closure_convert(f, 0.5)[0](0.5)` gives ((0.8776,), (-0.4794,)) as "
        "`jit(f)(0.5)` (jax: TypeError; `jit(f)(0.5)` the same values); the transformation-composition "
        "fuzzer's seed 2008 (32-bit)",
        _jax_closure_convert_forward_over_custom_vjp,
    ),
    Divergence(
        "jax-jet-constant-operand-weak-type",
        "The weak type of `jax.experimental.jet`'s series of a weakly typed (Python scalar) primal "
        "through a binary operation with a constant operand (`a * 2.0`, `a + 2.0`).",
        "jax is inconsistent: its jet instantiates the constant's zero series as strongly typed zeros "
        "(`jnp.zeros(shape, dtype=result_type(x))`), which the product's Cauchy sum adds to every term, "
        "so the series come out strong while the primal, `jvp`'s tangent and the series of `a * a` stay "
        "weak; funcgrad's series keep the primal's weak type.",
        "`jet(lambda a: a * 2.0, (0.5,), ((0.25, 0.1),))`: series weak (jax: strong; "
        "`jvp(lambda a: a * 2.0, (0.5,), (0.25,))` weak in both); session 20's weak-type probe",
        _jax_jet_constant_operand_weak_type,
    ),
    Divergence(
        "jax-index-in-dim-at-batch-zero",
        "`lax.dynamic_index_in_dim`/`dynamic_update_index_in_dim` of an operand whose indexed dimension "
        "has size 0, under a `vmap` of size 0 (the starts mapped).",
        "jax is inconsistent: its `dynamic_index_in_dim` raises TypeError ('slice slice_sizes must be "
        "less than or equal to operand shape') while the `dynamic_slice` it wraps, under the same "
        "`vmap`, computes the empty result; funcgrad computes both (with one or more lanes both raise "
        "TypeError).",
        "`vmap(lambda x, s: lax.dynamic_index_in_dim(x, s[0]), in_axes=(None, 0))(np.zeros((0, 0)), "
        "np.zeros((0, 2), np.int8))`: an empty (0, 1, 0) array (jax: TypeError; with "
        "`lax.dynamic_slice(x, [s[0], s[1]], (1, 0))` jax too gives the empty array); the lax-parameter "
        "fuzzer's seed 20026",
        _jax_index_in_dim_at_batch_zero,
    ),
    Divergence(
        "jax-scatter-derivative-into-an-empty-dimension",
        "Derivatives (`jvp`, `grad`, ...) of `x.at[i].set`/`.min`/`.max` where the indexed dimension of "
        "`x` has size 0 (an empty array; with `mode='clip'` or `'fill'`, or under `vmap`).",
        "jax is inconsistent: the scatter computes the empty result, eagerly and under `jit`, but its "
        "derivative rule gathers the scattered positions, a size-1 slice of the size-0 dimension, and "
        "raises TypeError ('Slice size at index 0 in gather op is out of range'); `.add`/`.mul`'s "
        "derivatives compute; funcgrad differentiates all of them (an empty result).",
        "`jvp(lambda r: r.at[np.array([1])].min(0.0, mode='clip'), (x,), (x,))` of `x = np.zeros((0, 2))`: "
        "an empty (0, 2) tangent (jax: TypeError; `jit` of the function alone: the empty result in both); "
        "the fuzzer's progq table, seed 23001",
        _jax_scatter_derivative_into_an_empty_dimension,
    ),
    Divergence(
        "jax-internal-float0-product",
        "Reverse-mode derivatives (`grad`, `jacrev`) of a `jvp` of a program whose output is boolean or "
        "integer, and so has a float0 tangent.",
        "jax fails internally ('Called multiply with a float0 array'): its transposition multiplies the "
        "float0 tangent it made itself; funcgrad computes the derivative (zero).",
        "`jacrev o value_and_grad o jvp` of `np.logical_not(np.clip(x1, 0.0, 2))` for an int8 `x1` "
        "(the fuzzer's seed 13017): zeros (jax: TypeError)",
        _jax_float0_product,
    ),
    Divergence(
        "jax-xlogy-derivative-through-an-integer",
        "Derivatives through `scipy.special.xlogy`/`xlog1py` with an integer (or bool) argument, and "
        "through `stats.gumbel_r`/`gumbel_l` in `scale` (which call `xlogy(-1, scale)`).",
        "jax's `xlogy` is a `custom_jvp` of its arguments as given, promoted inside: its rule "
        "multiplies an integer `x`'s float0 tangent ('Called multiply with a float0 array') or takes "
        "`lax.log` of an integer `y` ('log does not accept dtype int32'), while the same call with "
        "`2.0` for `2` differentiates; funcgrad promotes first and computes the derivative.",
        "`grad(lambda a: special.xlogy(2, a))(0.5)`: 4.0 (jax: TypeError); "
        "`grad(lambda s: stats.gumbel_r.logpdf(1.0, 0.0, s))(2.0)`: -0.4016 (jax: TypeError)",
        _jax_xlogy_of_an_integer,
    ),
    Divergence(
        "jax-spence-reverse-derivative",
        "Reverse-mode derivatives (`grad`, `vjp`, `jacrev`) of `scipy.special.spence` at 1 < x <= 2.",
        "jax differentiates its piecewise formula: forward mode (`jvp`, `jacfwd`) gives log(x)/(1-x), "
        "reverse mode NaN (the unselected branch's log(1 - x) poisons the where's transpose); funcgrad "
        "gives the forward mode's value in both.",
        "`grad(special.spence)(1.5)`: -0.811 (jax: nan; jax's `jvp`: -0.811)",
        lambda outcome: (
            _differentiates(outcome)
            and "special.spence" in _ops(outcome)
            and _nan_subset(outcome, fewer=True)
        ),
    ),
    Divergence(
        "jax-truncnorm-reverse-derivative",
        "Reverse-mode derivatives of `stats.truncnorm`'s cdf/sf/logcdf/logsf in a far tail (both "
        "bounds on one side of 0, e.g. a = 8, b = 10) and at infinite x.",
        "jax's reverse mode is NaN there (an unselected tail branch's infinite derivative poisons the "
        "where's transpose) while its forward mode gives the derivative; funcgrad evaluates each branch "
        "on safe inputs and gives the forward mode's value (0 at infinite x) in both.",
        "`grad(lambda x: stats.truncnorm.cdf(x, 8.0, 10.0))(9.0)`: 0.00165 (jax: nan; jax's `jvp`: 0.00165)",
        lambda outcome: (
            _differentiates(outcome)
            and bool(
                {"truncnorm.cdf", "truncnorm.sf", "truncnorm.logcdf", "truncnorm.logsf"}
                & _stats_calls(outcome)
            )
            and _nan_subset(outcome, fewer=True)
        ),
    ),
    Divergence(
        "subset-by-index-on-cpu",
        "`lax.linalg.eigh`/`svd` (and `jnp.linalg.svd`) with a `subset_by_index` short of the whole "
        "spectrum, on CPU or GPU.",
        "jax computes the subset on TPU only: its CPU and GPU lowerings raise NotImplementedError "
        "('subset_by_index not supported on CPU and GPU'), so what a program computes depends on the "
        "platform; funcgrad computes the subset on every platform (the eigenvalues in the index range "
        "and their vectors, as jax's TPU result).",
        "`lax.linalg.eigh(m, subset_by_index=(1, 3))` of a 3x3 `m`: the two largest eigenpairs (jax on "
        "CPU: NotImplementedError); the fuzzer's seed 19102",
        _jax_subset_by_index_on_cpu,
    ),
    Divergence(
        "jax-set-functions-without-size-are-constants",
        "Derivatives of `unique`, `unique_values`, `union1d`, `intersect1d`, `setdiff1d`, `setxor1d` "
        "called without `size=`.",
        "jax is inconsistent: without `size=` these functions make their input concrete "
        "(`core.concrete_or_error`), which drops its tangent, so their derivatives are 0; with `size=` "
        "they differentiate (the selected elements' tangents). funcgrad differentiates both ways: the "
        "result's elements are elements of the input, each with its tangent.",
        "`jvp(unique, ([2., 1., 3.],), ([.75, .75, .75],))` tangent: [.75, .75, .75] (jax: [0, 0, 0]; "
        "with `size=3`: [.75, .75, .75]); the four-way fuzzer's seed 21",
        _jax_set_functions_constant,
    ),
    Divergence(
        "jax-window-extrema-negative-padding-reverse-mode",
        "Reverse-mode derivatives (`grad`, `vjp`) of `lax.reduce_window` with `max`/`min` and a "
        "negative padding.",
        "jax is inconsistent: the forward value and `jvp` compute, but the transpose of its "
        "`select_and_scatter_add` slices past the operand (TypeError 'slice limit_indices must be less "
        "than or equal to operand shape', or 'slice start_indices must have every element be "
        "nonnegative' for a negative low padding); funcgrad's cotangent is the `jvp`'s transpose (equal to "
        "`jacfwd`'s Jacobian contracted with the cotangent; `add` windows compute in both).",
        "`vjp` of `reduce_window(x, -inf, max, (3,), (2,), [(2, -2)])` of a length-2 `x` (jax: "
        "TypeError); the four-way fuzzer's seed 12",
        _jax_window_extrema_negative_padding_reverse,
    ),
    Divergence(
        "jax-irfft-of-empty-length-reverse-mode",
        "Reverse-mode derivatives of `irfft`/`irfftn`/`irfft2` whose output length is 0 (one "
        "coefficient along an axis, `n` by default).",
        "jax's forward value and `jvp` compute the empty result, but its transpose rule divides by the "
        "output length (ZeroDivisionError); funcgrad's cotangent of an empty output is zeros.",
        "`vjp(lambda x: np.fft.irfftn(x, axes=(0,)), np.zeros(1))`: cotangent [0.] (jax: "
        "ZeroDivisionError); the four-way fuzzer's seed 7",
        _jax_irfft_empty_reverse,
    ),
    Divergence(
        "jax-gradient-edge-order",
        "`numpy.gradient(..., edge_order=2)`.",
        "jax refuses it (NotImplementedError 'The edge_order argument to jnp.gradient is not "
        "supported'); funcgrad computes NumPy's second-order one-sided differences at the edges.",
        "`gradient(array([1., 4., 9., 16.]), edge_order=2)`: [2, 4, 6, 8] (NumPy: the same; jax: "
        "NotImplementedError); the four-way fuzzer's seed 6",
        _jax_gradient_edge_order,
    ),
    Divergence(
        "jax-scatter-apply-derivatives",
        "Derivatives (`jvp`, `grad`, `vjp`) of `lax.scatter_apply`.",
        "jax has no rule: its `jvp` raises NotImplementedError ('scatter_apply JVP not implemented'); "
        "funcgrad differentiates it (the function's derivative at each indexed element, composed where "
        "indices repeat, the others' tangents passing through; equal to finite differences of jax's "
        "values).",
        "`jvp` of `lax.scatter_apply(x, [[2], [2]], sin, ...)` at x[2] = -1.2, tangent -0.25: "
        "-0.0540 = -0.25 cos(-1.2) cos(sin(-1.2)) (jax: NotImplementedError); the four-way fuzzer's "
        "seed 11",
        _jax_scatter_apply_jvp,
    ),
    Divergence(
        "complex-stats-inputs",
        "`scipy.stats` functions of complex values.",
        "jax is inconsistent: `norm.logpdf`/`pdf`, `cauchy.logpdf`, `logistic.cdf` and "
        "`multivariate_normal.logpdf` compute complex results from their real-line formulas, while "
        "`norm.cdf`/`sf`/`ppf` and the `t`, `gamma`, `beta`, `expon`, `laplace` and `uniform` functions "
        "raise TypeError; a distribution's density is not defined on complex values, and funcgrad "
        "refuses them in every function (TypeError).",
        "`stats.norm.logpdf(1 + 1j)`: TypeError (jax: -0.919-1j); the fuzzer's seed 19102",
        _jax_complex_stats,
    ),
    Divergence(
        "custom-vmap-reverse-mode",
        "Reverse-mode derivatives (`grad`, `vjp`, `jacrev`, `linearize`, `hessian`) of a function that "
        "calls a `custom_batching.custom_vmap` or `sequential_vmap` function.",
        "jax's `custom_vmap` has a JVP rule but cannot be linearized: reverse mode raises ValueError "
        "('Linearization failed to produce known values for all output primals'), also where the "
        "call's result does not reach the output; funcgrad linearizes it (its JVP is the function's, "
        "under `vmap` the rule's JVP, as jax's forward mode) and computes.",
        "`grad(lambda x: sequential_vmap(np.sin)(x).sum())(np.ones(3))`: cos(1) (jax: ValueError; "
        "`jvp` gives the same tangents in both); the transformation-composition fuzzer's seed 2102",
        _jax_custom_vmap_reverse_mode,
    ),
    Divergence(
        "jax-eigh-non-square",
        "`jnp.linalg.eigh` of a matrix that is not square.",
        "jax does not check the shape: its `symmetrize_input` step `(a + a^H) / 2` broadcasts an (n, 1) "
        "or (1, n) operand to (n, n) and decomposes that; funcgrad refuses it (ValueError naming the "
        "shape), as NumPy and `lax.linalg.eigh` do.",
        "`eigh(ones((3, 1)))`: ValueError 'eigh: a must be square ...' (jax: eigenvalues of the 3x3 "
        "broadcast sum); the signature fuzzer's seed 3",
        _jax_eigh_non_square,
    ),
    Divergence(
        "jax-hyp2f1-reverse-mode",
        "Reverse-mode derivatives of `scipy.special.hyp2f1` in its parameters `a`, `b`, `c`.",
        "jax's forward mode differentiates them, but its `vjp`/`grad` raise TypeError ('Called multiply "
        "with a float0 array'); funcgrad transposes the same derivative.",
        "`grad(lambda a: hyp2f1(a, 1., 2., .3))(.5)`: 0.18843 (jax: TypeError; jax's `jvp` gives "
        "0.18843, as finite differences); the signature fuzzer's seed 2",
        _jax_hyp2f1_reverse_mode,
    ),
    Divergence(
        "jax-complex-all-any-real-part",
        "`np.all`/`np.any` (and `np.logical_and.reduce`/`np.logical_or.reduce`) of complex arrays.",
        "jax is inconsistent: its reductions convert complex values to booleans from their real parts "
        "only (`_cast_to_bool`), while its `astype(bool)`, `logical_and`, `count_nonzero` and NumPy test "
        "both parts; funcgrad tests both parts everywhere.",
        "`np.all(np.array([1j]))`: True (jax: False; `np.array([1j]).astype(bool)`: [True] in both); "
        "session 22's nanred pool, seed 2203",
        _jax_complex_all_any,
    ),
    Divergence(
        "jax-negative-integer-power-under-jit",
        "An integer array raised to a negative `jnp` integer scalar made inside the program "
        "(`x ** np.int32(-2)`, `np.power(x, np.int32(-2))`), under `jit`.",
        "jax is inconsistent: eagerly it raises TypeError ('Integers cannot be raised to negative "
        "powers'), under `jit` the scalar is traced and its general integer power computes (0 for "
        "`|x| > 1`, in the promoted dtype); funcgrad raises the TypeError in both.",
        "`jit(lambda x: x ** np.int32(-2))(np.array([2, 1], np.int16))`: TypeError (jax: [0, 1] int32; "
        "eagerly TypeError in both); session 22's chain pool, seed 2206",
        _jax_negative_integer_power_under_jit,
    ),
]

BEGIN, END = "<!-- BEGIN documented divergences (tests/integration/_fuzz/divergences.py) -->", "<!-- END -->"


def match(outcome):
    """The first documented divergence that explains ``outcome``, or None."""
    return next((entry for entry in DOCUMENTED if entry.matches(outcome)), None)


def render_table() -> str:
    """The markdown table of ``DOCUMENTED`` that docs/differences_from_jax.md shows.

    >>> render_table().splitlines()[0]
    '| name | what differs | why | example |'
    """
    rows = ["| name | what differs | why | example |", "|---|---|---|---|"]
    rows += [f"| `{d.name}` | {d.what} | {d.why} | {d.example} |" for d in DOCUMENTED]
    return "\n".join(rows)


if __name__ == "__main__":
    print(f"{BEGIN}\n{render_table()}\n{END}")
