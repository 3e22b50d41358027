"""Tuning sessions: their records (config, nodes), their SQLite store and the search loop."""
