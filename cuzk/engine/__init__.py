"""The proving engine: supervisor, synthesis processes, device processes, scheduler, budget."""

from cuzk.engine.budget import BudgetError, MemoryBudget
from cuzk.engine.engine import Engine
from cuzk.engine.jobs import EngineError, EngineStopped, UnknownJob, UnknownKey
from cuzk.engine.scheduler import Scheduler, WorkKey
from cuzk.engine.settings import EngineConfig, format_size, parse_devices, parse_size

__all__ = [
    "BudgetError",
    "Engine",
    "EngineConfig",
    "EngineError",
    "EngineStopped",
    "MemoryBudget",
    "Scheduler",
    "UnknownJob",
    "UnknownKey",
    "WorkKey",
    "format_size",
    "parse_devices",
    "parse_size",
]
