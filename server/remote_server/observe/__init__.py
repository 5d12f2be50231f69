"""What an operator watches a running server by: Prometheus metrics and structured logs.

:mod:`.counters` holds the plain integers the relay and the web edge count with
(the hot path never calls the metrics library); :mod:`.metrics` turns them and
the live registry into Prometheus families at scrape time; :mod:`.logs` sets up
the text or JSON log format and the context each line carries.
"""
