"""Unit tests of kumaco.cmd and the views it prints, black-box through the kumaco script
where they can.
"""
