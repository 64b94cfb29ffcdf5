"""Audit statistics: lower bounds from what attacks achieved.

* :mod:`.empirical` — what s successes in n reconstruction trials refute: a one-sided Clopper–Pearson ReRo
  lower bound and the ε it refutes at δ (``Bound`` with ``upper=None``);
* :mod:`.onerun` — the one-run audit's lower bounds on ε and μ from the guesses of one training run
  (Steinke, Nasr & Jagielski 2023).

Layer 2: imports the core and :mod:`reconrisk._src.accounting` only; nothing here trains or attacks
(:mod:`reconrisk._src.experiments` and :mod:`reconrisk.integrations` run the audits).
"""
