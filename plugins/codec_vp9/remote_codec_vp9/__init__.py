"""Built-in plugin ``codec_vp9`` (entry-point group ``remote_core.plugins``).

Its hook implementations land with the work that builds its behaviour.
"""
