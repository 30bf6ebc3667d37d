"""`cuzk serve`: the proving daemon's HTTP API, configuration, metrics, and its client."""

# Names load on first use (PEP 562): the client (cuzk.serve.client, standard library only) is
# imported by `cuzk prove --server`, whose start-up must not pay for the configuration's
# imports (the engine's package, numpy).

# public name -> the module of this package that defines it
_EXPORTS = {
    "ApiError": "client", "Client": "client", "ClientError": "client", "Unreachable": "client",
    "Config": "config", "ConfigError": "config",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cuzk.serve' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"cuzk.serve.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
