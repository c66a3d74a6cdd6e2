"""SQLite storage through sqlite-utils: the only place that knows SQL."""
