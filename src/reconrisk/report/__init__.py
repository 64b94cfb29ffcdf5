"""Drawing: figures and tables for the audit, ReRo curves, FIL and the analytic attack.

Modules here draw what `experiments/` and `bounds/` computed; they import
matplotlib lazily through :mod:`reconrisk._io`.
"""
