"""What several drivers share: checked numbers and complete lines (numbers.py), waiting for a server (listening.py)."""
