"""The training loop's pieces as a library (scripts/train.py is the command line around them): the paper's
learning-rate schedule, precision, validation, attention snapshots, saving, export and the resume state.

Import the module you need (`from core.training import schedule`): this file imports none of them, so that
`import core` does not load sacrebleu or tqdm."""
