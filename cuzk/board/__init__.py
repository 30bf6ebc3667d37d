"""Shared-memory status board: generation-guarded worker slots, jobs, consistent snapshots."""

from cuzk.board.board import Board, BoardError
from cuzk.board.layout import LAYOUT_VERSION, PARTITION_STATES, Layout
from cuzk.board.segment import BoardInfo, cleanup_stale, list_boards
from cuzk.board.seqlock import read_record
from cuzk.board.slots import SlotTable, Token
from cuzk.board.snapshot import JobView, PartitionView, SlotView, Snapshot

__all__ = [
    "Board",
    "BoardError",
    "BoardInfo",
    "JobView",
    "LAYOUT_VERSION",
    "Layout",
    "PARTITION_STATES",
    "PartitionView",
    "SlotTable",
    "SlotView",
    "Snapshot",
    "Token",
    "cleanup_stale",
    "list_boards",
    "read_record",
]
