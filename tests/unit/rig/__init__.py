"""Tests of the test rig itself: the test environment, the judges, CI's verdict, the docs'
figures and the layout.
"""
