"""Plan: what a sweep is before anything runs. The parameters (declared once), the sweep spec, the catalog of
CNIs, distributions, link conditions and tuning profiles, and the expansion into cells and runs (pure)."""
