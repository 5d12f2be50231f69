"""Built-in plugin ``input_pynput`` (entry-point group ``remote_core.plugins``).

Its hook implementations land with the work that builds its behaviour.
"""
