"""Screening: what in an outbound body is withheld or redacted, and the placeholders used."""
