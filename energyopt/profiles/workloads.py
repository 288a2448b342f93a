"""What a sweep runs on a real GPU: the built-in matrix-multiply loop or a user's callable.

- ``matmul``: a square half-precision matrix product repeated ``repeats`` times
  per step, with PyTorch if it is installed, else CuPy. Neither is a dependency
  of this package; without both the error says so.
- ``module:function``: a zero-argument callable run once per step, or a mapping
  ``{operation: callable}`` (e.g. ``{"forward": f, "backward": b}``). When the
  module defines ``synchronize()``, the collector calls it before it reads the
  clock and the energy; otherwise the step must block until its GPU work ends.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from energyopt.core.instance import InstanceError
from energyopt.profiles.device import GpuError


@dataclasses.dataclass
class Workload:
    """Step functions by operation, and how to wait for the GPU to finish."""

    name: str
    steps: dict[str, Callable[[], Any]]
    synchronize: Callable[[], Any] | None = None
    batch_size: int = 0


def matmul_workload(size: int = 8192, repeats: int = 4, device_index: int = 0) -> Workload:
    """The built-in matrix-multiply loop on a real GPU (PyTorch, else CuPy)."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    if torch is not None:
        if not torch.cuda.is_available():
            raise GpuError("PyTorch is installed but sees no CUDA GPU: cannot run `matmul`")
        dev = torch.device("cuda", device_index)
        a = torch.randn(size, size, device=dev, dtype=torch.float16)
        b = torch.randn(size, size, device=dev, dtype=torch.float16)

        def torch_step() -> None:
            for _ in range(repeats):
                torch.matmul(a, b)

        return Workload("matmul", {"iteration": torch_step}, lambda: torch.cuda.synchronize(dev), 0)
    try:
        cp = importlib.import_module("cupy")
    except ImportError:
        raise GpuError(
            "the built-in `matmul` workload needs PyTorch or CuPy (neither is installed): "
            "install one, or pass --workload module:function"
        ) from None
    with cp.cuda.Device(device_index):
        a = cp.random.standard_normal((size, size), dtype=cp.float32).astype(cp.float16)
        b = cp.random.standard_normal((size, size), dtype=cp.float32).astype(cp.float16)

    def cupy_step() -> None:
        with cp.cuda.Device(device_index):
            for _ in range(repeats):
                cp.matmul(a, b)

    def cupy_sync() -> None:
        with cp.cuda.Device(device_index):
            cp.cuda.Stream.null.synchronize()

    return Workload("matmul", {"iteration": cupy_step}, cupy_sync, 0)


def load_callable(spec: str) -> Workload:
    """A user's workload from ``module:function`` (see the module docstring).

    Raises
    ------
    InstanceError
        When the spec is malformed, the module cannot be imported, the attribute
        is missing, or it is neither a callable nor a mapping of callables.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InstanceError(f"workload = {spec!r}: expected 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InstanceError(f"workload = {spec!r}: cannot import {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InstanceError(f"workload = {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, Mapping):
        bad = [k for k, v in obj.items() if not callable(v)]
        if bad or not obj:
            raise InstanceError(
                f"workload = {spec!r}: a mapping must give a callable per operation "
                f"(not callable: {bad})"
            )
        steps = {str(k): v for k, v in obj.items()}
    elif callable(obj):
        steps = {"iteration": obj}
    else:
        raise InstanceError(
            f"workload = {spec!r}: {type(obj).__name__} is neither callable nor a mapping"
        )
    sync = getattr(module, "synchronize", None)
    return Workload(attr, steps, sync if callable(sync) else None, 0)
