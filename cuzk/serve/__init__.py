"""`cuzk serve`: the proving daemon's HTTP API, configuration, metrics, and its client."""

from cuzk.serve.client import ApiError, Client, ClientError, Unreachable
from cuzk.serve.config import Config, ConfigError

__all__ = ["ApiError", "Client", "ClientError", "Config", "ConfigError", "Unreachable"]
