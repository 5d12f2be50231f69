"""Numbered Alembic migrations (``0001_...``); a schema change adds one, never edits one."""
