"""Go's standard library, as much of it as kumaco replays exactly.

Contract: pure functions, no I/O, no clock. ``gotime`` is Go's ``time`` (int64 instants,
civil dates, zone transitions, ``time.Quote``) and ``gostrconv`` Go's ``strconv``
(``ParseInt``, ``%q``), each as the Go code answers. The bottom layer above
:mod:`kumaco.core.errors`: it imports no other part of the core.
"""
