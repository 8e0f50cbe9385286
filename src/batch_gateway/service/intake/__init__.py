"""Caller input becomes normalised requests: one writer (with its sink) for every way in, and the file readers."""
