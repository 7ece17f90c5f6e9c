"""The only package that imports mitmproxy: the gate addon, listeners and replies."""
