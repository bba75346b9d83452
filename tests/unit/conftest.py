"""Shared fixtures for the unit tests."""

from tests.support.judges.oracle import robfig_oracle

__all__ = ["robfig_oracle"]
