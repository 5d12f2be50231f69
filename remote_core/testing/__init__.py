"""Test support shipped with the core: service discovery and contract suites.

Plugins' own tests import these so every implementation is held to one contract.
"""
