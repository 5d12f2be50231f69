"""Built-in plugin ``codec_raw_zstd`` (entry-point group ``remote_core.plugins``).

Its hook implementations land with the work that builds its behaviour.
"""
