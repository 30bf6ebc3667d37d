"""The HTTP API description (OpenAPI) that `cuzk serve` serves at GET /openapi.yaml."""
