"""`gate demo` and `gate doctor`'s canary: a gate, a loopback fake provider, scripted turns."""
