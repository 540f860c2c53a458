"""Benchmark harness: ``python -m bench.run --output BENCHMARKS.md`` (``make bench``).

Each section lives in its own module and returns a ``report.SectionResult``; ``run.SECTIONS`` lists them.
"""
