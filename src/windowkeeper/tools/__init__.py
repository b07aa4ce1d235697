"""What the command line is built from: traces, replay, previews, inspection, plots, the demo.

Never loaded by ``import windowkeeper``; the CLI and the benchmarks import what they use.
:func:`report` (an HTML report of a trace) is the public entry point of this package.
"""

from ._report import PriceModel, report, report_html

__all__ = ["PriceModel", "report", "report_html"]
