"""Past sessions read back from the database, and two engine runs compared. No Qt, no vLLM.

A session is one run of the app, holding its engine runs; ``stored`` reads sessions, engine runs,
requests and series from a read-only connection (the app's writer thread owns the other one),
``compare`` computes one engine run's figures from its stored requests and series and sets two side
by side. The Sessions view and the export (``workbench.export``) read through these.
"""
