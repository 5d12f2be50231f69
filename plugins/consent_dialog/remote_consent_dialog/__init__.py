"""Built-in plugin ``consent_dialog`` (entry-point group ``remote_core.plugins``).

Its hook implementations land with the work that builds its behaviour.
"""
