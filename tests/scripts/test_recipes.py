"""scripts/recipes/ (the commands behind each shipped checkpoint) and scripts/experiments/ (the other training
experiments): each file parses as bash, and every script and recipe it names exists where it says."""
import re
import shutil
import subprocess

import pytest

from core.checkpoint import read_card
from core.paths import CHECKPOINTS, REPO

RECIPES = REPO / "scripts" / "recipes"
EXPERIMENTS = REPO / "scripts" / "experiments"
SCRIPTS = sorted(RECIPES.glob("*.sh")) + sorted(EXPERIMENTS.glob("*.sh"))


def shipped_recipes() -> set[str]:
    """The recipe files the shipped checkpoints' cards name."""
    cards = [read_card(folder) for folder in CHECKPOINTS.iterdir() if (folder / "card.json").exists()]
    return {card.recipe for card in cards if card.recipe}


def test_recipes_holds_the_shipped_checkpoints_recipes_and_nothing_else():
    named = shipped_recipes()
    assert named and all((REPO / recipe).is_file() for recipe in named)
    assert {f"scripts/recipes/{f.name}" for f in RECIPES.glob("*.sh")} == named


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_recipe_parses_and_names_files_that_exist(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text(encoding="utf-8")
    for path in re.findall(r"\bscripts/[\w/.-]+\.(?:py|sh)\b", text):
        assert (REPO / path).is_file(), f"{script.name} names {path}, which does not exist"
    for name in re.findall(r"(?<![\w/.-])([\w-]+\.sh)\b", text):      # a sibling named by its file name alone
        assert (RECIPES / name).is_file() or (EXPERIMENTS / name).is_file(), f"{script.name} names {name}"
    assert 'cd "$(dirname "$0")/../.."' in text                          # runs from anywhere
