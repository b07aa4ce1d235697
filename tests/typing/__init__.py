"""Code written the way a typed user writes it, checked by ``mypy --strict tests/typing/``."""
