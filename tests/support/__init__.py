"""Test helpers imported by test modules (never by conftest files)."""
