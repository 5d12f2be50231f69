"""Built-in plugin ``web_console``: the browser console, mounted through ``register_web_apps``.

Its app lands with the web-console issue.
"""
