"""Unit tests of kumaco.migration and its views: kured v1's schedule as windows."""
