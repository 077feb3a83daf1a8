"""Reading and writing checkpoint folders: weights and config (folder.py), the atomic write (atomic.py).

A checkpoint is a folder of model.safetensors, config.json, the SentencePiece model(s) and card.json; never pickles.
"""
from .atomic import atomic_write, write_json
from .folder import CheckpointError, load_checkpoint, load_model, save_checkpoint, unique_state_dict

__all__ = ["atomic_write", "write_json", "CheckpointError", "load_checkpoint", "load_model", "save_checkpoint",
           "unique_state_dict"]
