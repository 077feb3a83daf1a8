"""Translation models researchers study, from Hugging Face: a Hub id or a downloaded folder -> our checkpoint.

    from core.checkpoint.pretrained import open_pretrained
    tm = open_pretrained("Helsinki-NLP/opus-mt-en-de")          # downloaded once, converted once, then cached

    opener.py   open_pretrained / pretrained_checkpoint: the one entry; the cache of converted models
    hub.py      fetching only the files a conversion reads (huggingface_hub), never a pickle; offline from its cache
    convert.py  a folder of a model's files -> our checkpoint folder, by config.json's model_type
    common.py   what the converters share: pickle refusal, tensor mapping that drops nothing, the atomic write
    marian.py, m2m100.py (NLLB too), mbart.py, fsmt.py, t5.py (mT5, Flan-T5 too): one architecture each
"""
from .common import HFImportError
from .convert import ARCHITECTURES, convert_folder, supported
from .hub import Limits
from .opener import cache_root, converted_models, is_pretrained_source, open_pretrained, pretrained_checkpoint

__all__ = ["HFImportError", "ARCHITECTURES", "convert_folder", "supported", "Limits", "cache_root",
           "converted_models", "is_pretrained_source", "open_pretrained", "pretrained_checkpoint"]
