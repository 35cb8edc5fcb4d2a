"""A lower bound on the per-example row of ``bench_transformer.py`` from its program's arithmetic.

Run: ``python bench/per_example_bound.py`` (one thread, pinned to one core; set
``OPENBLAS_NUM_THREADS=1`` and ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` as
``--threads 1`` does). Prints:

- the FLOPs of ``vmap(grad(loss_single))``'s products, counted from its jaxpr (2 B M N K per
  ``dot_general``, inner jaxprs included), by shape;
- XLA's ``cost_analysis()`` of the compiled program (FLOPs, bytes accessed) and the bytes left after
  the products' own operands and results (the elementwise, reduction and copy traffic);
- the single-thread rate of each product shape, XLA's (a jitted ``lax.dot_general``, operands on the
  device) and OpenBLAS's (NumPy's ``matmul`` on the same arrays), best of 12 calls by CPU time, and
  the products' time at the better of the two per shape;
- XLA's streaming rate (a fused ``a * b + a`` over 16 MB operands) and so the bound: the products
  at the measured rates plus the other bytes at that rate, beside funcgrad's own per-example CPU
  time in the same process.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_transformer as bt  # noqa: E402

import funcgrad  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from funcgrad import lax  # noqa: E402


def best(fn, n=12):
    fn()
    fn()
    ts = []
    for _ in range(n):
        c = time.process_time()
        fn()
        ts.append(time.process_time() - c)
    return min(ts)


def products(jaxpr, found):
    """``found[(lhs shape, rhs shape, dimension_numbers)] += 1`` for every product of ``jaxpr``."""
    for e in jaxpr.eqns:
        inner = [getattr(v, "jaxpr", v) for v in e.params.values() if hasattr(getattr(v, "jaxpr", v), "eqns")]
        for j in inner:
            products(j, found)
        if e.primitive.name == "dot_general":
            lhs, rhs = (tuple(a.aval.shape) for a in e.invars)
            key = (lhs, rhs, e.params["dimension_numbers"])
            found[key] = found.get(key, 0) + 1
    return found


def flops_of(lhs, rhs, dn):
    (lc, _), (lb, _) = dn
    k = math.prod(lhs[d] for d in lc)
    b = math.prod(lhs[d] for d in lb)
    return 2 * math.prod(lhs) * math.prod(rhs) // (k * b)


def out_size(lhs, rhs, dn):
    (lc, rc), (lb, rb) = dn
    shared = math.prod(lhs[d] for d in (*lc, *lb)) * math.prod(rhs[d] for d in rc)
    return math.prod(lhs) * math.prod(rhs) // shared


def main():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    p, x, y = bt.numpy_problem()
    loss = bt.make_loss(fnp)
    p = {k: fnp.asarray(v) for k, v in p.items()}
    x, y = fnp.asarray(x), fnp.asarray(y)
    g = funcgrad.vmap(funcgrad.grad(lambda p, xi, yi: loss(p, xi[None], yi[None])), in_axes=(None, 0, 0))
    found = products(funcgrad.make_jaxpr(g)(p, x, y).jaxpr, {})
    total = sum(flops_of(*k) * n for k, n in found.items())
    dot_bytes = sum(4 * (math.prod(k[0]) + math.prod(k[1]) + out_size(*k)) * n for k, n in found.items())
    n_dots = sum(found.values())
    print(f"products: {n_dots}, {total / 1e9:.2f} GFLOP, operands and results {dot_bytes / 1e6:.0f} MB")
    pe = funcgrad.jit(g)
    ca = pe.lower(p, x, y).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, list) else ca
    other = ca.get("bytes accessed", 0) - dot_bytes
    print(
        f"XLA cost_analysis: {ca.get('flops', 0) / 1e9:.2f} GFLOP, "
        f"{ca.get('bytes accessed', 0) / 1e6:.0f} MB accessed, {other / 1e6:.0f} MB outside the products"
    )
    rng = np.random.default_rng(0)
    t_best = t_xla = 0.0
    for (ls, rs, dn), n in sorted(found.items(), key=lambda kv: -flops_of(*kv[0]) * kv[1]):
        a, b = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
        (lc, rc), (lb, rb) = dn
        f = funcgrad.jit(lambda a, b, dn=dn: lax.dot_general(a, b, dn))
        da, db = funcgrad.device_put(fnp.asarray(a)), funcgrad.device_put(fnp.asarray(b))
        tx = best(lambda f=f, da=da, db=db: f(da, db).block_until_ready())
        # NumPy: batch axes first, then the free axes, the contracted ones last/first (BLAS reads the
        # transposed views through their strides)
        lf = [d for d in range(len(ls)) if d not in (*lc, *lb)]
        rf = [d for d in range(len(rs)) if d not in (*rc, *rb)]
        la = a.transpose(*lb, *lf, *lc).reshape(*[ls[d] for d in lb], math.prod(ls[d] for d in lf), -1)
        rb_ = b.transpose(*rb, *rc, *rf).reshape(*[rs[d] for d in rb], -1, math.prod(rs[d] for d in rf))
        tn = best(lambda la=la, rb_=rb_: np.matmul(la, rb_))
        fl = flops_of(ls, rs, dn)
        t_best += n * min(tx, tn)
        t_xla += n * tx
        rates = f"XLA {fl / tx / 1e9:5.0f} GFLOP/s, OpenBLAS {fl / tn / 1e9:5.0f}"
        print(f"  x{n:2d} {str(ls):16s} {str(rs):16s} {rates}")
    print(f"products: {t_xla * 1e3:.1f} ms at XLA's rates, {t_best * 1e3:.1f} ms at the better per shape")
    m = 4 << 20
    u = funcgrad.device_put(fnp.asarray(rng.standard_normal(m).astype(np.float32)))
    v = funcgrad.device_put(fnp.asarray(rng.standard_normal(m).astype(np.float32)))
    h = funcgrad.jit(lambda u, v: u * v + u)
    bw = 3 * m * 4 / best(lambda: h(u, v).block_until_ready())
    t_pe = best(lambda: funcgrad.block_until_ready(pe(p, x, y)), n=7)
    bound = t_best + other / bw
    print(f"XLA streams {bw / 1e9:.1f} GB/s: bound {bound * 1e3:.1f} ms; funcgrad's program {t_pe * 1e3:.1f}")


if __name__ == "__main__":
    main()
