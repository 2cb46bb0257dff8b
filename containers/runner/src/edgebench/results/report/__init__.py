"""Reading the warehouse: the one read API over the marts (marts.py), shared by the CLI and the portal."""
