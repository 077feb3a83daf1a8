"""Studies built on the model: what heads do (analysis), switching heads off (ablation), word alignment,
comparing checkpoints, heads forming during training (emergence), the paper's Figures 3-5, pronouns, and
queries and keys. Their probe sentences are in probes/. Nothing in core's model imports a study.

Import the study you need (`from core.studies import emergence`): this file imports none of them."""
