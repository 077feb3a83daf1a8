"""The Lesson, in one place: its steps (steps.py reads lesson.toml), each step's figures (figures.py), their cache
(cache.py), the handout (handout.py), and the live class (class_store.py and the modules beside it)."""
