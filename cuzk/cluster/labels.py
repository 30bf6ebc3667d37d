"""A prover machine's engine settings <-> the labels of its Ray node.

`cuzk cluster join` records the settings given on a machine as Ray node labels; the gateway
reads them back with `from_labels` and lets them override its own settings for that machine.
The settings, their label keys and their rules are the `node` entries of the engine's table
(cuzk.engine.settings.NODE_SETTINGS); this module only encodes the values.
Label keys and values follow Ray's (Kubernetes') label syntax: at most 63 characters of
[A-Za-z0-9._-], beginning and ending with a letter or digit — so no ':' nor ','.

| setting (EngineConfig field) | label key                  | value                            |
|------------------------------|----------------------------|----------------------------------|
| devices                      | cuzk-devices               | auto, cpu.N, GPU ordinals 0_1    |
| synth_workers                | cuzk-synth-workers         | decimal (0: CPU cores - 1)       |
| workers_per_device           | cuzk-workers-per-device    | decimal, at least 1              |
| finalizers_per_device        | cuzk-finalizers-per-device | decimal, at least 1              |
| memory_budget                | cuzk-memory-budget         | bytes, decimal, at least 1       |

GPU ordinals keep their order, joined by '_'; a run of three or more consecutive ascending
ordinals is written first-last ("0-7_9" is 0,1,...,7,9), so that large machines fit in 63
characters. `from_labels` returns devices in the canonical spelling: "auto", "cpu:N" or "0,1".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cuzk.engine.settings import LABEL_PREFIX as LABEL_PREFIX  # the table's; kept importable here
from cuzk.engine.settings import NODE_SETTINGS, parse_devices, positive_size

NODE_RESOURCE = "cuzk_node"  # the custom resource every cuzk prover node carries (quantity 1)
ACTOR_PREFIX = "cuzk-node-"  # node engine actor names: ACTOR_PREFIX + Ray node id (hex)
NAMESPACE = "cuzk"  # the Ray namespace of the gateway and its actors

LABEL_KEYS: dict[str, str] = {s.name: s.label for s in NODE_SETTINGS}  # setting -> label key
_SETTINGS = {key: name for name, key in LABEL_KEYS.items()}  # label key -> setting
_COUNT = {s.name: s.parse for s in NODE_SETTINGS if hasattr(s.parse, "minimum")}  # the counts
MAX_LABEL_LENGTH = 63
MAX_ORDINALS = 4096  # a GPU list decoded from a label is refused beyond this many

_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
_DECIMAL = re.compile(r"[0-9]+")


# ---------------------------------------------------------------------------- devices
def canonical_devices(spec: str) -> str:
    """The canonical spelling of a devices setting: "auto", "cpu:N" or "0,1" (GPU ordinals,
    in the given order). Checks the syntax only, not that the GPUs exist here; raises
    ValueError with the reason."""
    s = str(spec).strip().lower()
    if s == "auto":
        return s
    m = re.fullmatch(r"cpu(?::([0-9]+))?", s)
    if m:  # as parse_devices reads it, without building the list of N names
        if int(m.group(1) or 1) < 1:
            raise ValueError(f"devices {spec!r}: need at least one CPU device process")
        return f"cpu:{int(m.group(1) or 1)}"
    names = parse_devices(s, n_gpus=1 << 62)  # any ordinal exists: syntax only
    return ",".join(n.removeprefix("cuda:") for n in names)


def _encode_ordinals(ordinals: list[int]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(ordinals):
        j = i
        while j + 1 < len(ordinals) and ordinals[j + 1] == ordinals[j] + 1:
            j += 1
        if j - i >= 2:  # three or more in a row
            parts.append(f"{ordinals[i]}-{ordinals[j]}")
        else:
            j = i
            parts.append(str(ordinals[i]))
        i = j + 1
    return "_".join(parts)


def devices_label(spec: str) -> str:
    """The `cuzk-devices` label value of a devices setting (see the module docstring)."""
    s = canonical_devices(spec)
    if s == "auto":
        return s
    if s.startswith("cpu:"):
        return "cpu." + s.removeprefix("cpu:")
    value = _encode_ordinals([int(o) for o in s.split(",")])
    if len(value) > MAX_LABEL_LENGTH:
        raise ValueError(
            f"devices {spec!r}: too many GPU ordinals out of order to fit a Ray label "
            f"({len(value)} > {MAX_LABEL_LENGTH} characters); list them in ascending order"
        )
    return value


def _decode_devices(value: str) -> str:
    if value == "auto":
        return value
    m = re.fullmatch(r"cpu\.([0-9]+)", value)
    if m:
        if int(m.group(1)) < 1:
            raise ValueError("needs at least one CPU device process")
        return f"cpu:{int(m.group(1))}"
    ordinals: list[int] = []
    for part in value.split("_"):
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not m:
            raise ValueError("expected auto, cpu.N or GPU ordinals such as 0_1 or 0-7")
        first = int(m.group(1))
        last = first if m.group(2) is None else int(m.group(2))
        if last <= first and m.group(2) is not None:
            raise ValueError(f"the range {part} does not ascend")
        if len(ordinals) + last - first + 1 > MAX_ORDINALS:
            raise ValueError(f"more than {MAX_ORDINALS} GPU ordinals")
        ordinals.extend(range(first, last + 1))
    if len(set(ordinals)) != len(ordinals):
        raise ValueError("a GPU is named twice")
    return ",".join(map(str, ordinals))


# ---------------------------------------------------------------------------- counts, sizes
def _whole(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be a whole number, got {v!r}")
    return v


# ---------------------------------------------------------------------------- the mapping
def to_labels(settings: Mapping) -> dict[str, str]:
    """Ray node labels recording `settings` ({EngineConfig field: value}; only the fields in
    LABEL_KEYS, each optional; None means not set). Raises ValueError naming a bad setting."""
    unknown = sorted(set(settings) - set(LABEL_KEYS))
    if unknown:
        raise ValueError(
            f"not a node setting: {', '.join(unknown)} (node settings: {', '.join(LABEL_KEYS)})"
        )
    labels: dict[str, str] = {}
    for name, key in LABEL_KEYS.items():
        v = settings.get(name)
        if v is None:
            continue
        if name == "devices":
            labels[key] = devices_label(v)
        elif name == "memory_budget":  # bytes, as this machine resolved them: never auto
            try:
                labels[key] = str(positive_size(_whole(name, v)))
            except ValueError as e:
                raise ValueError(f"memory_budget: {e}") from None
        else:
            try:
                labels[key] = str(_COUNT[name](_whole(name, v)))
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
        if not _LABEL_VALUE.fullmatch(labels[key]):
            raise ValueError(f"{name} {v!r}: too long for a Ray label ({MAX_LABEL_LENGTH} chars)")
    return labels


def from_labels(labels: Mapping[str, str]) -> dict:
    """The settings a node's labels record ({EngineConfig field: value}, only those present);
    other labels are ignored. Raises ValueError naming the label on a malformed cuzk label."""
    settings: dict = {}
    for key, value in labels.items():
        name = _SETTINGS.get(key)
        if name is None:
            continue
        try:
            if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
                raise ValueError("not a Ray label value")
            if name == "devices":
                settings[name] = _decode_devices(value)
            else:
                if not _DECIMAL.fullmatch(value):
                    raise ValueError("expected a decimal whole number")
                n = int(value)
                settings[name] = positive_size(n) if name == "memory_budget" else _COUNT[name](n)
        except ValueError as e:
            raise ValueError(f"node label {key}={value!r}: {e}") from None
    return settings
