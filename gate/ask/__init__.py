"""Asking a person before a request leaves: questions, the control API client, decisions."""
