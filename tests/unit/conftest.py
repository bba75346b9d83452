"""Shared fixtures for the unit tests."""

from tests.support.oracle import robfig_oracle

__all__ = ["robfig_oracle"]
