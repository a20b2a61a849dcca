"""Starts bqemulator with two harness fixes: every thread but the main one gets its own DuckDB cursor, and the
gRPC server runs its handlers on a pool of STORAGE_WRITE_WORKERS threads.

Usage (the test harness does this): .emulators/venv/bin/python scripts/emulators/bqemulator_launch.py start [flags]

Why: bqemulator 1.4.0 shares one DuckDBPyConnection between the asyncio main thread (async REST routes, queries),
the anyio worker threads (sync REST routes such as jobs.get and getQueryResults) and grpc.aio's thread pool
(Storage Write API handlers). When a Storage Write append (grpc thread) touches the connection while a REST query
runs on the main thread, the process deadlocks: the grpc thread waits for DuckDB's connection lock while holding
the GIL, and the query holding that lock waits for the GIL. The emulator then answers nothing and ignores SIGTERM.
Reproduced with two concurrent `_default` appends plus a concurrent COUNT(*) query (about 1 round in 10); the
faulthandler dump showed the main thread in DuckDBEngine.execute and a grpc thread in
BigQueryWriteHandler._flush_to_target (connection.unregister).

The fix: `DuckDBEngine.connection` returns, on any thread other than the main one, a per-thread cursor of the
main connection (`connection.cursor()`: a separate connection to the same database, so no shared lock). Data,
catalog, loaded extensions and Python UDFs are database-wide in DuckDB and stay shared; each statement still
auto-commits. What changes: statements of different threads now run as separate DuckDB transactions, so a write
from a grpc thread racing a write to the same catalog row from a REST request can fail with a DuckDB transaction
conflict instead of hanging.

The pool: bqemulator 1.4.0 builds `grpc.aio.server()` without a `migration_thread_pool`, so its synchronous
handlers run on asyncio's default executor, `min(32, cpus + 4)` threads: 6 on 2 cores. An AppendRows call holds
one of them for as long as it is open (the handler blocks on the call's request iterator between requests), so a
7th open connection gets no answer until another one ends, and a call whose client went away without its
connection closing (a SIGKILLed child behind a proxy that keeps the upstream connection open, a zombie) holds
its thread for as long as that lasts.
Crash proofs sharing one emulator hung that way. The fix hands the server a pool of its own; its threads start
on demand. Pinned by test/integration/bigquery/bqemulatorThreads.test.ts (which reads the line printed below).
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

# Concurrent gRPC calls the emulator serves (each open AppendRows connection holds one thread)
STORAGE_WRITE_WORKERS = 64


def _patch_engine() -> None:
    from bqemulator.storage import engine as engine_module

    original = engine_module.DuckDBEngine.connection
    local = threading.local()

    def connection(self: engine_module.DuckDBEngine):  # type: ignore[no-untyped-def]
        main = original.fget(self)  # raises InternalError when the engine is not started
        if threading.current_thread() is threading.main_thread():
            return main
        cursors = getattr(local, "cursors", None)
        if cursors is None:
            cursors = local.cursors = {}
        entry = cursors.get(id(self))
        if entry is None or entry[0] is not main:
            cursor = main.cursor()
            cursor.execute("SET TimeZone = 'UTC'")
            entry = cursors[id(self)] = (main, cursor)
        return entry[1]

    engine_module.DuckDBEngine.connection = property(connection, doc=original.__doc__)  # type: ignore[method-assign]


def _patch_grpc_pool() -> None:
    import grpc.aio

    original = grpc.aio.server

    def server(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not args and kwargs.get("migration_thread_pool") is None:
            kwargs["migration_thread_pool"] = ThreadPoolExecutor(
                max_workers=STORAGE_WRITE_WORKERS, thread_name_prefix="grpc-handler"
            )
        return original(*args, **kwargs)

    # bqemulator's build_grpc_server calls grpc.aio.server(...) through the module attribute
    grpc.aio.server = server  # type: ignore[assignment]
    print(f"bqemulator_launch: Storage Write thread pool: {STORAGE_WRITE_WORKERS} workers", file=sys.stderr, flush=True)


def main() -> None:
    _patch_engine()
    _patch_grpc_pool()
    from bqemulator.cli import main as cli_main

    sys.argv[0] = "bqemulator"
    cli_main()


if __name__ == "__main__":
    main()
