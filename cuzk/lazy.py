"""Package namespaces whose names load on first use (module __getattr__, PEP 562): importing
`cuzk.formats`, `cuzk.groth16` or `cuzk.serve` costs nothing until a name is used, so a thin
command (`cuzk prove --server`) imports neither numpy nor numba."""

from __future__ import annotations

import sys


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """(__getattr__, __dir__) for `package`, whose name N lives in submodule exports[N];
    a loaded name is stored in `namespace` (the package's globals), so it loads once."""

    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        full = f"{package}.{module}"
        __import__(full)  # importlib.import_module's work; importlib's import: ~0.4 ms
        value = getattr(sys.modules[full], name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
