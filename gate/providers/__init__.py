"""Wire formats: one module per provider format, turning a body into segments and back."""
