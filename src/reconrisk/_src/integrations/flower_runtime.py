"""Run a Flower ``ServerApp`` against a ``ClientApp`` in this process, without Ray.

Flower's simulation runtime (``flwr.simulation.run_simulation``) runs every ``ClientApp``
through its Ray backend (``flwr[simulation]``), which starts a Ray cluster — about 10–20 s and
several processes on a 2-core machine, before the first round (``benchmarks/bench_flower.py
--runtimes`` measures it). The ServerApp runs there in a thread of the calling process, so the
same apps and accountant run unchanged in either runtime. :func:`run_in_process` is the lightest
runtime that still runs Flower's own objects end to end: the ``ServerApp``'s main function and the
strategy's ``start`` loop drive a :class:`InProcessGrid` (a ``flwr.serverapp.Grid``) that
delivers each ``Message`` to the ``ClientApp`` (its mods included, e.g. ``LocalDpMod``) and
returns the reply. Messages are delivered one node at a time, in the order sent; each
node keeps its ``Context`` (with ``node_config`` ``partition-id`` and ``num-partitions``)
across rounds, as a SuperNode does.
"""

from __future__ import annotations

from typing import Iterable
from uuid import uuid4

from flwr.app import Context, Message, RecordDict
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

from .. import _validate as v
from ..errors import ReconRiskError

__all__ = ["InProcessGrid", "run_in_process"]

#: The server's node id (Flower's SuperLink node id); the client nodes are numbered after it.
SERVER_NODE_ID = 1


class InProcessGrid(Grid):
    """A ``flwr.serverapp.Grid`` whose nodes are ``ClientApp`` calls in this process."""

    def __init__(self, client_app, num_nodes: int, *, run_id: int = 1, run_config: dict | None = None) -> None:
        n = v.integer("num_nodes", num_nodes, minimum=1)
        self.client_app = client_app
        self.run_id = int(run_id)
        self._run = None
        self._contexts = {
            SERVER_NODE_ID + 1 + i: Context(run_id=self.run_id, node_id=SERVER_NODE_ID + 1 + i,
                                            node_config={"partition-id": i, "num-partitions": n},
                                            state=RecordDict(), run_config=dict(run_config or {}))
            for i in range(n)
        }
        self._replies: dict[str, Message] = {}

    def set_run(self, run) -> None:
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            if node not in self._contexts:
                raise ReconRiskError(f"message dst_node_id must be one of the grid's nodes {sorted(self._contexts)}; "
                                     f"found {node}")
            msg.metadata.__dict__["_message_id"] = mid = str(uuid4())
            msg.metadata.__dict__["_run_id"] = self.run_id
            self._replies[mid] = self.client_app(msg, self._contexts[node])
            ids.append(mid)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._replies.pop(m) for m in list(message_ids) if m in self._replies]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        return self.pull_messages(self.push_messages(messages))


def run_in_process(server_app, client_app, num_nodes: int, *, run_config: dict | None = None) -> InProcessGrid:
    """Run ``server_app`` (its main function) against ``num_nodes`` in-process ``client_app`` nodes.

    Returns the grid (its nodes' ``Context`` s hold what the clients kept). Whatever the server's
    main function returns or stores is the caller's: Flower's ``ServerApp`` returns nothing.
    """
    grid = InProcessGrid(client_app, num_nodes, run_config=run_config)
    ctx = Context(run_id=grid.run_id, node_id=SERVER_NODE_ID, node_config={}, state=RecordDict(),
                  run_config=dict(run_config or {}))
    # the identity Flower's Message constructor reads (as flwr.simulation.run_simulation sets it), restored after
    saved = {k: TaskIdentity.__dict__[k] for k in ("_task_id", "_run_id", "_node_id")}
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, grid.run_id, SERVER_NODE_ID
    try:
        server_app(grid, ctx)
    finally:
        for k, x in saved.items():
            setattr(TaskIdentity, k, x)
    return grid
