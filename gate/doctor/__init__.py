"""`gate doctor`: checks that say what works, what does not, and how to fix it."""
