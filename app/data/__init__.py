"""The portal's queries, one module per page (marts only), with what they share in common.py. Pages import the
functions and constants they use from their page's module (and common.py) and run queries through ui.query(fn, ...)."""
