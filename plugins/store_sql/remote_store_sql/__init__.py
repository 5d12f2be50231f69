"""Built-in plugin ``store_sql`` (entry-point group ``remote_core.plugins``).

Its hook implementations land with the work that builds its behaviour.
"""
