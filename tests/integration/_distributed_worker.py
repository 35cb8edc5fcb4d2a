"""One process of tests/integration/test_distributed.py: ``python _distributed_worker.py PROCESS_ID PORT``.

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
    # make_mesh's axes are Explicit (JAX 0.10's default): the step is typed with its shardings
    out["types"] = [str(mesh.axis_types), str(funcgrad.typeof(xs)), str(funcgrad.typeof(new[0][0]))]
    out["loss"] = float(loss)
    out["params"] = [np.asarray(p).tolist() for p in funcgrad.tree_util.tree_leaves(new)]
    out.update(multihost(pid, mesh, x))
    print(json.dumps(out), flush=True)
    funcgrad.distributed.shutdown()


def multihost(pid: int, mesh, x) -> dict:
    """jax.experimental.multihost_utils' collectives between the two processes (every process
    calls each one, in the same order)."""
    import numpy as np  # noqa: PLC0415 - import-time cost (see main)

    import funcgrad  # noqa: PLC0415 - import-time cost
    from funcgrad.experimental import multihost_utils as mu  # noqa: PLC0415 - import-time cost
    from funcgrad.sharding import P  # noqa: PLC0415 - import-time cost

    out = {
        "allgather": mu.process_allgather(np.array([pid, 10.0 * pid])).tolist(),
        "allgather_tiled": mu.process_allgather(np.full(2, float(pid)), tiled=True).tolist(),
        "broadcast": mu.broadcast_one_to_all({"v": np.array([5.0 + pid])})["v"].tolist(),
        "broadcast_from_1": mu.broadcast_one_to_all(np.array(7.0 + pid), is_source=pid == 1).tolist(),
    }
    mu.sync_global_devices("after the broadcasts")
    mu.assert_equal({"same": np.arange(3)})
    try:
        mu.assert_equal(np.array([pid]), "differs")
        out["assert_differs"] = "no error"
    except AssertionError as e:
        out["assert_differs"] = str(e)[:40]
    g = mu.host_local_array_to_global_array(x[4 * pid : 4 * pid + 4], mesh, P("x"))
    out["global_shape"] = list(g.shape)
    out["global_whole"] = mu.process_allgather(g, tiled=True).tolist()
    back = mu.global_array_to_host_local_array(g, mesh, P("x"))
    out["local_back"] = np.asarray(back).tolist()
    out["local_devices"] = len(back.sharding.device_set)
    # A sharding replicated over each process's devices (before the fix: "bad_function_call").
    from funcgrad.sharding import Mesh, NamedSharding  # noqa: PLC0415 - import-time cost

    grid = Mesh(np.array(mesh.devices).reshape(2, 4), ("p", "d"))
    per_process = funcgrad.make_array_from_process_local_data(
        NamedSharding(grid, P("p")), np.array([[pid, 10.0 * pid]])
    )
    out["partial"] = mu.process_allgather(per_process, tiled=True).tolist()
    return out


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
