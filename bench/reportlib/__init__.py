"""The sections of docs/benchmarks.md, one module each, and what they share.

bench/report.py reads the command line and runs them in page order; each
module's write(out, results) appends its part to out (a common.Report).
"""
