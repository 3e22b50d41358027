"""The backend registry: one module per backend in this folder, each calling `register(Backend(...))`.

Usage: from harness.backends import get_backend, backend_names; get_backend("triton").available("cpu")

Adding a backend = adding one module here; the registry finds it by listing the package.
"""

from __future__ import annotations

import importlib
import pkgutil

from harness.backends.base import KERNEL_ALLOWED_OPS, Backend

_REGISTRY: dict[str, Backend] = {}
_LOADED = False


def register(backend: Backend) -> Backend:
    if backend.name in _REGISTRY and _REGISTRY[backend.name] != backend:
        raise ValueError(f"backend {backend.name!r} registered twice")
    _REGISTRY[backend.name] = backend
    return backend


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    _LOADED = True


def get_backend(name: str) -> Backend:
    _load_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown backend {name!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def backend_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def worker_env(device: str) -> dict[str, str]:
    """Environment of a worker on `device`: the union of every backend's needs (set before imports)."""
    _load_all()
    env: dict[str, str] = {}
    for backend in _REGISTRY.values():
        env.update(backend.env(device))
    return env


__all__ = ["KERNEL_ALLOWED_OPS", "Backend", "backend_names", "get_backend", "register", "worker_env"]
