"""Drawing: figures, CSV and the HTML page for what :mod:`reconrisk._src.experiments` computed.

The audit, ReRo curves, FIL, the analytic attack, the VMF comparison, trade-off curves, the paper recipes,
who is at risk, and ``reconrisk report``'s self-contained page (:mod:`.html`, inline SVG written by
:mod:`.svgplot` without matplotlib). Nothing here computes a certified number: it draws what it is given.

Layer 5: imports anything below it (experiments, reproduce, measures, theory, the core); never
:mod:`reconrisk._src.cli`. matplotlib is loaded inside functions, through :mod:`reconrisk._src._io`.
"""
