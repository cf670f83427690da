"""Benchmarks that replay real recordings to the running server and measure what comes back.

Run ``python -m bench --help``; metric definitions are in ``docs/metrics.md``.
"""
