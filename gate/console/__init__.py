"""The web console: what the audit holds, as pages on the gate's own port."""
