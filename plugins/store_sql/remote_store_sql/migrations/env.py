"""Alembic environment: always online, on the connection the store hands over.

The store opens the transaction (and takes the cross-process lock) before
calling Alembic, so the whole upgrade is one locked transaction.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
