"""The audit: what left the machine, stored in SQLite in the data dir."""
