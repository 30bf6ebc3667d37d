"""`cuzk serve`: the proving daemon's HTTP API, configuration, metrics, and its client."""

# Names load on first use (PEP 562): the client (cuzk.serve.client, standard library only) is
# imported by `cuzk prove --server`, whose start-up must not pay for the configuration's
# imports (the engine's package, numpy).

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it
_EXPORTS = {
    "ApiError": "client",
    "Client": "client",
    "ClientError": "client",
    "Unreachable": "client",
    "Config": "config",
    "ConfigError": "config",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
