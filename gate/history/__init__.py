"""Agents' own transcripts on disk: found, scanned for secrets, and redacted in place."""
