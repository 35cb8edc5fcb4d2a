"""funcgrad.nn's ``dot_product_attention`` (jax.nn's name, signature and semantics; funcgrad.nn
re-exports it): grouped-query scaled dot-product attention with its masks, on the XLA path: JAX's
per-group core mapped over the query groups with ``vmap``, as JAX's ``_dot_product_attention_xla``
does, so the products are JAX's batched ``dot_general``s and XLA sums them in JAX's order.

Layer: surface. Imports ``funcgrad.numpy`` (and its ``_core`` helpers), the primitive catalog
(elementwise family) and funcgrad.nn's ``_normalizations`` (``softmax``, ``logsumexp``).
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp
from funcgrad._vmap import vmap
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.templates import template_public_functions
from funcgrad.nn._normalizations import logsumexp, softmax
from funcgrad.numpy._core import asarray, broadcast_to
from funcgrad.primitives import elementwise as ew


def _to_4d(t):
    t = asarray(t)
    return t if t.ndim == 4 else fnp.expand_dims(t, tuple(range(4 - t.ndim)))


def _grouped(t, K, G, N):
    """A (B, N or 1, T, S) bias or mask as (B, K, G, T, S): query head n = k * G + g."""
    if t is None:
        return None
    b, n, tt, ss = t.shape
    if n == 1:
        return broadcast_to(fnp.expand_dims(t, 2), (b, 1, G, tt, ss))
    if n != N:
        raise ValueError(
            f"dot_product_attention: bias/mask head dimension must be 1 or {N}, got shape {t.shape}"
        )
    return fnp.reshape(t, (b, K, G, tt, ss))


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal: bool = False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual: bool = False,
):
    """Scaled dot-product attention ``softmax(q k^T * scale + bias, masked) v`` (``jax.nn``'s).

    ``query`` is (B, T, N, H) or (T, N, H); ``key``/``value`` (B, S, K, H) with ``N`` a multiple of
    ``K`` (grouped-query attention); ``bias``/``mask`` broadcast to (B, N, T, S) (``mask`` is
    boolean, True = attend); ``is_causal``, ``local_window_size`` (an int or (left, right)) and the
    per-example sequence lengths add masks. ``scale`` defaults to ``1/sqrt(H)``. The softmax runs in
    at least float32 (float64 stays float64 here; JAX rounds it to float32). Only the ``'xla'``
    implementation exists on the CPU (``None`` means it). With ``return_residual`` the per-query
    ``logsumexp`` of the logits (B, T, N) comes back too, with a stopped gradient.

    >>> q = np.ones((1, 2, 1, 4)); v = np.arange(8.0).reshape(1, 2, 1, 4)
    >>> dot_product_attention(q, q, v)[0, :, 0].tolist()
    [[2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0]]
    """
    if implementation not in (None, "xla"):
        raise ValueError(
            f"dot_product_attention: implementation={implementation!r} is not available on funcgrad's "
            "devices; use None or 'xla'"
        )
    out_shape = asarray(query).shape
    q, k, v = _to_4d(query), _to_4d(key), _to_4d(value)
    bias = None if bias is None else _to_4d(bias)
    mask = None if mask is None else _to_4d(mask)
    B, S, K, H = k.shape
    if v.shape != k.shape:
        raise ValueError(f"dot_product_attention: value shape {v.shape} must equal key shape {k.shape}")
    if q.shape[0] != B or q.shape[3] != H:
        raise ValueError(
            f"dot_product_attention: query shape {q.shape} must be (B={B}, T, N, H={H}) for key shape "
            f"{k.shape}"
        )
    if mask is not None and mask.dtype != np.bool_:
        raise ValueError(f"dot_product_attention: mask must be boolean, got dtype {mask.dtype}")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ValueError(
            f"dot_product_attention: the number of query heads must be a multiple of key/value heads, "
            f"but got {N} vs {K}"
        )
    G = N // K
    if isinstance(local_window_size, int | np.integer):
        local_window_size = (int(local_window_size), int(local_window_size))
    scale = 1.0 / np.sqrt(H) if scale is None else scale
    logits_dtype = np.promote_types(q.dtype, np.float32)
    qg = fnp.reshape(q, (B, T, K, G, H))
    # JAX's product: half-float operands as they are, accumulated in float32 (converting them to
    # float32 first sums in another order on XLA's CPU: 31,708 of 262,144 bfloat16 logits differed
    # in the last place); bfloat16 under BF16_BF16_F32, so the backward products round the
    # cotangent to bfloat16 as JAX's (NOTE: [dot algorithms]); float16 without an algorithm, as
    # JAX's CPU computes it (its F16_F16_F32 is refused there and JAX falls back to none)
    bf16 = np.dtype(q.dtype) == np.dtype(_dt.bfloat16)
    half = bf16 or np.dtype(q.dtype) == np.float16
    algorithm = "BF16_BF16_F32" if bf16 else None
    keep = None
    if mask is not None:
        keep = _grouped(mask, K, G, N)
    rows = fnp.arange(T)[:, None]
    cols = fnp.arange(S)[None, :]
    if is_causal:
        keep = _and(keep, rows >= cols)
    if local_window_size is not None:
        left, right = local_window_size
        keep = _and(keep, fnp.logical_and(rows <= cols + left, rows >= cols - right))
    if query_seq_lengths is not None:
        ql = asarray(query_seq_lengths)
        keep = _and(keep, (fnp.arange(T)[None, :] < ql[:, None])[:, None, None, :, None])
    if key_value_seq_lengths is not None:
        kl = asarray(key_value_seq_lengths)
        keep = _and(keep, (fnp.arange(S)[None, :] < kl[:, None])[:, None, None, None, :])
    if keep is not None:  # (B, K, G, T, S), mapped over G with the query's groups
        keep = fnp.broadcast_to(fnp.reshape(keep, (1,) * (5 - keep.ndim) + keep.shape), (B, K, G, T, S))
    bias = None if bias is None else fnp.broadcast_to(_grouped(bias, K, G, N), (B, K, G, T, S))

    def core(q, k, v, bias, keep):
        # one group of query heads (B, T, K, H) against the keys and values (B, S, K, H): JAX's
        # _dot_product_attention_core, which JAX's XLA path maps over the groups as here (the same
        # batched products, so the same sums: float32 outputs bit for bit)
        qk = (q, k) if half else (fnp.asarray(q, logits_dtype), fnp.asarray(k, logits_dtype))
        logits = fnp.einsum("BTNH,BSNH->BNTS", *qk, precision=algorithm, preferred_element_type=logits_dtype)
        logits = logits * fnp.asarray(scale, logits.dtype)
        if bias is not None:
            logits = fnp.asarray(logits + bias, logits.dtype)
        if keep is not None:
            big_negative = -0.7 * min(float(_dt.finfo(logits.dtype).max), float(_dt.finfo(np.float32).max))
            logits = fnp.where(keep, logits, fnp.asarray(big_negative, logits.dtype))
        probs = fnp.asarray(softmax(logits, axis=-1), k.dtype)
        encoded = fnp.einsum("BNTS,BSNH->BTNH", probs, v)
        lse = fnp.asarray(logsumexp(logits, axis=-1), k.dtype) if return_residual else None
        return encoded, lse

    in_axes = (3, None, None, None if bias is None else 2, None if keep is None else 2)
    encoded, lse = vmap(core, in_axes=in_axes, out_axes=(3, 2))(qg, k, v, bias, keep)  # lse: (B, K, G, T)
    encoded = fnp.reshape(encoded, (B, T, N, H))
    if query_seq_lengths is not None:
        valid = fnp.arange(T)[None, :] < asarray(query_seq_lengths)[:, None]
        encoded = encoded * fnp.asarray(valid, encoded.dtype)[:, :, None, None]
    encoded = fnp.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = fnp.transpose(fnp.reshape(lse, (B, N, T)), (0, 2, 1))
    return encoded, ew.stop_gradient_p.bind(fnp.reshape(lse, out_shape[:-1]))


def _and(mask, other):
    if mask is None:
        return other
    # (leading axes added explicitly: no implicit rank promotion under jax_numpy_rank_promotion)
    rank = mask.ndim if mask.ndim > other.ndim else other.ndim
    mask = fnp.reshape(mask, (1,) * (rank - mask.ndim) + mask.shape)
    other = fnp.reshape(other, (1,) * (rank - other.ndim) + other.shape)
    return fnp.logical_and(mask, other)


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
