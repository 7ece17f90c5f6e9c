"""Rules: Claude Code permission syntax, loaded in layers, evaluated deny > ask > allow."""
