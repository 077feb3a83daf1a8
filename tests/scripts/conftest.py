"""The training corpus that the training-run tests share: number words, en -> de (tests.helpers.make_corpus)."""
import pytest

from tests.helpers import make_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))
