"""Unit tests of kumaco.controller, over the fake-kube harness of test_controller."""
