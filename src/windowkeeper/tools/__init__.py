"""What the command line is built from: traces, replay, previews, inspection, plots, the demo.

Never loaded by ``import windowkeeper``; the CLI and the benchmarks import what they use.
"""
