"""The pages' parts for language models: a decoder-only one (GPT-2, Llama: the paper's decoder alone) or an
encoder-only one (BERT, RoBERTa: the paper's encoder alone). One text in, one kind of map out: self-attention."""
