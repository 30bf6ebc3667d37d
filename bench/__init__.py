"""cuzk benchmarks: one harness (`python -m bench`, `make bench`) running peers side by side."""
