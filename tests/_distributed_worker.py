"""One process of tests/test_distributed.py: ``python _distributed_worker.py PROCESS_ID PORT``.

Joins a 2-process program (4 CPU devices each), runs an 8-way psum and a data-parallel training
step over all 8 devices, prints the results as JSON and leaves. Importing it does nothing (the
doctest collector imports every module of tests/).
"""

from __future__ import annotations

import json
import sys


def main(pid: int, port: int) -> None:
    import funcgrad  # noqa: PLC0415 - import-time cost: the process must initialize first

    funcgrad.distributed.initialize(
        f"127.0.0.1:{port}",
        num_processes=2,
        process_id=pid,
        local_device_ids=range(4),
        initialization_timeout=60,
        heartbeat_timeout_seconds=10,
        shutdown_timeout_seconds=30,
    )
    import numpy as np  # noqa: PLC0415 - import-time cost (see above)
    from _distributed_common import batch, init_params, train_step  # noqa: PLC0415 - import-time cost

    from funcgrad import lax  # noqa: PLC0415 - import-time cost
    from funcgrad.sharding import NamedSharding, P, make_mesh  # noqa: PLC0415 - import-time cost

    out = {
        "devices": funcgrad.device_count(),
        "local": funcgrad.local_device_count(),
        "index": funcgrad.process_index(),
        "count": funcgrad.process_count(),
    }
    mesh = make_mesh((8,), ("x",))
    rows = NamedSharding(mesh, P("x"))
    x = np.arange(8 * 3.0).reshape(8, 3)
    mine = funcgrad.make_array_from_process_local_data(rows, x[4 * pid : 4 * pid + 4])
    psum = funcgrad.jit(
        funcgrad.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
    )
    out["psum"] = np.asarray(psum(mine)).tolist()
    params = funcgrad.device_put(init_params(), NamedSharding(mesh, P()))
    xb, yb = batch()
    half = len(xb) // 2
    xs = funcgrad.make_array_from_process_local_data(rows, xb[half * pid : half * (pid + 1)])
    ys = funcgrad.make_array_from_process_local_data(rows, yb[half * pid : half * (pid + 1)])
    new, loss = train_step(params, xs, ys)
    out["loss"] = float(loss)
    out["params"] = [np.asarray(p).tolist() for p in funcgrad.tree_util.tree_leaves(new)]
    print(json.dumps(out), flush=True)
    funcgrad.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
