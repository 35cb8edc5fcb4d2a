"""autograd.scipy.signal.convolve: autograd's own n-dimensional convolution with ``axes`` (the
convolved axes of each operand) and ``dot_axes`` (axes contracted as in ``tensordot``), built on
funcgrad.numpy (a sum of shifted products over the kernel's positions)."""

import itertools

import numpy as onp

import funcgrad.numpy as np


def _parse(axes, dot_axes, ndim_a, ndim_b):
    if axes is None:
        axes = [list(range(ndim_a)), list(range(ndim_a))]
    conv_a, conv_b = (list(a) for a in axes)
    dot_a, dot_b = (list(a) for a in dot_axes)
    ignore_a = [i for i in range(ndim_a) if i not in conv_a + dot_a]
    ignore_b = [i for i in range(ndim_b) if i not in conv_b + dot_b]
    return conv_a, conv_b, dot_a, dot_b, ignore_a, ignore_b


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """Convolve ``A`` and ``B`` over ``axes`` (pairs), contracting ``dot_axes``; ``mode`` is
    ``full`` or ``valid``. Output axes: ``A``'s other axes, ``B``'s other axes, the convolved ones.

    >>> convolve(np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0])).tolist()
    [1.0, 3.0, 3.0, 2.0]
    """
    A, B = np.asarray(A), np.asarray(B)
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', got {mode!r}")
    conv_a, conv_b, dot_a, dot_b, ign_a, ign_b = _parse(axes, dot_axes, A.ndim, B.ndim)
    A = np.transpose(A, ign_a + dot_a + conv_a)
    B = np.transpose(B, ign_b + dot_b + conv_b)
    n_conv = len(conv_a)
    sa, sb = A.shape[A.ndim - n_conv :], B.shape[B.ndim - n_conv :]
    sa0 = sa
    if mode in ("full", "same"):
        pad_a = [(0, 0)] * (A.ndim - n_conv) + [(m - 1, m - 1) for m in sb]
        A = np.pad(A, pad_a)
        sa = A.shape[A.ndim - n_conv :]
    out_shape = [p - m + 1 for p, m in zip(sa, sb)]
    if any(s <= 0 for s in out_shape):
        raise ValueError("convolve: in 'valid' mode the kernel must not be larger than the input")
    n_ign_a, n_dot = len(ign_a), len(dot_a)
    total = None
    for pos in itertools.product(*(range(m) for m in sb)):
        window = A[(Ellipsis,) + tuple(slice(p, p + o) for p, o in zip(pos, out_shape))]
        kernel = B[(Ellipsis,) + tuple(m - 1 - p for m, p in zip(sb, pos))]
        term = np.tensordot(
            window,
            kernel,
            axes=(list(range(n_ign_a, n_ign_a + n_dot)), list(range(len(ign_b), len(ign_b) + n_dot))),
        )
        total = term if total is None else total + term
    # term axes: ign_a, conv(out), ign_b -> ign_a, ign_b, conv
    k = len(out_shape)
    perm = (
        list(range(n_ign_a))
        + list(range(n_ign_a + k, n_ign_a + k + len(ign_b)))
        + list(range(n_ign_a, n_ign_a + k))
    )
    out = np.transpose(total, perm)
    if mode == "same":  # SciPy's: the centre of the full result, the size of A
        starts = [(m - 1) // 2 for m in sb]
        out = out[(Ellipsis,) + tuple(slice(s, s + n) for s, n in zip(starts, sa0))]
    return out


del onp
