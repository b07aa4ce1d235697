"""What the command line is built from: traces, replay, previews, inspection, plots, the demo.

Never loaded by ``import windowkeeper``; the CLI and the benchmarks import what they use.
:func:`report` (an HTML report of a trace) is the public entry point of this package, with the
price model its billed cost follows (:func:`price_model` reads one by name or written out).
"""

from ._prices import PriceModel, price_model
from ._report import report, report_html

__all__ = ["PriceModel", "price_model", "report", "report_html"]
