"""Test and benchmark support: importable by tests and bench, not used by the daemon itself."""
