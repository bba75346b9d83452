"""Builders and fakes the unit tests share: objects, inputs, the fake kube seam, tables.

A test module never imports another test module: what two of them need lives here,
one module per concern (``kubeobjects``, ``kubeseam``, ``planning``, ``cli``,
``schedules``). The lowest layer of the test library: it imports kumaco only, never
``tests.support.env`` or ``tests.support.judges`` (import-linter's test-layers contract).
"""
