"""Request paths as formats see them: normalised so odd spellings cannot dodge a walker."""

from __future__ import annotations

import re


def normalise(path: str) -> str:
    """The path without query or ;params, with `//` collapsed and lowercased."""
    path = re.split(r"\?|;|%3f", path, maxsplit=1, flags=re.I)[0]
    return re.sub(r"/+", "/", path).rstrip("/").lower()
