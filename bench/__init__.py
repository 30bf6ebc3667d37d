"""cuzk benchmarks: one harness (`python -m bench`, `make bench`) over suites that run peers side by side."""
