"""Several server nodes as one service: NATS between them, PostgreSQL and Redis shared.

:class:`~.node.ClusterNode` is a node; the web edge uses it only when
``REMOTE_SUPPORT_BUS_URL`` is set (one node with no bus is the embedded default).
"""
