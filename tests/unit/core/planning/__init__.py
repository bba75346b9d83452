"""Unit tests of kumaco.core.planning: the planner, its rules, lookahead and the forecast."""
