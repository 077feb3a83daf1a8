"""Text on a page, shown exactly as written."""
import re


def md_escape(text: str) -> str:
    """Backslash-escape Markdown so that text (typed by a user, or naming <s> and </s>) shows exactly as written."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", text)
