"""Technician viewers: the browser console and a Python client library."""
