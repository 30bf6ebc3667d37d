"""`cuzk serve`: the proving daemon's HTTP API, configuration and metrics. Its client is
cuzk.client, a room of its own below every package that talks to a daemon."""

# Names load on first use (PEP 562): importing this package costs nothing until a name is
# used.

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it
_EXPORTS = {
    "Config": "config",
    "ConfigError": "config",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
