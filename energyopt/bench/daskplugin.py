"""The Dask worker plugin that gives every worker a warm cell server.

Kept apart from :mod:`energyopt.bench.cellclient` so that only Dask runs import
``distributed``.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from energyopt.bench.cellclient import start_server, stop_server


class CellServerPlugin(WorkerPlugin):
    """Start the worker's cell server as the worker joins (its imports then overlap the
    scheduling of the first cells), stop it when the worker closes.

    Registered by the client (``client.register_plugin``); workers that join later, or that
    a nanny restarts, get it too.

    Parameters
    ----------
    preload
        Modules the cell server imports at its start (the families of the first client's
        cells); it imports any other family once, when a cell of it first arrives.
    """

    name = "energyopt-cell-server"
    #: A second client (a restarted or concurrent ``bench``) keeps the running servers.
    idempotent = True

    def __init__(self, preload: list[str] | None = None) -> None:
        self.preload = preload

    def setup(self, worker: Any) -> None:
        start_server(self.preload)

    def teardown(self, worker: Any) -> None:
        stop_server()
