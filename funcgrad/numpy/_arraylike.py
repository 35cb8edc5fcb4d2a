"""Which arguments of funcgrad.numpy's functions must be arrays or scalars, as JAX checks them.

Layer: surface. Imports ``funcgrad.numpy._core`` only; ``funcgrad.numpy`` (and its ``linalg`` and
``fft``) call ``install`` on their namespaces.

# NOTE: [array-like arguments]
# NumPy converts a list or tuple wherever it takes an array; JAX does not: ``jnp.sin([1.0])`` raises
# ``TypeError: sin requires ndarray or scalar arguments, got <class 'list'> at position 0.`` (JAX's
# ``check_arraylike``/``ensure_arraylike``/``promote_args(fun_name, ...)``), so that a program
# never converts a long list leaf by leaf by mistake. funcgrad refuses where JAX refuses, in JAX's
# words: ``ARRAYLIKE_ARGS`` names, for each public function JAX checks, the calls of JAX's check it
# makes: ``(fun_name, [first position,] parameter, ...)``, a ``*parameter`` being a sequence (or the
# ``*args``) whose elements are checked one by one (``concatenate([x, [1, 2]])``). The table was
# read off jax 0.10.2 itself, a list passed in each parameter in turn (the name is JAX's even where
# it is another function's, ``fmax`` -> ``greater``, or misspelt, ``extract`` -> ``extreact``);
# the functions JAX lets take sequences are not in it (``array``, ``asarray``, ``block``, ``pad``'s
# widths, ``reshape``'s shape, ``tile``'s reps, ...). A call named ``JIT`` is no check of JAX's but
# its jit: the function is jitted with the parameter a pytree, whose leaves are traced one by one,
# so a list there fails where the function converts it (``average([1.0, 2.0])``'s ``np.ndim(a)``:
# JAX's TracerArrayConversionError, made here by the same trace). ``install`` wraps the public names only: the
# library's own calls of the module functions are not checked (they pass arrays, and pay nothing),
# and an eager call pays one pass over the checked arguments (``isinstance`` of each).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.numpy._core import arraylike_error, arraylike_other, asarray, is_arraylike, stands_for_array

# The array-likes of an eager call; a tracer takes one more step, the refusal of a leaked one (JAX's
# functions are jitted: each raises UnexpectedTracerError for a tracer of a finished
# transformation, even one whose result would be its operand unchanged; ``core.check_live``).
_EAGER_TYPES = (Array, np.ndarray, np.generic, int, float, complex)

# fmt: off
ARRAYLIKE_ARGS: dict[str, tuple[tuple, ...] | str] = {
    'abs': (('absolute', 'x'),),
    'absolute': (('absolute', 'x'),),
    'acos': (('acos', 'x'),),
    'acosh': (('acosh', 'x'),),
    'all': (('all', 'a'), ('all', 'where'),),
    'allclose': (('allclose', 'a', 'b'),),
    'amax': (('max', 'a'), ('max', 'where'),),
    'amin': (('min', 'a'), ('min', 'where'),),
    'angle': (('angle', 'z'),),
    'any': (('any', 'a'), ('any', 'where'),),
    'append': (('ravel', 'arr'), ('ravel', 'values'),),
    'apply_along_axis': (('apply_along_axis', 'arr'),),
    'apply_over_axes': (('apply_over_axes', 'a'),),
    'arange': (('arange', 'start', 'stop', 'step'),),
    'arccos': (('arccos', 'x'),),
    'arccosh': (('arccosh', 'x'),),
    'arcsin': (('arcsin', 'x'),),
    'arcsinh': (('arcsinh', 'x'),),
    'arctan': (('arctan', 'x'),),
    'arctan2': (('arctan2', 'x1', 'x2'),),
    'arctanh': (('arctanh', 'x'),),
    'argmax': (('argmax', 'a'),),
    'argmin': (('argmin', 'a'),),
    'argpartition': (('partition', 'a'),),
    'argsort': (('argsort', 'a'),),
    'argwhere': (('argwhere', 'a'),),
    'around': (('round', 'a'),),
    'array_split': (('array_split', 'ary'),),
    'asin': (('asin', 'x'),),
    'asinh': (('asinh', 'x'),),
    'astype': (('astype', 'x'),),
    'atan': (('atan', 'x'),),
    'atan2': (('atan2', 'x1', 'x2'),),
    'atanh': (('atanh', 'x'),),
    'atleast_1d': (('atleast_1d', '*arys'),),
    'atleast_2d': (('atleast_2d', '*arys'),),
    'atleast_3d': (('atleast_3d', '*arys'),),
    'average': (('jit', 'a'), ('average', 'a', 'weights'),),
    'bincount': (('bincount', 'x'),),
    'bitwise_count': (('bitwise_count', 'x'),),
    'bitwise_invert': (('bitwise_invert', 'x'),),
    'bitwise_left_shift': (('bitwise_left_shift', 'x1', 'x2'),),
    'bitwise_not': (('bitwise_not', 'x'),),
    'bitwise_right_shift': (('right_shift', 'x1', 'x2'),),
    'broadcast_arrays': (('broadcast_arrays', '*args'),),
    'broadcast_to': (('broadcast_to', 'array'),),
    'cbrt': (('cbrt', 'x'),),
    'ceil': (('ceil', 'x'),),
    'choose': (('choose', 'a', '*choices'),),
    'clip': (('clip', 'arr'), ('maximum', 'min'), ('minimum', 'max'),),
    'column_stack': (('column_stack', '*tup'),),
    'compress': (('compress', 'condition', 'a', 'fill_value'),),
    'concat': (('concat', '*arrays'),),
    'concatenate': (('concatenate', '*arrays'),),
    'conj': (('conjugate', 'x'),),
    'conjugate': (('conjugate', 'x'),),
    'convolve': (('convolve', 'a', 'v'),),
    'copy': (('copy', 'a'),),
    'copysign': (('copysign', 'x1', 'x2'),),
    'corrcoef': (('corrcoef', 'x'), ('cov', 1, 'y'),),
    'correlate': (('correlate', 'a', 'v'),),
    'cos': (('cos', 'x'),),
    'cosh': (('cosh', 'x'),),
    'count_nonzero': (('count_nonzero', 'a'),),
    'cov': (('cov', 'm', 'y'), ('cov', 'fweights'), ('cov', 'aweights'),),
    'cross': (('cross', 'a', 'b'),),
    'cumprod': (('cumprod', 'a'),),
    'cumsum': (('cumsum', 'a'),),
    'cumulative_prod': (('cumulative_prod', 'x'),),
    'cumulative_sum': (('cumulative_sum', 'x'),),
    'deg2rad': (('deg2rad', 'x'),),
    'degrees': (('rad2deg', 'x'),),
    'delete': (('delete', 'arr', 'obj'),),
    'diag': (('diag', 'v'),),
    'diag_indices_from': (('diag_indices_from', 'arr'),),
    'diagflat': (('diagflat', 'v'),),
    'diagonal': (('diagonal', 'a'),),
    'diff': (('diff', 'a'), ('diff', 'prepend'), ('diff', 'append'),),
    'digitize': (('digitize', 'x', 'bins'),),
    'divide': (('true_divide', 'x1', 'x2'),),
    'divmod': (('divmod', 'x1', 'x2'),),
    'dot': (('dot', 'a', 'b'),),
    'dsplit': (('dsplit', 'ary'),),
    'dstack': (('dstack', '*tup'),),
    'ediff1d': (('ediff1d', 'ary'), ('ediff1d', 'to_end'), ('ediff1d', 'to_begin'),),
    'einsum': 'einsum',  # (its operands: see _einsum_operands)
    'empty_like': (('ones_like', 'prototype'),),
    'equal': (('equal', 'x1', 'x2'),),
    'exp': (('exp', 'x'),),
    'exp2': (('exp2', 'x'),),
    'expand_dims': (('expand_dims', 'a'),),
    'expm1': (('expm1', 'x'),),
    'extract': (('extreact', 'condition', 'arr', 'fill_value'),),
    'eye': (('eye', 'k'),),
    'fabs': (('fabs', 'x'),),
    'fft.fft': (('jax.numpy.fft.fft', 'a'),),
    'fft.fft2': (('jax.numpy.fft.fft2', 'a'),),
    'fft.fftn': (('jax.numpy.fft.fftn', 'a'),),
    'fft.fftshift': (('fftshift', 'x'),),
    'fft.hfft': (('conjugate', 'a'),),
    'fft.ifft': (('jax.numpy.fft.ifft', 'a'),),
    'fft.ifft2': (('jax.numpy.fft.ifft2', 'a'),),
    'fft.ifftn': (('jax.numpy.fft.ifftn', 'a'),),
    'fft.ifftshift': (('ifftshift', 'x'),),
    'fft.irfft': (('jax.numpy.fft.irfft', 'a'),),
    'fft.irfft2': (('jax.numpy.fft.irfft2', 'a'),),
    'fft.irfftn': (('jax.numpy.fft.irfftn', 'a'),),
    'fft.rfft': (('jax.numpy.fft.rfft', 'a'),),
    'fft.rfft2': (('jax.numpy.fft.rfft2', 'a'),),
    'fft.rfftn': (('jax.numpy.fft.rfftn', 'a'),),
    'fill_diagonal': (('fill_diagonal', 'a', 'val'),),
    'flatnonzero': (('ravel', 'a'),),
    'flip': (('flip', 'm'),),
    'fliplr': (('fliplr', 'm'),),
    'flipud': (('flipud', 'm'),),
    'float_power': (('float_power', 'x1', 'x2'),),
    'floor': (('floor', 'x'),),
    'floor_divide': (('floor_divide', 'x1', 'x2'),),
    'fmax': (('greater', 'x1', 'x2'),),
    'fmin': (('less', 'x1', 'x2'),),
    'fmod': (('fmod', 'x1', 'x2'),),
    'frexp': (('frexp', 'x'),),
    'full': (('full', 'fill_value'),),
    'full_like': (('full_like', 'a', 'fill_value'),),
    'gcd': (('gcd', 'x1', 'x2'),),
    'greater': (('greater', 'x1', 'x2'),),
    'greater_equal': (('greater_equal', 'x1', 'x2'),),
    'heaviside': (('heaviside', 'x1', 'x2'),),
    'histogram': (('histogram', 'a', 'bins', 'weights'),),
    'histogram2d': (('histogram2d', 'x', 'y'), ('histogramdd', 1, 'weights'),),
    'histogram_bin_edges': (('histogram_bin_edges', 'a', 'bins'),),
    'histogramdd': (('histogramdd', 'sample', 'weights'), ('histogram_bin_edges', 1, '*bins'),),
    'hsplit': (('hsplit', 'ary'),),
    'hstack': (('hstack', '*tup'),),
    'hypot': (('hypot', 'x1', 'x2'),),
    'i0': (('i0', 'x'),),
    'imag': (('imag', 'val'),),
    'inner': (('inner', 'a', 'b'),),
    'insert': (('insert', 'arr', 'obj', 'values'),),
    'interp': (('interp', 'x', 'xp', 'fp'), ('where', 1, 'left'), ('where', 1, 'right'),),
    'intersect1d': (('intersect1d', 'ar1', 'ar2'),),
    'invert': (('invert', 'x'),),
    'isclose': (('isclose', 'a', 'b'),),
    'iscomplex': (('imag', 'x'),),
    'isfinite': (('isfinite', 'x'),),
    'isin': (('isin', 'element', 'test_elements'),),
    'isinf': (('isinf', 'x'),),
    'isnan': (('isnan', 'x'),),
    'isneginf': (('isneginf', 'x'),),
    'isposinf': (('isposinf', 'x'),),
    'isreal': (('imag', 'x'),),
    'ix_': (('ix', '*args'),),
    'kron': (('kron', 'a', 'b'),),
    'lcm': (('lcm', 'x1', 'x2'),),
    'ldexp': (('ldexp', 'x1', 'x2'),),
    'left_shift': (('left_shift', 'x1', 'x2'),),
    'less': (('less', 'x1', 'x2'),),
    'less_equal': (('less_equal', 'x1', 'x2'),),
    'lexsort': (('lexsort', '*keys'),),
    'linalg.cholesky': (('jnp.linalg.cholesky', 'a'),),
    'linalg.cond': (('cond', 'x'),),
    'linalg.cross': (('jnp.linalg.outer', 'x1', 'x2'),),
    'linalg.det': (('jnp.linalg.det', 'a'),),
    'linalg.diagonal': (('jnp.linalg.diagonal', 'x'),),
    'linalg.eig': (('jnp.linalg.eig', 'a'),),
    'linalg.eigh': (('jnp.linalg.eigh', 'a'),),
    'linalg.eigvals': (('jnp.linalg.eigvals', 'a'),),
    'linalg.eigvalsh': (('jnp.linalg.eigvalsh', 'a'),),
    'linalg.inv': (('jnp.linalg.inv', 'a'),),
    'linalg.lstsq': (('jnp.linalg.lstsq', 'a', 'b'),),
    'linalg.matmul': (('jnp.linalg.matmul', 'x1', 'x2'),),
    'linalg.matrix_norm': (('jnp.linalg.matrix_norm', 'x'),),
    'linalg.matrix_power': (('jnp.linalg.matrix_power', 'a'),),
    'linalg.matrix_rank': (('jnp.linalg.matrix_rank', 'M'),),
    'linalg.matrix_transpose': (('jnp.linalg.matrix_transpose', 'x'),),
    'linalg.multi_dot': (('jnp.linalg.multi_dot', '*arrays'),),
    'linalg.norm': (('jnp.linalg.norm', 'x'),),
    'linalg.outer': (('jnp.linalg.outer', 'x1', 'x2'),),
    'linalg.pinv': (('jnp.linalg.pinv', 'a'),),
    'linalg.qr': (('jnp.linalg.qr', 'a'),),
    'linalg.slogdet': (('jnp.linalg.slogdet', 'a'),),
    'linalg.solve': (('jnp.linalg.solve', 'a', 'b'),),
    'linalg.svd': (('jnp.linalg.svd', 'a'),),
    'linalg.svdvals': (('jnp.linalg.svdvals', 'x'),),
    'linalg.tensordot': (('jnp.linalg.tensordot', 'x1', 'x2'),),
    'linalg.tensorinv': (('tensorinv', 'a'),),
    'linalg.tensorsolve': (('tensorsolve', 'a', 'b'),),
    'linalg.trace': (('jnp.linalg.trace', 'x'), ('eye', 'offset'),),
    'linalg.vecdot': (('jnp.linalg.vecdot', 'x1', 'x2'),),
    'linalg.vector_norm': (('jnp.linalg.vector_norm', 'x'),),
    'linspace': (('linspace', 'start', 'stop'),),
    'log': (('log', 'x'),),
    'log10': (('log10', 'x'),),
    'log1p': (('log1p', 'x'),),
    'log2': (('log2', 'x'),),
    'logical_not': (('logical_not', 'x'),),
    'logspace': (('power', 'base'),),
    'matmul': (('matmul', 'a', 'b'),),
    'matrix_transpose': (('matrix_transpose', 'x'),),
    'matvec': (('matvec', 'x1', 'x2'),),
    'max': (('max', 'a'), ('max', 'where'),),
    'mean': (('mean', 'a'), ('mean', 'where'),),
    'median': (('median', 'a'),),
    'meshgrid': (('meshgrid', '*xi'),),
    'min': (('min', 'a'), ('min', 'where'),),
    'mod': (('remainder', 'x1', 'x2'),),
    'modf': (('modf', 'x'),),
    'moveaxis': (('moveaxis', 'a'),),
    'nan_to_num': (('nan_to_num', 'x'),),
    'nanargmax': (('nanargmax', 'a'),),
    'nanargmin': (('nanargmin', 'a'),),
    'nancumprod': (('nancumprod', 'a'),),
    'nancumsum': (('nancumsum', 'a'),),
    'nanmax': (('nanmax', 'a'), ('nanmax', 'where'),),
    'nanmean': (('nanmean', 'a'), ('nanmean', 'where'),),
    'nanmedian': (('nanmedian', 'a'),),
    'nanmin': (('nanmin', 'a'), ('nanmin', 'where'),),
    'nanpercentile': (('nanpercentile', 'a', 'q'), ('nanpercentile', 'weights'),),
    'nanprod': (('nanprod', 'a'), ('nanprod', 'where'),),
    'nanquantile': (('nanquantile', 'a', 'q'), ('nanquantile', 'weights'),),
    'nanstd': (('nanstd', 'a'), ('nanstd', 'where'), ('nanvar', 'mean'),),
    'nansum': (('nansum', 'a'), ('nansum', 'where'),),
    'nanvar': (('nanvar', 'a'), ('nanvar', 'where'), ('nanvar', 'mean'),),
    'nextafter': (('nextafter', 'x1', 'x2'),),
    'nonzero': (('nonzero', 'a'),),
    'not_equal': (('not_equal', 'x1', 'x2'),),
    'ones_like': (('ones_like', 'a'),),
    'outer': (('outer', 'a', 'b'),),
    'packbits': (('packbits', 'a'),),
    'pad': (('pad', 'array'),),
    'partition': (('partition', 'a'),),
    'percentile': (('percentile', 'a', 'q'), ('percentile', 'weights'),),
    'permute_dims': (('permute_dims', 'a'),),
    'piecewise': (('piecewise', 'x'),),
    'place': (('place', 'arr', 'mask', 'vals'),),
    'poly': (('poly', 'seq_of_zeros'),),
    'polyadd': (('polyadd', 'a1', 'a2'),),
    'polyder': (('polyder', 'p'),),
    'polydiv': (('polydiv', 'u', 'v'),),
    'polyfit': (('polyfit', 'x', 'y', 'w'),),
    'polyint': (('polyint', 'p', 'k'),),
    'polymul': (('polymul', 'a1', 'a2'),),
    'polysub': (('polysub', 'a1', 'a2'),),
    'polyval': (('polyval', 'p', 'x'),),
    'positive': (('positive', 'x'),),
    'pow': (('power', 'x1', 'x2'),),
    'power': (('power', 'x1', 'x2'),),
    'prod': (('prod', 'a'), ('prod', 'where'),),
    'ptp': (('ptp', 'a'),),
    'put': (('put', 'a', 'ind', 'v'),),
    'put_along_axis': (('put_along_axis', 'arr', 'indices', 'values'),),
    'quantile': (('quantile', 'a', 'q'), ('quantile', 'weights'),),
    'rad2deg': (('rad2deg', 'x'),),
    'radians': (('deg2rad', 'x'),),
    'ravel': (('ravel', 'a'),),
    'ravel_multi_index': (('ravel_multi_index', '*multi_index'),),
    'real': (('real', 'val'),),
    'reciprocal': (('reciprocal', 'x'),),
    'remainder': (('remainder', 'x1', 'x2'),),
    'repeat': (('repeat', 'a', 'repeats'),),
    'reshape': (('reshape', 'a'),),
    'resize': (('resize', 'a'),),
    'right_shift': (('right_shift', 'x1', 'x2'),),
    'rint': (('rint', 'x'),),
    'roll': (('roll', 'a'),),
    'rollaxis': (('rollaxis', 'a'),),
    'roots': (('roots', 'p'),),
    'rot90': (('rot90', 'm'),),
    'round': (('round', 'a'),),
    'searchsorted': (('searchsorted', 'a', 'v', 'sorter'),),
    'select': (('select', '*condlist', '*choicelist', 'default'),),
    'setdiff1d': (('setdiff1d', 'ar1', 'ar2'), ('full_like', 1, 'fill_value'),),
    'setxor1d': (('setxor1d', 'ar1', 'ar2'),),
    'sign': (('sign', 'x'),),
    'signbit': (('signbit', 'x'),),
    'sin': (('sin', 'x'),),
    'sinc': (('sinc', 'x'),),
    'sinh': (('sinh', 'x'),),
    'sort': (('sort', 'a'),),
    'sort_complex': (('sort_complex', 'a'),),
    'spacing': (('spacing', 'x'),),
    'split': (('split', 'ary'),),
    'sqrt': (('sqrt', 'x'),),
    'square': (('square', 'x'),),
    'squeeze': (('squeeze', 'a'),),
    'stack': (('stack', '*arrays'),),
    'std': (('std', 'a'), ('std', 'where'), ('var', 'mean'),),
    'sum': (('sum', 'a'), ('sum', 'where'),),
    'swapaxes': (('swapaxes', 'a'),),
    'take': (('take', 'a', 'indices'),),
    'take_along_axis': (('take_along_axis', 'arr', 'indices'),),
    'tan': (('tan', 'x'),),
    'tanh': (('tanh', 'x'),),
    'tensordot': (('tensordot', 'a', 'b'),),
    'tile': (('tile', 'A'),),
    'trace': (('trace', 'a'), ('eye', 'offset'),),
    'transpose': (('transpose', 'a'),),
    'trapezoid': (('trapezoid', 'y', 'x'),),
    'tril': (('tril', 'm'),),
    'tril_indices_from': (('tril_indices_from', 'arr'),),
    'trim_zeros': (('trim_zeros', 'filt'),),
    'triu': (('triu', 'm'),),
    'triu_indices_from': (('triu_indices_from', 'arr'),),
    'true_divide': (('true_divide', 'x1', 'x2'),),
    'trunc': (('trunc', 'x'),),
    'union1d': (('union1d', 'ar1', 'ar2'),),
    'unique': (('unique', 'ar'),),
    'unique_all': (('unique_all', 'x'),),
    'unique_counts': (('unique_counts', 'x'),),
    'unique_inverse': (('unique_inverse', 'x'),),
    'unique_values': (('unique_values', 'x'),),
    'unpackbits': (('unpackbits', 'a'),),
    'unravel_index': (('unravel_index', 'indices'),),
    'unstack': (('unstack', 'x'),),
    'unwrap': (('unwrap', 'p'),),
    'vander': (('vander', 'x'),),
    'var': (('var', 'a'), ('var', 'where'), ('var', 'mean'),),
    'vdot': (('vdot', 'a', 'b'),),
    'vecdot': (('jnp.vecdot', 'x1', 'x2'),),
    'vecmat': (('matvec', 'x1', 'x2'),),
    'vsplit': (('vsplit', 'ary'),),
    'vstack': (('vstack', '*tup'),),
    'where': (('where', 'condition', 'x', 'y'),),
    'zeros_like': (('zeros_like', 'a'),),
}
# fmt: on


def _plan(fn, calls):
    """For each check call: its name, first position and ``(index, name, each, rest, optional)``
    per parameter (``index``: where the parameter sits among the positional arguments, None if
    keyword-only; ``each``: check its elements; ``rest``: it is ``*args``; ``optional``: None, its
    default, means absent, as JAX checks such a parameter only when given)."""
    params = list(inspect.signature(fn).parameters.values())
    by_name = {p.name: p for p in params}
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    plan = []
    for call in calls:
        name, rest = call[0], call[1:]
        start = 0
        if rest and isinstance(rest[0], int):
            start, rest = rest[0], rest[1:]
        entries = []
        for spec in rest:
            each = spec.startswith("*")
            pname = spec.lstrip("*")
            optional = pname in by_name and by_name[pname].default is None
            if pname == var:
                entries.append((len(positional), pname, True, True, False))
            elif pname in positional:
                entries.append((positional.index(pname), pname, each, False, optional))
            elif pname in by_name:
                entries.append((None, pname, each, False, optional))
            else:
                raise AssertionError(f"{fn.__qualname__} has no parameter {pname!r} (JAX's check names it)")
        plan.append((name, start, tuple(entries)))
    return tuple(plan)


_MISSING = object()
_OR_NONE = frozenset({"arange"})  # (JAX's check_arraylike_or_none: its words name None)
# The prototypes JAX duck-types before checking (zeros_like, ones_like, empty_like, full_like): an
# object with ``dtype`` and ``shape`` passes, a ShapeDtypeStruct too (optax's tree_zeros_like of
# eval_shape's structs), as (JAX's check name, parameter).
_DUCK_TYPED = frozenset(
    {("zeros_like", "a"), ("ones_like", "a"), ("ones_like", "prototype"), ("full_like", "a")}
)


def _as_array(x, duck: bool):
    """``x``'s array when it stands for one (through lists and tuples: ``vstack([w, w])``), JAX's
    conversion of an array-like argument; a duck-typed prototype (``zeros_like(obj)``, an object
    with ``shape`` and ``dtype``) is kept, as JAX reads those first."""
    if isinstance(x, list | tuple):
        if not any(stands_for_array(v) or isinstance(v, list | tuple) for v in x):
            return x
        out = [_as_array(v, False) for v in x]
        return out if type(x) is list else tuple(out) if type(x) is tuple else type(x)(*out)
    if stands_for_array(x) and not (duck and hasattr(x, "dtype") and hasattr(x, "shape")):
        return x.__jax_array__()
    return x


def _arrays_of_stand_ins(args, kwargs, duck: bool):
    """The arguments with each object standing for an array (``__jax_array__``) replaced by its
    array, as JAX converts its array-like arguments before computing (NOTE: [array-like
    arguments]); the same objects when there is none."""
    return (
        tuple(_as_array(a, duck and i == 0) for i, a in enumerate(args)),
        {k: _as_array(v, False) for k, v in kwargs.items()},
    )


def _duck_typed(name, pname, value) -> bool:
    return (name, pname) in _DUCK_TYPED and hasattr(value, "dtype") and hasattr(value, "shape")


JIT = "jit"  # (a call of the table that is JAX's jit of the function, not a check)


def _traced_conversion_error(fun_name: str, pname: str, value) -> Exception:
    """The error JAX's jitted ``fun_name`` meets converting the list or tuple ``value`` of
    ``pname``, traced leaf by leaf (a ``TracerArrayConversionError``), made by the same trace.

    >>> for line in _traced_conversion_error("average", "a", [1.0, 2.0]).args[0].splitlines()[:2]:
    ...     print(line)
    The numpy.ndarray conversion method __array__() was called on traced array with shape float64[].
    This concrete value was not available in Python because it depends on the value of the argument a[0].
    """
    paths, leaves = zip(*tu.tree_leaves_with_path(value), strict=True)
    names = [f"{pname}{tu.keystr(p)}" for p in paths]
    avals = [core.get_aval(asarray(x)) for x in leaves]
    try:
        tree = tu.tree_structure(value)
        trace_to_jaxpr(lambda *xs: [np.ndim(tu.tree_unflatten(tree, xs))], avals, names, fun_name)
    except core.ConcretizationTypeError as e:
        return e
    raise AssertionError(f"{fun_name}: a traced {pname} converted")


def _check(plan, args, kwargs):
    for name, pos, entries in plan:
        if name == JIT:
            for index, pname, *_ in entries:
                value = args[index] if index is not None and index < len(args) else kwargs.get(pname)
                if isinstance(value, list | tuple) and tu.tree_leaves(value):
                    fun_name = next(n for n, _, _ in plan if n != JIT)  # (the function's own checks)
                    raise _traced_conversion_error(fun_name, pname, value)
            continue
        for index, pname, each, rest, optional in entries:
            if rest:
                values = args[index:]
            else:
                value = (
                    args[index] if index is not None and index < len(args) else kwargs.get(pname, _MISSING)
                )
                if value is _MISSING or (value is None and optional) or type(value) is slice:
                    # (a slice: insert's and delete's obj, which JAX checks only when not a slice)
                    pos += 1
                    continue
                if not each:
                    if not is_arraylike(value) and not _duck_typed(name, pname, value):
                        raise arraylike_error(name, value, pos, name in _OR_NONE)
                    pos += 1
                    continue
                if not isinstance(value, list | tuple):
                    pos += len(value) if getattr(value, "ndim", 0) else 1  # (an array's rows are arrays)
                    continue
                values = value
            for v in values:
                if not is_arraylike(v):
                    raise arraylike_error(name, v, pos)
                pos += 1


def _einsum_operands(args):
    """The arrays of an ``einsum`` call, as JAX checks them after parsing: the operands after the
    subscripts string, or the even arguments of the interleaved form (``einsum(x, [0, 1], y, [1,
    2])``: its sublists are not operands)."""
    if args and isinstance(args[0], str):
        return args[1:]
    return args[0 : 2 * (len(args) // 2) : 2]


_CUSTOM = {"einsum": _einsum_operands}


def checking(fn, calls):
    """``fn`` refusing what JAX's check refuses (NOTE: [array-like arguments]).

    >>> import numpy as np
    >>> from funcgrad.numpy.transcendental import sin
    >>> checking(sin, (("sin", "x"),))([1.0])
    Traceback (most recent call last):
    TypeError: sin requires ndarray or scalar arguments, got <class 'list'> at position 0.
    """
    if isinstance(calls, str):
        operands = _CUSTOM[calls]

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            for i, a in enumerate(operands(args)):
                if not is_arraylike(a):
                    raise arraylike_error(calls, a, i)
                if isinstance(a, core.Tracer):
                    core.check_live(a)
            return fn(*_arrays_of_stand_ins(args, {}, False)[0], **kwargs)

        checked.__wrapped_unchecked__ = fn
        return checked
    code = getattr(fn, "__code__", None)
    first = code.co_varnames[0] if code is not None and code.co_argcount else None
    required = code is not None and code.co_argcount > len(fn.__defaults__ or ())
    one = len(calls) == 1 and len(calls[0]) == 2 and calls[0][1] == first and required
    if one and (calls[0][0], first) not in _DUCK_TYPED:
        # One array argument, the first: the common case (sin, sum, inv, ...), one isinstance.
        name = calls[0][0]

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            value = args[0] if args else kwargs.get(first, 0)
            if not isinstance(value, _EAGER_TYPES):
                if isinstance(value, core.Tracer):
                    if not value._trace.alive:
                        core.check_live(value)
                elif not arraylike_other(value):
                    raise arraylike_error(name, value, 0)
                else:
                    args, kwargs = _arrays_of_stand_ins(args, kwargs, False)
            return fn(*args, **kwargs)

    else:
        plan = []  # (read off the signature at the first call that needs it: imports stay cheap)
        duck = any(len(c) > 1 and (c[0], c[1]) in _DUCK_TYPED for c in calls)  # (zeros_like's prototype)

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            for a in (*args, *kwargs.values()) if kwargs else args:
                if not isinstance(a, _EAGER_TYPES):
                    if isinstance(a, core.Tracer):
                        if not a._trace.alive:
                            core.check_live(a)
                        continue
                    break
            else:  # (each argument an array or a scalar, axis=0 too: no check can fail)
                return fn(*args, **kwargs)
            if not plan:
                plan.append(_plan(fn, calls))
            _check(plan[0], args, kwargs)
            args, kwargs = _arrays_of_stand_ins(args, kwargs, duck)
            return fn(*args, **kwargs)

    checked.__wrapped_unchecked__ = fn  # (the module's function, as the library calls it)
    return checked


_VERSIONS: dict = {}  # (ARRAYLIKE_ARGS key, function) -> its one checking version


def checked(key: str, fn):
    """The checking version of ``fn``, the function ``ARRAYLIKE_ARGS[key]`` describes: one for
    each, shared by its namespace (``install``) and the Array methods that call it (``x.clip``,
    ``x.take``).

    >>> from funcgrad.numpy.ufuncs import clip
    >>> checked("clip", clip) is checked("clip", clip)
    True
    """
    out = _VERSIONS.get((key, fn))
    if out is None:
        out = _VERSIONS[key, fn] = checking(fn, ARRAYLIKE_ARGS[key])
    return out


def install(namespace: dict, prefix: str = "") -> None:
    """Replace each function of ``namespace`` that ``ARRAYLIKE_ARGS`` lists (keys ``prefix +
    name``) by its checking version.

    The checking version belongs to ``namespace``'s module (``fnp.sin.__module__`` is
    ``'funcgrad.numpy'``, as JAX's is ``'jax.numpy'``), where pickle finds it by name: pickled by
    reference, as every function is, it must be the object its module and name lead to."""
    for key in ARRAYLIKE_ARGS:
        if not key.startswith(prefix) or "." in key[len(prefix) :]:
            continue
        name = key[len(prefix) :]
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "__wrapped_unchecked__"):
            version = checked(key, fn)
            version.__module__, version.__qualname__ = namespace["__name__"], name
            namespace[name] = version
