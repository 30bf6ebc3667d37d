"""The proving engine: supervisor, synthesis processes, device processes, scheduler, budget."""

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it, imported on first use: a child
# process (`cuzk.engine.device_process`, `synthesis_process`) imports what it runs, not the
# supervisor's side (engine, supervisor, journal of jobs: ~0.1 s of its start-up)
_EXPORTS = {
    "BudgetError": "budget",
    "MemoryBudget": "budget",
    "Engine": "engine",
    "EngineError": "jobs",
    "EngineStopped": "jobs",
    "UnknownJob": "jobs",
    "UnknownKey": "jobs",
    "Scheduler": "scheduler",
    "WorkKey": "scheduler",
    "EngineConfig": "settings",
    "format_size": "settings",
    "parse_devices": "settings",
    "parse_size": "settings",
}

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
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
