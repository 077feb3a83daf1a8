"""Reading and writing checkpoint folders: weights and config (folder.py), the model card (card.py), attention
snapshots (snapshots.py) and the one atomic write (atomic.py).

A checkpoint is a folder of model.safetensors, config.json, the SentencePiece model(s) and card.json; never pickles.
"""
from .atomic import atomic_open, atomic_write, write_json
from .card import Card, as_card, read_card, update_card, write_card
from .jsonl import read_jsonl
from .folder import CheckpointError, load_checkpoint, load_model, save_checkpoint, unique_state_dict
from .snapshots import (SnapshotError, load_snapshot, read_probes, read_snapshot, snapshot_steps, write_probes,
                        write_snapshot)

__all__ = ["atomic_open", "atomic_write", "write_json", "Card", "as_card", "read_card", "update_card", "write_card",
           "read_jsonl", "CheckpointError", "load_checkpoint", "load_model", "save_checkpoint",
           "unique_state_dict", "SnapshotError", "load_snapshot", "read_probes", "read_snapshot", "snapshot_steps",
           "write_probes", "write_snapshot"]
