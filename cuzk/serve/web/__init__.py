"""The web status panel that `cuzk serve` serves at GET / (static files, no build step)."""
